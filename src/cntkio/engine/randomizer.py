"""Sweep order over sequence descriptions: CNTK's BlockRandomizer and NoRandomizer.

A *timeline* is one sweep's delivery order: for every position, which sequence (chunk and index
in chunk), its length in samples, its source randomized chunk id (what distribution uses) and its
start inside the sweep. Timelines carry no data; the source loads chunks for them. The tables are
in :mod:`~cntkio.engine.timeline`; frame mode's timelines, which keep no table per position of
the sweep (computed as they are read), in :mod:`~cntkio.engine.streamed`.

The BlockRandomizer reproduces CNTK's order exactly (cntk-io-semantics 2.5, and the executable
model ``cntk_randomizer_reference.py``): per sweep ``k`` with ``seed = randomization_seed + k``, a
full-range mt19937_64 swap shuffle of the chunks, a chunk- or sample-based window per randomized
chunk, then in-window sequence swaps with the acceptance rule, drawn from a second mt19937_64 with
the same seed. The loops run in C (``cntkio._native._rand``, GIL released); the pure-Python twins
below are used under ``CNTKIO_PURE_PYTHON=1`` and are the readable statement of the rules.
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from .._native import native
from .streamed import InOrderTimeline, RollingTimeline, StreamedTimeline
from .timeline import _BLOCK, Counting, Stride, Timeline, _make_timeline, _small, _unit

__all__ = [
    "MT19937_64", "draws", "full_range_shuffle", "window_shuffle", "chunk_windows", "swap_sequences",
    "swap_sequences_rolling", "Counting", "Stride",
    "Timeline", "StreamedTimeline", "InOrderTimeline", "RollingTimeline", "NoRandomizer", "BlockRandomizer", "rolling_order", "RollingWindowRandomizer",
]

_M64 = (1 << 64) - 1


class MT19937_64:
    """``std::mt19937_64`` in pure Python (the reference for the C generator)."""

    def __init__(self, seed: int = 5489) -> None:
        mt = [0] * 312
        mt[0] = seed & _M64
        for i in range(1, 312):
            prev = mt[i - 1]
            mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) & _M64
        self.mt = mt
        self.idx = 312

    def _twist(self) -> None:
        mt = self.mt
        for i in range(312):
            x = (mt[i] & 0xFFFFFFFF80000000) | (mt[(i + 1) % 312] & 0x7FFFFFFF)
            xa = (x >> 1) ^ (0xB5026F5AA96619E9 if x & 1 else 0)
            mt[i] = mt[(i + 156) % 312] ^ xa
        self.idx = 0

    def __call__(self) -> int:
        if self.idx >= 312:
            self._twist()
        y = self.mt[self.idx]
        self.idx += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & _M64


def _rand():
    return native("rand")


def draws(seed: int, n: int) -> np.ndarray:
    """The first ``n`` outputs of ``mt19937_64(seed)`` as uint64."""
    mod = _rand()
    if mod is not None:
        return mod.draws(seed, n)
    rng = MT19937_64(seed)
    return np.array([rng() for _ in range(n)], dtype=np.uint64)


def full_range_shuffle(seed: int, n: int) -> np.ndarray:
    """``0..n-1`` shuffled as CNTK's ``RandomShuffleMT`` does: swap ``i`` with ``next64() % n``.

    This is the chunk shuffle of the BlockRandomizer and of the local-timeline randomizer. It is
    not Fisher-Yates: the swap partner is drawn over the whole range.
    """
    mod = _rand()
    if mod is not None:
        return mod.full_range_shuffle(seed, n)
    return _py_shuffle(seed, n, full_range=True)


def window_shuffle(seed: int, n: int) -> np.ndarray:
    """``0..n-1`` shuffled by swapping ``i`` with ``i + next64() % (n - i)`` (the local-timeline
    randomizer's in-window shuffle, cntk-io-semantics 2.7)."""
    mod = _rand()
    if mod is not None:
        return mod.window_shuffle(seed, n)
    return _py_shuffle(seed, n, full_range=False)


def _py_shuffle(seed: int, n: int, full_range: bool) -> np.ndarray:
    """The two shuffles without the C module: swap ``i`` with ``next64() % n`` (full range) or
    ``i + next64() % (n - i)``."""
    rng = MT19937_64(seed)
    order = list(range(n))
    for i in range(n):
        j = rng() % n if full_range else i + rng() % (n - i)
        order[i], order[j] = order[j], order[i]
    return np.array(order, dtype=np.int64)


def chunk_windows(sizes_in_samples: Sequence[int], window: int, sample_based: bool) -> tuple[np.ndarray, np.ndarray]:
    """The window ``[begin, end)`` of randomized chunk ids of every randomized chunk (2.5 step 2).

    ``sizes_in_samples`` are the chunks' sizes in randomized order. Chunk-based: centred window of
    ``window`` chunks clamped to the ends. Sample-based: built left to right with half-window
    ``window // 2`` samples on each side.
    """
    sizes = [int(s) for s in sizes_in_samples]
    n = len(sizes)
    begin = np.zeros(n, np.int32)
    end = np.zeros(n, np.int32)
    half = int(window) // 2
    if sample_based:
        starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).tolist() if n else [0]
        b, e = 0, 1
        for k in range(n):
            while starts[k] - starts[b] > half:
                b += 1
            b, e = min(b, k), max(e, k + 1)
            while e < n and starts[e] + sizes[e] - starts[k] < half:
                e += 1
            begin[k], end[k] = b, e
    else:
        size = max(int(window), 1)
        for k in range(n):
            b = k - half if k > half else 0
            e = b + size
            if e > n:
                e, b = n, (n - size if n > size else 0)
            begin[k], end[k] = b, e
    return begin, end


