"""The C helper of the HTK feature deserializer (``cntkio._native._htk``) against its NumPy
reference: the same frames, with and without context, in both precisions, in frame mode
(random selections across chunks) and sequence mode; its bounds checks."""
from __future__ import annotations

import os

import numpy as np
import pytest
from htk_corpus import write_small

from cntkio._native import native
from cntkio.deserializers.htk.features import HTKFeatureDeserializerImpl

_htk = native("htk")
pytestmark = pytest.mark.skipif(_htk is None, reason="CNTKIO_PURE_PYTHON=1: no C helper to compare")


def _pair(folder, monkeypatch, context, frame_mode, precision="float"):
    monkeypatch.chdir(folder)
    cfg = {"type": "HTKFeatureDeserializer", "precision": precision,
           "input": {"f": {"dim": 2, "scpFile": "feat.scp", "contextWindow": f"{context[0]}:{context[1]}"}}}
    fast = HTKFeatureDeserializerImpl(cfg, frame_mode=frame_mode)
    ref = HTKFeatureDeserializerImpl(cfg, frame_mode=frame_mode)
    ref._native = None
    return fast, ref


@pytest.mark.parametrize("context", [(0, 0), (2, 3), (5, 5)])
@pytest.mark.parametrize("precision", ["float", "double"])
def test_native_equals_numpy(tmp_path, monkeypatch, context, precision):
    write_small(tmp_path)
    for frame_mode in (True, False):
        fast, ref = _pair(tmp_path, monkeypatch, context, frame_mode, precision)
        for c in range(len(fast.chunk_infos())):
            if not fast._from_files:     # else fast reads selections from the files, nothing ahead
                np.testing.assert_array_equal(fast.read_bytes(c), ref.read_bytes(c))
            a, b = fast.get_chunk(c), ref.get_chunk(c)
            np.testing.assert_array_equal(a.streams["f"].values, b.streams["f"].values)
        n = fast.chunk_infos()[0].num_sequences
        rng = np.random.default_rng(3)
        idx = rng.permutation(n)
        chunks = np.zeros(n, np.int64)
        raw_f, raw_r = {0: fast.read_bytes(0)}, {0: ref.read_bytes(0)}
        x = fast.read_sequences(raw_f, chunks, idx).streams["f"]
        y = ref.read_sequences(raw_r, chunks, idx).streams["f"]
        assert x.values.dtype == np.dtype(np.float64 if precision == "double" else np.float32)
        np.testing.assert_array_equal(x.values, y.values)
        np.testing.assert_array_equal(x.offsets, y.offsets)


def test_frames_are_the_files_values_with_edges_repeated(tmp_path, monkeypatch):
    """Corpus "small": frame t of utterance u is [u, t]; with context (1, 1) frame 0 of u0 is
    [f0 f0 f1] and its last frame [f5 f6 f6]."""
    write_small(tmp_path)
    fast, _ = _pair(tmp_path, monkeypatch, (1, 1), True)
    v = fast.get_chunk(0).streams["f"].values
    assert v[0].tolist() == [0, 0, 0, 0, 0, 1]
    assert v[6].tolist() == [0, 5, 0, 6, 0, 6]


def test_swap_copy_and_gather_rows_check_bounds():
    src = np.arange(8, dtype=">f4")
    out = np.zeros(4, np.float32)
    _htk.swap_copy(out, np.array([0], np.int64), src, np.array([8], np.int64), np.array([4], np.int64), True)
    assert out.tolist() == [2, 3, 4, 5]
    with pytest.raises(ValueError, match="out of bounds"):
        _htk.swap_copy(out, np.array([1], np.int64), src, np.array([0], np.int64), np.array([4], np.int64), True)
    with pytest.raises(ValueError, match="out of bounds"):
        _htk.swap_copy(out, np.array([0], np.int64), src, np.array([20], np.int64), np.array([4], np.int64), True)
    chunk = np.arange(10, dtype=np.float32)
    rows = np.zeros((2, 3), np.float32)
    _htk.gather_rows(rows, [chunk], np.array([0, 0], np.int64), np.array([3, 1], np.int64), 2, 3)
    assert rows.tolist() == [[6, 7, 8], [2, 3, 4]]
    with pytest.raises(ValueError, match="out of bounds"):
        _htk.gather_rows(rows, [chunk], np.array([0, 0], np.int64), np.array([4, 0], np.int64), 2, 3)
    with pytest.raises(ValueError, match="out of bounds"):
        _htk.gather_rows(rows, [chunk], np.array([1, 0], np.int64), np.array([0, 0], np.int64), 2, 3)


def test_sequence_mode_without_context_reads_the_files(tmp_path, monkeypatch):
    """Sequence mode, float, no context: nothing is copied ahead (``read_bytes`` holds no frames)
    and a selection across both archives, in any order and with repeats, is read straight from
    the files: utterance u's frame t is [u, t]."""
    write_small(tmp_path)
    fast, _ = _pair(tmp_path, monkeypatch, (0, 0), False)
    assert fast._from_files
    raw = {0: fast.read_bytes(0)}
    assert not isinstance(raw[0], np.ndarray)
    idx = np.array([4, 0, 1, 2, 3, 0], np.int64)          # u4 (b.htk), u0..u3 (a, a, a, b), u0 again
    got = fast.read_sequences(raw, np.zeros(len(idx), np.int64), idx).streams["f"]
    lengths = fast.sequence_infos(0).lengths
    want = np.concatenate([np.stack([np.full(lengths[u], u), np.arange(lengths[u])], 1) for u in idx])
    np.testing.assert_array_equal(got.values, want)
    assert got.values.dtype == np.float32
    fast.close()


