"""Every native entry point checks its ranges without arithmetic that can overflow first.

Each case is an input that got past a check before (issue 30: a sum or product of huge arguments
wrapped around, the check passed, and the copy read or wrote far outside its buffer, or a modulo
divided by zero): now the same call returns None (the caller's readable twin names the error) or
raises ValueError/IndexError, and nothing outside the buffers is touched. The CBF files are the
crafted 111-byte inputs themselves (tests/fuzz/regressions/), read through the deserializer.
"""
from __future__ import annotations

import numpy as np
import pytest

import paths
from cntkio.deserializers.cbf import layout
from cntkio.deserializers.cbf.deserializer import CNTKBinaryFormatDeserializer
from cntkio.errors import FormatError

_cbf = pytest.importorskip("cntkio._native._cbf")
_htk = pytest.importorskip("cntkio._native._htk")
_uci = pytest.importorskip("cntkio._native._uci")
_rand = pytest.importorskip("cntkio._native._rand")

REGRESSIONS = paths.TESTS / "fuzz" / "regressions"
BIG = 2**63 - 1


@pytest.mark.parametrize("name", [
    # 1 + 4294967294 samples of a float64 stream of dim 2^31 - 1: the C walk's next position
    # (p + 1 + count * words) wrapped to about -68 GB and the second block was read there (SIGSEGV)
    "cbf_walk_position_overflow.cbf",
    # the same counts in the other order: the NumPy placement guess overflowed into an IndexError
    "cbf_dense_guess_overflow.cbf",
])
def test_crafted_cbf_counts_are_a_format_error(name):
    path = REGRESSIONS / name
    assert path.stat().st_size == 111
    # the reader refuses the file when it opens it: 2^32 - 1 samples cannot fit in 12 words
    with pytest.raises(FormatError, match="sample counts do not fit in the chunk's bytes") as err:
        CNTKBinaryFormatDeserializer({"file": str(path)})
    assert str(path) in str(err.value)
    # and the walk itself, given the chunk, names the count instead of reading outside it
    data = path.read_bytes()
    header = layout.read_header(data, str(path))
    words = layout.chunk_words(data, header, 0, str(path))
    lengths = words[:2].astype(np.int64)
    st = header.streams[0]
    assert _cbf.walk(words, 2, 2, False, st.dim * st.value_words) is None
    with pytest.raises(FormatError, match="4294967294 samples run past the chunk's end"):
        layout.walk_chunk(words, header, 0, lengths, str(path))


def test_cbf_walk_refuses_huge_positions_and_sample_sizes():
    words = np.array([3, 1, 2, 3, 0, 0], np.uint32)
    for sparse in (False, True):
        assert _cbf.walk(words, BIG, 1, sparse, 1) is None          # p + 2 wrapped
        assert _cbf.walk(words, 7, 0, sparse, 1) is None             # pos past the chunk
        assert _cbf.walk(words, 0, 2**62, sparse, 1) is None         # no output arrays of 2^62
    assert _cbf.walk(words, 0, 1, False, 2**62) is None              # 3 * 2^62 wrapped to < total
    assert _cbf.walk(np.array([0, 1, 0, 0], np.uint32), 0, 1, True, BIG) is None   # nnz * (w + 1)
    assert _cbf.walk(np.array([0, 1, 5, 0, 7], np.uint32), 0, 1, True, BIG - 1) is None
    s, k, z, end = _cbf.walk(words, 0, 1, False, 1)
    assert (s.tolist(), k.tolist(), z, end) == ([0], [3], None, 4)


