"""Frame mode's memory in the block randomizer: a sweep of one-sample sequences keeps 6 bytes a
position (and allocates little more while it is computed), and the memory-saving paths give
exactly the general order (the rolling in-window swaps, the timeline of one-sample sequences).
The composite's side: tests/deserializers/htk/test_htk_frame_memory.py."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from cntkio.engine import randomizer as R


def _owned(a: np.ndarray) -> int:
    """Bytes an array holds per element stored (a view of one value repeated holds none)."""
    return 0 if any(s == 0 for s in a.strides) and a.size > 1 else a.nbytes


def _windows(rng, C):
    counts = rng.integers(0, 40, C)
    counts[rng.integers(0, C)] += 1
    sample_based = bool(rng.integers(0, 2))
    window = int(rng.integers(0, 3 * int(counts.sum()))) if sample_based else int(rng.integers(0, C + 3))
    wb, we = R.chunk_windows(counts, window, sample_based)
    starts = np.zeros(C + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    return counts, wb, we, starts


@pytest.mark.parametrize("pure", [False, True])
@pytest.mark.parametrize("source_dtype", [np.int16, np.int32])
def test_rolling_swaps_equal_the_whole_sweep_swaps(source_dtype, pure, monkeypatch):
    """The C rolling swaps (and the pure-Python twin) against the C whole-sweep swaps."""
    rng = np.random.default_rng(3)
    for _ in range(200 if not pure else 40):
        C = int(rng.integers(1, 30))
        counts, wb, we, starts = _windows(rng, C)
        seed = int(rng.integers(0, 2**63))
        owner = np.repeat(np.arange(C, dtype=np.int32), counts)
        monkeypatch.delenv("CNTKIO_PURE_PYTHON", raising=False)
        perm, source = R.swap_sequences(seed, owner, wb, we, starts)
        if pure:
            monkeypatch.setenv("CNTKIO_PURE_PYTHON", "1")
        index, src = R.swap_sequences_rolling(seed, wb, we, starts, source_dtype)
        assert index.dtype == np.int32 and src.dtype == source_dtype
        assert np.array_equal(src, source)
        assert np.array_equal(index, perm - starts[source])


def test_rolling_swaps_refuse_windows_that_move_back():
    starts = np.array([0, 2, 4], np.int64)
    with pytest.raises(ValueError, match="never decreasing"):
        R.swap_sequences_rolling(1, np.array([0, 0], np.int32), np.array([2, 1], np.int32), starts)


def _reference_timeline(chunk_lengths, window, sample_based, seed, sweep):
    """The timeline as the general path builds it (whole-sweep permutation)."""
    counts = np.array([len(c) for c in chunk_lengths])
    sizes = np.array([int(np.sum(c)) for c in chunk_lengths])
    order = R.full_range_shuffle(seed + sweep, len(chunk_lengths))
    wb, we = R.chunk_windows(sizes[order], window, sample_based)
    starts = np.zeros(len(order) + 1, np.int64)
    np.cumsum(counts[order], out=starts[1:])
    owner = np.repeat(np.arange(len(order), dtype=np.int32), counts[order])
    perm, source = R.swap_sequences(seed + sweep, owner, wb, we, starts)
    return order[source], perm - starts[source], source


def test_counting_table_answers_as_the_array():
    c, a = R.Counting(0, 11), np.arange(11)
    for lo, hi in [(0, 11), (1, 11), (0, 5), (3, 3)]:
        for v in [-3, 0, 1, 4, 5, 10, 11, 2**40, 2.5]:
            for side in ("left", "right"):
                assert np.searchsorted(c[lo:hi], v, side=side) == np.searchsorted(a[lo:hi], v, side=side)
        assert c[lo:hi].tolist() == a[lo:hi].tolist() == np.asarray(c[lo:hi]).tolist()
    assert np.searchsorted(c[1:], [0, 3, 11], side="right").tolist() == [0, 3, 10]
    assert (c[-1], c[np.int64(4)], c[np.array([2, -1])].tolist(), len(c[5:])) == (10, 4, [2, 10], 6)
    with pytest.raises(IndexError):
        c[11]


@pytest.mark.parametrize("sample_based,window", [(True, 700), (False, 3), (True, 10**6)])
def test_unit_length_timeline_is_the_general_order(sample_based, window):
    rng = np.random.default_rng(5)
    counts = rng.integers(50, 400, 12)
    chunks = [np.ones(n, np.int64) for n in counts]
    rand = R.BlockRandomizer(chunks, window, sample_based, seed=11)
    assert rand.unit
    for sweep in (0, 3):
        tl = rand.timeline(sweep)
        chunk, index, source = _reference_timeline(chunks, window, sample_based, 11, sweep)
        assert tl.chunk.tolist() == chunk.tolist()
        assert tl.index.tolist() == index.tolist()
        assert tl.rchunk.tolist() == source.tolist()
        assert tl.length.tolist() == [1] * int(counts.sum())
        assert tl.start.tolist() == list(range(int(counts.sum()) + 1))
        for c in range(len(chunks)):
            where = np.flatnonzero(chunk == c)
            assert (tl.first_use[c], tl.last_use[c]) == (where[0], where[-1])


def test_a_sweep_of_one_sample_sequences_costs_six_bytes_a_position(monkeypatch):
    """2^20 positions in 40 chunks, window of 4 chunks: the timeline keeps 6 bytes a position (int32
    index, int16 source chunk; lengths one value, starts counted, not stored), and computing it
    allocates little more (the general path: about 40 bytes a position at its peak). The bound is
    the C rolling swap's (the pure-Python twin is the full-sweep reference), so the C path is asked
    for under CNTKIO_PURE_PYTHON too."""
    monkeypatch.delenv("CNTKIO_PURE_PYTHON", raising=False)
    n_chunks, per = 40, 2**20 // 40
    rand = R.BlockRandomizer([np.ones(per, np.int64)] * n_chunks, 4, False, seed=2)
    n = rand.num_sequences
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        tl = rand.timeline(0)
        held, peak = (x - before for x in tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()
    assert tl.index.dtype == np.int32 and tl.rchunk.dtype == np.int16
    assert _owned(tl.index) + _owned(tl.rchunk) + _owned(tl.length) == 6 * n
    assert isinstance(tl.start, R.Counting) and tl.start is rand.timeline(1).start  # starts: no table
    assert held <= 6 * n + 64 * 1024
    assert peak <= 6 * n + 2 * 1024 * 1024
