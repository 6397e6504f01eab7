"""Sweep order over sequence descriptions: CNTK's BlockRandomizer and NoRandomizer.

A *timeline* is one sweep's delivery order: for every position, which sequence (chunk and index
in chunk), its length in samples, its source randomized chunk id (what distribution uses) and its
start inside the sweep. Timelines carry no data; the source loads chunks for them.

The BlockRandomizer reproduces CNTK's order exactly (cntk-io-semantics 2.5, and the executable
model ``cntk_randomizer_reference.py``): per sweep ``k`` with ``seed = randomization_seed + k``, a
full-range mt19937_64 swap shuffle of the chunks, a chunk- or sample-based window per randomized
chunk, then in-window sequence swaps with the acceptance rule, drawn from a second mt19937_64 with
the same seed. The loops run in C (``cntkio._native._rand``, GIL released); the pure-Python twins
below are used under ``CNTKIO_PURE_PYTHON=1`` and are the readable statement of the rules.
"""
from __future__ import annotations

import bisect
import threading
from typing import Sequence

import numpy as np

from .._native import native

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


#: positions handled at once where a sweep-long table is derived (bounds the temporaries)
_BLOCK = 1 << 16


def _unit(n: int) -> np.ndarray:
    """``n`` lengths of 1 as a read-only view of one value (no memory per position)."""
    return np.broadcast_to(np.ones(1, np.int64), (n,))


class Counting:
    """The integers ``lo .. lo + n - 1`` as a read-only table that holds no memory: the starts of a
    sweep of one-sample sequences (position ``i`` starts at sample ``i``). Indexing, step-1
    slices (another ``Counting``), index arrays, ``len``, ``searchsorted`` (so
    ``np.searchsorted`` works on it), ``tolist`` and conversion to an array."""

    __slots__ = ("lo", "n")
    dtype = np.dtype(np.int64)
    ndim = 1

    def __init__(self, lo: int, n: int) -> None:
        self.lo = int(lo)
        self.n = max(0, int(n))

    @property
    def shape(self) -> tuple[int]:
        return (self.n,)

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        return iter(range(self.lo, self.lo + self.n))

    def __getitem__(self, key):
        if isinstance(key, slice):
            a, b, step = key.indices(self.n)
            if step != 1:
                return np.asarray(self)[key]
            return Counting(self.lo + a, b - a)
        if isinstance(key, (int, np.integer)):
            i = int(key)
            if i < 0:
                i += self.n
            if not 0 <= i < self.n:
                raise IndexError(f"index {int(key)} is out of bounds for a table of {self.n}")
            return np.int64(self.lo + i)
        idx = np.asarray(key)
        if idx.dtype == bool:
            return np.asarray(self)[idx]
        idx = idx.astype(np.int64)
        idx = np.where(idx < 0, idx + self.n, idx)
        if idx.size and (idx.min() < 0 or idx.max() >= self.n):
            raise IndexError(f"index out of bounds for a table of {self.n}")
        return idx + self.lo

    def searchsorted(self, v, side: str = "left", sorter=None):
        """Where ``v`` would be inserted to keep the order (as ``numpy.searchsorted``)."""
        if type(v) is int or isinstance(v, np.integer):
            # one integer (the walker's per-minibatch call): plain arithmetic, no array temporaries
            r = int(v) - self.lo + (side != "left")
            return np.intp(0 if r < 0 else (self.n if r > self.n else r))
        x = np.asarray(v)
        if x.dtype.kind in "iub":
            d = x.astype(np.int64) - self.lo
            r = d if side == "left" else d + 1
        else:
            d = x.astype(np.float64) - self.lo
            r = np.ceil(d) if side == "left" else np.floor(d) + 1
        r = np.clip(r, 0, self.n).astype(np.intp)
        return r[()] if r.ndim == 0 else r

    def __array__(self, dtype=None, copy=None):
        a = np.arange(self.lo, self.lo + self.n, dtype=np.int64)
        return a if dtype is None else a.astype(dtype)

    def tolist(self) -> list[int]:
        return list(range(self.lo, self.lo + self.n))


