"""A sweep's delivery order as tables: :class:`Timeline` and the tables that hold no memory.

A *timeline* is one sweep's delivery order: for every position, which sequence (chunk and index
in chunk), its length in samples, its source randomized chunk id (what distribution uses) and its
start inside the sweep (:mod:`~cntkio.engine.randomizer` computes them). :class:`Counting` (the
starts of one-sample sequences) and :class:`Stride` (every W-th position) answer as arrays without
holding one; the timelines of frame mode that keep no table per position are in
:mod:`~cntkio.engine.streamed`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["Counting", "Stride", "Timeline"]


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
