"""SequenceReader and LUSequenceReader: sentences, vocabularies, next-word labels, class-based LM
labels, word context windows, word maps, unk, bad input; values checked against a plain Python
reading of the same text."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from cntkio.cli import main
from cntkio.errors import ConfigError
from cntkio.readers import build_reader, reader_spec

LM = ["</s> the cat sat on the mat </s>", "a dog ran </s>", "</s> the dog sat </s>", "the end </s>"]


def _mb(src, n=1000):
    return {s.name: v for s, v in src.next_minibatch(n).items()}


def _ids(value) -> list[list[int]]:
    """Per sequence, per sample, the indices of the non-zeros."""
    out = []
    for seq in value.as_sequences():
        dense = np.asarray(seq.todense()) if hasattr(seq, "todense") else np.asarray(seq)
        out.append([np.flatnonzero(row).tolist() for row in dense])
    return out


def _lm_section(path, **extra):
    sec = {"readerType": "SequenceReader", "file": str(path), "randomize": "None",
           "labelIn": {"labelDim": "20", "beginSequence": "</s>", "endSequence": "</s>"},
           "labels": {"labelType": "NextWord", "labelDim": "20"}}
    sec.update(extra)
    return sec


def _vocab(lines):
    from collections import Counter
    c = Counter(w for ln in lines for w in ln.split())
    return {w: i for i, w in enumerate(sorted(c, key=lambda w: (-c[w], w)))}


def test_lm_inputs_and_next_word_labels(tmp_path):
    (tmp_path / "c.txt").write_text("\n".join(LM) + "\n\n")
    src = build_reader(_lm_section(tmp_path / "c.txt"), max_sweeps=1)
    mb = _mb(src)
    vocab = _vocab(["</s> " + ln if not ln.startswith("</s>") else ln for ln in LM])
    want_in, want_out = [], []
    for ln in LM:
        words = ln.split()
        if words[0] != "</s>":
            words.insert(0, "</s>")
        ids = [vocab[w] for w in words]
        want_in.append([[i] for i in ids[:-1]])
        want_out.append([[i] for i in ids[1:]])
    assert _ids(mb["labelIn"]) == want_in
    assert _ids(mb["labels"]) == want_out
    assert mb["labelIn"].is_sparse
    src.close()


def test_lm_word_classes_give_class_rows(tmp_path):
    (tmp_path / "c.txt").write_text("a b </s>\nb c </s>\n")
    (tmp_path / "vocab.txt").write_text("0\t5\t</s>\t0\n1\t3\tb\t0\n2\t2\ta\t1\n3\t1\tc\t1\n")
    src = build_reader(_lm_section(tmp_path / "c.txt", wordclass=str(tmp_path / "vocab.txt")), max_sweeps=1)
    mb = _mb(src)
    rows = mb["labels"].as_sequences()
    # next words of '</s> a b </s>': a(2, class 1 [2,4)), b(1, class 0 [0,2)), </s>(0, class 0 [0,2))
    np.testing.assert_array_equal(rows[0], [[2, 1, 2, 4], [1, 0, 0, 2], [0, 0, 0, 2]])
    src.close()


def test_lm_word_classes_may_leave_a_class_empty(tmp_path):
    # Examples/SequenceToSequence/PennTreebank/Config/rnn.cntk writes its vocab.txt with
    # writeWordAndClass (nbrClass = $confClassSize$ = 50): CNTK's class assignment moves to class 1
    # before the first word when its share passes 1/50 (Source/ActionsLib/OtherActions.cpp:417-422),
    # so class 0 (and, with fewer words than classes, no other) holds no word; the reader reads it
    from cntkio.actions.wordclass import word_classes
    from collections import Counter
    words, _, ids = word_classes(Counter({"</s>": 16, "a": 7, "b": 5, "c": 4}), 10000, 50, "<unk>", cutoff=0)
    assert ids[0] >= 1                     # CNTK's rule leaves class 0 empty here
    (tmp_path / "c.txt").write_text("a b </s>\nb c </s>\n")
    (tmp_path / "vocab.txt").write_text("".join(f"{i}\t1\t{w}\t{k}\n" for i, (w, k) in enumerate(zip(words, ids))))
    src = build_reader(_lm_section(tmp_path / "c.txt", wordclass=str(tmp_path / "vocab.txt")), max_sweeps=1)
    rows = _mb(src)["labels"].as_sequences()
    index = {w: i for i, w in enumerate(words)}
    a = index["a"]
    assert rows[0][0].tolist() == [a, ids[a], a, a + 1]       # each word its own class: [a, a + 1)
    src.close()
    # a class whose words are not one index range is still an error
    (tmp_path / "vocab.txt").write_text("0\t5\t</s>\t0\n1\t3\tb\t1\n2\t2\ta\t0\n3\t1\tc\t1\n")
    with pytest.raises(ConfigError, match="the words of class 0 do not have consecutive indices"):
        build_reader(_lm_section(tmp_path / "c.txt", wordclass=str(tmp_path / "vocab.txt")), max_sweeps=1)


def test_lm_unk_and_missing_end_symbol(tmp_path, caplog):
    (tmp_path / "c.txt").write_text("a b </s>\na zz </s>\na b\n")
    (tmp_path / "vocab.txt").write_text("0\t5\t</s>\t0\n1\t3\tb\t0\n2\t2\ta\t0\n3\t1\t<unk>\t0\n")
    sec = _lm_section(tmp_path / "c.txt", wordclass=str(tmp_path / "vocab.txt"), unk="<unk>", maxErrors="1")
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        src = build_reader(sec, max_sweeps=1)
        mb = _mb(src)
    assert any("c.txt:3: the sentence does not end with '</s>'" in r.getMessage() for r in caplog.records)
    assert mb["labelIn"].num_sequences == 2
    assert _ids(mb["labelIn"])[1] == [[0], [2], [3]]          # </s> a <unk>
    src.close()
    # unk defaults to <unk>, as in CNTK (SequenceReader.cpp:1429): the same reading without it
    sec.pop("unk")
    src = build_reader(sec, max_sweeps=1)
    assert _ids(_mb(src)["labelIn"])[1] == [[0], [2], [3]]
    src.close()
    # a vocabulary without <unk>: the word is an error naming file, line and word
    (tmp_path / "vocab.txt").write_text("0\t5\t</s>\t0\n1\t3\tb\t0\n2\t2\ta\t0\n")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        src = build_reader(dict(sec, maxErrors="5"), max_sweeps=1)
        assert _mb(src)["labelIn"].num_sequences == 1
    assert any("c.txt:2: word 'zz' is not in the vocabulary" in r.getMessage() for r in caplog.records)
    src.close()


def test_lm_label_mapping_file_and_unk(tmp_path, caplog):
    # CNTK's LMSequenceReader: labelIn's labelMappingFile is the vocabulary (id = line), a word
    # outside it reads as unk (SequenceReader.cpp:78, 1489-1506); labelDim is the file's size
    (tmp_path / "c.txt").write_text("</s> the cat sat </s>\n</s> a zebra sat on the mat </s>\n")
    (tmp_path / "words.txt").write_text("</s>\nthe\ncat\nsat\n<unk>\n")
    sec = _lm_section(tmp_path / "c.txt", labelIn={"labelDim": "5", "labelMappingFile": str(tmp_path / "words.txt")},
                      labels={"labelType": "NextWord", "labelDim": "5"}, unk="<unk>")
    src = build_reader(sec, max_sweeps=1)
    mb = _mb(src)
    assert _ids(mb["labelIn"]) == [[[0], [1], [2], [3]], [[0], [4], [4], [3], [4], [1], [4]]]
    assert _ids(mb["labels"]) == [[[1], [2], [3], [0]], [[4], [4], [3], [4], [1], [4], [0]]]
    src.close()
    # unk left to its default: the same; a unk word the file lacks: a config error naming it
    sec.pop("unk")
    src = build_reader(sec, max_sweeps=1)
    assert _ids(_mb(src)["labelIn"])[1] == [[0], [4], [4], [3], [4], [1], [4]]
    src.close()
    with pytest.raises(ConfigError, match=r"unk: the unk word '<oov>' is not in the vocabulary"):
        build_reader(dict(sec, unk="<oov>"))
    # a mapping file that does not exist: the vocabulary comes from the corpus, with a warning
    missing = dict(sec, labelIn={"labelDim": "20", "labelMappingFile": str(tmp_path / "none.txt")},
                   labels={"labelType": "NextWord", "labelDim": "20"})
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        build_reader(missing).close()
    assert any("none.txt does not exist" in r.getMessage() for r in caplog.records)


def test_lm_label_dim_too_small(tmp_path):
    (tmp_path / "c.txt").write_text("\n".join(LM) + "\n")
    with pytest.raises(ConfigError, match=r"the vocabulary has 10 words, more than labelIn.labelDim = 5"):
        build_reader(_lm_section(tmp_path / "c.txt", labelIn={"labelDim": "5"}))


def test_lm_randomized_sweep_is_a_permutation_of_sentences(tmp_path):
    lines = [f"w{i % 7} w{(i * 3) % 5} </s>" for i in range(200)]
    (tmp_path / "c.txt").write_text("\n".join(lines) + "\n")
    plain = _ids(_mb(build_reader(_lm_section(tmp_path / "c.txt"), max_sweeps=1), 10**6)["labelIn"])
    rnd = _ids(_mb(build_reader(_lm_section(tmp_path / "c.txt", randomize="Auto"), max_sweeps=1), 10**6)["labelIn"])
    assert rnd != plain and sorted(rnd) == sorted(plain)


ATIS = """BOS O
i O
want O
to O
fly O
from O
boston B-fromloc.city_name
EOS O