def test_pread_swap_runs_bounds_and_short_files(tmp_path):
    """pread_swap: consecutive ranges read as one run, others apart, big-endian swapped (or not);
    a range beyond dst is a ValueError, one beyond the end of the file an OSError."""
    path = tmp_path / "x.bin"
    path.write_bytes(np.arange(16, dtype=">f4").tobytes())
    out = np.zeros(8, np.float32)
    fd = os.open(path, os.O_RDONLY)
    try:
        # file floats 2-3 and 4-5 follow each other in file and out (one run); 12-13 apart
        _htk.pread_swap(out, np.array([0, 2, 6], np.int64), fd, np.array([8, 16, 48], np.int64),
                        np.array([2, 2, 2], np.int64), True)
        assert out.tolist() == [2, 3, 4, 5, 0, 0, 12, 13]
        native_order = np.zeros(2, np.float32)
        _htk.pread_swap(native_order, np.array([0], np.int64), fd, np.array([0], np.int64),
                        np.array([2], np.int64), False)
        assert native_order.view(">f4").tolist() == [0, 1]
        with pytest.raises(ValueError, match="out of bounds"):
            _htk.pread_swap(out, np.array([7], np.int64), fd, np.array([0], np.int64), np.array([2], np.int64), True)
        with pytest.raises(OSError, match="ends before byte 64"):
            _htk.pread_swap(out, np.array([0], np.int64), fd, np.array([56], np.int64), np.array([4], np.int64), True)
    finally:
        os.close(fd)


def test_sequence_mode_file_cut_after_indexing_names_the_file(tmp_path, monkeypatch):
    """An archive cut short after the corpus was indexed: reading its utterances is a FormatError
    naming the file (not garbage, not a crash)."""
    from cntkio.errors import FormatError
    write_small(tmp_path)
    fast, _ = _pair(tmp_path, monkeypatch, (0, 0), False)
    raw = {0: fast.read_bytes(0)}
    with open(tmp_path / "b.htk", "r+b") as f:
        f.truncate(20)
    with pytest.raises(FormatError, match=r"b\.htk.*reading frames failed"):
        fast.read_sequences(raw, np.zeros(2, np.int64), np.array([0, 4], np.int64))   # u4: b.htk[1,5]
    fast.close()


def test_gather_u16_reads_several_buffers_and_checks_bounds():
    a = np.array([7, 8, 65535], np.uint16)
    b = np.array([1, 2], np.uint16)
    out = np.zeros(4, np.int64)
    _htk.gather_u16(out, [a, b], np.array([0, 1, 0, 1], np.int64), np.array([2, 0, 0, 1], np.int64))
    assert out.tolist() == [65535, 1, 7, 2]
    with pytest.raises(ValueError, match="out of bounds"):
        _htk.gather_u16(out, [a, b], np.array([0, 1, 0, 1], np.int64), np.array([0, 2, 0, 0], np.int64))
    with pytest.raises(ValueError, match="out of bounds"):
        _htk.gather_u16(out, [a, b], np.array([0, 2, 0, 0], np.int64), np.array([0, 0, 0, 0], np.int64))
    with pytest.raises(ValueError, match="do not agree"):
        _htk.gather_u16(np.zeros(3, np.int64), [a], np.zeros(4, np.int64), np.zeros(4, np.int64))


