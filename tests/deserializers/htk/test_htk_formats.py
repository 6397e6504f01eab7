"""HTK files, SCP lists and MLF files: parsing, keys, and every bad input with its message."""
from __future__ import annotations

import struct
import time

import numpy as np
import pytest

import htk_corpus
from cntkio import MinibatchSource
from cntkio.deserializers.htk.htkfile import read_header
from cntkio.deserializers.htk.mlf import mlf_key, parse_mlf_files, read_state_list
from cntkio.deserializers.htk.scp import parse_scp_files
from cntkio.deserializers.htk.text import hash_names
from cntkio.errors import ConfigError, FormatError


def _features(scp, dim, **spec):
    return {"type": "HTKFeatureDeserializer", "input": {"features": {"dim": dim, "scpFile": scp, **spec}}}


def _labels(mlf, states, dim=6, **spec):
    return {"type": "HTKMLFDeserializer",
            "input": {"labels": {"dim": dim, "mlfFile": mlf, "labelMappingFile": states, **spec}}}


# --- HTK files ----------------------------------------------------------------------------------

def test_header_big_and_little_endian(tmp_path):
    f = np.arange(6, dtype=np.float32).reshape(3, 2)
    htk_corpus.write_htk(tmp_path / "be.htk", f, kind=6 | 0o100)
    h = read_header(str(tmp_path / "be.htk"))
    assert (h.num_frames, h.samp_period, h.samp_size, h.dim, h.byteorder, h.kind_name) == \
        (3, 100000, 8, 2, ">", "MFCC_E")
    with open(tmp_path / "le.htk", "wb") as fh:
        fh.write(struct.pack("<iihh", 3, 100000, 8, 9) + f.astype("<f4").tobytes())
    assert read_header(str(tmp_path / "le.htk")).byteorder == "<"


@pytest.mark.parametrize("kind,period,what", [(9 | 0o2000, 100000, "compressed"), (3, 100000, "unsupported feature kind"),
                                              (10, 100000, "unsupported feature kind"),
                                              (9, 0, "unsupported feature kind")])
def test_header_kinds_cntk_rejected(tmp_path, kind, period, what):
    htk_corpus.write_htk(tmp_path / "x.htk", np.zeros((2, 2), np.float32), kind=kind, period=period)
    with pytest.raises(FormatError) as e:
        read_header(str(tmp_path / "x.htk"))
    assert what in str(e.value) and e.value.file == str(tmp_path / "x.htk")


def test_truncated_file_names_sizes(tmp_path):
    htk_corpus.write_htk(tmp_path / "x.htk", np.zeros((4, 2), np.float32))
    data = (tmp_path / "x.htk").read_bytes()
    (tmp_path / "x.htk").write_bytes(data[:-5])
    with pytest.raises(FormatError) as e:
        read_header(str(tmp_path / "x.htk"))
    assert "truncated" in str(e.value) and e.value.expected.startswith("44 bytes") and e.value.found == "39 bytes"


# --- SCP --------------------------------------------------------------------------------------

def test_scp_forms_and_keys(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "l.scp").write_text("u0.x.mfc=a.htk[0,3]\r\nd/u1.mfc=a.htk[4,9]\n\n  \nplain.htk\n"
                                    "k2=b.htk\nsub/c.htk[2,5]\n...rel.htk[0,0]\n")
    idx = parse_scp_files([str(tmp_path / "l.scp")])
    assert idx.keys.tolist() == hash_names(["u0.x", "d/u1", "plain", "k2", "sub/c", "...rel"]).tolist()
    assert idx.starts.tolist() == [0, 4, -1, -1, 2, 0] and idx.ends.tolist() == [3, 9, -1, -1, 5, 0]
    assert idx.lines.tolist() == [1, 2, 5, 6, 7, 8]
    files = [idx.files[i] for i in idx.file_ids]
    assert files[0] == files[1] == str(tmp_path / "a.htk") and files[4] == str(tmp_path / "sub" / "c.htk")
    assert files[5] == str(tmp_path / "rel.htk")          # '...' = the SCP file's folder


def test_scp_prefix_path(tmp_path):
    (tmp_path / "l.scp").write_text("u0=a.htk[0,1]\nu1=/abs/b.htk[0,1]\n")
    idx = parse_scp_files([str(tmp_path / "l.scp")], prefix="/data/feats")
    assert [idx.files[i] for i in idx.file_ids] == ["/data/feats/a.htk", "/abs/b.htk"]