class Stride:
    """The integers ``s, s + W, s + 2W, ...`` below ``n`` as a read-only table that holds no memory:
    a distributed worker's positions in a sweep in input order (position ``p`` is worker
    ``(p + offset) % W``'s). Indexing, step-1 slices, index arrays, ``len`` and ``searchsorted``."""

    __slots__ = ("s", "W", "n", "count")
    dtype = np.dtype(np.int64)
    ndim = 1

    def __init__(self, s: int, W: int, n: int) -> None:
        self.s, self.W, self.n = int(s), int(W), int(n)
        self.count = max(0, -(-(self.n - self.s) // self.W))

    @property
    def shape(self) -> tuple[int]:
        return (self.count,)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)):
            q = int(key) + (self.count if int(key) < 0 else 0)
            if not 0 <= q < self.count:
                raise IndexError(f"index {int(key)} is out of bounds for a table of {self.count}")
            return np.int64(self.s + q * self.W)
        if isinstance(key, slice):
            a, b, step = key.indices(self.count)
            return self.s + np.arange(a, b, step, dtype=np.int64) * self.W
        idx = np.asarray(key, np.int64)
        idx = np.where(idx < 0, idx + self.count, idx)
        if idx.size and (idx.min() < 0 or idx.max() >= self.count):
            raise IndexError(f"index out of bounds for a table of {self.count}")
        return self.s + idx * self.W

    def searchsorted(self, v, side: str = "left", sorter=None):
        """Where ``v`` would be inserted to keep the order (as ``numpy.searchsorted``)."""
        x = np.asarray(v, np.int64) - self.s
        r = -(-x // self.W) if side == "left" else x // self.W + 1
        r = np.clip(r, 0, self.count).astype(np.intp)
        return r[()] if r.ndim == 0 else r

    def __array__(self, dtype=None, copy=None):
        a = self[0:self.count]
        return a if dtype is None else a.astype(dtype)

    def tolist(self) -> list[int]:
        return np.asarray(self).tolist()


class Timeline:
    """One sweep's delivery order over sequence descriptions.

    Arrays over positions ``0..N-1``: ``rchunk`` (source randomized chunk id; the chunk id itself
    when not randomized), ``index`` (index in the sequence's corpus chunk) and ``length``
    (timeline samples); ``chunk`` (corpus chunk id) is ``order[rchunk]``, computed when asked
    (:meth:`chunks` for a part), where ``order`` (per randomized chunk) is the sweep's chunk
    order. ``start`` has ``N + 1`` entries: exclusive cumulative lengths.
    ``first_use``/``last_use`` per corpus chunk: the first and last position of its sequences
    (-1 when it has none), which decide when a chunk is loaded and released. ``rchunk_start``
    (``C + 1`` entries): the first position of every randomized chunk, in delivery order.

    Memory: where every sequence is one sample long (frame mode) ``length`` is a view of one value
    and ``start`` a :class:`Counting` (no memory), so a sweep costs ``rchunk`` (2 bytes a position
    up to 32767 chunks, else 4) and ``index`` (4 bytes; 8 past 2^31 sequences in a chunk).
    """

    __slots__ = ("sweep", "order", "rchunk", "index", "length", "start", "first_use", "last_use",
                 "rchunk_start")

    def __init__(self, sweep: int, order: np.ndarray, rchunk: np.ndarray, index: np.ndarray, length: np.ndarray,
                 start: np.ndarray, first_use: np.ndarray, last_use: np.ndarray, rchunk_start: np.ndarray) -> None:
        self.sweep = sweep
        self.order = order
        self.rchunk = rchunk
        self.index = index
        self.length = length
        self.start = start
        self.first_use = first_use
        self.last_use = last_use
        self.rchunk_start = rchunk_start

    @property
    def chunk(self) -> np.ndarray:
        """The corpus chunk id of every position (a new array; :meth:`chunks` for a part)."""
        return self.order[self.rchunk]

    def chunks(self, positions) -> np.ndarray:
        """The corpus chunk ids (int32) of ``positions`` (a slice or an index array)."""
        return self.order[self.rchunk[positions]]

    def owner(self, position: int) -> int:
        """The randomized chunk whose positions include ``position``."""
        return int(np.searchsorted(self.rchunk_start, position, side="right")) - 1

    @property
    def num_sequences(self) -> int:
        return int(self.rchunk.shape[0])

    @property
    def num_samples(self) -> int:
        return int(self.start[-1])


def _small(a: np.ndarray, bound: int) -> np.ndarray:
    """``a`` as int16 or int32 where ``bound`` (exclusive) allows, else int64."""
    for t in (np.int16, np.int32):
        if bound <= np.iinfo(t).max:
            return a.astype(t, copy=False)
    return a.astype(np.int64, copy=False)


def _make_timeline(sweep: int, order: np.ndarray, rchunk: np.ndarray, index: np.ndarray, length: np.ndarray,
                   num_chunks: int, rchunk_start: np.ndarray, start: np.ndarray | None = None) -> Timeline:
    n = len(rchunk)
    if start is None:
        start = np.zeros(n + 1, np.int64)
        np.cumsum(length, out=start[1:])
    order = np.asarray(order, np.int32)
    first = np.full(num_chunks, -1, np.int64)
    last = np.full(num_chunks, -1, np.int64)
    # in blocks (bounded temporaries): later positions overwrite earlier ones, so the last use is
    # what a forward pass leaves and the first use what a backward pass leaves
    blocks = [(s, min(n, s + _BLOCK)) for s in range(0, n, _BLOCK)]
    for s, e in blocks:
        last[order[rchunk[s:e]]] = np.arange(s, e, dtype=np.int64)
    for s, e in reversed(blocks):
        first[order[rchunk[s:e]][::-1]] = np.arange(e - 1, s - 1, -1, dtype=np.int64)
    return Timeline(sweep, order, rchunk, index, length, start, first, last, rchunk_start)


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


class _Column:
    """A column of a :class:`StreamedTimeline` (``index`` or ``rchunk``) read like an array: an
    integer, a step-1 slice or an index array gives the values (computed a randomized chunk at a
    time); ``numpy.asarray`` gives the whole sweep (a replay of its swaps: memory per position)."""

    __slots__ = ("tl", "which", "dtype")
    ndim = 1

    def __init__(self, tl: "StreamedTimeline", which: int, dtype) -> None:
        self.tl, self.which, self.dtype = tl, which, np.dtype(dtype)

    @property
    def shape(self) -> tuple[int]:
        return (self.tl.n,)

    def __len__(self) -> int:
        return self.tl.n

    def __getitem__(self, key):
        n = self.tl.n
        if isinstance(key, (int, np.integer)):
            i = int(key) + (n if int(key) < 0 else 0)
            if not 0 <= i < n:
                raise IndexError(f"index {int(key)} is out of bounds for a timeline of {n}")
            return self.tl.range(i, i + 1, self.which)[0]
        if isinstance(key, slice):
            a, b, step = key.indices(n)
            if step == 1:
                return self.tl.range(a, max(a, b), self.which)
            key = np.arange(a, b, step)
        idx = np.asarray(key)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        return self.tl.gather(idx.astype(np.int64), self.which)

    def __array__(self, dtype=None, copy=None):
        a = self.tl.materialize(self.which)
        return a if dtype is None else a.astype(dtype)

    def astype(self, dtype, copy=True):
        return np.asarray(self).astype(dtype)

    def tolist(self) -> list[int]:
        return np.asarray(self).tolist()


class _Uses:
    """``first_use`` or ``last_use`` of a :class:`StreamedTimeline`, per corpus chunk: exact, read
    once the swaps have passed every position that can hold the chunk's sequences."""

    __slots__ = ("tl", "last")

    def __init__(self, tl: "StreamedTimeline", last: bool) -> None:
        self.tl, self.last = tl, last

    def __len__(self) -> int:
        return len(self.tl.order)

    def __getitem__(self, c):
        return self.tl.use(int(c), self.last)

    def __array__(self, dtype=None, copy=None):
        a = np.array([self.tl.use(c, self.last) for c in range(len(self))], np.int64)
        return a if dtype is None else a.astype(dtype)

    def tolist(self) -> list[int]:
        return np.asarray(self).tolist()


class _LocalPositions:
    """The sorted positions of a :class:`StreamedTimeline` (or :class:`RollingTimeline`) whose
    source randomized chunk (the corpus chunk) is ``r`` modulo ``W`` (a distributed worker's
    sequences), read like the array of them without holding it: the count per randomized chunk of
    positions (counted once by a replay of the sweep's order: time, not memory), and the positions
    of a randomized chunk found from its source column when asked.
    Indexing (an integer, a step-1 slice, an index array), ``len`` and ``searchsorted``."""

    __slots__ = ("tl", "W", "r", "prefix", "n", "_cache", "_cache_max")
    dtype = np.dtype(np.int64)
    ndim = 1

    def __init__(self, tl: "StreamedTimeline | RollingTimeline", W: int, r: int) -> None:
        self.tl, self.W, self.r = tl, int(W), int(r)
        counts = tl.local_counts(self.W, self.r)
        self.prefix = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=self.prefix[1:])
        self.n = int(self.prefix[-1])
        self._cache: dict = {}
        self._cache_max = 4 * self.W + 8      # the walker reads about 3W randomized chunks ahead

    @property
    def shape(self) -> tuple[int]:
        return (self.n,)

    def __len__(self) -> int:
        return self.n

    def _in_chunk(self, k: int) -> np.ndarray:
        """The local positions of randomized chunk ``k`` (sorted)."""
        got = self._cache.get(k)
        if got is None:
            src = self.tl.range(int(self.tl.rchunk_start[k]), int(self.tl.rchunk_start[k + 1]), 1)
            got = np.flatnonzero(np.remainder(src, self.W) == self.r) + int(self.tl.rchunk_start[k])
            if len(self._cache) >= self._cache_max:
                self._cache.pop(next(iter(self._cache)))
            self._cache[k] = got
        return got

    def _one(self, q: int) -> int:
        if not 0 <= q < self.n:
            raise IndexError(f"index {q} is out of bounds for {self.n} local positions")
        k = int(np.searchsorted(self.prefix, q, side="right")) - 1
        return int(self._in_chunk(k)[q - int(self.prefix[k])])

    def __getitem__(self, key):
        if isinstance(key, (int, np.integer)):
            q = int(key)
            return np.int64(self._one(q + self.n if q < 0 else q))
        if isinstance(key, slice):
            a, b, step = key.indices(self.n)
            if step != 1 or b <= a:
                return np.array([self._one(q) for q in range(a, b, step)], np.int64)
            k0 = int(np.searchsorted(self.prefix, a, side="right")) - 1
            k1 = int(np.searchsorted(self.prefix, b - 1, side="right")) - 1
            parts = [self._in_chunk(k) for k in range(k0, k1 + 1)]
            allp = parts[0] if len(parts) == 1 else np.concatenate(parts)
            base = int(self.prefix[k0])
            return allp[a - base:b - base]
        idx = np.asarray(key, np.int64)
        return np.array([self._one(int(q) + (self.n if q < 0 else 0)) for q in idx.ravel()],
                        np.int64).reshape(idx.shape)

    def _search(self, x: int, side: str) -> int:
        tl = self.tl
        if x <= 0 and side == "left" or x < 0:
            return 0
        if x >= tl.n:
            return self.n
        k = tl.owner(x)
        return int(self.prefix[k]) + int(np.searchsorted(self._in_chunk(k), x, side=side))

    def searchsorted(self, v, side: str = "left", sorter=None):
        """Where ``v`` would be inserted to keep the order (as ``numpy.searchsorted``)."""
        if isinstance(v, (int, np.integer)):
            return np.intp(self._search(int(v), side))
        x = np.asarray(v)
        out = np.array([self._search(int(e), side) for e in x.ravel()], np.intp).reshape(x.shape)
        return out[()] if out.ndim == 0 else out

    def __array__(self, dtype=None, copy=None):
        a = self[0:self.n]
        return a if dtype is None else a.astype(dtype)

    def tolist(self) -> list[int]:
        return np.asarray(self).tolist()