BOS O
show O
cheap B-cost
flights O
EOS O
"""


@pytest.fixture
def lu(tmp_path):
    (tmp_path / "a.txt").write_text(ATIS)
    (tmp_path / "in.txt").write_text("BOS\nEOS\ni\nwant\nto\nfly\nfrom\nboston\nshow\nflights\n<unk>\n")
    (tmp_path / "out.txt").write_text("O\nB-fromloc.city_name\nB-cost\n")
    (tmp_path / "map.txt").write_text("boston <unk>\nshow show\n")
    return tmp_path


def _lu_section(d, **extra):
    sec = {"readerType": "LUSequenceReader", "file": str(d / "a.txt"), "randomize": "None", "unk": "<unk>",
           "labelIn": {"token": str(d / "in.txt"), "beginSequence": "BOS", "endSequence": "EOS"},
           "labels": {"token": str(d / "out.txt")}}
    sec.update(extra)
    return sec


def test_lu_context_windows_and_labels(lu):
    src = build_reader(_lu_section(lu, wordContext="0:1:2"), max_sweeps=1)
    assert reader_spec(_lu_section(lu)).stream_names == ["labelIn", "labels"]
    mb = _mb(src)
    vin = {w: i for i, w in enumerate((lu / "in.txt").read_text().split())}
    vout = {w: i for i, w in enumerate((lu / "out.txt").read_text().split())}
    sents = [[ln.split() for ln in block.strip().splitlines()] for block in ATIS.split("\n\n")]
    want_in, want_out = [], []
    for s in sents:
        words = [vin.get(w, vin["<unk>"]) for w, _ in s]
        T = len(words)
        want_in.append([[words[min(max(t + c, 0), T - 1)] + k * 11 for k, c in enumerate((0, 1, 2))] for t in range(T)])
        want_out.append([[vout[lab]] for _, lab in s])
    assert _ids(mb["labelIn"]) == want_in           # 'cheap' is not a token: <unk>
    assert _ids(mb["labels"]) == want_out
    assert mb["labelIn"].num_samples == 13
    src.close()


def test_lu_backward_context_and_word_map(lu):
    sec = _lu_section(lu, wordContext="0:-1", wordmap=str(lu / "map.txt"))
    sec["labelIn"] = dict(sec["labelIn"], usewordmap="true")
    mb = _mb(build_reader(sec, max_sweeps=1))
    first = _ids(mb["labelIn"])[0]
    assert first[0] == [0, 0 + 11]                  # BOS, and BOS again (clamped)
    assert first[6] == [10, 6 + 11]                 # boston -> <unk> by the word map, then 'from'


def test_lu_bad_input(lu, caplog):
    (lu / "a.txt").write_text("BOS O\ni O\nBOS O\nfly O\nEOS O\nstray O\nBOS O\nto B-nope\nEOS O\n")
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        src = build_reader(_lu_section(lu, maxErrors="5"), max_sweeps=1)
        mb = _mb(src)
    msgs = [r.getMessage() for r in caplog.records]
    assert any("a.txt:1: the sentence begun here has no 'EOS' before the next 'BOS'" in m for m in msgs)
    assert any("a.txt:6: 1 line(s) outside any 'BOS' ... 'EOS' sentence" in m for m in msgs)
    assert any("a.txt:8: label not in the output token file" in m for m in msgs)
    assert mb["labels"].num_sequences == 1
    (lu / "in.txt").write_text("BOS\nEOS\ni\nBOS\n")
    with pytest.raises(ConfigError, match=r"in.txt:4: token 'BOS' is listed twice \(first on line 1\)"):
        build_reader(_lu_section(lu))
    (lu / "a.txt").write_text("BOS O\ni x O\n")
    (lu / "in.txt").write_text("BOS\nEOS\ni\n<unk>\n")
    with pytest.raises(ConfigError, match=r"a.txt:2: expected 2 columns \(as the first line\), found 3"):
        build_reader(_lu_section(lu))


def test_spec_style_configs_run_from_the_command_line(lu, tmp_path, monkeypatch):
    (tmp_path / "c.txt").write_text("\n".join(LM) + "\n")
    (tmp_path / "run.cntk").write_text("""