@pytest.mark.parametrize("line", ["u0=a.htk[1]", "u0=a.htk[a,3]", "u0=a.htk[1,]", "=a.htk[0,1]", "u0=[0,1]",
                                  "u0=a.htk[0,1"])
def test_scp_line_that_does_not_parse(tmp_path, line):
    (tmp_path / "l.scp").write_text(f"ok=a.htk[0,1]\n{line}\n")
    with pytest.raises(FormatError) as e:
        parse_scp_files([str(tmp_path / "l.scp")])
    assert (e.value.file, e.value.line) == (str(tmp_path / "l.scp"), 2) and line in e.value.found


def test_scp_of_a_million_lines_is_indexed_fast(tmp_path):
    n = 1_000_000
    lines = "\n".join(f"spk{i % 977}/utt{i:07d}.mfc=arch{i % 50}.htk[{i * 7},{i * 7 + 6}]" for i in range(n))
    (tmp_path / "big.scp").write_text(lines + "\n")
    t = time.process_time()           # CPU time: a guard against a quadratic index, not a benchmark,
    idx = parse_scp_files([str(tmp_path / "big.scp")])      # so the machine's other load does not count
    took = time.process_time() - t
    assert len(idx) == n and len(idx.files) == 50
    assert idx.starts[123456] == 123456 * 7 and idx.ends[-1] == (n - 1) * 7 + 6
    assert idx.keys[999] == hash_names(["spk999/utt0000999"])[0] if 999 < 977 else True
    assert idx.keys[5] == hash_names(["spk5/utt0000005"])[0]
    assert len(np.unique(idx.keys)) == n
    assert took < 15, f"indexing took {took:.1f} s of CPU"


def test_range_errors_name_the_scp_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    htk_corpus.write_htk(tmp_path / "a.htk", np.zeros((4, 2), np.float32))
    (tmp_path / "l.scp").write_text("u0=a.htk[0,1]\nu1=a.htk[2,1]\n")
    with pytest.raises(FormatError) as e:
        MinibatchSource(_features("l.scp", 2))
    assert "start frame 2 > end frame 1" in str(e.value) and e.value.line == 2
    (tmp_path / "l.scp").write_text("u0=a.htk[0,9]\n")
    with pytest.raises(FormatError) as e:
        MinibatchSource(_features("l.scp", 2))
    assert "exceeds archive's total number of frames 4" in str(e.value) and e.value.line == 1


@pytest.mark.parametrize("dim,context,message", [(3, None, "not multiple of input features"),
                                                 (4, None, "neighbor expansion of input features to '2'"),
                                                 (8, (1, 1), "does not match the feature files")])
def test_dim_that_does_not_match_the_files(tmp_path, monkeypatch, dim, context, message):
    monkeypatch.chdir(tmp_path)
    htk_corpus.write_htk(tmp_path / "a.htk", np.zeros((4, 2), np.float32))
    (tmp_path / "l.scp").write_text("u0=a.htk[0,3]\n")
    spec = {} if context is None else {"contextWindow": context}
    with pytest.raises(FormatError) as e:
        MinibatchSource(_features("l.scp", dim, **spec))
    assert message in str(e.value)


