"""Walking the global timeline: which sequences one call takes, for which worker, with which flags.

A :class:`TimelineWalker` answers questions about positions ``(sweep, position in sweep)`` on the
global timeline of a :mod:`~cntkio.engine.randomizer` (cntk-io-semantics 2.3, 2.4, 2.6;
cntk-ctf-behaviours 10-20). It holds no chunk and reads no data:

* whole sequences; the first one of a call is always taken (when randomized: only in the sweep
  the call starts in), later ones while ``taken + length <= budget``; minibatches cross sweeps;
* a sequence is delivered iff its start on the global timeline is before the epoch end ``E``;
* ``end_of_sweep`` iff the call's range on the global timeline reaches or crosses a sweep end;
* workers (partition budgets): randomized, a sequence is local iff its source randomized chunk
  id % W == rank; not randomized, iff its global sequence number % W == rank; budget
  ``size // W`` (+1 for ranks below ``size % W``, at least 1); non-local sequences still move the
  global position. Where a call stops is CNTK 2.7's rule (cntk-readers-measured 1.1, 1.2): not
  randomized, as soon as the budget is full, right after the last sequence taken (the other
  workers' sequences after it are skipped by the next call, which then reports the sweep end
  they close); randomized, at the start of the next local sequence, or at the sweep end when the
  budget is full there. Positions count from the start of the global timeline (not from the
  last restore as CNTK did), so a restored reader deals sequences to workers exactly as the
  uninterrupted one;
* with :attr:`TimelineWalker.global_budget` (CNTK's config readers whose packer has no local
  timeline: HTKMLFReader, CNTKTextFormatReader, CNTKBinaryReader) a distributed call's budget is
  global instead: it covers the next ``budget`` samples of the global timeline and takes this
  worker's sequences among them (:meth:`TimelineWalker.walk`);
* the chunks the positions just ahead of a cursor need (:meth:`TimelineWalker.span`), which the
  chunk window (:mod:`~cntkio.engine.window`) loads and keeps.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .._log import get_logger
from .index_shuffle import GlobalRandomizer, ShuffledTimeline
from .ordering import RandomOrderingRandomizer
from .randomizer import (BlockRandomizer, Counting, InOrderTimeline, NoRandomizer, RollingTimeline,
                         RollingWindowRandomizer, StreamedTimeline, Stride, Timeline)

__all__ = ["TimelineWalker", "Plan", "worker_budget"]

log = get_logger("engine.walk")


def worker_budget(size: int, workers: int, rank: int, trace_level: int = 1) -> int:
    """A worker's share of a minibatch of ``size`` samples (2.3): at least 1."""
    budget = size // workers + (1 if rank < size % workers else 0)
    if budget < 1:      # a warning at every trace level (cntkio._log), once
        log.warning("minibatch size %d is smaller than the number of workers %d; each worker "
                    "reads at least one sequence", size, workers)
        budget = 1
    return budget


@dataclass
class Plan:
    """What one call takes: ``segs`` [(sweep, a, b, loc)], the cursor after it, the flags."""

    segs: list = field(default_factory=list)
    end: tuple[int, int] = (0, 0)
    end_of_sweep: bool = False
    reached_end: bool = False
    num_sequences: int = 0


def _i64(a: np.ndarray) -> np.ndarray:
    """A selection's indices or lengths as int64 (the timeline stores them smaller)."""
    return np.ascontiguousarray(a, dtype=np.int64)


def _remember(cache: dict, key: tuple, value) -> None:
    """Cache ``value`` under ``key`` (whose first item is a sweep): entries of sweeps more than one
    before ``key``'s are dropped (they hold whole-sweep tables of timelines the randomizer no
    longer caches), and everything once more than 8 are held."""
    k = key[0]
    for old in [o for o in cache if o[0] < k - 1]:
        del cache[old]
    if len(cache) > 8:
        cache.clear()
    cache[key] = value


