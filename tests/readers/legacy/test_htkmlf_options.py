"""Options of the legacy HTKMLFReader / HTKDeserializers reader sections, as CNTK's readers took
them: readMethod and randomize rules, frameMode with truncated, nbrUttsInEachRecurrentIter (N
utterances side by side in truncated BPTT), numeric sequence keys, label-to-target mapping, and the
old reader's keys cntkio refuses or that have no effect."""
from __future__ import annotations

import logging
import os
import sys
import textwrap

import numpy as np
import pytest

import paths
from cntkio.config import parse_config
from cntkio.errors import ConfigError, DataError, FormatError
from cntkio.readers import build_reader, reader_spec

sys.path.insert(0, str(paths.TESTS / "deserializers" / "htk"))
import htk_corpus  # noqa: E402

SECTION = """
reader = [
    readerType = "{rtype}"
    verbosity = 0
    {extra}
    features = [ dim = 2; type = "real"; scpFile = "feat.scp" {fextra} ]
    labels = [ mlfFile = "a.mlf"; labelMappingFile = "states.list"; labelDim = 6; labelType = "category" {lextra} ]
]
"""


@pytest.fixture()
def small(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    c = htk_corpus.write_small(tmp_path)
    with open("a.mlf", "a") as f:                      # a.mlf holds u0..u2 only: add u3 and u4
        for u in (3, 4):
            n = htk_corpus.SMALL_LENGTHS[u]
            f.write(f'"*/{htk_corpus.SMALL_KEYS[u]}.lab"\n')
            for a, b, lab in htk_corpus.small_segments(u, n):
                f.write(f"{a * 100000} {b * 100000} {lab}\n")
            f.write(".\n")
    return c


def _sec(extra="", rtype="HTKMLFReader", fextra="", lextra=""):
    text = SECTION.format(rtype=rtype, extra=extra, fextra=fextra, lextra=lextra)
    return parse_config(textwrap.dedent(text))("reader")


@pytest.mark.parametrize("rtype,extra,message", [
    ("HTKMLFReader", "readMethod = none", "readMethod must be 'rollingWindow' or 'blockRandomize'"),
    ("HTKDeserializers", "readMethod = rollingWindow", "readMethod must be 'blockRandomize' or 'none'."),
    ("HTKMLFReader", "randomize = none", "'randomize' cannot be 'none' when 'readMethod' is 'blockRandomize'"),
    ("HTKDeserializers", "readMethod = blockRandomize; randomize = none", "'randomize' cannot be 'none'"),
    ("HTKMLFReader", "truncated = true", r"'Truncated' cannot be 'true' in frameMode"),
    ("HTKDeserializers", "truncated = true", "frameMode and truncated BPTT are mutually exclusive."),
    ("HTKMLFReader", "nbrUttsInEachRecurrentIter = 0", "nbrUttsInEachRecurrentIter cannot be less than 1."),
])
def test_cntks_rules_name_the_key(small, rtype, extra, message):
    with pytest.raises(ConfigError, match=message):
        reader_spec(_sec(extra, rtype))


def test_rolling_window_with_expand_to_utterance_is_cntks_error(small):
    two = SECTION.replace('features = [', 'zivec = [ dim = 2; scpFile = "feat.scp"; expandToUtterance = true ]\n'
                          '    features = [')
    text = two.format(rtype="HTKMLFReader", extra="readMethod = rollingWindow; randomize = none", fextra="",
                      lextra="")
    with pytest.raises(ConfigError, match="rollingWindow reader does not support expandToUtt"):
        reader_spec(parse_config(textwrap.dedent(text))("reader"))


def test_rolling_window_without_window_reads_in_order_and_n_has_no_effect_in_frame_mode(small):
    src = build_reader(_sec("readMethod = rollingWindow; randomize = none"), max_sweeps=1)
    mb = src.next_minibatch(10)
    feats = next(v for s, v in mb.items() if s.name == "features").asarray().reshape(-1, 2)
    assert feats[:, 0].tolist() == [0] * 7 + [1] * 3 and feats[:7, 1].tolist() == list(range(7))
    for rtype in ("HTKDeserializers", "HTKMLFReader"):
        spec = reader_spec(_sec("nbrUttsInEachRecurrentIter = 4", rtype))
        assert spec.source_kwargs["frame_mode"] and "parallel_sequences" not in spec.source_kwargs


def test_truncated_bptt_with_parallel_utterances(small):
    """frameMode = false, truncated = true, nbrUttsInEachRecurrentIter = 2 without truncationLength
    (CNTK's legacy form): every minibatch has 2 rows of minibatchSize frames; a row continues its
    utterance in the next minibatch and takes the next utterance when one ends."""
    spec = reader_spec(_sec("readMethod = rollingWindow; randomize = none; frameMode = false; truncated = true; "
                            "nbrUttsInEachRecurrentIter = 2"))
    assert spec.source_kwargs["parallel_sequences"] == 2 and spec.source_kwargs["truncation_length"] == 0
    src = build_reader(_sec("readMethod = rollingWindow; randomize = none; frameMode = false; truncated = true; "
                            "nbrUttsInEachRecurrentIter = 2"), max_sweeps=1)
    rows: list[list[list[float]]] = [[], []]
    while True:
        mb = src.next_minibatch(4)
        if not mb:
            break
        value = next(v for s, v in mb.items() if s.name == "features")
        assert value.num_sequences == 2 and value.shape[1] <= 4
        for r, seq in enumerate(value.as_sequences()):
            rows[r].extend(np.asarray(seq).reshape(-1, 2).tolist())
    # all 26 frames once, each utterance's frames in order within one row
    frames = sorted(tuple(f) for row in rows for f in row)
    assert len(frames) == sum(htk_corpus.SMALL_LENGTHS) and len(set(frames)) == len(frames)
    assert [f[1] for f in rows[0][:7]] == list(range(7)) and rows[0][0][0] == 0
    assert [f[1] for f in rows[1][:3]] == [0, 1, 2] and rows[1][0][0] == 1
    spec = reader_spec(_sec("frameMode = false; truncated = true"))
    assert spec.source_kwargs["parallel_sequences"] == 1          # CNTK's default nbrUtts = 1


def _numeric_corpus(d):
    htk_corpus.write_htk(os.path.join(d, "n.htk"), np.arange(10, dtype=np.float32).reshape(5, 2))
    with open(os.path.join(d, "n.scp"), "w") as f:
        f.write("007.mfc=n.htk[0,2]\n8.mfc=n.htk[3,4]\n")
    htk_corpus.write_mlf(os.path.join(d, "n.mlf"), {"7": [(0, 3, "s1")], "008": [(0, 2, "s2")]})


NUMERIC = """
reader = [
    readerType = "HTKMLFReader"; verbosity = 0; readMethod = rollingWindow; randomize = none
    {extra}
    features = [ dim = 2; scpFile = "{scp}" ]
    labels = [ mlfFile = "n.mlf"; labelMappingFile = "states.list"; labelDim = 6 ]
]
"""


def test_numeric_sequence_keys_join_007_with_7(small):
    _numeric_corpus(".")
    sec = parse_config(textwrap.dedent(NUMERIC.format(extra="useNumericSequenceKeys = true", scp="n.scp")))("reader")
    mb = build_reader(sec, max_sweeps=1).next_minibatch(10)
    labels = next(v for s, v in mb.items() if s.name == "labels")
    assert np.asarray(labels.as_csr().todense()).argmax(1).tolist() == [1, 1, 1, 2, 2]
    sec = parse_config(textwrap.dedent(NUMERIC.format(extra="", scp="n.scp")))("reader")
    # without numeric keys 007 and 7 differ: CNTK's reconcile error, as cntkio's DataError naming
    # each side's file, line (and MLF name) and frame
    with pytest.raises(DataError, match=r"Could not reconcile .*n\.scp:1 frame 0, .* n\.mlf:2 '7' frame 0"):
        build_reader(sec, max_sweeps=1).next_minibatch(10)
    sec = parse_config(textwrap.dedent(NUMERIC.format(extra="useNumericSequenceKeys = true; hashSequenceKeys = true",
                                                      scp="n.scp")))("reader")
    with pytest.raises(ConfigError, match="Hashing should not be used with numeric sequence keys"):
        build_reader(sec, max_sweeps=1)


def test_numeric_keys_in_the_deserializer_form_and_a_key_without_a_number(small):
    _numeric_corpus(".")
    text = """
    reader = [ useNumericSequenceKeys = true; randomize = false; frameMode = true; verbosity = 0
        deserializers = ([ type = "HTKFeatureDeserializer"; input = [ f = [ dim = 2; scpFile = "{scp}" ] ] ]:
                         [ type = "HTKMLFDeserializer"
                           input = [ l = [ dim = 6; mlfFile = "n.mlf"; labelMappingFile = "states.list" ] ] ]) ]
    """
    mb = build_reader(parse_config(textwrap.dedent(text.format(scp="n.scp")))("reader"), max_sweeps=1).next_minibatch(9)
    assert next(v for s, v in mb.items() if s.name == "f").num_samples == 5
    with open("bad.scp", "w") as f:
        f.write("7.mfc=n.htk[0,2]\nabc.mfc=n.htk[3,4]\n")
    with pytest.raises((FormatError, ConfigError), match=r"bad.scp:2.*Invalid numeric sequence id 'abc'"):
        build_reader(parse_config(textwrap.dedent(text.format(scp="bad.scp")))("reader"), max_sweeps=1)


def test_label_to_target_mapping(small):
    with open("targets.map", "w") as f:
        f.write("".join(f"s{i} {''.join('1' if j == i // 2 else '0' for j in range(3))}\n" for i in range(6)))
    src = build_reader(_sec("readMethod = rollingWindow; randomize = none",
                            lextra='; labelToTargetMappingFile = "targets.map"; targetDim = 3'), max_sweeps=1)
    mb = src.next_minibatch(26)
    labels = next(v for s, v in mb.items() if s.name == "labels")
    want = np.concatenate([htk_corpus.small_frame_labels(u, n) for u, n in enumerate(htk_corpus.SMALL_LENGTHS)])
    dense = np.asarray(labels.as_csr().todense())
    assert dense.shape == (26, 3) and dense.argmax(1).tolist() == (want // 2).tolist()


def test_multi_hot_label_to_target_mapping(small):
    """Rows with several 1s (and one of 0s): each frame's target is its label's row, as CNTK's
    HTKMLFReader copied it; sequence mode gives the same rows per utterance."""
    rows = ["110", "011", "000", "101", "111", "010"]          # s0..s5
    with open("targets.map", "w") as f:
        f.write("".join(f"s{i} {r}\n" for i, r in enumerate(rows)))
    table = np.array([[int(b) for b in r] for r in rows], np.float32)
    want = table[np.concatenate([htk_corpus.small_frame_labels(u, n) for u, n in enumerate(htk_corpus.SMALL_LENGTHS)])]
    for extra in ("readMethod = rollingWindow; randomize = none", "readMethod = rollingWindow; randomize = none; "
                  "frameMode = false"):
        src = build_reader(_sec(extra, lextra='; labelToTargetMappingFile = "targets.map"; targetDim = 3'),
                           max_sweeps=1)
        got = []
        while True:
            mb = src.next_minibatch(26)
            if not mb:
                break
            labels = next(v for s, v in mb.items() if s.name == "labels")
            got.extend(np.asarray(seq.todense()) for seq in labels.as_sequences())
        np.testing.assert_array_equal(np.concatenate(got), want)
    # randomized frame mode: every frame's features [u, t] arrive with the row of u's frame t
    src = build_reader(_sec("randomize = auto", lextra='; labelToTargetMappingFile = "targets.map"; targetDim = 3'),
                       max_sweeps=1)
    starts = np.concatenate([[0], np.cumsum(htk_corpus.SMALL_LENGTHS)])
    seen = 0
    while True:
        mb = src.next_minibatch(7)
        if not mb:
            break
        feats = next(v for s, v in mb.items() if s.name == "features").asarray().reshape(-1, 2).astype(np.int64)
        labels = np.asarray(next(v for s, v in mb.items() if s.name == "labels").as_csr().todense())
        np.testing.assert_array_equal(labels, want[starts[feats[:, 0]] + feats[:, 1]])
        seen += len(feats)
    assert seen == len(want)


@pytest.mark.parametrize("lines,tdim,message", [
    (["s0 100", "sX 100"] + [f"s{i} 001" for i in range(2, 6)], 3, "mismatch between labelMappingFile and"),
    ([f"s{i} 100" for i in range(6)], 4, "mismatch between targetDim and dim"),
    ([f"s{i} 1x0" for i in range(6)], 3, "only 1's or 0's"),
    ([f"s{i} 100" for i in range(5)], 3, "mismatch between lengths"),
])
def test_label_to_target_mapping_errors(small, lines, tdim, message):
    with open("targets.map", "w") as f:
        f.write("\n".join(lines) + "\n")
    with pytest.raises(Exception, match=message):
        build_reader(_sec("readMethod = rollingWindow; randomize = none",
                          lextra=f'; labelToTargetMappingFile = "targets.map"; targetDim = {tdim}'), max_sweeps=1)
    with pytest.raises(Exception, match="must specify targetDim"):
        build_reader(_sec("readMethod = rollingWindow; randomize = none",
                          lextra='; labelToTargetMappingFile = "targets.map"'), max_sweeps=1)


def test_add_energy_and_read_ahead_are_logged(small, caplog):
    with caplog.at_level(logging.INFO, logger="cntkio"):
        reader_spec(_sec("addEnergy = 2; readAhead = true"))
    assert "addEnergy = 2 has no effect" in caplog.text and "always loads ahead" in caplog.text


def test_expand_to_utterance_rules_of_cntks_reader(small):
    with open("iv.scp", "w") as f:
        f.write("u0.iv=a.htk[0,0]\n")
    # sections are taken in name order, as CNTK's config map held them: "afeats" comes first
    two = SECTION.replace('features = [', 'afeats = [ dim = 2; scpFile = "iv.scp"; expandToUtterance = true ]\n'
                          '    features = [')
    text = two.format(rtype="HTKMLFReader", extra="", fextra="", lextra="")
    with pytest.raises(ConfigError, match="first feature stream in the file must be frame-based"):
        reader_spec(parse_config(textwrap.dedent(text))("reader"))
    text = SECTION.format(rtype="HTKMLFReader", extra="", fextra="; expandToUtterance = true; contextWindow = 3",
                          lextra="")
    with pytest.raises(ConfigError, match="contextWindow expansion not permitted when expandToUtterance=true"):
        reader_spec(parse_config(textwrap.dedent(text))("reader"))


def test_randomize_auto_is_cntks_randomize_auto_window_and_full_mode_follows_cntks_readers(small):
    # ConfigHelper.cpp:186: randomize = auto is randomizeAuto, (2^64 - 1) >> 2 frames (every chunk's
    # window is the whole corpus); HTKMLFReader.cpp:794-805, 1022: minibatchMode = Full skips a short
    # frame-mode minibatch in CNTK's HTKMLFReader; in sequence mode and in HTKDeserializers (which
    # never read the key) it changes nothing
    spec = reader_spec(_sec())
    assert spec.source_kwargs["randomization_window_in_samples"] == 2**62 - 1
    assert spec.whole_dataset_window is None
    assert reader_spec(_sec("minibatchMode = full")).full_minibatches is True
    assert reader_spec(_sec("minibatchMode = full; frameMode = false")).full_minibatches is False
    assert reader_spec(_sec("minibatchMode = full", "HTKDeserializers")).full_minibatches is False


def test_distributed_htk_reading_takes_a_global_budget(small):
    # the readers' packer has no local timeline (SequencePacker.cpp:131 asks the randomizer for the
    # minibatch size in global samples): a call covers the next 6 frames of the global timeline and
    # the worker keeps its own. The small corpus is one chunk, and chunks go to workers whole
    # (BlockRandomizer: chunk % workers), so worker 0 takes all 6 frames of each call (a local
    # budget would give it 3) and worker 1 none
    from cntkio.readers import EpochReader
    got = []
    for r in range(2):
        er = EpochReader(build_reader(_sec()), minibatch_size=6, epoch_size=26, num_subsets=2, subset_num=r)
        got.append([({s.name: d for s, d in mb.items()}["features"].num_samples, er.position())
                    for mb in er.epoch(0)])
    assert got == [[(6, 6), (6, 12), (6, 18), (6, 24), (2, 26)], []]
