"""nbrUttsInEachRecurrentIter: N sentences side by side per minibatch (the engine's truncated-BPTT
slots with a fixed number of rows), for SequenceReader, LUSequenceReader and the shared helper
HTKMLFReader calls; the sentence readers group sentences of one length (CNTK's documented
layout; groupEqualLengths = false fills the rows one by one) and deliver their inputs sparse."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from cntkio.errors import ConfigError
from cntkio.legacy import DataReader
from cntkio.readers import build_reader, reader_spec
from cntkio.readers.factory import ReaderSpec
from cntkio.readers.legacy.sections import apply_parallel_sequences
from cntkio.readers.section import as_section

LM = ["</s> the cat sat on the mat </s>", "a dog ran </s>", "</s> the dog sat </s>", "the end </s>"]


def _lm(path, **extra):
    sec = {"readerType": "SequenceReader", "file": str(path), "randomize": "None",
           "labelIn": {"labelDim": "20", "beginSequence": "</s>", "endSequence": "</s>"},
           "labels": {"labelType": "NextWord", "labelDim": "20"}}
    sec.update(extra)
    return sec


@pytest.fixture
def corpus(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("\n".join(LM) + "\n")
    words = [w for ln in LM for w in (ln.split() if ln.startswith("</s>") else ["</s>"] + ln.split())]
    from collections import Counter
    c = Counter(words)
    vocab = sorted(c, key=lambda w: (-c[w], w))          # the reader's ids: by falling count
    return p, vocab


def _dense(s) -> np.ndarray:
    return np.asarray(s.toarray() if hasattr(s, "toarray") else s)


def _rows(value, vocab) -> list[list[str]]:
    return [[vocab[int(i)] for i in _dense(s).argmax(1)] for s in value.as_sequences()]


def _read_all(src, size):
    got, labels, masks = [], [], []
    while True:
        mb = src.next_minibatch(size)
        if not mb:
            break
        v = {s.name: d for s, d in mb.items()}
        assert v["labelIn"].is_sparse and v["labels"].is_sparse     # as CNTK's LM reader's inputs
        got.append(_rows(v["labelIn"], vocab=src._vocab))
        labels.append(_rows(v["labels"], vocab=src._vocab))
        masks.append(np.asarray(v["labelIn"].mask).tolist())
    return got, labels, masks


def test_sentences_of_one_length_are_grouped_side_by_side(corpus):
    # sentence lengths (input words) 7, 4, 4, 3; N = 2, minibatchSize = 3 steps a row. A group is
    # the next sentence and the ones of its length after it (up to N); its rows run in lockstep
    # and the next group starts when they end, the last minibatch of a group as wide as its rest
    path, vocab = corpus
    src = build_reader(_lm(path, nbrUttsInEachRecurrentIter="2"), max_sweeps=1)
    assert src.parallel_sequences == 2 and src.parallel_groups and src.parallel_sparse
    src._vocab = vocab
    got, labels, masks = _read_all(src, 3)
    assert got == [[["</s>", "the", "cat"]], [["sat", "on", "the"]], [["mat"]],
                   [["</s>", "a", "dog"], ["</s>", "the", "dog"]], [["ran"], ["sat"]],
                   [["</s>", "the", "end"]]]
    assert labels == [[["the", "cat", "sat"]], [["on", "the", "mat"]], [["</s>"]],
                      [["a", "dog", "ran"], ["the", "dog", "sat"]], [["</s>"], ["</s>"]],
                      [["the", "end", "</s>"]]]
    assert masks == [[[2, 1, 1]], [[1, 1, 1]], [[1]], [[2, 1, 1], [2, 1, 1]], [[1], [1]], [[2, 1, 1]]]


def test_groups_take_equal_lengths_in_order_up_to_n(tmp_path):
    # lengths 3, 2, 3, 3, 2, 4, 1 with N = 2: (0, 2), (1, 4), (3), (5), (6) -- the first sentence
    # not yet read, then the next ones of its length; those skipped wait for their own group
    words = ["a b c", "d e", "f g h", "i j k", "l m", "n o p q", "r"]
    p = tmp_path / "g.txt"
    p.write_text("".join(f"</s> {w} </s>\n" for w in words))
    src = build_reader(_lm(p, nbrUttsInEachRecurrentIter="2", labelIn={"labelDim": "40"},
                           labels={"labelType": "NextWord", "labelDim": "40"}), max_sweeps=1)
    firsts = []
    while True:
        mb = src.next_minibatch(5)
        if not mb:
            break
        v = {s.name: d for s, d in mb.items()}
        firsts.append([_dense(s).shape[0] for s in v["labelIn"].as_sequences()])
    assert firsts == [[4, 4], [3, 3], [4], [5], [2]]     # input words = words + the begin symbol


def test_grouped_rows_resume_exactly_from_a_checkpoint(corpus):
    path, _ = corpus
    for randomize in ("None", "Auto"):
        src = build_reader(_lm(path, nbrUttsInEachRecurrentIter="2", randomize=randomize))
        src.next_minibatch(3)
        state = src.get_checkpoint_state()
        a = [{k.name: (np.asarray(v.mask).tolist(), v.as_csr().indices.tolist())
              for k, v in src.next_minibatch(3).items()} for _ in range(6)]
        src.restore_from_checkpoint(state)
        b = [{k.name: (np.asarray(v.mask).tolist(), v.as_csr().indices.tolist())
              for k, v in src.next_minibatch(3).items()} for _ in range(6)]
        assert a == b


def test_ungrouped_rows_take_the_next_sentence_when_theirs_ends(corpus):
    path, vocab = corpus
    src = build_reader(_lm(path, nbrUttsInEachRecurrentIter="2", groupEqualLengths="false"), max_sweeps=1)
    assert src.parallel_sequences == 2 and src.truncation_length == 0 and not src.parallel_groups
    src._vocab = vocab
    got, labels, masks = _read_all(src, 3)                # minibatchSize = 3 steps per row
    assert got == [[["</s>", "the", "cat"], ["</s>", "a", "dog"]],
                   [["sat", "on", "the"], ["ran", "</s>", "the"]],
                   [["mat", "</s>", "the"], ["dog", "sat"]],
                   [["end"], []]]
    assert labels == [[["the", "cat", "sat"], ["a", "dog", "ran"]],
                      [["on", "the", "mat"], ["</s>", "the", "dog"]],
                      [["</s>", "the", "end"], ["sat", "</s>"]],
                      [["</s>"], []]]
    # 2 marks a sentence's first word, 1 a continued one, 0 an empty cell
    assert masks == [[[2, 1, 1], [2, 1, 1]], [[1, 1, 1], [1, 2, 1]], [[1, 2, 1], [1, 1, 0]],
                     [[1, 0, 0], [0, 0, 0]]]


def test_truncation_length_sets_the_steps_and_the_row_count_stays(corpus):
    path, vocab = corpus
    sec = _lm(path, nbrUttsInEachRecurrentIter="3", truncated="true", truncationLength="2",
              groupEqualLengths="false")
    src = build_reader(sec, max_sweeps=1)
    mb = {s.name: d for s, d in src.next_minibatch(1000).items()}
    assert np.asarray(mb["labelIn"].mask).shape == (3, 2)
    assert _rows(mb["labelIn"], vocab) == [["</s>", "the"], ["</s>", "a"], ["</s>", "the"]]
    src = build_reader(dict(sec, groupEqualLengths="true"), max_sweeps=1)
    shapes = []
    while mb := src.next_minibatch(1000):
        shapes.append(np.asarray(next(iter(mb.values())).mask).shape)
    assert shapes == [(1, 2), (1, 2), (1, 2), (1, 1), (2, 2), (2, 2), (1, 2), (1, 1)]    # 7 | 4 4 | 3


def test_zero_keeps_whole_sentences(corpus):
    path, vocab = corpus
    src = build_reader(_lm(path, nbruttsineachrecurrentiter="0"), max_sweeps=1)
    assert not src.truncated
    mb = {s.name: d for s, d in src.next_minibatch(1000).items()}
    assert [r.shape[0] for r in mb["labelIn"].as_sequences()] == [7, 4, 4, 3]


def test_checkpoint_inside_parallel_rows_resumes_the_same(corpus):
    path, _ = corpus
    src = build_reader(_lm(path, nbrUttsInEachRecurrentIter="2", randomize="Auto"))
    src.next_minibatch(3)
    state = src.get_checkpoint_state()
    a = [np.asarray(next(iter(src.next_minibatch(3).values())).mask).tolist() for _ in range(3)]
    src.restore_from_checkpoint(state)
    b = [np.asarray(next(iter(src.next_minibatch(3).values())).mask).tolist() for _ in range(3)]
    assert a == b


def test_lu_sequence_reader_rows(tmp_path):
    (tmp_path / "a.txt").write_text("BOS O\ni O\nwant O\nEOS O\nBOS O\nfly O\nEOS O\n")
    (tmp_path / "in.txt").write_text("BOS\nEOS\ni\nwant\nfly\n")
    (tmp_path / "out.txt").write_text("O\n")
    sec = {"readerType": "LUSequenceReader", "file": str(tmp_path / "a.txt"), "randomize": "None",
           "nbrUttsInEachRecurrentIter": "2",
           "labelIn": {"token": str(tmp_path / "in.txt"), "beginSequence": "BOS", "endSequence": "EOS"},
           "labels": {"token": str(tmp_path / "out.txt")}}
    src = build_reader(sec, max_sweeps=1)
    got = []
    while mb := src.next_minibatch(2):
        got.append([_dense(s).argmax(1).tolist() for s in dict((k.name, v) for k, v in mb.items())["labelIn"]
                    .as_sequences()])
    assert got == [[[0, 2]], [[3, 1]], [[0, 4]], [[1]]]   # BOS i want EOS, then BOS fly EOS: lengths differ
    src = build_reader(dict(sec, groupEqualLengths="false"), max_sweeps=1)
    mb = {s.name: d for s, d in src.next_minibatch(2).items()}
    ids = [_dense(s).argmax(1).tolist() for s in mb["labelIn"].as_sequences()]
    assert ids == [[0, 2], [0, 4]]                       # BOS i | BOS fly, side by side


def test_data_reader_lays_rows_out_as_cntk(corpus):
    path, vocab = corpus
    r = DataReader(_lm(path, nbrUttsInEachRecurrentIter="2", groupEqualLengths="false"))
    assert r.number_slices_in_each_recurrent_iter() == 2
    r.start_minibatch_loop(3, 0)
    m: dict = {}
    assert r.get_minibatch(m)
    # row t * 2 + s: step t of parallel row s; the inputs sparse, as CNTK's LM reader's
    x = m["labelIn"]
    assert x.format == "csr" and x.shape == (6, 20)
    assert [vocab[i] for i in np.asarray(x.argmax(1)).ravel()] == ["</s>", "</s>", "the", "a", "cat", "dog"]
    r.destroy()
    r = DataReader(_lm(path, nbrUttsInEachRecurrentIter="2"))    # grouped: the 7-word sentence alone
    r.start_minibatch_loop(3, 0)
    assert r.get_minibatch(m) and m["labelIn"].shape == (3, 20)
    assert r.get_minibatch(m) and r.get_minibatch(m) and m["labelIn"].shape == (1, 20)
    assert r.get_minibatch(m) and m["labelIn"].shape == (6, 20)
    assert [vocab[i] for i in np.asarray(m["labels"].argmax(1)).ravel()] == ["a", "the", "dog", "dog", "ran", "sat"]
    assert not r.data_end("sentence")
    r.destroy()


def _spec(sec: dict, **kw) -> tuple:
    spec = ReaderSpec()
    spec.source_kwargs.update(kw)
    return as_section(sec, "reader"), spec


def test_helper_for_htkmlf_truncated_non_truncated_and_frame_mode(caplog):
    s, spec = _spec({"nbrUttsInEachRecurrentIter": "4", "truncated": "true"}, truncation_length=20)
    assert apply_parallel_sequences(s, spec, always_truncated=False) == 4
    assert spec.source_kwargs["parallel_sequences"] == 4 and spec.source_kwargs["truncation_length"] == 20
    s, spec = _spec({"nbrUttsInEachRecurrentIter": "1"}, truncation_length=0)
    assert apply_parallel_sequences(s, spec, always_truncated=False) == 1
    assert "parallel_sequences" not in spec.source_kwargs          # whole utterances, as CNTK
    # Tests/EndToEndTests/Speech/LSTM/FullUtterance/run-test: truncated=false
    # speechTrain=[reader=[nbruttsineachrecurrentiter=2]]: whole utterances up to the minibatch size, as
    # CNTK's HTKMLFReader on its deserializers (HTKDeserializers/HTKMLFReader.cpp:69-97), with a warning
    s, spec = _spec({"nbruttsineachrecurrentiter": "2", "truncated": "false"}, truncation_length=0)
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        assert apply_parallel_sequences(s, spec, always_truncated=False) == 2
    assert "parallel_sequences" not in spec.source_kwargs
    assert "reader.nbrUttsInEachRecurrentIter = 2: without truncated = true whole utterances are packed" in caplog.text
    s, spec = _spec({"nbrUttsInEachRecurrentIter": "32"}, frame_mode=True)
    with caplog.at_level(logging.INFO, logger="cntkio"):
        assert apply_parallel_sequences(s, spec, always_truncated=False) == 32
    assert "parallel_sequences" not in spec.source_kwargs
    assert "no effect in frame mode" in caplog.text


def test_bad_value_names_the_key(corpus):
    path, _ = corpus
    with pytest.raises(ConfigError, match="nbrUttsInEachRecurrentIter"):
        reader_spec(_lm(path, nbrUttsInEachRecurrentIter="-1"))


def test_truncated_without_truncation_length_takes_the_minibatch_size(corpus):
    # CNTK's configs: truncated = true and nbrUttsInEachRecurrentIter, the steps = minibatchSize
    path, vocab = corpus
    src = build_reader(_lm(path, nbrUttsInEachRecurrentIter="2", truncated="true", groupEqualLengths="false"),
                       max_sweeps=1)
    mb = {s.name: d for s, d in src.next_minibatch(4).items()}
    assert np.asarray(mb["labelIn"].mask).shape == (2, 4)
    # truncated = true alone: one row (CNTK's default N = 1) of minibatchSize steps
    src = build_reader(_lm(path, truncated="true"), max_sweeps=1)
    mb = {s.name: d for s, d in src.next_minibatch(5).items()}
    assert np.asarray(mb["labelIn"].mask).tolist() == [[2, 1, 1, 1, 1]]
    assert _rows(mb["labelIn"], vocab) == [["</s>", "the", "cat", "sat", "on"]]