command = lm:lu
lm = [
    action = dumpReader; outputFile = lm.txt; minibatchSize = 1; epochSize = 0; maxMinibatchesPerEpoch = 0
    reader = [
        readerType = LMSequenceReader
        randomize = None
        nbruttsineachrecurrentiter = 10
        file = c.txt
        labelIn = [ labelDim = 20; beginSequence = "</s>"; endSequence = "</s>" ]
        labels = [ labelType = NextWord; beginSequence = "O"; endSequence = "O"; labelDim = 20 ]
    ]
]
lu = [
    action = dumpReader; outputFile = lu.txt; minibatchSize = 1; epochSize = 0; maxMinibatchesPerEpoch = 0
    reader = [
        readerType = LUSequenceReader
        randomize = None
        wordContext = 0:1:2
        nbruttsineachrecurrentiter = 10
        unk = "<unk>"
        wordmap = map.txt
        file = a.txt
        labelIn = [ usewordmap = true; beginSequence = "BOS"; endSequence = "EOS"; token = in.txt ]
        labels = [ token = out.txt ]
    ]
]
""")
    monkeypatch.chdir(tmp_path)
    assert main(["configFile=run.cntk"]) == 0
    # nbruttsineachrecurrentiter = 10 and minibatchSize = 1: every minibatch holds one word of each
    # sentence of a group side by side -- the next sentence and those of its length after it
    # (CNTK's grouping): 7 words | 4 and 4 | 3 -- step t's input lines, then their labels'
    # (one-hot, 20 wide)
    lm = [[int(x) for x in ln.split()] for ln in (tmp_path / "lm.txt").read_text().splitlines()]
    vocab = _vocab(["</s> " + ln if not ln.startswith("</s>") else ln for ln in LM])
    eye = np.eye(20, dtype=int).tolist()
    sents = [ln.split() if ln.startswith("</s>") else ["</s>"] + ln.split() for ln in LM]
    groups, left = [], list(sents)
    while left:
        n = len(left[0])
        groups.append([w for w in left if len(w) == n][:10])
        left = [w for w in left if not any(w is g for g in groups[-1])]
    assert [len(g) for g in groups] == [1, 2, 1]
    want = []
    for g in groups:
        for t in range(len(g[0]) - 1):
            want += [eye[vocab[w[t]]] for w in g] + [eye[vocab[w[t + 1]]] for w in g]
    assert lm == want
    lu_rows = [[int(x) for x in ln.split()] for ln in (tmp_path / "lu.txt").read_text().splitlines()]
    # the 2 sentences (8 and 5 samples) one after the other (lengths differ): inputs 33 wide,
    # labels 3 wide
    assert [len(r) for r in lu_rows] == [33, 3] * 13
    first, labels = lu_rows[0:16:2], lu_rows[1:16:2]
    assert [r.index(1) for r in labels] == [0, 0, 0, 0, 0, 0, 1, 0]     # B-fromloc.city_name
    # the first input sample: BOS, i, want at offsets 0, 1, 2 (token ids 0, 2, 3 in blocks of 11)
    assert [j for j, v in enumerate(first[0]) if v] == [0, 11 + 2, 22 + 3]
    # 'boston' maps to <unk> (id 10) through the word map: the 7th sample's own word
    assert first[6][10] == 1


def test_lu_default_context_is_the_word_itself(lu):
    mb = _mb(build_reader(_lu_section(lu), max_sweeps=1))
    assert _ids(mb["labelIn"])[1] == [[0], [8], [10], [9], [1]]     # BOS show <unk> flights EOS


def test_the_specs_mnist_reader_section_as_written(tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    data = np.concatenate([rng.integers(0, 10, (50, 1)), rng.integers(0, 256, (50, 784))], 1)
    (tmp_path / "mnist_train.txt").write_text("".join(" ".join(map(str, r)) + "\n" for r in data))
    (tmp_path / "c.cntk").write_text("""