def test_context_window_config_forms(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    htk_corpus.write_htk(tmp_path / "a.htk", np.zeros((4, 2), np.float32))
    (tmp_path / "l.scp").write_text("u0=a.htk[0,3]\n")
    from cntkio.deserializers.htk import build_features
    assert build_features(_features("l.scp", "2", contextWindow="5")).context == (5, 5)
    assert build_features(_features("l.scp", "2", contextWindow="2:3")).dim == 12
    assert build_features(_features("l.scp", "22")).context == (5, 5)
    with pytest.raises(ConfigError):
        build_features(_features("l.scp", 2, contextWindow="1:2:3"))


def test_plain_paths_read_whole_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    htk_corpus.write_htk(tmp_path / "x.htk", np.arange(8, dtype=np.float32).reshape(4, 2))
    htk_corpus.write_htk(tmp_path / "y.htk", np.arange(4, dtype=np.float32).reshape(2, 2) + 100)
    (tmp_path / "l.scp").write_text("x.htk\ny.htk\n")
    src = MinibatchSource(_features("l.scp", 2), randomize=False, max_sweeps=1)
    mb = src.next_minibatch(100)
    seqs = mb[src.streams["features"]].as_sequences()
    assert [len(s) for s in seqs] == [4, 2] and seqs[1][1].tolist() == [102, 103]


def test_an_empty_feature_file_names_the_scp_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    htk_corpus.write_htk(tmp_path / "x.htk", np.zeros((2, 2), np.float32))
    htk_corpus.write_htk(tmp_path / "e.htk", np.zeros((0, 2), np.float32))
    (tmp_path / "l.scp").write_text("x.htk\ne.htk\n")
    with pytest.raises(FormatError) as e:
        MinibatchSource(_features("l.scp", 2))
    assert "no frames" in str(e.value) and e.value.line == 2


# --- MLF --------------------------------------------------------------------------------------

def test_mlf_keys():
    assert [mlf_key(n) for n in ["*/u0.lab", "u0.lab", "*/u0.rec", "*/u0", "*/d/u0.lab", "/x/y/u0.lab"]] == \
        ["u0", "u0", "u0", "u0", "d/u0", "/x/y/u0"]


def _mlf(tmp_path, text, states=("a", "b", "c")):
    (tmp_path / "l.mlf").write_text(text)
    (tmp_path / "s.list").write_text("\n".join(states) + "\n")
    st = read_state_list(str(tmp_path / "s.list"))
    return parse_mlf_files([str(tmp_path / "l.mlf")], st, 3)


def test_mlf_times_round_half_up_and_scores_are_ignored(tmp_path):
    idx = _mlf(tmp_path, '#!MLF!#\n"*/u0.lab"\n0 149999 a 1.0 x\n149999 250000 b\n250000 400000 c\n.\n')
    assert idx.seg_starts.tolist() == [0, 1, 3] and idx.seg_ends.tolist() == [1, 3, 4]
    assert idx.seg_labels.tolist() == [0, 1, 2] and idx.valid.tolist() == [True]


def test_mlf_header_required(tmp_path):
    with pytest.raises(FormatError) as e:
        _mlf(tmp_path, '"*/u0.lab"\n0 100000 a\n.\n')
    assert "Expected MLF header was not found." in str(e.value) and e.value.line == 1


def test_mlf_unknown_label_names_file_and_line(tmp_path):
    with pytest.raises(FormatError) as e:
        _mlf(tmp_path, '#!MLF!#\n"*/u0.lab"\n0 100000 a\n100000 200000 zz\n.\n')
    assert "frame range state 'zz' is not found in the statelist" in str(e.value) and e.value.line == 4


def test_mlf_label_index_beyond_dim(tmp_path):
    with pytest.raises(FormatError) as e:
        _mlf(tmp_path, '#!MLF!#\n"*/u0.lab"\n0 100000 d\n.\n', states=("a", "b", "c", "d"))
    assert "exceeds the model output dimension '3'" in str(e.value)


@pytest.mark.parametrize("line", ["0\t100000\ta", "a"])
def test_mlf_line_with_too_few_columns(tmp_path, line):
    with pytest.raises(FormatError) as e:
        _mlf(tmp_path, f'#!MLF!#\n"*/u0.lab"\n{line}\n.\n')
    assert "less than two columns" in str(e.value) and e.value.line == 3


def test_mlf_missing_dot_between_entries_is_an_error_at_the_end_drops(tmp_path):
    with pytest.raises(FormatError) as e:
        _mlf(tmp_path, '#!MLF!#\n"*/u0.lab"\n0 100000 a\n"*/u1.lab"\n0 100000 a\n.\n')
    assert e.value.line == 4
    idx = _mlf(tmp_path, '#!MLF!#\n"*/u0.lab"\n0 100000 a\n.\n"*/u1.lab"\n0 100000 a\n')
    assert idx.names == ["u0"]


def test_mlf_unquoted_entry_is_skipped(tmp_path):
    idx = _mlf(tmp_path, '#!MLF!#\nu9\n0 100000 a\n.\n"*/u0.lab"\n0 100000 b\n.\n')
    assert idx.names == ["u0"] and idx.seg_labels.tolist() == [1]


@pytest.mark.parametrize("body", ["100000 200000 a\n200000 300000 b", "0 100000 a\n200000 300000 b",
                                  "0 200000 a\n100000 300000 b"])
def test_mlf_unordered_or_gapped_segments_are_invalid_sequences(tmp_path, monkeypatch, body):
    monkeypatch.chdir(tmp_path)
    htk_corpus.write_htk(tmp_path / "a.htk", np.zeros((6, 2), np.float32))
    (tmp_path / "f.scp").write_text("u0=a.htk[0,2]\nu1=a.htk[3,5]\n")
    _mlf(tmp_path, f'#!MLF!#\n"*/u0.lab"\n0 300000 a\n.\n"*/u1.lab"\n{body}\n.\n')
    src = MinibatchSource([_features("f.scp", 2), _labels("l.mlf", "s.list", 3)], randomize=False, max_sweeps=1,
                          max_errors=0)
    with pytest.raises(RuntimeError, match="exceeded the specified maximum number '0'"):
        while src.next_minibatch(100):
            pass
    src = MinibatchSource([_features("f.scp", 2), _labels("l.mlf", "s.list", 3)], randomize=False, max_sweeps=1,
                          max_errors=1)
    got = 0
    while True:
        mb = src.next_minibatch(100)
        if not mb:
            break
        got += mb[src.streams["features"]].num_sequences
    assert got == 1


def test_keys_on_one_side_only_are_dropped_and_none_in_common_is_cntks_error(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    htk_corpus.write_htk(tmp_path / "a.htk", np.zeros((6, 2), np.float32))
    (tmp_path / "f.scp").write_text("u0=a.htk[0,2]\nu1=a.htk[3,5]\n")
    _mlf(tmp_path, '#!MLF!#\n"*/u1.lab"\n0 300000 a\n.\n"*/u7.lab"\n0 300000 a\n.\n')
    src = MinibatchSource([_features("f.scp", 2), _labels("l.mlf", "s.list", 3)], randomize=False, max_sweeps=1)
    mb = src.next_minibatch(100)
    assert mb[src.streams["features"]].num_sequences == 1
    assert "1 sequence(s) of the primary deserializer have no match" in caplog.text
    _mlf(tmp_path, '#!MLF!#\n"*/u7.lab"\n0 300000 a\n.\n')
    with pytest.raises(RuntimeError, match="Keys of logical sequences do not match"):
        MinibatchSource([_features("f.scp", 2), _labels("l.mlf", "s.list", 3)])


def test_phone_boundaries_and_frame_mode_are_exclusive(tmp_path):
    _mlf(tmp_path, '#!MLF!#\n"*/u1.lab"\n0 300000 a\n.\n')
    from cntkio.deserializers.htk import build_mlf
    with pytest.raises(ConfigError, match="frameMode and phoneBoundaries are mutually exclusive"):
        build_mlf(_labels(str(tmp_path / "l.mlf"), str(tmp_path / "s.list"), 3, phoneBoundaries=True),
                  frame_mode=True)


def test_multi_hot_targets_in_whole_chunks_and_selections(tmp_path, monkeypatch):
    """labelToTargetMappingFile rows with several 1s: a whole chunk and a selection in any order
    give each frame its label's row (rows of the 1s; none for a row of 0s), in both modes."""
    from cntkio.deserializers.htk.labels import HTKMLFDeserializerImpl
    monkeypatch.chdir(tmp_path)
    htk_corpus.write_small(tmp_path)
    rows = ["1100", "0110", "0000", "1011", "1111", "0001"]
    with open("t.map", "w") as f:
        f.write("".join(f"s{i} {r}\n" for i, r in enumerate(rows)))
    table = np.array([[int(b) for b in r] for r in rows], np.float32)
    cfg = {"type": "HTKMLFDeserializer", "input": {"l": {"dim": 6, "mlfFile": "a.mlf", "labelMappingFile": "states.list",
                                                         "labelToTargetMappingFile": "t.map", "targetDim": 4}}}
    lengths = htk_corpus.SMALL_LENGTHS[:3]         # a.mlf: u0..u2
    per_utt = [table[htk_corpus.small_frame_labels(u, n)] for u, n in enumerate(lengths)]

    def dense(stream, n):
        out = np.zeros((n, 4), np.float32)
        for i in range(n):
            out[i, stream.indices[stream.indptr[i]:stream.indptr[i + 1]]] = stream.data[stream.indptr[i]:stream.indptr[i + 1]]
        return out

    for frame_mode in (False, True):
        d = HTKMLFDeserializerImpl(cfg, frame_mode=frame_mode)
        assert d.stream_infos()[0].shape == (4,)
        st = d.get_chunk(0).streams["l"]
        np.testing.assert_array_equal(dense(st, sum(lengths)), np.concatenate(per_utt))
        raw = {0: d.read_bytes(0)}
        if frame_mode:
            idx = np.array([5, 0, 12, 3], np.int64)
            want = np.concatenate(per_utt)[idx]
        else:
            idx = np.array([2, 0], np.int64)
            want = np.concatenate([per_utt[2], per_utt[0]])
        st = d.read_sequences(raw, np.zeros(len(idx), np.int64), idx).streams["l"]
        np.testing.assert_array_equal(dense(st, len(want)), want)