class TimelineWalker:
    """Positions, partitions, budgets and sweep flags on the global timeline (module docstring).

    ``N`` sequences and ``S`` samples per sweep in ``C`` chunks; ``E`` the epoch end (global
    sample position, None: endless).

    The chunk ids it hands out (:meth:`selection`, :meth:`span`, :meth:`load_id`) are *load ids*:
    the corpus chunk ids, or with ``sweep_chunks`` (a deserializer whose chunk data depends on the
    sweep, e.g. random image transforms) ``sweep * C + chunk``, so that a chunk is loaded again
    for every sweep that reads it and the loads of two sweeps are told apart.
    """

    def __init__(self, chunk_lengths: Sequence[np.ndarray], *, randomize: bool, window: int,
                 sample_based: bool, seed: int, epoch_end: int | None, sweep_chunks: bool = False,
                 rolling: bool = False, random_ordering: int = 0, global_randomization: bool = False) -> None:
        # ``rolling``: cntkio's rolling window over the corpus order (frames; ``window`` in samples);
        # ``random_ordering``: CNTK's legacy RandomOrdering over blocks of that many records;
        # ``global_randomization``: cntkio's keyed bijection over every sequence (engine/index_shuffle)
        self.randomizer = (NoRandomizer(chunk_lengths) if not randomize
                           else GlobalRandomizer(chunk_lengths, seed) if global_randomization
                           else RandomOrderingRandomizer(chunk_lengths, random_ordering) if random_ordering
                           else RollingWindowRandomizer(chunk_lengths, window, seed) if rolling
                           else BlockRandomizer(chunk_lengths, window, sample_based, seed))
        self.randomized = bool(randomize)
        self.N = self.randomizer.num_sequences
        self.S = self.randomizer.sweep_samples
        self.C = self.randomizer.num_chunks
        if self.S <= 0:
            raise RuntimeError("The input has no samples: every sequence is empty")
        self.E = epoch_end
        #: load id of chunk c in sweep k: c + k * stride (stride 0: the chunk id itself)
        self.stride = self.C if sweep_chunks else 0
        self._local_cache: dict = {}
        self._span_cache: dict = {}
        self._ctx_cache: dict = {}
        self._all: np.ndarray | None = None
        #: distributed calls take a global budget (module docstring; :meth:`_walk_global`)
        self.global_budget = False

    def timeline(self, sweep: int) -> Timeline:
        return self.randomizer.timeline(sweep)

    # --- positions ----------------------------------------------------------------------------
    def position(self, cursor: tuple[int, int]) -> int:
        """Global sample position of ``cursor``."""
        k, i = cursor
        return k * self.S + int(self.randomizer.timeline(k).start[i])

    def cursor_at(self, position: int) -> tuple[int, int]:
        """The first sequence starting at or after global sample ``position``, in its sweep."""
        k, off = divmod(int(position), self.S)
        tl = self.randomizer.timeline(k)
        return self.normalize(k, int(np.searchsorted(tl.start[:self.N + 1], off, side="left")))

    def normalize(self, k: int, i: int) -> tuple[int, int]:
        return (k + 1, 0) if i >= self.N else (k, i)

    def set_epoch_end(self, end: int | None) -> None:
        self.E = None if end is None else int(end)
        self._ctx_cache.clear()
        self._local_cache.clear()
        self._span_cache.clear()

    def at_epoch_end(self, sweep: int) -> bool:
        """Whether sweep ``sweep`` starts at or after the epoch end."""
        return self.E is not None and sweep * self.S >= self.E

    def _n_before_end(self, k: int, tl: Timeline) -> int:
        """How many sequences of sweep ``k`` start before the epoch end."""
        if self.E is None:
            return self.N
        rem = self.E - k * self.S
        if rem <= 0:
            return 0
        if rem > self.S:
            return self.N
        return int(np.searchsorted(tl.start[:self.N], rem, side="left"))

    def _local(self, k: int, W: int, r: int) -> tuple[np.ndarray, np.ndarray]:
        """Sorted local positions of sweep ``k`` and the inclusive cumulative sum of their lengths."""
        key = (k if (self.randomized or W > 1) else 0, W, r)
        hit = self._local_cache.get(key)
        if hit is not None:
            return hit
        tl = self.randomizer.timeline(k)
        if W == 1:
            # every position: one array for all sweeps (with unit lengths, the starts: no memory)
            if self._all is None:
                self._all = (tl.start[:self.N] if self.randomizer.unit
                             else np.arange(self.N, dtype=np.int64))
            return self._all, tl.start[1:]
        elif isinstance(tl, InOrderTimeline):
            # frame mode in input order: position p is worker (k * N + p) % W's, every W-th one
            loc = Stride((r - k * self.N) % W, W, self.N)
            cum = Counting(1, len(loc))
        elif isinstance(tl, (StreamedTimeline, RollingTimeline)) or (isinstance(tl, ShuffledTimeline)
                                                                       and self.randomizer.unit):
            # frame mode, randomized: the worker's positions read a randomized chunk at a time
            loc = tl.local_positions(W, r)
            cum = Counting(1, len(loc))
        elif isinstance(tl, ShuffledTimeline):
            # globally randomized sequences: the worker's blocks of positions, their lengths' sum
            loc = tl.local_array(W, r)
            cum = np.cumsum(tl.length[loc], dtype=np.int64)
        else:
            if self.randomized:
                mask = np.remainder(tl.rchunk, W, dtype=np.int64) == r
            else:
                mask = ((k * self.N + np.arange(self.N, dtype=np.int64)) % W) == r
            # int32 where the sweep allows (a worker's positions and their lengths' running sum are
            # kept per cached sweep: in frame mode a table per frame of the worker's share)
            small = max(self.S, self.N) < 2**31 - 1
            loc = np.flatnonzero(mask).astype(np.int32 if small else np.int64)
            cum = np.cumsum(tl.length[loc], dtype=np.int32 if small else np.int64)
        _remember(self._local_cache, key, (loc, cum))
        return loc, cum

    def no_data_for(self, W: int, r: int) -> bool:
        """A randomized worker whose rank >= the number of chunks gets nothing (fact 18)."""
        return self.randomized and W > 1 and r >= self.C

    # --- walking ------------------------------------------------------------------------------
    def _ctx(self, k: int, W: int, r: int):
        """``(timeline, n_before_end, local positions or None (all), inclusive cumsum)`` of sweep k."""
        key = (k, W, r)
        ctx = self._ctx_cache.get(key)
        if ctx is None:
            tl = self.randomizer.timeline(k)
            nE = self._n_before_end(k, tl)
            if W == 1:
                ctx = (tl, nE, None, tl.start[1:])
            else:
                loc, cum = self._local(k, W, r)
                ctx = (tl, nE, loc, cum)
            _remember(self._ctx_cache, key, ctx)
        return ctx

    def walk(self, cursor: tuple[int, int], budget: int, W: int, r: int) -> Plan:
        """The sequences one call of ``budget`` local samples takes from ``cursor``.

        ``plan.segs`` holds ``(sweep, a, b, loc)``: local positions ``loc[a:b]`` of that sweep
        (``loc`` None: all positions, so the positions are ``a..b-1``). With
        :attr:`global_budget` and ``W > 1``, ``budget`` is global samples (:meth:`_walk_global`).
        """
        if self.global_budget and W > 1:
            return self._walk_global(cursor, budget, W, r)
        k, i = cursor
        k0 = k
        plan = Plan()
        taken = 0
        idle_sweeps = 0
        searchsorted = np.searchsorted
        stop_when_full = W > 1 and not self.randomized
        while True:
            tl, nE, loc, cum = self._ctx(k, W, r)
            if i >= nE:
                plan.end, plan.reached_end = (k, i), True
                return plan
            if loc is None:
                a, hi = i, nE
            else:
                a = int(searchsorted(loc, i))
                hi = int(searchsorted(loc, nE))
            if a < hi:
                idle_sweeps = 0
                base = int(cum[a - 1]) if a else 0
                b = int(searchsorted(cum, base + budget - taken, side="right"))
                if b > hi:
                    b = hi
                if b <= a:
                    b = a
                    if plan.num_sequences == 0 and (not self.randomized or k == k0):
                        b = a + 1
                if b > a:
                    plan.segs.append((k, a, b, loc))
                    taken += int(cum[b - 1]) - base
                    plan.num_sequences += b - a
                    if stop_when_full and taken >= budget:
                        # not randomized, the budget is full: stop right after the last sequence
                        # taken (the next call skips the other workers' sequences that follow)
                        j = int(loc[b - 1]) + 1
                        if j < self.N:
                            plan.end = (k, j)
                            return plan
                if b < hi:
                    plan.end = (k, b if loc is None else int(loc[b]))
                    return plan
            else:
                idle_sweeps += 1
            if nE < self.N:
                plan.end, plan.reached_end = (k, nE), True
                return plan
            plan.end_of_sweep = True
            k, i = k + 1, 0
            if self.at_epoch_end(k) or idle_sweeps > W + 1:
                plan.end, plan.reached_end = (k, 0), True
                return plan
            if taken >= budget:  # a full call stops at the sweep end it reaches
                plan.end = (k, 0)
                return plan

    def _walk_global(self, cursor: tuple[int, int], budget: int, W: int, r: int) -> Plan:
        """One distributed call of a config reader without a local timeline: CNTK's
        BlockRandomizer/NoRandomizer asked for ``budget`` global and local samples (its packer sets
        both to the minibatch size, SequencePacker.cpp:131; BlockRandomizer.cpp:281-320). The
        first local sequence is taken wherever it lies (the other workers' sequences before it
        move the position without counting against the budget); then the sequences that follow,
        local or not, while the global samples from the cursor stay within ``budget``, this
        worker keeping its own. A sequence starting at or after the epoch end ends the call, and
        so does the sweep end (a config reader's minibatch never crosses it). A sweep with no local
        sequence left is passed to the next one (CNTK returned an empty minibatch there)."""
        k, i = cursor
        plan = Plan()
        idle = 0
        while True:
            tl, nE, loc, _ = self._ctx(k, W, r)
            if i >= nE:
                plan.end, plan.reached_end = (k, i), True
                return plan
            a = int(np.searchsorted(loc, i))
            if a >= len(loc) or int(loc[a]) >= nE:          # no local sequence left before the end
                if nE < self.N:
                    plan.end, plan.reached_end = (k, nE), True
                    return plan
                plan.end_of_sweep = True
                k, i, idle = k + 1, 0, idle + 1
                if self.at_epoch_end(k) or idle > W + 1:
                    plan.end, plan.reached_end = (k, 0), True
                    return plan
                continue
            first = int(loc[a])
            # positions before ``fit`` end within the budget, counted from the cursor
            fit = int(np.searchsorted(tl.start[1:self.N + 1], int(tl.start[i]) + budget, side="right"))
            e = min(max(fit, first + 1), nE)
            b = int(np.searchsorted(loc, e))
            plan.segs.append((k, a, b, loc))
            plan.num_sequences += b - a
            if e >= self.N:
                plan.end_of_sweep = True
                plan.end = (k + 1, 0)
            else:
                plan.end = (k, e)
            return plan

    def walk_batch(self, cursor: tuple[int, int], budget: int, W: int, r: int, count: int,
                   bound: tuple[int, int] | None = None) -> list:
        """The plans of up to ``count`` minibatches from ``cursor``, within one sweep; the last plan
        is an empty one that reached the end when the epoch ends there. With ``bound`` (sweep,
        position), only minibatches that start before it (none: ``[]``)."""
        plans = []
        k0, i0 = cursor
        if self.at_epoch_end(k0):  # at the epoch end: no timeline to compute
            return [Plan(end=cursor, reached_end=True)]
        tl0 = self.randomizer.timeline(k0)
        # stay within the randomized chunk the batch starts in and the next one, so that a
        # batch never holds more chunks than the window does
        limit = int(tl0.rchunk_start[min(self.C, tl0.owner(i0) + 2)])
        if bound is not None:
            limit = min(limit, bound[1]) if bound[0] == k0 else (limit if bound[0] > k0 else 0)
            if limit <= i0:
                return []
        if W == 1:
            _, nE, _, cum = self._ctx(k0, 1, 0)
            start = tl0.start
        for _ in range(count):
            if cursor[0] != k0 or cursor[1] >= limit:
                break
            if W == 1:
                # fast path of walk() for one worker: a minibatch that ends inside the sweep
                i = cursor[1]
                if i < nE:
                    b = int(cum.searchsorted(int(start[i]) + budget, side="right"))
                    if b <= i:
                        b = i + 1
                    if b < nE:
                        plans.append(Plan([(k0, i, b, None)], (k0, b), False, False, b - i))
                        cursor = (k0, b)
                        continue
            plan = self.walk(cursor, budget, W, r)
            if plan.num_sequences == 0 and plan.reached_end:
                plans.append(plan)
                break
            plans.append(plan)
            cursor = self.normalize(*plan.end)
            if plan.reached_end:
                break
        return plans

    def next_local(self, cursor: tuple[int, int], W: int, r: int):
        """The next local sequence as CNTK's truncated-BPTT packer takes it (one sequence per
        call of budget 1): ``(sweep, position, sweep end, cursor after)``.
        ``sweep end`` is CNTK's flag of that call: a sweep end was passed before the sequence,
        or after it (not randomized: it is the last of its sweep; randomized: no local sequence
        of its sweep follows, so the call runs on to the sweep end). The cursor after it is the
        next position (not randomized) or the next local sequence's (randomized). At the end,
        sweep and position are -1 and the cursor is where the call stops: past the other
        workers' sequences before the epoch end (as CNTK's last, empty, fetch)."""
        k, i = cursor
        crossed = False
        idle = 0
        while True:
            tl = self.randomizer.timeline(k)
            nE = self._n_before_end(k, tl)
            if i >= nE:
                return -1, -1, False, (k, i)
            loc, _ = self._local(k, W, r)
            a = int(np.searchsorted(loc, i))
            if a < len(loc) and loc[a] < nE:
                j = int(loc[a])
                if not self.randomized or W == 1:
                    return k, j, crossed or j + 1 >= self.N, self.normalize(k, j + 1)
                if a + 1 < len(loc) and loc[a + 1] < nE:
                    return k, j, crossed, (k, int(loc[a + 1]))
                if nE < self.N:
                    return k, j, crossed, (k, nE)
                return k, j, True, (k + 1, 0)
            if nE < self.N:
                return -1, -1, False, (k, nE)
            idle += 1
            crossed = True
            k, i = k + 1, 0
            if self.at_epoch_end(k) or idle > W + 1:
                return -1, -1, False, (k, 0)

    def load_id(self, k: int, chunk: int) -> int:
        """The load id of corpus chunk ``chunk`` read in sweep ``k`` (class docstring)."""
        return chunk + k * self.stride

    def chunk_of(self, load_id: int) -> tuple[int, int]:
        """``(sweep, corpus chunk)`` of a load id (sweep 0 without ``sweep_chunks``)."""
        return divmod(load_id, self.stride) if self.stride else (0, load_id)

    def _ids(self, k: int, chunks: np.ndarray) -> np.ndarray:
        return chunks + k * self.stride if self.stride else chunks

    def selection(self, plans: list):
        """``(load ids, indices in chunk, lengths)`` of the plans' sequences, in delivery order."""
        if len(plans) == 1 and len(plans[0].segs) == 1 and plans[0].segs[0][3] is None:
            k, a, b, _ = plans[0].segs[0]
            tl = self.randomizer.timeline(k)
            return self._ids(k, tl.chunks(slice(a, b))), _i64(tl.index[a:b]), _i64(tl.length[a:b])
        first = plans[0].segs[0] if plans and plans[0].segs else None
        if first is not None and first[3] is None:
            # consecutive plans of one worker in one sweep usually make one range of positions
            k, prev = first[0], first[1]
            for p in plans:
                if len(p.segs) != 1 or p.segs[0][0] != k or p.segs[0][3] is not None or p.segs[0][1] != prev:
                    break
                prev = p.segs[0][2]
            else:
                tl = self.randomizer.timeline(k)
                a = first[1]
                return self._ids(k, tl.chunks(slice(a, prev))), _i64(tl.index[a:prev]), _i64(tl.length[a:prev])
        cs, xs, ls = [], [], []
        for plan in plans:
            for k, a, b, loc in plan.segs:
                tl = self.randomizer.timeline(k)
                pos = slice(a, b) if loc is None else loc[a:b]
                cs.append(self._ids(k, tl.chunks(pos)))
                xs.append(_i64(tl.index[pos]))
                ls.append(_i64(tl.length[pos]))
        if not cs:
            z = np.zeros(0, np.int64)
            return z, z, z
        return np.concatenate(cs), np.concatenate(xs), np.concatenate(ls)

    # --- the chunks ahead ---------------------------------------------------------------------
    def span(self, cursor: tuple[int, int], W: int, r: int, ahead: int = 0) -> set[int]:
        """Chunks (load ids) the positions just ahead of ``cursor`` need: those of the current and
        next two randomized chunks (the next 3W when distributed), into the next sweep when it runs
        out; and at least those of the next ``ahead`` samples of the sweep (chunks much smaller
        than a minibatch, e.g. one image each, are then loaded a few minibatches ahead, on the
        loader threads, not one by one when a minibatch is packed)."""
        k, i = cursor
        tl = self.randomizer.timeline(k)
        o = tl.owner(i)
        stop_ahead = 0
        if ahead:
            j = int(np.searchsorted(tl.start, int(tl.start[i]) + ahead, side="left"))
            stop_ahead = tl.owner(min(j, self.N - 1)) + 1
        span = 3 * max(1, W)
        stop = min(self.C, max(o + span, stop_ahead))
        key = (k if self.randomized or W > 1 or self.stride else 0, o, W, r, stop)
        need = self._span_cache.get(key)
        if need is None:
            loc, _ = self._local(k, W, r)
            lo, hi = np.searchsorted(loc, [tl.rchunk_start[o], tl.rchunk_start[stop]])
            need = self._chunks_of(k, tl, loc, lo, hi)
            if o + span > self.C and (self.E is None or (k + 1) * self.S < self.E):
                tl2 = self.randomizer.timeline(k + 1)
                loc2, _ = self._local(k + 1, W, r)
                end2 = tl2.rchunk_start[min(self.C, o + span - self.C)]
                need |= self._chunks_of(k + 1, tl2, loc2, 0, int(np.searchsorted(loc2, end2)))
            if len(self._span_cache) > 16:
                self._span_cache.clear()
            self._span_cache[key] = need
        return need

    def used_later(self, cursor: tuple[int, int], chunks) -> set[int]:
        """The chunks (load ids) of ``chunks`` that a position at or after ``cursor`` uses: in its
        sweep, by the timeline; with sweep load ids, also every load of a later sweep."""
        k, i = cursor
        last_use = self.randomizer.timeline(k).last_use
        if not self.stride:
            return {c for c in chunks if last_use[c] >= i}
        later = set()
        for v in chunks:
            kv, c = divmod(v, self.stride)
            if kv > k or (kv == k and last_use[c] >= i):
                later.add(v)
        return later

    def _chunks_of(self, k: int, tl: Timeline, loc: np.ndarray, lo: int, hi: int) -> set[int]:
        """The chunks (load ids) of sweep ``k``'s local positions ``loc[lo:hi]`` (a count per
        chunk: no sort)."""
        ids = tl.chunks(slice(lo, hi) if len(loc) == self.N else loc[lo:hi])
        found = np.flatnonzero(np.bincount(ids, minlength=self.C))
        return set(self._ids(k, found).tolist())

    def bound(self, cursor: tuple[int, int], W: int) -> tuple[int, int]:
        """(sweep, position) of the last randomized chunk whose chunks :meth:`span` covers for
        ``cursor``. Minibatches starting before it end in it at the latest, so that a batch walked
        with this bound reads only chunks the window holds."""
        k, i = cursor
        tl = self.randomizer.timeline(k)
        stop = tl.owner(i) + 3 * max(1, W) - 1
        if stop <= self.C:
            return k, int(tl.rchunk_start[stop])
        if self.at_epoch_end(k + 1):
            return k + 1, 0
        return k + 1, int(self.randomizer.timeline(k + 1).rchunk_start[min(self.C, stop - self.C)])
