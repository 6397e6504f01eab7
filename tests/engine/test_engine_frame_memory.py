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


def test_rolling_swaps_in_pieces_equal_the_whole_sweep(monkeypatch):
    """The C rolling swaps run a randomized chunk at a time (their state carried between calls)
    hand out exactly the positions of the one-call rolling swaps, over random windows."""
    monkeypatch.delenv("CNTKIO_PURE_PYTHON", raising=False)
    rng = np.random.default_rng(8)
    for _ in range(150):
        C = int(rng.integers(1, 30))
        counts, wb, we, starts = _windows(rng, C)
        seed = int(rng.integers(0, 2**63))
        index, source = R.swap_sequences_rolling(seed, wb, we, starts, np.int16)
        swaps = R._Swaps(seed, wb, we, starts, np.int16)
        got_i, got_s, at = [], [], 0
        while swaps.ct < C:
            lo, i, s = swaps.step()
            assert lo == at
            at += len(i)
            got_i.append(i)
            got_s.append(s)
        assert at == int(starts[-1])
        assert np.concatenate(got_i).tolist() == index.tolist()
        assert np.concatenate(got_s).tolist() == source.tolist()


def test_a_sweep_of_one_sample_sequences_holds_memory_by_the_window_not_the_sweep(monkeypatch):
    """2^20 positions in 200 chunks, window of 4 chunks: reading the whole sweep in minibatches
    (as the walker does) and asking every chunk's last use holds at most the window's rings and
    the columns kept around the cursor (under 1.5 MB), not 6 bytes a position (6.3 MB); the values
    are the whole-sweep order; a read behind the kept columns replays the sweep's swaps and gives
    the same values. The bound is the C swaps' (the pure-Python twin is the full-sweep
    reference), so the C path is asked for under CNTKIO_PURE_PYTHON too."""
    monkeypatch.delenv("CNTKIO_PURE_PYTHON", raising=False)
    n_chunks, per = 200, 2**20 // 200
    rand = R.BlockRandomizer([np.ones(per, np.int64)] * n_chunks, 4, False, seed=2)
    n = rand.num_sequences
    chunk, index, source = _reference_timeline([np.ones(per, np.int64)] * n_chunks, 4, False, 2, 0)
    last = np.full(n_chunks, -1, np.int64)
    last[chunk] = np.arange(n)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        tl = rand.timeline(0)
        assert isinstance(tl, R.StreamedTimeline)
        assert tl.index.dtype == np.int32 and tl.rchunk.dtype == np.int16
        assert isinstance(tl.start, R.Counting) and tl.start is rand.timeline(1).start  # starts: no table
        step, held_max, ok = 4096, 0, True
        for a in range(0, n, step):
            b = min(n, a + step)
            ok &= np.array_equal(tl.index[a:b], index[a:b]) and np.array_equal(tl.chunks(slice(a, b)), chunk[a:b])
            c = int(chunk[a])
            ok &= tl.last_use[c] == int(last[c])
            held_max = max(held_max, tl.held_bytes())
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert ok
    assert held_max <= 1_500_000 and tl.held_bytes() <= 1_500_000
    assert peak <= 2_500_000       # with the reference's comparisons above (a few 4096-entry arrays)
    assert tl.rchunk[5] == source[5] and tl.index[7] == index[7]        # behind the kept columns: replayed
    pos = np.array([n - 1, 3, 600_000, 3])
    assert tl.index[pos].tolist() == index[pos].tolist()
    assert np.asarray(tl.rchunk).tolist() == source.tolist()           # the whole sweep: a separate replay
    for a in range(0, n, 65536):      # a second pass over kept and replayed chunks: the count of kept stays true
        assert np.array_equal(tl.index[a:a + 65536], index[a:a + 65536])
        assert tl._kept == sum(len(p[0]) for p in tl._pieces.values()) <= tl._budget