command = mnistTrain
mnistTrain = [
    action = dumpReader; outputFile = out.txt; minibatchSize = 50; epochSize = 50
    reader=[
        readerType=UCIFastReader
        randomize=None
        file=mnist_train.txt
        features=[
            dim=784
            start=1
        ]
        labels=[
            dim=1
            start=0
            labelDim=10
        ]
    ]
]
""")
    monkeypatch.chdir(tmp_path)
    assert main(["configFile=c.cntk"]) == 0
    rows = [[int(x) for x in ln.split()] for ln in (tmp_path / "out.txt").read_text().splitlines()]
    assert rows[:50] == data[:, 1:].tolist()
    assert rows[50:] == np.eye(10, dtype=int)[data[:, 0]].tolist()


def test_lm_reader_page_example_with_label_in_only(tmp_path):
    # CNTK's LMSequenceReader page: labelIn only, 'nbruttineachrecurrentiter' spelt so
    (tmp_path / "c.txt").write_text("\n".join(LM) + "\n")
    sec = {"readerType": "LMSequenceReader", "randomize": "false", "nbruttineachrecurrentiter": "10",
           "file": str(tmp_path / "c.txt"),
           "labelIn": {"labelDim": "20", "beginSequence": "</s>", "endSequence": "</s>"}}
    assert reader_spec(sec).stream_names == ["labelIn", "labels"]
    from cntkio.legacy import DataReader
    r = DataReader(sec)
    assert r.number_slices_in_each_recurrent_iter() == 10
    r.start_minibatch_loop(100, 0)
    m: dict = {}
    assert r.get_minibatch(m)
    # up to 10 sentences of one length side by side (CNTK's layout: row t * rows + s): the first
    # sentence (7 words) has no other of its length; then the two of 4 words, then the one of 3
    shapes = [m["labelIn"].shape]
    while r.get_minibatch(m):
        shapes.append(m["labelIn"].shape)
        assert m["labels"].shape == m["labelIn"].shape
    assert shapes == [(7, 20), (8, 20), (3, 20)]
    r.destroy()