class StreamedTimeline(Timeline):
    """A block-randomized sweep of one-sample sequences (frame mode) whose ``index`` and ``rchunk``
    are computed a randomized chunk at a time by the rolling swaps (:class:`_Swaps`), not kept for
    the whole sweep. The chunks' columns computed last are kept (about twice the widest window, in
    positions: 6 bytes a position) for the walker's reads around its cursor; a read behind them
    replays the sweep's swaps from its start (time, not memory). ``first_use``/``last_use`` are
    exact: a chunk's is read once the swaps have passed the last randomized chunk whose window
    holds it. Memory: the window's rings and the kept columns, none per position of the sweep."""

    __slots__ = ("n", "swaps", "_pieces", "_kept", "_budget", "_first", "_last", "_done", "_rank", "_ub",
                 "_lock")

    def __init__(self, sweep: int, order: np.ndarray, seq_start: np.ndarray, swaps: _Swaps,
                 start: "Counting") -> None:
        n = int(seq_start[-1]) if len(seq_start) else 0
        order = np.asarray(order, np.int32)
        super().__init__(sweep, order, None, None, _unit(n), start, None, None, seq_start)
        self.n = n
        self.swaps = swaps
        self.rchunk = _Column(self, 1, swaps.source_dtype)
        self.index = _Column(self, 0, np.int32)
        self.first_use = _Uses(self, False)
        self.last_use = _Uses(self, True)
        c = len(order)
        self._pieces: dict = {}          # randomized chunk -> (index, source), in the order used
        self._kept = 0
        counts = np.diff(seq_start)
        # the columns kept: from a little behind the walker's cursor to where the first and last
        # uses asked for have run the swaps (up to a window ahead)
        self._budget = swaps.cap + 4 * (int(counts.max()) if c else 0)
        self._first = np.full(c, -1, np.int64)
        self._last = np.full(c, -1, np.int64)
        self._done = 0                   # the swaps have passed this position once (first/last exact before)
        self._rank = np.empty(c, np.int64)
        self._rank[order] = np.arange(c)
        # positions before ub[s] are the only ones that can hold randomized chunk s: those of the
        # randomized chunks whose window begins at or before s
        kmax = np.searchsorted(swaps.wb, np.arange(c), side="right") - 1
        self._ub = np.asarray(seq_start, np.int64)[kmax + 1]
        self._lock = threading.RLock()

    @property
    def num_sequences(self) -> int:
        return self.n

    def held_bytes(self) -> int:
        """Bytes the timeline holds: the kept columns and, while the swaps run, their rings and state."""
        with self._lock:
            kept = sum(p[0].nbytes + p[1].nbytes for p in self._pieces.values())
            sw = self.swaps
            rings = sum(r.nbytes for r in sw._rings) + sw._state.nbytes if sw._rings is not None else 0
            return kept + rings

    def chunks(self, positions) -> np.ndarray:
        return self.order[self.rchunk[positions]]

    # --- the swaps, a randomized chunk at a time ----------------------------------------------
    def _step(self, keep_from: int) -> None:
        lo0, index, source = self.swaps.step()
        hi = lo0 + len(index)
        if not len(index):
            return
        ss = self.rchunk_start
        if hi > self._done:      # first and last uses of the positions passed for the first time
            a = max(lo0, self._done) - lo0
            pos = np.arange(lo0 + a, hi, dtype=np.int64)
            ch = self.order[source[a:]]
            self._last[ch] = pos
            fresh = self._first[ch[::-1]] < 0
            self._first[ch[::-1][fresh]] = pos[::-1][fresh]
            self._done = hi
        r = int(np.searchsorted(ss, lo0, side="right")) - 1
        while r < len(self.order) and ss[r] < hi:
            a, b = int(ss[r]), int(ss[r + 1])
            if r >= keep_from and b > a:
                self._keep(r, (index[a - lo0:b - lo0], source[a - lo0:b - lo0]))
            r += 1

    def _keep(self, r: int, piece) -> None:
        old = self._pieces.pop(r, None)
        if old is not None:
            self._kept -= len(old[0])
        self._pieces[r] = piece
        self._kept += len(piece[0])
        while self._kept > self._budget and len(self._pieces) > 1:
            old = next(iter(self._pieces))
            self._kept -= len(self._pieces.pop(old)[0])

    def _piece(self, r: int):
        """``(index, source)`` of randomized chunk ``r``'s positions."""
        p = self._pieces.get(r)
        if p is not None:
            self._pieces[r] = self._pieces.pop(r)        # used last: kept longest
            return p
        a, b = int(self.rchunk_start[r]), int(self.rchunk_start[r + 1])
        if a == b:
            return np.zeros(0, np.int32), np.zeros(0, self.swaps.source_dtype)
        keep_from = 0
        if self.swaps.lo > a:    # handed out before and no longer kept: replay from the sweep's start,
            self.swaps.reset()   # keeping the chunks from just before this one
            keep_from = max(0, r - 2)
        while self.swaps.lo < b:
            self._step(keep_from)
        p = self._pieces.get(r)
        if p is None:  # pragma: no cover - one step hands out less than the budget
            raise RuntimeError(f"randomized chunk {r} was computed and dropped at once")
        return p

    def use(self, c: int, last: bool) -> int:
        """The first or last position of corpus chunk ``c``'s sequences (-1: none)."""
        with self._lock:
            ub = int(self._ub[self._rank[c]])
            while self._done < ub:
                self._step(0)
            return int((self._last if last else self._first)[c])

    def range(self, a: int, b: int, which: int) -> np.ndarray:
        """Column ``which`` (0 index, 1 source) of positions ``a .. b-1``."""
        if b <= a:
            return np.zeros(0, self.index.dtype if which == 0 else self.rchunk.dtype)
        ss = self.rchunk_start
        with self._lock:
            r0 = int(np.searchsorted(ss, a, side="right")) - 1
            r1 = int(np.searchsorted(ss, b - 1, side="right")) - 1
            parts = []
            for r in range(r0, r1 + 1):
                col = self._piece(r)[which]
                s = int(ss[r])
                parts.append(col[max(a, s) - s:min(b, int(ss[r + 1])) - s])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def gather(self, positions: np.ndarray, which: int) -> np.ndarray:
        """Column ``which`` at ``positions`` (any order)."""
        out = np.empty(len(positions), self.index.dtype if which == 0 else self.rchunk.dtype)
        if not len(positions):
            return out
        if positions.min() < 0 or positions.max() >= self.n:
            raise IndexError(f"position out of bounds for a timeline of {self.n}")
        ss = self.rchunk_start
        with self._lock:
            if len(positions) < 2 or bool((positions[1:] >= positions[:-1]).all()):
                # sorted (a worker's positions): each randomized chunk's run found by bisection
                cuts = np.searchsorted(positions, ss, side="left")
                r0 = int(np.searchsorted(ss, positions[0], side="right")) - 1
                r1 = int(np.searchsorted(ss, positions[-1], side="right")) - 1
                for r in range(r0, r1 + 1):
                    a, b = int(cuts[r]), int(cuts[r + 1])
                    if b > a:
                        out[a:b] = self._piece(r)[which][positions[a:b] - int(ss[r])]
                return out
            owner = np.searchsorted(ss, positions, side="right") - 1
            for r in np.unique(owner).tolist():
                sel = owner == r
                out[sel] = self._piece(r)[which][positions[sel] - int(ss[r])]
        return out

    def local_counts(self, W: int, r: int) -> np.ndarray:
        """Per randomized chunk, how many of its positions hold a sequence whose source randomized
        chunk is ``r`` modulo ``W`` (a separate replay of the swaps: the kept columns stay)."""
        sw = self.swaps
        swaps = _Swaps(sw.seed, sw.wb, sw.we, sw.ss, sw.source_dtype)
        counts = np.zeros(len(self.order), np.int64)
        ss = self.rchunk_start
        while swaps.ct < swaps.c:
            lo0, _, source = swaps.step()
            if len(source):
                local = np.remainder(source, W) == r
                owner = np.searchsorted(ss, np.arange(lo0, lo0 + len(source), dtype=np.int64)[local],
                                        side="right") - 1
                counts += np.bincount(owner, minlength=len(counts))
        return counts

    def local_positions(self, W: int, r: int) -> "_LocalPositions":
        """Worker ``r`` of ``W``'s positions, sorted (read like an array, not held as one)."""
        return _LocalPositions(self, W, r)

    def materialize(self, which: int) -> np.ndarray:
        """Column ``which`` of the whole sweep (a separate replay: the kept chunks stay)."""
        sw = self.swaps
        swaps = _Swaps(sw.seed, sw.wb, sw.we, sw.ss, sw.source_dtype)
        out = np.empty(self.n, self.index.dtype if which == 0 else self.rchunk.dtype)
        while swaps.ct < swaps.c:
            lo0, index, source = swaps.step()
            out[lo0:lo0 + len(index)] = index if which == 0 else source
        return out