def test_frame_mode_selection_across_chunks_finds_each_frames_utterance(tmp_path, monkeypatch):
    """Corpus "big" (4 chunks, 1-dim frames holding the global frame number): a random frame-mode
    selection spanning every chunk gets, for each frame, its utterance's key, its frame number in
    the utterance and its feature and label, the same with the chunks' frame maps looked up in C,
    looked up by NumPy (CNTKIO_PURE_PYTHON=1), and without maps (a binary search)."""
    from htk_corpus import STATES, write_big

    from cntkio.deserializers.htk.labels import HTKMLFDeserializerImpl
    from cntkio.deserializers.htk.text import hash_names

    big = write_big(tmp_path)
    monkeypatch.chdir(tmp_path)
    feats = HTKFeatureDeserializerImpl({"type": "HTKFeatureDeserializer", "input": {"f": {
        "dim": 3, "scpFile": "big.scp", "contextWindow": "1:1"}}}, frame_mode=True)
    labels = HTKMLFDeserializerImpl({"type": "HTKMLFDeserializer", "input": {"l": {
        "dim": len(STATES), "mlfFile": "big.mlf", "labelMappingFile": "states.list"}}}, frame_mode=True)
    infos = feats.chunk_infos()
    assert len(infos) == 4
    rng = np.random.default_rng(5)
    chunks = rng.integers(0, len(infos), 5000)
    idx = np.array([rng.integers(0, infos[c].num_samples) for c in chunks.tolist()], np.int64)
    lens = big["lengths"]
    offsets = np.concatenate([[0], np.cumsum(lens)])
    chunk_first = np.concatenate([[0], np.cumsum([i.num_samples for i in infos])])
    g = chunk_first[chunks] + idx                               # the global frame number
    utt = np.searchsorted(offsets, g, side="right") - 1
    frame = g - offsets[utt]
    left = np.where(frame > 0, g - 1, g)                        # edges repeated
    right = np.where(frame < lens[utt] - 1, g + 1, g)
    expect_keys = hash_names([f"utt{u:03d}" for u in utt.tolist()])
    expect_labels = utt % len(STATES)

    def read(with_maps):
        fr = {c: feats.read_bytes(c) for c in range(len(infos))}
        lr = {c: labels.read_bytes(c) for c in range(len(infos))}
        if not with_maps:
            fr = {c: np.asarray(r) for c, r in fr.items()}
            lr = {c: r[:2] for c, r in lr.items()}
        return feats.read_sequences(fr, chunks, idx), labels.read_sequences(lr, chunks, idx)

    for pure, with_maps in ((False, True), (True, True), (False, False)):
        if pure:
            monkeypatch.setenv("CNTKIO_PURE_PYTHON", "1")
        else:
            monkeypatch.delenv("CNTKIO_PURE_PYTHON", raising=False)
        f, lab = read(with_maps)
        for d in (f, lab):
            assert d.sequences.keys["utt"].tolist() == expect_keys.tolist()
            assert d.sequences.keys["frame"].tolist() == frame.tolist()
        np.testing.assert_array_equal(f.streams["f"].values, np.stack([left, g, right], 1).astype(np.float32))
        assert lab.streams["l"].indices.tolist() == expect_labels.tolist()


def test_lookup_of_frame_keys_in_runs_and_shuffled(tmp_path, monkeypatch):
    """Frame keys joined by another deserializer: a chunk's keys in order (runs of an utterance's
    frames, searched once per run) and the same keys shuffled (searched one by one) find the same
    chunk and frame index; a key not in the corpus and a frame past its utterance's end find -1."""
    from htk_corpus import write_big

    write_big(tmp_path)
    monkeypatch.chdir(tmp_path)
    feats = HTKFeatureDeserializerImpl({"type": "HTKFeatureDeserializer", "input": {"f": {
        "dim": 1, "scpFile": "big.scp"}}}, frame_mode=True)
    keys = np.concatenate([feats.sequence_infos(c).keys for c in range(len(feats.chunk_infos()))])
    chunk, index = feats.lookup(keys)
    expect_chunk = np.repeat(np.arange(len(feats.chunk_infos())), [i.num_samples for i in feats.chunk_infos()])
    assert chunk.tolist() == expect_chunk.tolist()
    starts = np.concatenate([[0], np.cumsum([i.num_samples for i in feats.chunk_infos()])])
    assert index.tolist() == (np.arange(len(keys)) - starts[expect_chunk]).tolist()
    order = np.random.default_rng(1).permutation(len(keys))
    c2, i2 = feats.lookup(keys[order])
    assert c2.tolist() == chunk[order].tolist() and i2.tolist() == index[order].tolist()
    odd = keys[:4].copy()
    odd["utt"][1] = 12345                       # no such utterance
    odd["frame"][2] = 10 ** 6                   # past the utterance's end
    c3, i3 = feats.lookup(odd)
    assert c3.tolist() == [0, -1, -1, 0] and i3.tolist() == [0, -1, -1, 3]


def test_chunk_bounds_close_a_chunk_as_cntk():
    """A chunk closes before the utterance that finds it holding more than ``chunk_frames`` frames
    or ``max_utts`` utterances (CNTK 2.7's rule, here checked utterance by utterance against the
    chunk-at-a-time search), zero-length and over-long utterances included."""
    from cntkio.deserializers.htk.common import chunk_bounds

    def by_utterance(lengths, chunk_frames, max_utts):
        bounds, frames, count = [0], 0, 0
        for i, n in enumerate(lengths.tolist()):
            if count and (frames > chunk_frames or count >= max_utts):
                bounds.append(i)
                frames = count = 0
            frames += n
            count += 1
        return bounds + ([len(lengths)] if len(lengths) else [])

    assert chunk_bounds(np.array([5, 5, 5, 5]), 9, 10).tolist() == [0, 2, 4]
    assert chunk_bounds(np.array([20, 1, 1, 1, 1]), 9, 3).tolist() == [0, 1, 4, 5]
    assert chunk_bounds(np.zeros(0, np.int64)).tolist() == [0]
    rng = np.random.default_rng(2)
    for _ in range(500):
        lengths = rng.integers(0, int(rng.choice([3, 50, 1000])), int(rng.integers(0, 60)))
        cf, mu = int(rng.integers(0, 200)), int(rng.integers(1, 10))
        assert chunk_bounds(lengths, cf, mu).tolist() == by_utterance(lengths, cf, mu)