def _whole_tables(tl, sweep: int, num_chunks: int):
    """A whole-sweep timeline of the same positions as the streamed timeline ``tl``."""
    return R._make_timeline(sweep, tl.order, np.asarray(tl.rchunk), np.asarray(tl.index), tl.length,
                            num_chunks, tl.rchunk_start, tl.start)


def _materialized(rand):
    """``rand`` (block-randomized or rolling window) with whole-sweep timelines (the tables the
    streamed one no longer keeps)."""
    streamed = type(rand)._compute
    rand._compute = lambda sweep: _whole_tables(streamed(rand, sweep), sweep, rand.num_chunks)
    return rand


def _in_order_tables(rand: R.NoRandomizer):
    """``rand`` with the whole-sweep tables of input order."""
    rand._tl = _whole_tables(rand._tl, 0, rand.num_chunks)
    return rand


@pytest.mark.parametrize("randomize", [True, False, "rolling"])
@pytest.mark.parametrize("W", [1, 2, 3])
def test_streamed_timeline_walks_workers_as_the_whole_sweep_tables(W, randomize):
    """Distributed workers over a frame-mode sweep that keeps no table (randomized: their positions
    found a randomized chunk at a time; in input order: every W-th position) take exactly what they
    take over whole-sweep tables: every minibatch's chunks, indices and flags, the chunks ahead,
    the next local sequence, over two sweeps."""
    from cntkio.engine.walk import TimelineWalker
    rng = np.random.default_rng(4)
    chunks = [np.ones(int(n), np.int64) for n in rng.integers(300, 2000, 17)]
    total = sum(len(c) for c in chunks)
    kind = {True: R.StreamedTimeline, False: R.InOrderTimeline, "rolling": R.RollingTimeline}[randomize]
    reference = {True: _materialized, False: _in_order_tables, "rolling": _materialized}[randomize]

    def walker():
        return TimelineWalker(chunks, randomize=bool(randomize), window=3000, sample_based=True, seed=9,
                              epoch_end=2 * total - 500, rolling=randomize == "rolling")
    for r in range(W):
        a, b = walker(), walker()
        reference(b.randomizer)
        assert isinstance(a.timeline(0), kind) and not isinstance(b.timeline(0), kind)
        ca = cb = (0, 0)
        calls = 0
        while calls < 2000:
            calls += 1
            budget = int(rng.integers(20, 600))
            pa, pb = a.walk(ca, budget, W, r), b.walk(cb, budget, W, r)
            sa, sb = a.selection([pa]), b.selection([pb])
            assert [x.tolist() for x in sa] == [x.tolist() for x in sb]
            assert (pa.end, pa.end_of_sweep, pa.reached_end) == (pb.end, pb.end_of_sweep, pb.reached_end)
            assert a.span(ca, W, r) == b.span(cb, W, r)
            assert a.next_local(ca, W, r) == b.next_local(cb, W, r)
            ca, cb = a.normalize(*pa.end), b.normalize(*pb.end)
            if pa.reached_end:
                break
        assert pa.reached_end and calls > 40


def test_in_order_sweep_of_one_sample_sequences_keeps_no_table():
    """Not randomized, one-sample sequences: the timeline finds a position's chunk and index from
    the chunks' first positions when read, and equals the tables it no longer keeps."""
    counts = [3, 0, 5, 1, 4]
    rand = R.NoRandomizer([np.ones(n, np.int64) for n in counts])
    tl = rand.timeline(2)
    assert isinstance(tl, R.InOrderTimeline) and tl.sweep == 2
    chunk = np.repeat(np.arange(5), counts)
    index = np.concatenate([np.arange(n) for n in counts])
    assert tl.chunk.tolist() == chunk.tolist() and np.asarray(tl.index).tolist() == index.tolist()
    assert tl.index[4:9].tolist() == index[4:9].tolist() and tl.chunks(slice(2, 10)).tolist() == chunk[2:10].tolist()
    assert tl.index[np.array([12, 0, 8])].tolist() == [3, 0, 0] and int(tl.rchunk[8]) == 3
    assert tl.first_use.tolist() == [0, -1, 3, 8, 9] and tl.last_use.tolist() == [2, -1, 7, 8, 12]
    assert tl.rchunk.dtype == np.int16 and tl.index.dtype == np.int32 and tl.num_sequences == 13
    with pytest.raises(IndexError):
        tl.index[13]