def test_cbf_sparse_fill_refuses_huge_positions_and_lengths():
    words = np.array([1, 1, 7, 0, 1], np.uint32)          # one sample, one non-zero (7 at row 0)
    assert _cbf.sparse_fill(words, BIG, np.array([1], np.int64), 1, 5) is None
    # lengths far beyond the chunk (their sum wrapped, sizing the outputs by the wrapped sum)
    got = _cbf.sparse_fill(words, 0, np.array([2**62], np.int64), 1, 5)
    assert got is not None and got[6].tolist() == [0, 1] and got[4].tolist() == [7]
    lengths = np.full(4, 2**62, np.int64)
    assert _cbf.sparse_fill(np.tile(words, 4), 0, lengths, 1, 5) is not None
    assert _cbf.sparse_fill(words, 0, np.full(2**3, 2**62, np.int64), 1, 5) is None   # 8 blocks in 5 words


def test_cbf_sparse_emit_refuses_indptr_past_the_values():
    out = np.zeros(64, np.uint32)
    vals = np.zeros(4, np.uint32)
    rows = np.zeros(4, np.uint32)
    starts = np.array([0], np.int64)
    offsets = np.array([0, 1], np.int64)
    # e1 * w wrapped below the value count: the copy read 2^62 values on
    for indptr in ([0, 2**62], [2**62, 2**62 + 1], [-(2**62), 1]):
        with pytest.raises(ValueError, match="indptr outside the values"):
            _cbf.sparse_emit(out, starts, vals, rows, np.array(indptr, np.int64), offsets, 2)
    with pytest.raises(ValueError, match="block outside out"):          # start + block wrapped
        _cbf.sparse_emit(out, np.array([BIG - 1], np.int64), vals, rows, np.array([0, 1], np.int64), offsets, 1)
    _cbf.sparse_emit(out, starts, vals, rows, np.array([0, 1], np.int64), offsets, 1)
    assert out[:5].tolist() == [1, 1, 0, 0, 1]


def test_htk_swap_copy_refuses_wrapping_ranges():
    dst = np.zeros(8, np.float32)
    src = np.arange(8, dtype=">f4")
    one = np.array([1], np.int64)
    for d_off, s_off, count in ((2**62, 0, 2**62), (0, 2**62, 2**62), (0, BIG - 3, 1), (BIG, 0, 1), (0, 0, 2**61)):
        with pytest.raises(ValueError, match="out of bounds"):
            _htk.swap_copy(dst, one * d_off, src, one * s_off, one * count, True)
    _htk.swap_copy(dst, one * 6, src, one * 24, one * 2, True)
    assert dst[6:].tolist() == [6.0, 7.0]


def test_htk_pread_swap_refuses_wrapping_ranges(tmp_path):
    f = tmp_path / "x.bin"
    f.write_bytes(np.arange(4, dtype=">f4").tobytes())
    dst = np.zeros(4, np.float32)
    one = np.array([1], np.int64)
    import os
    fd = os.open(f, os.O_RDONLY)
    try:
        for d_off, s_off, count in ((2**62, 0, 2**62), (0, BIG - 3, 1), (1, 0, BIG)):
            with pytest.raises(ValueError, match="out of bounds"):
                _htk.pread_swap(dst, one * d_off, fd, one * s_off, one * count, True)
        _htk.pread_swap(dst, one * 0, fd, one * 4, one * 3, True)
        assert dst.tolist() == [1.0, 2.0, 3.0, 0.0]
    finally:
        os.close(fd)


def test_htk_gather_rows_refuses_wrapping_rows_and_sizes():
    src = np.arange(40, dtype=np.float32)
    out = np.zeros((2, 4), np.float32)
    w = np.zeros(2, np.int64)
    for rows, row_floats in (([0, 2**61], 8), ([0, 2**62], 4), ([BIG, 0], 1)):
        with pytest.raises(ValueError, match="out of bounds"):
            _htk.gather_rows(out, [src], w, np.array(rows, np.int64), row_floats, 4)
    # n * width * 4 wrapped below the output's size
    with pytest.raises(ValueError, match="do not agree"):
        _htk.gather_rows(out, [src], w, np.zeros(2, np.int64), 0, 2**62 + 1)
    _htk.gather_rows(out, [src], w, np.array([0, 9], np.int64), 4, 4)
    assert out[1].tolist() == [36.0, 37.0, 38.0, 39.0]