class InOrderTimeline(Timeline):
    """A sweep of one-sample sequences in input order (frame mode, not randomized): the position's
    chunk and index in it are found from the chunks' first positions when read (``index`` and
    ``rchunk`` read like arrays, :class:`_Column`), so no table per position is kept. First and
    last uses are the chunks' first and last positions."""

    __slots__ = ("n",)

    def __init__(self, sweep: int, seq_start: np.ndarray, start: "Counting", index_dtype, chunk_dtype) -> None:
        c = len(seq_start) - 1
        n = int(seq_start[-1])
        counts = np.diff(seq_start)
        first = np.where(counts > 0, seq_start[:-1], -1).astype(np.int64)
        last = np.where(counts > 0, seq_start[1:] - 1, -1).astype(np.int64)
        super().__init__(sweep, np.arange(c, dtype=np.int32), None, None, _unit(n), start, first, last, seq_start)
        self.n = n
        self.index = _Column(self, 0, index_dtype)
        self.rchunk = _Column(self, 1, chunk_dtype)

    @property
    def num_sequences(self) -> int:
        return self.n

    def gather(self, positions: np.ndarray, which: int) -> np.ndarray:
        """Column ``which`` (0 index, 1 chunk) at ``positions``."""
        if len(positions) and (positions.min() < 0 or positions.max() >= self.n):
            raise IndexError(f"position out of bounds for a timeline of {self.n}")
        c = np.searchsorted(self.rchunk_start, positions, side="right") - 1
        if which == 1:
            return c.astype(self.rchunk.dtype)
        return (positions - self.rchunk_start[c]).astype(self.index.dtype)

    def range(self, a: int, b: int, which: int) -> np.ndarray:
        return self.gather(np.arange(a, max(a, b), dtype=np.int64), which)

    def materialize(self, which: int) -> np.ndarray:
        return self.range(0, self.n, which)


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