def swap_sequences(seed: int, owner: np.ndarray, win_begin: np.ndarray, win_end: np.ndarray,
                   seq_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The in-window sequence swaps (2.5 step 3).

    ``owner[t]``: randomized chunk of position ``t``; ``seq_start[c]``: first position of
    randomized chunk ``c`` (``C + 1`` entries). Returns ``(perm, source)``: the index, in
    randomized-chunk order, of the sequence delivered at ``t`` and its source randomized chunk.
    """
    owner = np.ascontiguousarray(owner, np.int32)
    win_begin = np.ascontiguousarray(win_begin, np.int32)
    win_end = np.ascontiguousarray(win_end, np.int32)
    seq_start = np.ascontiguousarray(seq_start, np.int64)
    mod = _rand()
    if mod is not None:
        return mod.swap_sequences(seed, owner, win_begin, win_end, seq_start)
    n = len(owner)
    perm = list(range(n))
    src = owner.tolist()
    own = src[:]
    wb, we, st = win_begin.tolist(), win_end.tolist(), seq_start.tolist()
    rng = MT19937_64(seed)
    for t in range(n):
        ct = own[t]
        tb, te = wb[ct], we[ct]
        p0, span = st[tb], st[te] - st[tb]
        while True:
            j = p0 + rng() % span
            cj = own[j]
            if not (tb <= src[j] < te):
                continue
            if not (wb[cj] <= src[t] < we[cj]):
                continue
            perm[t], perm[j] = perm[j], perm[t]
            src[t], src[j] = src[j], src[t]
            break
    return np.array(perm, np.int64), np.array(src, np.int32)


def swap_sequences_rolling(seed: int, win_begin: np.ndarray, win_end: np.ndarray, seq_start: np.ndarray,
                           source_dtype=np.int32) -> tuple[np.ndarray, np.ndarray]:
    """:func:`swap_sequences` as the timeline stores it: ``(index, source)`` with ``index[t]`` the
    index of the sequence delivered at ``t`` inside its source randomized chunk (int32) and
    ``source[t]`` that chunk (``source_dtype``: int16 up to 32767 chunks, or int32).

    The C version draws the same swaps in the same order but keeps only the positions of the
    current window (the windows' ends never decrease, so a position before the current window's
    first chunk is final): no table per position of the sweep besides the two it writes. The
    pure-Python twin runs :func:`swap_sequences` and converts.
    """
    win_begin = np.ascontiguousarray(win_begin, np.int32)
    win_end = np.ascontiguousarray(win_end, np.int32)
    seq_start = np.ascontiguousarray(seq_start, np.int64)
    n = int(seq_start[-1]) if len(seq_start) else 0
    mod = _rand()
    if mod is not None:
        index = np.empty(n, np.int32)
        source = np.empty(n, source_dtype)
        mod.swap_sequences_rolling(seed, win_begin, win_end, seq_start, index, source)
        return index, source
    c = len(win_begin)
    k = np.arange(c)
    bad = (win_begin < 0) | (win_end > c) | (win_begin >= win_end) | (k < win_begin) | (k >= win_end)
    bad[1:] |= (np.diff(win_begin) < 0) | (np.diff(win_end) < 0)
    if c and bad.any():  # the C version's checks, so both refuse the same windows
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(f"swap_sequences_rolling: window of chunk {j} is [{int(win_begin[j])}, {int(win_end[j])}); "
                         f"expected b <= chunk < e <= {c}, never decreasing")
    owner = np.repeat(np.arange(c, dtype=np.int32), np.diff(seq_start))
    perm, src = swap_sequences(seed, owner, win_begin, win_end, seq_start)
    return (perm - seq_start[src]).astype(np.int32), src.astype(source_dtype)


_STATE_WORDS = 320      # rolling_swap_step's state: the generator (313 words) and the window's cursors


class _Swaps:
    """:func:`swap_sequences_rolling` of one sweep run forward in pieces: :meth:`step` swaps the
    positions of the next randomized chunk and returns the positions that are then final. Holds the
    generator and the window's positions (three rings of a power of two at least the widest window,
    16 bytes an entry; freed at the sweep's end), never a table per position of the sweep. Under
    ``CNTKIO_PURE_PYTHON`` the full-sweep twin is run once and handed out in the same pieces."""

    def __init__(self, seed: int, win_begin: np.ndarray, win_end: np.ndarray, seq_start: np.ndarray,
                 source_dtype) -> None:
        self.seed = int(seed)
        self.wb = np.ascontiguousarray(win_begin, np.int32)
        self.we = np.ascontiguousarray(win_end, np.int32)
        self.ss = np.ascontiguousarray(seq_start, np.int64)
        self.c = len(self.wb)
        self.source_dtype = source_dtype
        span = int((self.ss[self.we] - self.ss[self.wb]).max()) if self.c else 0
        self.cap = 1 << max(0, span - 1).bit_length()
        self.reset()

    def fresh(self) -> "_Swaps":
        """The same swaps from the sweep's start, apart (a separate replay)."""
        return _Swaps(self.seed, self.wb, self.we, self.ss, self.source_dtype)

    def reset(self) -> None:
        """Back to the sweep's start (a replay draws the same swaps again)."""
        self.ct = 0          # the next randomized chunk to swap
        self.lo = 0          # positions before it are handed out
        self._state = self._rings = self._full = None

    def final_after(self, ct_end: int) -> int:
        """Positions before it are final once the chunks before ``ct_end`` are swapped."""
        return int(self.ss[self.wb[ct_end]]) if ct_end < self.c else int(self.ss[-1])

    def step(self) -> tuple[int, np.ndarray, np.ndarray]:
        """Swap the next randomized chunk: ``(first position, index, source)`` of the positions that
        became final (whole randomized chunks; possibly none)."""
        ct_end = self.ct + 1
        lo0, hi = self.lo, self.final_after(ct_end)
        mod = _rand()
        if mod is None:
            if self._full is None:
                self._full = swap_sequences_rolling(self.seed, self.wb, self.we, self.ss, self.source_dtype)
            index, source = self._full[0][lo0:hi].copy(), self._full[1][lo0:hi].copy()
        else:
            if self._state is None:
                self._state = np.zeros(_STATE_WORDS, np.uint64)
                self._rings = (np.empty(self.cap, np.int64), np.empty(self.cap, np.int32),
                               np.empty(self.cap, np.int32))
            index = np.empty(hi - lo0, np.int32)
            source = np.empty(hi - lo0, self.source_dtype)
            mod.rolling_swap_step(self.seed, self._state, *self._rings, self.wb, self.we, self.ss, ct_end,
                                  index, source)
        self.ct, self.lo = ct_end, hi
        if ct_end >= self.c:
            self._state = self._rings = self._full = None
        return lo0, index, source


class _Base:
    """Shared bookkeeping: per-chunk sequence lengths, sizes and a small timeline cache."""

    randomized = False

    def __init__(self, chunk_lengths: Sequence[np.ndarray]) -> None:
        self.chunk_lengths = [np.asarray(c, np.int64) for c in chunk_lengths]
        self.num_chunks = len(self.chunk_lengths)
        self.chunk_sizes = np.array([int(c.sum()) for c in self.chunk_lengths], np.int64)
        self.chunk_counts = np.array([len(c) for c in self.chunk_lengths], np.int64)
        self.num_sequences = int(self.chunk_counts.sum())
        self.sweep_samples = int(self.chunk_sizes.sum())
        #: every sequence is one sample long (frame mode): lengths and starts are not stored per sweep
        self.unit = all(bool((c == 1).all()) for c in self.chunk_lengths)
        self._unit_start = Counting(0, self.num_sequences + 1) if self.unit else None
        self._max_count = int(self.chunk_counts.max()) if self.num_chunks else 0
        self._lock = threading.Lock()
        self._cache: dict[int, Timeline] = {}

    def timeline(self, sweep: int) -> Timeline:
        """The timeline of sweep ``sweep`` (cached: the current and the next few sweeps)."""
        with self._lock:
            tl = self._cache.get(sweep)
            if tl is None:
                tl = self._compute(sweep)
                if len(self._cache) >= 3:
                    for old in sorted(self._cache, key=lambda s: abs(s - sweep), reverse=True)[:len(self._cache) - 2]:
                        del self._cache[old]
                self._cache[sweep] = tl
            return tl

    def _compute(self, sweep: int) -> Timeline:  # pragma: no cover - abstract
        raise NotImplementedError


class NoRandomizer(_Base):
    """Input order, sweep after sweep (``randomize=False``)."""

    def __init__(self, chunk_lengths: Sequence[np.ndarray]) -> None:
        super().__init__(chunk_lengths)
        C = self.num_chunks
        rstart = np.zeros(C + 1, np.int64)
        np.cumsum(self.chunk_counts, out=rstart[1:])
        self._tl: Timeline
        if self.unit and C:
            # frame mode: chunk and index of a position found when read (no table per position)
            self._tl = InOrderTimeline(0, rstart, self._unit_start,
                                       _small(np.zeros(0, np.int64), max(self._max_count, 2**16)).dtype,
                                       _small(np.zeros(0, np.int32), C).dtype)
            return
        chunk = _small(np.repeat(np.arange(C, dtype=np.int32), self.chunk_counts), C)
        index = _small(np.arange(self.num_sequences, dtype=np.int64) - np.repeat(rstart[:-1], self.chunk_counts),
                       max(self._max_count, 2**16))
        if self.unit:
            length = _unit(self.num_sequences)
        else:
            length = np.concatenate(self.chunk_lengths) if self.chunk_lengths else np.zeros(0, np.int64)
        self._tl = _make_timeline(0, np.arange(C, dtype=np.int32), chunk, index, length, C, rstart,
                                  self._unit_start)

    def _compute(self, sweep: int) -> Timeline:
        tl = self._tl
        if isinstance(tl, InOrderTimeline):
            return InOrderTimeline(sweep, tl.rchunk_start, tl.start, tl.index.dtype, tl.rchunk.dtype)
        return Timeline(sweep, tl.order, tl.rchunk, tl.index, tl.length, tl.start, tl.first_use, tl.last_use,
                        tl.rchunk_start)


class BlockRandomizer(_Base):
    """CNTK's block randomizer: chunk shuffle, windows, in-window sequence swaps, per sweep.

    ``window`` is in chunks, or in samples when ``sample_based``; sweep ``k`` uses seed
    ``seed + k``. A chunk-based window of 0 behaves as 1 (CNTK clamps it).
    """

    randomized = True

    def __init__(self, chunk_lengths: Sequence[np.ndarray], window: int, sample_based: bool, seed: int) -> None:
        super().__init__(chunk_lengths)
        self.window = int(window)
        self.sample_based = bool(sample_based)
        self.seed = int(seed)

    def chunk_order(self, sweep: int) -> np.ndarray:
        """Original chunk ids in randomized order for ``sweep``."""
        return full_range_shuffle(self.seed + sweep, self.num_chunks)

    def _compute(self, sweep: int) -> Timeline:
        seed = self.seed + sweep
        order = self.chunk_order(sweep)
        counts = self.chunk_counts[order]
        wb, we = chunk_windows(self.chunk_sizes[order], self.window, self.sample_based)
        seq_start = np.zeros(self.num_chunks + 1, np.int64)
        np.cumsum(counts, out=seq_start[1:])
        if self.unit and self._max_count <= np.iinfo(np.int32).max and self.num_chunks:
            # frame mode: the swaps run a randomized chunk at a time as the timeline is read (no
            # table per position of the sweep)
            swaps = _Swaps(seed, wb, we, seq_start, np.int16 if self.num_chunks <= 32767 else np.int32)
            return StreamedTimeline(sweep, order, seq_start, swaps, self._unit_start)
        owner = np.repeat(np.arange(self.num_chunks, dtype=np.int32), counts)
        perm, source = swap_sequences(seed, owner, wb, we, seq_start)
        del owner
        n = len(perm)
        # sequence number ``q`` in randomized-chunk order -> (index in its chunk, length); the
        # chunk is order[source] (Timeline.chunk). In blocks: the temporaries stay small.
        index = np.empty(n, np.int32 if max(self._max_count, 2**16) <= np.iinfo(np.int32).max else np.int64)
        for s in range(0, n, _BLOCK):
            e = min(n, s + _BLOCK)
            index[s:e] = perm[s:e] - seq_start[source[s:e]]
        if self.unit:
            length = _unit(n)
        else:
            lengths_in_order = (np.concatenate([self.chunk_lengths[o] for o in order])
                                if self.num_chunks else np.zeros(0, np.int64))
            length = lengths_in_order[perm]
            del lengths_in_order
        del perm
        return _make_timeline(sweep, order, _small(source, self.num_chunks), index, length, self.num_chunks,
                              seq_start, self._unit_start)


def _mix(seed: int, block: int) -> int:
    """A 64-bit seed for block ``block`` of a sweep seeded ``seed`` (splitmix64's finalizer)."""
    z = (int(seed) * 0x9E3779B97F4A7C15 + int(block) + 1) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def rolling_order(seed: int, n: int, half: int) -> np.ndarray:
    """cntkio's rolling-window frame order (``readMethod = rollingWindow``): ``order[t]`` is the
    corpus position of the frame delivered at ``t``.

    Every corpus position ``p`` gets the key ``p + r_p`` with ``r_p`` uniform in ``[0, half)``
    (``r_p``: the ``mt19937_64`` draws of ``p``'s block of positions, seeded from ``seed`` and the
    block number, modulo ``half``); frames are delivered by key, ties by position. Hence a frame is
    delivered less than ``half`` positions from where it stands in the corpus: ``|t - order[t]| <=
    half - 1`` (a frame ``half`` or more positions before ``p`` has a smaller key, one ``half`` or
    more after it a larger one). ``half >= n`` is a uniform shuffle of the whole sweep
    (:func:`window_shuffle`).
    """
    parts = list(_rolling_blocks(seed, n, half))
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _rolling_blocks(seed: int, n: int, half: int):
    """:func:`rolling_order` in consecutive pieces, built key range by key range of
    ``max(half, 65536)`` values: the temporaries hold at most two ranges' positions, whatever ``n``."""
    n, half = int(n), max(int(half), 1)
    if half >= n:
        if n:
            yield window_shuffle(seed, n)
        return
    if half == 1:
        for s in range(0, n, _BLOCK):
            yield np.arange(s, min(n, s + _BLOCK), dtype=np.int64)
        return
    step = max(half, _BLOCK)
    small = np.uint16 if step <= 1 << 16 else np.uint32     # a key's offset in its range (radix sort)
    blocks: dict[int, np.ndarray] = {}

    def offsets(lo: int, hi: int) -> np.ndarray:
        # r_p for p in [lo, hi), from the blocks of ``step`` positions they fall in
        parts = []
        for b in range(lo // step, (hi - 1) // step + 1):
            r = blocks.get(b)
            if r is None:
                m = min(step, n - b * step)
                r = (draws(_mix(seed, b), m) % np.uint64(half)).astype(np.int64)
                blocks[b] = r
            s = max(lo, b * step) - b * step
            parts.append(r[s:min(hi, (b + 1) * step) - b * step])
        for b in [b for b in blocks if b < lo // step]:
            del blocks[b]
        return np.concatenate(parts)

    done = 0
    for s in range(0, n + half, step):           # keys lie in [0, n + half - 1)
        lo, hi = max(0, s - half + 1), min(n, s + step)
        if lo >= hi:
            continue
        pos = np.arange(lo, hi, dtype=np.int64)
        key = pos + offsets(lo, hi)
        sel = (key >= s) & (key < s + step)
        pos = pos[sel]
        pos = pos[np.argsort((key[sel] - s).astype(small), kind="stable")]
        done += len(pos)
        yield pos
    assert done == n


class RollingWindowRandomizer(_Base):
    """cntkio's ``readMethod = rollingWindow``: frames (every sequence one sample long) in corpus
    order, each moved less than ``window // 2`` positions by :func:`rolling_order`, per sweep
    ``k`` with seed ``seed + k``. Chunks keep their corpus order; a chunk is live from its first
    to its last frame's position, so the loaded chunks are those within half a window of the
    current position. A window of at least twice the sweep is a uniform shuffle of the sweep.
    """

    randomized = True

    def __init__(self, chunk_lengths: Sequence[np.ndarray], window: int, seed: int) -> None:
        super().__init__(chunk_lengths)
        if not self.unit:
            raise ValueError("the rolling-window randomizer orders frames: every sequence must be one "
                             "sample long (frame mode)")
        self.window = int(window)
        self.seed = int(seed)

    def _compute(self, sweep: int) -> Timeline:
        C = self.num_chunks
        rstart = np.zeros(C + 1, np.int64)
        np.cumsum(self.chunk_counts, out=rstart[1:])
        n = self.num_sequences
        if C and n:
            # the order computed piece by piece as it is read (no table per position of the sweep)
            return RollingTimeline(sweep, self.seed + sweep, self.window // 2, rstart, self._unit_start,
                                   np.int16 if C <= 32767 else np.int32,
                                   np.int32 if self._max_count <= np.iinfo(np.int32).max else np.int64,
                                   _rolling_blocks)
        chunk = np.empty(n, np.int16 if C <= 32767 else np.int32)
        index = np.empty(n, np.int32 if self._max_count <= np.iinfo(np.int32).max else np.int64)
        t = 0
        for piece in _rolling_blocks(self.seed + sweep, n, self.window // 2):
            for s in range(0, len(piece), _BLOCK):    # in blocks: small temporaries
                p = piece[s:s + _BLOCK]
                c = np.searchsorted(rstart, p, side="right") - 1
                chunk[t:t + len(p)] = c
                index[t:t + len(p)] = p - rstart[c]
                t += len(p)
        return _make_timeline(sweep, np.arange(C, dtype=np.int32), chunk, index, _unit(len(index)), C, rstart,
                              self._unit_start)