def test_uci_parse_records_refuses_line_numbers_that_would_wrap():
    buf = b"1 2\n3 4\n"
    colmap = np.array([0, 1], np.int32)
    values = np.zeros((2, 2), np.float32)
    spans = np.zeros((2, 0, 2), np.int64)
    bad = np.zeros(2, np.uint8)
    with pytest.raises(ValueError, match="range"):
        _uci.parse_records(buf, 0, len(buf), BIG, colmap, (values,), spans, bad)
    with pytest.raises(ValueError, match="range"):        # outputs must be writable
        _uci.parse_records(buf, 0, len(buf), 1, colmap, (values,), spans, _readonly(bad))
    got, errors = _uci.parse_records(buf, 0, len(buf), 1, colmap, (values,), spans, bad)
    assert got == 2 and errors == [] and values.tolist() == [[1, 2], [3, 4]]


def _readonly(a):
    r = a.copy()
    r.flags.writeable = False
    return r


def test_rand_swaps_refuse_windows_that_would_divide_by_zero_or_draw_outside():
    owner = np.array([0, 0, 1, 1], np.int32)
    wb, we = np.array([0, 0], np.int32), np.array([2, 2], np.int32)
    # seq_start decreasing: a window of span 0 (a modulo by zero, SIGFPE) or beyond N
    for ss in ([0, 3, 2], [0, 2**40, 4]):
        with pytest.raises(ValueError, match="seq_start"):
            _rand.swap_sequences(0, owner, wb, we, np.array(ss, np.int64))
    # an owner that is not the chunk holding its position (the draws might never be accepted)
    with pytest.raises(ValueError, match="owner"):
        _rand.swap_sequences(0, np.array([0, 1, 1, 1], np.int32), wb, we, np.array([0, 2, 4], np.int64))
    perm, src = _rand.swap_sequences(0, owner, wb, we, np.array([0, 2, 4], np.int64))
    assert sorted(perm.tolist()) == [0, 1, 2, 3]


def test_rand_rolling_step_refuses_a_state_it_did_not_leave():
    wb, we, ss = np.array([0, 0], np.int32), np.array([2, 2], np.int32), np.array([0, 2, 4], np.int64)
    rings = (np.zeros(4, np.int64), np.zeros(4, np.int32), np.zeros(4, np.int32))
    for field, value in ((313, 2**64 - 5), (314, 2**63), (315, 9), (316, 2**31 + 7)):
        state = np.zeros(320, np.uint64)
        state[field] = value
        with pytest.raises(ValueError):
            _rand.rolling_swap_step(0, state, *rings, wb, we, ss, 2, np.empty(4, np.int32), np.empty(4, np.int32))
    # rings holding garbage where the step expects the positions an earlier step entered
    state = np.zeros(320, np.uint64)
    idx, src = np.empty(0, np.int32), np.empty(0, np.int32)
    _rand.rolling_swap_step(0, state, *rings, wb, we, ss, 1, idx, src)
    rings[1][:] = 77
    with pytest.raises(ValueError, match="rings"):
        _rand.rolling_swap_step(0, state, *rings, wb, we, ss, 2, np.empty(4, np.int32), np.empty(4, np.int32))


def test_copy_segments_shift_wraps_without_undefined_behaviour():
    src = np.array([2**62, -(2**62)], np.int64)
    dst = np.zeros(2, np.int64)
    _rand.copy_segments(src, np.array([0]), dst, np.array([0]), np.array([2]), np.array([2**62 + 2**61]))
    assert dst.tolist() == [2**61 - 2**63, 2**61]
    with pytest.raises(IndexError):
        _rand.copy_segments(src, np.array([1]), dst, np.array([0]), np.array([BIG]))