class RollingTimeline(Timeline):
    """A sweep of :func:`rolling_order` whose ``index`` and ``rchunk`` (the corpus chunk, chunks
    keep their order) are computed piece by piece from :func:`_rolling_blocks` as they are read,
    not kept for the whole sweep. The pieces read last are kept (about twice the half-window and a
    few pieces); a read behind them runs the order again from the sweep's start (time, not memory).
    ``first_use``/``last_use`` are exact: a chunk's is read once the order has passed the last
    position that can hold one of its frames (its last corpus position plus ``half - 1``)."""

    __slots__ = ("n", "seed", "half", "_gen", "_gen_k", "_gen_t", "_starts", "_pieces", "_kept", "_budget",
                 "_first", "_last", "_done", "_ub", "_lock")

    def __init__(self, sweep: int, seed: int, half: int, rstart: np.ndarray, start: "Counting",
                 chunk_dtype, index_dtype) -> None:
        c = len(rstart) - 1
        n = int(rstart[-1])
        super().__init__(sweep, np.arange(c, dtype=np.int32), None, None, _unit(n), start, None, None, rstart)
        self.n, self.seed, self.half = n, int(seed), max(int(half), 1)
        self.index = _Column(self, 0, index_dtype)
        self.rchunk = _Column(self, 1, chunk_dtype)
        self.first_use = _Uses(self, False)
        self.last_use = _Uses(self, True)
        self._gen = None
        self._gen_k = self._gen_t = 0        # the generator's next piece and its first position
        self._starts = [0]                   # first position of every piece generated once (and the end)
        self._pieces: dict = {}
        self._kept = 0
        step = max(self.half, _BLOCK)
        self._budget = 2 * self.half + 4 * step + 4 * (int(np.diff(rstart).max()) if c else 0)
        self._first = np.full(c, -1, np.int64)
        self._last = np.full(c, -1, np.int64)
        self._done = 0
        self._ub = np.minimum(np.asarray(rstart[1:], np.int64) + self.half - 1, n)
        self._lock = threading.RLock()

    @property
    def num_sequences(self) -> int:
        return self.n

    def _columns(self, pos: np.ndarray):
        c = np.searchsorted(self.rchunk_start, pos, side="right") - 1
        return (pos - self.rchunk_start[c]).astype(self.index.dtype), c.astype(self.rchunk.dtype)

    def _step(self, keep_from: int) -> None:
        if self._gen is None:
            self._gen = _rolling_blocks(self.seed, self.n, self.half)
            self._gen_k = self._gen_t = 0
        pos = next(self._gen)
        k, t0 = self._gen_k, self._gen_t
        index, chunk = self._columns(pos)
        hi = t0 + len(pos)
        if k + 1 == len(self._starts):
            self._starts.append(hi)
        if hi > self._done:
            a = max(t0, self._done) - t0
            where = np.arange(t0 + a, hi, dtype=np.int64)
            ch = chunk[a:].astype(np.int64)
            self._last[ch] = where
            fresh = self._first[ch[::-1]] < 0
            self._first[ch[::-1][fresh]] = where[::-1][fresh]
            self._done = hi
        if k >= keep_from:
            old = self._pieces.pop(k, None)
            if old is not None:
                self._kept -= len(old[0])
            self._pieces[k] = (index, chunk)
            self._kept += len(index)
            while self._kept > self._budget and len(self._pieces) > 1:
                self._kept -= len(self._pieces.pop(next(iter(self._pieces)))[0])
        self._gen_k, self._gen_t = k + 1, hi
        if hi >= self.n:
            self._gen = None     # the sweep is done: a further read starts it again

    def _piece(self, k: int):
        """``(index, chunk)`` of piece ``k`` (one :func:`_rolling_blocks` yields)."""
        p = self._pieces.get(k)
        if p is not None:
            self._pieces[k] = self._pieces.pop(k)        # used last: kept longest
            return p
        keep_from = 0
        if self._gen_k > k:      # passed and no longer kept: run the order again from the sweep's start,
            self._gen = None     # keeping the pieces from just before this one
            keep_from = max(0, k - 2)
        while k not in self._pieces:
            self._step(keep_from)
        return self._pieces[k]

    def _piece_at(self, t: int) -> int:
        """The piece holding position ``t`` (the order runs on until it is known)."""
        while self._starts[-1] <= t:
            self._step(0)
        return bisect.bisect_right(self._starts, t) - 1

    def use(self, c: int, last: bool) -> int:
        with self._lock:
            while self._done < int(self._ub[c]):
                self._step(0)
            return int((self._last if last else self._first)[c])

    def range(self, a: int, b: int, which: int) -> np.ndarray:
        if b <= a:
            return np.zeros(0, self.index.dtype if which == 0 else self.rchunk.dtype)
        with self._lock:
            k0, k1 = self._piece_at(a), self._piece_at(b - 1)
            parts = []
            for k in range(k0, k1 + 1):
                col = self._piece(k)[which]
                s = self._starts[k]
                parts.append(col[max(a, s) - s:min(b, self._starts[k + 1]) - s])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def gather(self, positions: np.ndarray, which: int) -> np.ndarray:
        out = np.empty(len(positions), self.index.dtype if which == 0 else self.rchunk.dtype)
        if not len(positions):
            return out
        if positions.min() < 0 or positions.max() >= self.n:
            raise IndexError(f"position out of bounds for a timeline of {self.n}")
        with self._lock:
            self._piece_at(int(positions.max()))
            starts = np.asarray(self._starts, np.int64)
            piece = np.searchsorted(starts, positions, side="right") - 1
            for k in np.unique(piece).tolist():
                sel = piece == k
                out[sel] = self._piece(k)[which][positions[sel] - int(starts[k])]
        return out

    def local_counts(self, W: int, r: int) -> np.ndarray:
        """Per chunk of positions (``rchunk_start``), how many hold a frame of a chunk that is ``r``
        modulo ``W`` (the order run once more, apart: the kept pieces stay)."""
        counts = np.zeros(len(self.order), np.int64)
        t = 0
        for pos in _rolling_blocks(self.seed, self.n, self.half):
            for s in range(0, len(pos), _BLOCK):
                _, chunk = self._columns(pos[s:s + _BLOCK])
                where = np.arange(t, t + len(chunk), dtype=np.int64)[np.remainder(chunk, W) == r]
                counts += np.bincount(np.searchsorted(self.rchunk_start, where, side="right") - 1,
                                      minlength=len(counts))
                t += len(chunk)
        return counts

    def local_positions(self, W: int, r: int) -> "_LocalPositions":
        """Worker ``r`` of ``W``'s positions, sorted (read like an array, not held as one)."""
        return _LocalPositions(self, W, r)

    def materialize(self, which: int) -> np.ndarray:
        out = np.empty(self.n, self.index.dtype if which == 0 else self.rchunk.dtype)
        t = 0
        for pos in _rolling_blocks(self.seed, self.n, self.half):
            for s in range(0, len(pos), _BLOCK):
                cols = self._columns(pos[s:s + _BLOCK])
                out[t:t + len(cols[0])] = cols[which]
                t += len(cols[0])
        return out


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
                                   np.int32 if self._max_count <= np.iinfo(np.int32).max else np.int64)
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
