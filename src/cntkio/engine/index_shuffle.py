"""Global randomization (cntkio's extension): one sweep's order as a keyed bijection over all sequences.

Never holds a table of the order: position ``p`` of sweep ``k`` delivers sequence
``IndexShuffle(n, seed, k)(p)`` of the corpus (storage order), computed when read.

Beyond CNTK's block randomizer (a chunk shuffle and swaps inside a window of chunks), sweep ``k``
of :class:`GlobalRandomizer` is a uniform-looking permutation of every sequence of the corpus: a
Feistel network of six rounds over the smallest even number of bits that covers ``n``, each round
a splitmix64 hash of the half keyed by ``(seed, sweep, round)``, and *cycle walking* (a value
``>= n`` is encrypted again until it falls below ``n``; it always does, since it lies on the
permutation's cycle through the start) for a domain that is not a power of four. The loop runs in
C (``cntkio._native._rand.index_shuffle``, GIL released); the NumPy version below is its twin
under ``CNTKIO_PURE_PYTHON=1``. That is the
scheme of Grain's index shuffle (and of format-preserving encryption): the order is a pure
function of ``(seed, sweep)``, any position is found in O(1) time and memory, and a restore at a
position needs nothing but the position.

The timeline (:class:`ShuffledTimeline`) cuts the sweep's positions into as many *blocks* of
consecutive positions as the corpus has chunks; a block plays the part of the block randomizer's
randomized chunk: distributed workers take the blocks whose number is their rank modulo the
number of workers (so the workers cover every sequence exactly once per sweep), and a batch of
minibatches stays within two blocks. The chunks a block's sequences lie in are nearly all chunks,
so the engine reads a globally randomized sweep only through random access
(:func:`~cntkio.deserializers.protocol.has_random_access`) from deserializers whose raw chunk
bytes cost no memory to hold (:func:`~cntkio.deserializers.protocol.supports_global_randomization`).

Memory: frame mode (every sequence one sample) holds nothing per position (the columns are computed
for the positions asked; starts are a :class:`~cntkio.engine.timeline.Counting`). Sequence mode
keeps the sweep's starts (8 bytes a sequence, the running sum of the shuffled lengths) and, when
distributed, a worker's positions, as the block randomizer's sequence-mode tables do.
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

from .._native import native
from .streamed import _Column, _LocalPositions
from .timeline import _BLOCK, Counting, Timeline, _unit

__all__ = ["IndexShuffle", "GlobalRandomizer", "ShuffledTimeline"]

_M64 = (1 << 64) - 1
_ROUNDS = 6
#: blocks whose columns a timeline keeps (the walker reads about 3W blocks ahead of its cursor)
_KEPT = 16
_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)


def _splitmix(x: int) -> int:
    """splitmix64 of a Python integer (the round keys)."""
    z = (x + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


class IndexShuffle:
    """A bijection of ``[0, n)`` keyed by ``(seed, sweep)`` (module docstring): call it with an
    array of positions (any int dtype) to get the sequences delivered there (int64)."""

    __slots__ = ("n", "half", "mask", "keys", "_keys")

    def __init__(self, n: int, seed: int, sweep: int) -> None:
        self.n = int(n)
        if self.n < 0:
            raise ValueError(f"IndexShuffle: n must be >= 0, got {n}")
        bits = max(2, (self.n - 1).bit_length())
        self.half = (bits + 1) // 2
        self.mask = np.uint64((1 << self.half) - 1)
        base = _splitmix((int(seed) & _M64) ^ _splitmix(int(sweep) & _M64))
        self.keys = [np.uint64(_splitmix(base + r)) for r in range(_ROUNDS)]
        self._keys = np.array(self.keys, np.uint64)

    def _encrypt(self, x: np.ndarray) -> np.ndarray:
        h, mask = np.uint64(self.half), self.mask
        left, right = x >> h, x & mask
        s30, s27, s31 = np.uint64(30), np.uint64(27), np.uint64(31)
        for key in self.keys:
            z = right + key
            z ^= z >> s30
            z *= _C1
            z ^= z >> s27
            z *= _C2
            z ^= z >> s31
            left, right = right, left ^ (z & mask)
        return (left << h) | right

    def __call__(self, positions) -> np.ndarray:
        p = np.asarray(positions)
        mod = native("rand")
        if mod is not None:       # the C twin: one pass, no temporaries, the GIL released
            flat = np.ascontiguousarray(p, np.int64).ravel()
            out = np.empty(len(flat), np.int64)
            mod.index_shuffle(self._keys, self.half, self.n, flat, out)
            return out.reshape(p.shape)
        if p.size and (int(p.min()) < 0 or int(p.max()) >= self.n):
            raise IndexError(f"IndexShuffle: a position outside [0, {self.n})")
        with np.errstate(over="ignore"):
            y = self._encrypt(p.astype(np.uint64).ravel())
            n = np.uint64(self.n)
            todo = np.flatnonzero(y >= n)
            while len(todo):            # cycle walking: at most a few rounds (domain < 4n)
                z = self._encrypt(y[todo])
                y[todo] = z
                todo = todo[z >= n]
        return y.astype(np.int64).reshape(p.shape)


class GlobalRandomizer:
    """Sweep ``k`` delivers every sequence of the corpus in the order of
    ``IndexShuffle(num_sequences, seed, k)`` (module docstring); the randomizer interface of
    :class:`~cntkio.engine.randomizer.BlockRandomizer` (``timeline(sweep)``, counts, ``unit``)."""

    randomized = True

    def __init__(self, chunk_lengths: Sequence[np.ndarray], seed: int) -> None:
        lengths = [np.asarray(c, np.int64) for c in chunk_lengths]
        self.num_chunks = len(lengths)
        self.chunk_counts = np.array([len(c) for c in lengths], np.int64)
        self.chunk_sizes = np.array([int(c.sum()) for c in lengths], np.int64)
        self.num_sequences = int(self.chunk_counts.sum())
        self.sweep_samples = int(self.chunk_sizes.sum())
        self.unit = all(bool((c == 1).all()) for c in lengths)
        #: first corpus ordinal of every chunk (``C + 1`` entries)
        self.first = np.zeros(self.num_chunks + 1, np.int64)
        np.cumsum(self.chunk_counts, out=self.first[1:])
        #: every sequence's length in storage order (sequence mode; the index holds them as well)
        self.lengths = None if self.unit else (np.concatenate(lengths) if lengths else np.zeros(0, np.int64))
        self.seed = int(seed)
        self._cache: dict[int, ShuffledTimeline] = {}

    def timeline(self, sweep: int) -> "ShuffledTimeline":
        tl = self._cache.get(sweep)
        if tl is None:
            tl = ShuffledTimeline(self, int(sweep))
            for old in [s for s in self._cache if abs(s - sweep) > 1]:
                del self._cache[old]
            self._cache[sweep] = tl
        return tl


class ShuffledTimeline(Timeline):
    """One sweep of a :class:`GlobalRandomizer`: the :class:`~cntkio.engine.timeline.Timeline`
    interface with ``rchunk`` the position's block (blocks of consecutive positions, one per
    corpus chunk), ``index`` and :meth:`chunks` (the corpus chunk) computed from the bijection for
    the positions read. ``last_use`` is the sweep's last position for every chunk that has
    sequences (a chunk's sequences are spread over the whole sweep; the window holds raw bytes
    only)."""

    __slots__ = ("n", "shuffle", "first", "lengths", "_pieces", "_lock")

    def __init__(self, rand: GlobalRandomizer, sweep: int) -> None:
        n, C = rand.num_sequences, rand.num_chunks
        self.n = n
        self.shuffle = IndexShuffle(n, rand.seed, sweep)
        self.first = rand.first
        self.lengths = rand.lengths
        blocks = (np.arange(C + 1, dtype=np.int64) * n) // max(C, 1)
        last = np.where(rand.chunk_counts > 0, n - 1, -1).astype(np.int64)
        first_use = np.where(rand.chunk_counts > 0, 0, -1).astype(np.int64)
        if rand.unit:
            length, start = _unit(n), Counting(0, n + 1)
        else:
            length = _Column(self, 3, np.int64)
            start = np.zeros(n + 1, np.int64)
            for s in range(0, n, _BLOCK):   # the running sum of the shuffled lengths, in blocks
                e = min(n, s + _BLOCK)
                np.cumsum(rand.lengths[self.shuffle(np.arange(s, e, dtype=np.int64))], out=start[s + 1:e + 1])
                start[s + 1:e + 1] += start[s]
        super().__init__(sweep, np.arange(C, dtype=np.int32), _Column(self, 1, np.int32),
                         _Column(self, 0, np.int64), length, start, first_use, last, blocks)
        #: the columns of the blocks read last: block -> (index in chunk, corpus chunk, length or None)
        self._pieces: dict = {}
        self._lock = threading.Lock()

    @property
    def num_sequences(self) -> int:
        return self.n

    def _block(self, b: int) -> tuple:
        """Columns ``(index in chunk, corpus chunk, length or None)`` of block ``b``'s positions,
        computed once while it is among the last ``_KEPT`` blocks read."""
        with self._lock:
            got = self._pieces.get(b)
            if got is not None:
                return got
            lo, hi = int(self.rchunk_start[b]), int(self.rchunk_start[b + 1])
            seq = self.shuffle(np.arange(lo, hi, dtype=np.int64))
            chunk = np.searchsorted(self.first, seq, side="right") - 1
            got = (seq - self.first[chunk], chunk.astype(np.int32),
                   None if self.lengths is None else self.lengths[seq])
            if len(self._pieces) >= _KEPT:
                self._pieces.pop(next(iter(self._pieces)))
            self._pieces[b] = got
            return got

    def range(self, a: int, b: int, which: int) -> np.ndarray:
        """Column ``which`` (0 index in chunk, 1 block, 2 corpus chunk, 3 length) of positions
        ``a .. b-1``."""
        b = max(a, b)
        bs = self.rchunk_start
        if which == 1:
            return (np.searchsorted(bs, np.arange(a, b, dtype=np.int64), side="right") - 1).astype(np.int32)
        if b == a:
            return np.zeros(0, np.int32 if which == 2 else np.int64)
        k0 = int(np.searchsorted(bs, a, side="right")) - 1
        k1 = int(np.searchsorted(bs, b - 1, side="right")) - 1
        col = {0: 0, 2: 1, 3: 2}[which]
        parts = [self._block(k)[col][max(a, int(bs[k])) - int(bs[k]):min(b, int(bs[k + 1])) - int(bs[k])]
                 for k in range(k0, k1 + 1)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def gather(self, positions: np.ndarray, which: int) -> np.ndarray:
        p = np.asarray(positions, np.int64)
        if p.size and (int(p.min()) < 0 or int(p.max()) >= self.n):
            raise IndexError(f"position out of bounds for a timeline of {self.n}")
        bs = self.rchunk_start
        owner = np.searchsorted(bs, p, side="right") - 1
        if which == 1:
            return owner.astype(np.int32)
        col = {0: 0, 2: 1, 3: 2}[which]
        out = np.empty(p.shape, np.int32 if which == 2 else np.int64)
        uniq = np.unique(owner)
        if len(uniq) > 4 * _KEPT:     # spread over the sweep (a whole column): computed at once
            seq = self.shuffle(p)
            chunk = np.searchsorted(self.first, seq, side="right") - 1
            return (seq - self.first[chunk] if which == 0 else chunk.astype(np.int32) if which == 2
                    else self.lengths[seq])
        for k in uniq.tolist():
            sel = owner == k
            out[sel] = self._block(k)[col][p[sel] - int(bs[k])]
        return out

    def materialize(self, which: int) -> np.ndarray:
        """A whole column (tests, the shuffle-quality metric): memory per position."""
        return self.range(0, self.n, which)

    def chunks(self, positions) -> np.ndarray:
        if isinstance(positions, slice):
            a, b, _ = positions.indices(self.n)
            return self.range(a, b, 2)
        return self.gather(np.asarray(positions), 2)

    @property
    def chunk(self) -> np.ndarray:
        return self.materialize(2)

    # --- a distributed worker's positions (frame mode: no table per position) ------------------
    def local_counts(self, W: int, r: int) -> np.ndarray:
        """Positions per block that are worker ``r``'s of ``W`` (the blocks ``b % W == r``)."""
        counts = np.diff(self.rchunk_start)
        return np.where(np.arange(len(counts)) % W == r, counts, 0)

    def local_positions(self, W: int, r: int) -> _LocalPositions:
        """Worker ``r``'s positions read like their array without holding it (frame mode)."""
        return _LocalPositions(self, W, r)

    def local_array(self, W: int, r: int) -> np.ndarray:
        """Worker ``r``'s positions as an array (sequence mode: the lengths' running sum needs them)."""
        bs = self.rchunk_start
        parts = [np.arange(bs[b], bs[b + 1], dtype=np.int64) for b in range(r, len(bs) - 1, W)]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)