def test_stride_table_answers_as_the_array():
    for s, W, n in [(0, 2, 11), (1, 2, 11), (2, 3, 2), (2, 3, 3), (0, 4, 0)]:
        st, a = R.Stride(s, W, n), np.arange(s, n, W)
        assert len(st) == len(a) and st.tolist() == a.tolist() and st[1:3].tolist() == a[1:3].tolist()
        for v in range(-2, n + 3):
            for side in ("left", "right"):
                assert np.searchsorted(st, v, side=side) == np.searchsorted(a, v, side=side)
        assert np.searchsorted(st, [0, n]).tolist() == np.searchsorted(a, [0, n]).tolist()
        if len(a):
            assert st[-1] == a[-1] and st[np.array([0, -1])].tolist() == [a[0], a[-1]]


def _rolling_tables(chunk_counts, window, seed, sweep):
    """The rolling-window timeline's tables as the whole-sweep order gives them."""
    rstart = np.concatenate([[0], np.cumsum(chunk_counts)])
    order = R.rolling_order(seed + sweep, int(rstart[-1]), window // 2)
    chunk = np.searchsorted(rstart, order, side="right") - 1
    return chunk, order - rstart[chunk]


@pytest.mark.parametrize("window", [2, 7, 300, 5000, 10**6])
def test_rolling_timeline_read_piece_by_piece_is_the_whole_order(window):
    """The rolling-window timeline computed piece by piece as it is read equals the whole-sweep
    order: ranges, gathers, exact first and last uses, a read behind the kept pieces (the order
    run again), the whole column; the count of kept positions stays true and within its budget."""
    rng = np.random.default_rng(window)
    counts = rng.integers(0, 9000, 23)
    rand = R.RollingWindowRandomizer([np.ones(int(n), np.int64) for n in counts], window, seed=3)
    n = rand.num_sequences
    for sweep in (0, 2):
        tl = rand.timeline(sweep)
        assert isinstance(tl, R.RollingTimeline)
        chunk, index = _rolling_tables(counts, window, 3, sweep)
        for c in rng.permutation(len(counts))[:6].tolist():
            where = np.flatnonzero(chunk == c)
            assert (tl.first_use[c], tl.last_use[c]) == ((where[0], where[-1]) if len(where) else (-1, -1))
        for a in range(0, n, 3001):
            assert np.array_equal(tl.index[a:a + 3001], index[a:a + 3001])
            assert np.array_equal(tl.chunks(slice(a, a + 3001)), chunk[a:a + 3001])
        assert tl._kept == sum(len(p[0]) for p in tl._pieces.values()) <= max(tl._budget, n)
        pos = rng.integers(0, n, 50)
        assert tl.index[pos].tolist() == index[pos].tolist() and int(tl.rchunk[3]) == chunk[3]
        assert np.asarray(tl.rchunk).tolist() == chunk.tolist()
        assert tl.first_use.tolist() == [int(np.flatnonzero(chunk == c)[0]) if counts[c] else -1
                                         for c in range(len(counts))]


def test_rolling_timeline_holds_memory_by_the_window_not_the_sweep(monkeypatch):
    """2^21 frames, window 20000: reading the sweep as the walker does (ranges ahead, last uses)
    keeps at most the budget's pieces (about twice the half-window and four key ranges and chunks
    of positions), not 6 bytes a frame (12.6 MB)."""
    rand = R.RollingWindowRandomizer([np.ones(2**21 // 64, np.int64)] * 64, 20000, seed=1)
    tl = rand.timeline(0)
    n, held = rand.num_sequences, 0
    for a in range(0, n, 8192):
        tl.index[a:a + 8192]
        tl.last_use[int(tl.rchunk[a])]
        held = max(held, tl._kept)
    assert held <= tl._budget and 6 * held <= 3_000_000
