"""The local-timeline window policies of ``UserDeserializer`` sources (cntk-io-semantics 2.4, 2.6, 2.7).

User deserializers only say how many chunks they have; sequence counts are known once a chunk is
loaded. So CNTK reads them on a *local* timeline, a window of chunks at a time:

* :class:`LTNoRandomizer`: chunk 0, 1, ... in order, one chunk per window, an end-of-sweep marker
  after the last chunk. Workers get the sequences round-robin by their position in the sweep
  (the position restarts at every sweep).
* :class:`LTTumblingWindowRandomizer`: per sweep ``s`` the chunk list is shuffled with
  CNTK's full-range swap seeded ``seed + s``; a worker takes the chunks whose position in that
  list % W == rank; windows are non-overlapping runs of ``window`` of them (or of at least
  ``window`` samples); a window's sequences are shuffled (``i`` swaps with
  ``i + next64() % (n - i)``) with seed ``window start position + s + seed``. A window that runs
  past the end of a sweep shuffles its old part with the old seed, puts the marker, and shuffles
  the rest as a window at position 0 of the next sweep.

``end_of_sweep`` is set on the minibatch during which the marker is passed; a minibatch that fills
up exactly at the end of a sweep leaves the marker to the next call. ``max_sweeps`` counts
markers; ``max_samples`` becomes a per-worker budget of local samples (``E // W``, +1 for ranks
below ``E % W``); a sequence is taken while the local count is below it.

Checkpoints hold CNTK's keys (``baseSweepCount``, ``baseSampleCount``,
``baseCurrentSequencePositionInWindow`` and ``currentChunkPosition``/``currentSequencePosition`` or
``chunkPosition``/``sweepIndex``); the window is recomputed on restore. In cntkio the ``base``
counts are the counts at the cursor (not at the window start), so a restore continues exactly.

Both are window policies of the one :class:`~cntkio.engine.reader.Reader` (its interface:
:class:`~cntkio.engine.reader.WindowPolicy`), which does their truncated-BPTT packing and adds the
truncated-BPTT slots to their checkpoints, as for the global timeline.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..constants import LT_BASE_KEYS, LT_NO_RANDOMIZER_KEYS, LT_TUMBLING_KEYS
from ..deserializers.protocol import LocalTimelineDeserializer
from ..streams import StreamInformation
from ..values import check_state_int
from .packer import check_frame_mode, pack_sequences
from .slotdata import sequence_arrays
from .prefetch import ChunkCache
from .randomizer import full_range_shuffle, window_shuffle
from .._log import get_logger

__all__ = ["LocalTimeline", "LTNoRandomizer", "LTTumblingWindowRandomizer"]

log = get_logger("engine.local_timeline")


@dataclass
class _Window:
    """Sequences of one window in delivery order (``chunk``, ``index``, ``length``), the marker's
    position (-1: none) and, for round-robin dealing, the sweep position of each sequence."""

    chunk: np.ndarray
    index: np.ndarray
    length: np.ndarray
    marker: int
    sweep_pos: np.ndarray | None
    chunks: list[int]

    def __len__(self) -> int:
        return len(self.chunk) + (1 if self.marker >= 0 else 0)


class LocalTimeline:
    """Walking, packing and checkpoints of the local-timeline window policies (module docstring);
    the subclasses say how windows are built and advanced."""

    #: declares what it lacks: no global sample positions (so no sweep size, known only once
    #: every chunk is loaded, no epoch end to move) and no batches packed ahead
    global_timeline = False
    keys: tuple[str, ...] = ()

    def __init__(self, deserializer: LocalTimelineDeserializer, stream_infos: list[StreamInformation], *,
                 max_samples: int | None, max_sweeps: int | None, frame_mode: bool,
                 loader_threads: int = 1) -> None:
        self.d = deserializer
        self.stream_infos = stream_infos
        self.C = int(deserializer.num_chunks())
        self.max_samples = max_samples
        self.max_sweeps = max_sweeps
        self.frame_mode = bool(frame_mode)
        self.cache = ChunkCache(deserializer, threads=loader_threads, name="cntkio-user-chunk")
        self.sweep_count = 0
        self.sample_count = 0
        self.pos = 0
        self._win: _Window | None = None
        self._win_key = None
        self._taken_chunks: dict = {}

    # subclasses: window identity, building, advancing, state
    def _window_id(self):
        raise NotImplementedError

    def _build(self, W: int, r: int) -> _Window:
        raise NotImplementedError

    def _advance(self, win: _Window) -> None:
        raise NotImplementedError

    def _next_window_chunks(self, W: int, r: int) -> list[int]:
        return []

    def has_data(self, W: int, r: int) -> bool:
        return True

    def no_data(self) -> None:
        """A worker without data keeps its counts (CNTK's local timeline is not measured here)."""

    def _lengths(self, c: int) -> np.ndarray:
        return np.asarray(self.cache.get(c).sequences.lengths, np.int64)

    def _window(self, W: int, r: int) -> _Window:
        key = (self._window_id(), W, r)
        if self._win is None or self._win_key != key:
            self._win = self._build(W, r)
            self._win_key = key
            keep = set(self._win.chunks) | set(self._next_window_chunks(W, r))
            self.cache.retain(keep)
            self.cache.prefetch(sorted(keep))
        return self._win

    def _local_budget(self, W: int, r: int) -> int | None:
        if self.max_samples is None:
            return None
        E = self.max_samples
        return E // W + (1 if r < E % W else 0)

    def _ended(self, W: int, r: int) -> bool:
        if self.max_sweeps is not None and self.sweep_count >= self.max_sweeps:
            return True
        lb = self._local_budget(W, r)
        return lb is not None and self.sample_count >= lb

    def _is_local(self, win: _Window, lo: int, hi: int, W: int, r: int) -> np.ndarray:
        """Relative positions in ``[lo, hi)`` of local sequences (window positions minus marker)."""
        if W == 1 or win.sweep_pos is None:
            return np.arange(lo, hi, dtype=np.int64)
        return lo + np.flatnonzero((win.sweep_pos[lo:hi] % W) == r).astype(np.int64)

    def walk(self, budget: int, W: int, r: int):
        """Take sequences for one call: ``([(chunk, index)...], end_of_sweep, num)`` or None at the end."""
        taken = 0
        nseq = 0
        eos = False
        sel_c, sel_i, sel_l = [], [], []
        idle_sweeps = 0
        while True:
            if self._ended(W, r):
                break
            if nseq and taken >= budget:
                break
            win = self._window(W, r)
            n_seq = len(win.chunk)
            if win.marker >= 0 and self.pos == win.marker:
                self.sweep_count += 1
                eos = True
                self.pos += 1
                idle_sweeps = idle_sweeps + 1 if nseq == 0 else 0
                if nseq == 0 and idle_sweeps > self._idle_limit():
                    # whole sweeps without a local sequence: this worker gets no data (as a rank
                    # beyond the chunks); without this an endless epoch would loop forever
                    return None
                continue
            # the sequence part of the window the cursor is in: [seq_lo, seq_hi) in sequence indices
            marker = win.marker if win.marker >= 0 else len(win)
            if self.pos >= len(win):
                self._advance(win)
                continue
            if self.pos < marker:
                lo, hi = self.pos, marker
                off = 0
            else:
                lo, hi = self.pos - 1, n_seq
                off = 1
            loc = self._is_local(win, lo, hi, W, r)
            if len(loc) == 0:
                self.pos = hi + off
                continue
            lens = win.length[loc]
            cum = np.cumsum(lens)
            b1 = int(np.searchsorted(cum, budget - taken, side="right"))
            if nseq == 0:
                b1 = max(b1, 1)
            lb = self._local_budget(W, r)
            b2 = len(loc) if lb is None else int(np.searchsorted(cum - lens, lb - self.sample_count, side="left"))
            b = min(b1, b2, len(loc))
            if b:
                for c in np.unique(win.chunk[loc[:b]]).tolist():
                    if c not in self._taken_chunks:  # hold the data until packed
                        self._taken_chunks[c] = self.cache.get(c)
                sel_c.append(win.chunk[loc[:b]])
                sel_i.append(win.index[loc[:b]])
                sel_l.append(lens[:b])
                got = int(cum[b - 1])
                taken += got
                self.sample_count += got
                nseq += b
            if b < len(loc):
                self.pos = (int(loc[b - 1]) + 1 if (b and taken >= budget) else int(loc[b])) + off
                break
            self.pos = (int(loc[-1]) + 1 if taken >= budget else hi) + off
        if nseq == 0 and self._ended(W, r):
            return None
        if nseq == 0 and not eos:
            return None
        return (np.concatenate(sel_c) if sel_c else np.zeros(0, np.int64),
                np.concatenate(sel_i) if sel_i else np.zeros(0, np.int64),
                np.concatenate(sel_l) if sel_l else np.zeros(0, np.int64), eos)

    def _idle_limit(self) -> int:
        """Sweeps in a row without a local sequence after which a worker is out of data."""
        return 1

    def next_minibatch(self, budget: int, W: int, r: int):
        """One minibatch dict of ``budget`` local samples, or None at the end of the epoch."""
        self._taken_chunks = {}
        try:
            got = self.walk(budget, W, r)
            if got is None:
                self.release()
                return None
            sel_c, sel_i, sel_l, eos = got
            if self.frame_mode:
                check_frame_mode(sel_l)
            mb = pack_sequences(self.stream_infos, self._taken_chunks, sel_c, sel_i, eos)
        finally:
            self._taken_chunks = {}
        if self._ended(W, r):
            self.release()
        return mb

    # --- truncated BPTT (the reader fills its slots from these) ---------------------------------
    def next_sequences(self, W: int, r: int):
        """``([(ref, length, data)], crossed a sweep end)`` of the next local sequence(s), None at
        the end; ``ref`` is ``[chunk, index in chunk]``."""
        self._taken_chunks = {}
        try:
            got = self.walk(1, W, r)
            if got is None:
                return None
            sel_c, sel_i, sel_l, eos = got
            return [self._sequence(c, i, l) for c, i, l in zip(sel_c.tolist(), sel_i.tolist(), sel_l.tolist())], eos
        finally:
            self._taken_chunks = {}

    def sequence(self, ref):
        c, i = int(ref[0]), int(ref[1])
        return self._sequence(c, i, int(self.cache.get(c).sequences.lengths[i]))

    def _sequence(self, c: int, i: int, length: int):
        chunk = self._taken_chunks.get(c) or self.cache.get(c)
        return [c, i], length, {info.name: sequence_arrays(info, chunk, i) for info in self.stream_infos}

    def after_truncated(self, W: int, r: int) -> None:
        return None

    def release(self) -> None:
        self.cache.clear()
        self._win = None

    # --- state --------------------------------------------------------------------------------
    def position_state(self) -> dict:
        state = dict(zip(LT_BASE_KEYS, (self.sweep_count, self.sample_count, self.pos)))
        state.update(self._inner_state())
        return state

    def restore(self, state) -> None:
        for key in LT_BASE_KEYS + self.keys:
            if key not in state:
                raise ValueError(f"Checkpoint misses required field {key}")
        # every count a non-negative integer below 2^63, checked before anything changes
        state = {key: check_state_int(state[key], key) for key in LT_BASE_KEYS + self.keys}
        self.sweep_count = state["baseSweepCount"]
        self.sample_count = state["baseSampleCount"]
        self._set_inner_state(state)
        self.pos = state["baseCurrentSequencePositionInWindow"]
        self._win = None

    def _inner_state(self) -> dict:
        raise NotImplementedError

    def _set_inner_state(self, state) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._win = None
        self.cache.close()


class LTNoRandomizer(LocalTimeline):
    """Chunks in order, one per window, round-robin dealing by position in the sweep."""

    keys = LT_NO_RANDOMIZER_KEYS

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.chunk_pos = 0
        self.seq_pos = 0

    def _window_id(self):
        return (self.chunk_pos, self.seq_pos)

    def _build(self, W: int, r: int) -> _Window:
        c = self.chunk_pos
        lengths = self._lengths(c)
        n = len(lengths)
        return _Window(np.full(n, c, np.int64), np.arange(n, dtype=np.int64), lengths,
                       n if c == self.C - 1 else -1, self.seq_pos + np.arange(n, dtype=np.int64), [c])

    def _advance(self, win: _Window) -> None:
        if self.chunk_pos >= self.C - 1:
            self.chunk_pos, self.seq_pos = 0, 0
        else:
            self.chunk_pos += 1
            self.seq_pos += len(win.chunk)
        self.pos = 0

    def _next_window_chunks(self, W: int, r: int) -> list[int]:
        return [(self.chunk_pos + 1) % self.C]

    def _inner_state(self) -> dict:
        return {"currentChunkPosition": self.chunk_pos, "currentSequencePosition": self.seq_pos}

    def _set_inner_state(self, state) -> None:
        self.chunk_pos = int(state["currentChunkPosition"])
        self.seq_pos = int(state["currentSequencePosition"])


class LTTumblingWindowRandomizer(LocalTimeline):
    """Chunks shuffled per sweep, tumbling windows of this worker's chunks, sequences shuffled."""

    keys = LT_TUMBLING_KEYS

    def __init__(self, *args, window: int, sample_based: bool, seed: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.window = max(1, int(window))
        self.sample_based = bool(sample_based)
        self.seed = int(seed)
        self.chunk_pos = 0
        self.sweep = 0
        self._orders: dict[int, np.ndarray] = {}

    def _order(self, s: int) -> np.ndarray:
        o = self._orders.get(s)
        if o is None:
            if len(self._orders) > 4:
                self._orders.clear()
            o = self._orders[s] = full_range_shuffle(self.seed + s, self.C)
        return o

    def has_data(self, W: int, r: int) -> bool:
        return r < self.C

    def _idle_limit(self) -> int:
        # chunks are reshuffled every sweep: allow every chunk a chance to come this worker's way
        return 2 * self.C + 2

    def _window_id(self):
        return (self.chunk_pos, self.sweep)

    def _pick(self, start: int, s: int, W: int, r: int, need_chunks: int, need_samples: int):
        """This worker's chunk positions from ``start`` in sweep ``s`` for a window."""
        picked = []
        samples = 0
        q = start
        order = self._order(s)
        while q < self.C:
            if q % W == r:
                if self.sample_based:
                    if picked and samples >= need_samples:
                        break
                    samples += int(self._lengths(int(order[q])).sum())
                elif len(picked) >= need_chunks:
                    break
                picked.append(q)
            q += 1
        return picked, samples

    def _part(self, positions: list[int], s: int, window_start: int):
        order = self._order(s)
        chunks = [int(order[q]) for q in positions]
        lens = [self._lengths(c) for c in chunks]
        chunk = np.concatenate([np.full(len(l), c, np.int64) for c, l in zip(chunks, lens)]) if chunks \
            else np.zeros(0, np.int64)
        index = np.concatenate([np.arange(len(l), dtype=np.int64) for l in lens]) if lens else np.zeros(0, np.int64)
        length = np.concatenate(lens) if lens else np.zeros(0, np.int64)
        perm = window_shuffle(window_start + s + self.seed, len(chunk))
        return chunk[perm], index[perm], length[perm], chunks

    def _plan(self, W: int, r: int):
        first, samples = self._pick(self.chunk_pos, self.sweep, W, r, self.window, self.window)
        crossed = (len(first) < self.window) if not self.sample_based else (samples < self.window)
        # does this worker have chunks after ``first`` in this sweep? Then the window did not cross.
        last = first[-1] if first else self.chunk_pos - 1
        if any(q % W == r for q in range(last + 1, self.C)):
            crossed = False
        second = []
        if crossed:
            rest_chunks = self.window - len(first)
            rest_samples = self.window - samples
            second, _ = self._pick(0, self.sweep + 1, W, r, max(rest_chunks, 0),
                                   max(rest_samples, 0))
            if not self.sample_based and rest_chunks <= 0:
                second = []
            if self.sample_based and rest_samples <= 0:
                second = []
        return first, crossed, second

    def _build(self, W: int, r: int) -> _Window:
        first, crossed, second = self._plan(W, r)
        c1, i1, l1, ch1 = self._part(first, self.sweep, self.chunk_pos)
        if not crossed:
            return _Window(c1, i1, l1, -1, None, ch1)
        c2, i2, l2, ch2 = self._part(second, self.sweep + 1, 0)
        return _Window(np.concatenate([c1, c2]), np.concatenate([i1, i2]), np.concatenate([l1, l2]),
                       len(c1), None, ch1 + ch2)

    def _advance(self, win: _Window) -> None:
        W, r = self._win_key[1], self._win_key[2]
        first, crossed, second = self._plan(W, r)
        if crossed:
            self.sweep += 1
            self.chunk_pos = (second[-1] + 1) if second else self.C
        else:
            self.chunk_pos = first[-1] + 1 if first else self.C
        self.pos = 0

    def _next_window_chunks(self, W: int, r: int) -> list[int]:
        if self.sample_based:
            return []
        first, crossed, second = self._plan(W, r)
        if crossed:
            s, start = self.sweep + 1, (second[-1] + 1) if second else self.C
        else:
            s, start = self.sweep, first[-1] + 1 if first else self.C
        nxt, _ = self._pick(start, s, W, r, self.window, 0)
        order = self._order(s)
        return [int(order[q]) for q in nxt]

    def _inner_state(self) -> dict:
        return {"chunkPosition": self.chunk_pos, "sweepIndex": self.sweep}

    def _set_inner_state(self, state) -> None:
        self.chunk_pos = int(state["chunkPosition"])
        self.sweep = int(state["sweepIndex"])

