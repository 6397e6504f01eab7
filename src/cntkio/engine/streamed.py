"""Frame-mode timelines that keep no table per position of the sweep.

In frame mode every frame is a sequence, so a whole-sweep table costs bytes per corpus frame. These
timelines answer the walker's reads (an integer, a range, an index array of positions; first and
last uses of chunks; a distributed worker's positions) while holding memory by the window:

* :class:`StreamedTimeline`: the block randomizer's sweep, computed a randomized chunk at a time
  by the in-window swaps run in pieces (the randomizer's ``_Swaps``);
* :class:`RollingTimeline`: the rolling-window order, computed piece by piece as it is read;
* :class:`InOrderTimeline`: input order, a position's chunk found from the chunks' first positions.

Columns (``index``, ``rchunk``) are :class:`_Column` objects read like arrays; ``numpy.asarray``
of one computes the whole sweep (tests). A read behind the kept pieces runs the sweep's order
again from its start: time, not memory.
"""
from __future__ import annotations

import bisect
import threading

import numpy as np

from .timeline import _BLOCK, Counting, Timeline, _unit

__all__ = ["StreamedTimeline", "RollingTimeline", "InOrderTimeline"]


def _cut(pieces: list, a: int, b: int) -> np.ndarray:
    """Positions ``a .. b-1`` of a column kept in pieces ``(column, first position, end)`` that
    cover them in order: one view when one piece does, else the pieces' parts joined."""
    parts = [col[max(a, s) - s:min(b, e) - s] for col, s, e in pieces]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _gather_out(tl, positions: np.ndarray, which: int) -> np.ndarray:
    """The output of a timeline's ``gather`` of column ``which`` at ``positions`` (checked to lie
    in the timeline)."""
    out = np.empty(len(positions), tl.index.dtype if which == 0 else tl.rchunk.dtype)
    if len(positions) and (positions.min() < 0 or positions.max() >= tl.n):
        raise IndexError(f"position out of bounds for a timeline of {tl.n}")
    return out


def _scatter(out: np.ndarray, positions: np.ndarray, starts: np.ndarray, piece, which: int) -> None:
    """``out[i]`` = column ``which`` at ``positions[i]`` (any order), from the pieces starting at
    ``starts`` (``piece(k)`` gives piece ``k``'s columns): one fancy index per piece touched."""
    owner = np.searchsorted(starts, positions, side="right") - 1
    for k in np.unique(owner).tolist():
        sel = owner == k
        out[sel] = piece(k)[which][positions[sel] - int(starts[k])]


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

    def __init__(self, sweep: int, order: np.ndarray, seq_start: np.ndarray, swaps,
                 start: Counting) -> None:
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
            return _cut([(self._piece(r)[which], int(ss[r]), int(ss[r + 1])) for r in range(r0, r1 + 1)], a, b)

    def gather(self, positions: np.ndarray, which: int) -> np.ndarray:
        """Column ``which`` at ``positions`` (any order)."""
        out = _gather_out(self, positions, which)
        if not len(positions):
            return out
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
            _scatter(out, positions, np.asarray(ss, np.int64), self._piece, which)
        return out

    def local_counts(self, W: int, r: int) -> np.ndarray:
        """Per randomized chunk, how many of its positions hold a sequence whose source randomized
        chunk is ``r`` modulo ``W`` (a separate replay of the swaps: the kept columns stay)."""
        sw = self.swaps
        swaps = sw.fresh()
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
        swaps = sw.fresh()
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

    def __init__(self, sweep: int, seq_start: np.ndarray, start: Counting, index_dtype, chunk_dtype) -> None:
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


class RollingTimeline(Timeline):
    """A sweep of :func:`rolling_order` whose ``index`` and ``rchunk`` (the corpus chunk, chunks
    keep their order) are computed piece by piece from the order's pieces (``blocks``) as they are read,
    not kept for the whole sweep. The pieces read last are kept (about twice the half-window and a
    few pieces); a read behind them runs the order again from the sweep's start (time, not memory).
    ``first_use``/``last_use`` are exact: a chunk's is read once the order has passed the last
    position that can hold one of its frames (its last corpus position plus ``half - 1``)."""

    __slots__ = ("n", "seed", "half", "_blocks", "_gen", "_gen_k", "_gen_t", "_starts", "_pieces", "_kept", "_budget",
                 "_first", "_last", "_done", "_ub", "_lock")

    def __init__(self, sweep: int, seed: int, half: int, rstart: np.ndarray, start: Counting,
                 chunk_dtype, index_dtype, blocks) -> None:
        c = len(rstart) - 1
        n = int(rstart[-1])
        super().__init__(sweep, np.arange(c, dtype=np.int32), None, None, _unit(n), start, None, None, rstart)
        self.n, self.seed, self.half = n, int(seed), max(int(half), 1)
        self._blocks = blocks                # randomizer._rolling_blocks: the order's pieces
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
            self._gen = self._blocks(self.seed, self.n, self.half)
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
        """``(index, chunk)`` of piece ``k`` (one the order's generator yields)."""
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
            return _cut([(self._piece(k)[which], self._starts[k], self._starts[k + 1]) for k in range(k0, k1 + 1)],
                        a, b)

    def gather(self, positions: np.ndarray, which: int) -> np.ndarray:
        out = _gather_out(self, positions, which)
        if not len(positions):
            return out
        with self._lock:
            self._piece_at(int(positions.max()))
            _scatter(out, positions, np.asarray(self._starts, np.int64), self._piece, which)
        return out

    def local_counts(self, W: int, r: int) -> np.ndarray:
        """Per chunk of positions (``rchunk_start``), how many hold a frame of a chunk that is ``r``
        modulo ``W`` (the order run once more, apart: the kept pieces stay)."""
        counts = np.zeros(len(self.order), np.int64)
        t = 0
        for pos in self._blocks(self.seed, self.n, self.half):
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
        for pos in self._blocks(self.seed, self.n, self.half):
            for s in range(0, len(pos), _BLOCK):
                cols = self._columns(pos[s:s + _BLOCK])
                out[t:t + len(cols[0])] = cols[which]
                t += len(cols[0])
        return out
