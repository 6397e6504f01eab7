"""The global-timeline reader behind ``MinibatchSource`` for built-in deserializers.

It walks the sweep timelines of a :mod:`~cntkio.engine.randomizer` with CNTK's minibatch rules
(cntk-io-semantics 2.3, 2.4, 2.6; cntk-ctf-behaviours 10-20):

* whole sequences; the first one of a call is always taken (when randomized: only in the sweep
  the call starts in), later ones while ``taken + length <= budget``; minibatches cross sweeps;
* a sequence is delivered iff its start on the global timeline is before the epoch end ``E``;
* ``end_of_sweep`` iff the call's range on the global timeline reaches or crosses a sweep end;
* workers: randomized, a sequence is local iff its source randomized chunk id % W == rank;
  not randomized, iff its global sequence number % W == rank; budget ``size // W`` (+1 for ranks
  below ``size % W``, at least 1); non-local sequences still move the global position;
* the position (sweep, sequence in sweep) is the whole state: the checkpoint is the global
  sample position after the last returned minibatch; a restore goes to the first sequence
  starting at or after it in its sweep, and the order is re-derived from the seed, so a restore
  on a fresh reader continues exactly (cntkio differs from CNTK's restore quirk on purpose).

Position-based partitioning counts sequences from the start of the global timeline (not from the
last restore as CNTK did), so that a restored reader deals sequences to workers exactly as the
uninterrupted one.

Chunks are loaded when positions ahead need them (background loads) and released once no later
position of the current sweep uses them, so memory is bounded by the randomization window.

Random access (randomized reading without truncation, every deserializer ``random_access``, e.g.
CTF): the window holds the chunks' raw bytes instead of parsed chunks (for CTF, byte ranges of the
mapped file, read ahead by the kernel; held and released by the same rule), and each batch parses
just its sequences, in delivery order (``begin_read_sequences``; with two loader threads, in two
halves at once). The C parser runs each half on a native thread of its own, which takes neither
the GIL nor Python objects, and batches are pipelined on the caller's thread, without a packing
thread: when the queue of packed minibatches runs out, the batch at the cursor (begun earlier) is
collected, the window moves past it, the batches after it are walked and begun until two are
being parsed ahead, and only then is it packed (packing is a few microseconds of Python per
minibatch; the parse is the work, and it runs while minibatches are packed and handed out and
while the caller trains on them). The second batch ahead starts before the last randomized chunk
the window keeps, so no parse reads a chunk the window does not hold. The first call with new
settings begins one small batch ahead only (settings that change at every call would otherwise
have two full batches parsed and dropped per call). The first minibatch waits
for the index, not for the whole window to be parsed. A batch whose parse reports anything (a
malformed line, a warning) is packed from whole parsed chunks instead, which counts and logs the
issues exactly as chunk loading does; its chunks stay on chunk loading from then on (a batch
already parsed cleanly ahead is still used: its sequences parsed alone are exactly what chunk
loading would give). Both ways give the same minibatches.

Minibatches are packed in batches: while the minibatch size and the partition stay the same, up
to 256 consecutive minibatches (about 16 MB of output, and never further than the next randomized
chunk) are walked and gathered at once, then handed out one per call; without random access the
next batch is packed on a background thread meanwhile. A packed batch is a few arrays per stream
(:class:`~cntkio.engine.packer.PackedBatch`); each minibatch's objects are made when it is handed
out, and the queue holds tuples of numbers, so nothing queued lives long enough to reach the
garbage collector's oldest generation. The checkpoint still names the position
after the last minibatch *returned*; a restore or a change of size or partition drops what was
packed or parsed ahead (a native parse dropped runs to its end first: its thread is joined when
its job goes).
"""
from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..deserializers.base import Deserializer
from ..streams import StreamInformation
from .packer import TruncatedSlots, check_frame_mode, group_by_chunk, pack_batch, sequence_arrays
from .prefetch import ChunkCache, Prefetcher
from .randomizer import BlockRandomizer, NoRandomizer, Timeline

__all__ = ["GlobalReader", "Plan", "worker_budget", "POSITION_KEY", "TBPTT_KEY"]

log = logging.getLogger("cntkio.engine.reader")

POSITION_KEY = "minibatchSourcePosition"
#: minibatches of the batch begun ahead by the first call with new settings (random access)
_FIRST_AHEAD = 16
TBPTT_KEY = "truncatedBpttSlots"


def worker_budget(size: int, workers: int, rank: int, trace_level: int = 1) -> int:
    """A worker's share of a minibatch of ``size`` samples (2.3): at least 1."""
    budget = size // workers + (1 if rank < size % workers else 0)
    if budget < 1:
        if trace_level >= 1:
                log.warning("minibatch size %d is smaller than the number of workers %d; each worker "
                            "reads at least one sequence", size, workers)
        budget = 1
    return budget


@dataclass
class Plan:
    """What one call takes: ``segs`` [(sweep, positions)], the cursor after it, the flags."""

    segs: list = field(default_factory=list)
    end: tuple[int, int] = (0, 0)
    end_of_sweep: bool = False
    reached_end: bool = False
    num_sequences: int = 0


class _Batch:
    """Consecutive minibatches being read: ``key`` ((settings, start cursor) they were walked
    for); ``entries``, per minibatch ``(sweep, position after it, reached the epoch end)`` (its
    part and index added when packed, :meth:`GlobalReader._finish`), the epoch-end marker last when
    the batch reaches it; ``parts``:
    per half its selection (:meth:`GlobalReader._prepare`) and its parse begun
    (:meth:`GlobalReader._begin`); ``end``: the cursor after the batch (None at the epoch end).
    No Plan object outlives the walk: the entries are tuples of numbers, which the garbage
    collector stops tracking."""

    __slots__ = ("key", "entries", "parts", "end")

    def __init__(self, key, entries: list, parts: list, end) -> None:
        self.key, self.entries, self.parts, self.end = key, entries, parts, end


class GlobalReader:
    """Randomizer walk + packing + chunk cache for built-in deserializers (module docstring)."""

    def __init__(self, corpus: Deserializer, stream_infos: list[StreamInformation], *, randomize: bool,
                 window: int, sample_based: bool, seed: int, epoch_end: int | None, frame_mode: bool,
                 truncation_length: int, max_errors: int, loader_threads: int, prefetch: bool = True,
                 trace_level: int = 1, random_access: bool = True) -> None:
        self.corpus = corpus
        self.stream_infos = stream_infos
        lengths = [corpus.sequence_infos(c.id).lengths for c in corpus.chunk_infos()]
        self.randomizer = (BlockRandomizer(lengths, window, sample_based, seed) if randomize
                           else NoRandomizer(lengths))
        self.randomized = bool(randomize)
        self.N = self.randomizer.num_sequences
        self.S = self.randomizer.sweep_samples
        self.C = self.randomizer.num_chunks
        if self.S <= 0:
            raise RuntimeError("The input has no samples: every sequence is empty")
        self.E = epoch_end
        self.frame_mode = bool(frame_mode)
        self.T = int(truncation_length)
        self.max_errors = int(max_errors)
        self.trace_level = int(trace_level)
        self.errors = 0
        self.cursor = (0, 0)
        self.cache = ChunkCache(corpus, threads=loader_threads)
        # read randomized batches sequence by sequence (module docstring); chunks whose direct
        # read reported an issue go through chunk loading
        self.direct = bool(random_access and randomize and not self.T
                           and getattr(corpus, "random_access", False))
        # random access with prefetching: each batch's parse runs on native threads while the
        # batch before it is handed out (no packing thread: packing is a few microseconds per
        # minibatch, the parse is the work)
        self._pipeline = self.direct and bool(prefetch)
        self.prefetcher = Prefetcher() if prefetch and not self.T and not self._pipeline else None
        self.generation = 0
        self.slots = TruncatedSlots(stream_infos, self.T) if self.T else None
        self._dirty: set[int] = set()
        self.raw = ChunkCache(corpus, threads=1, name="cntkio-bytes", loader=corpus.read_bytes,
                              release=corpus.release_bytes) if self.direct else None
        # random access: a batch is parsed in two halves at once (given two cores), and two
        # batches are being parsed ahead of the one handed out (module docstring)
        self._halves = self.direct and loader_threads > 1
        self._ahead: deque = deque()  # batches begun ahead of the cursor, in order
        self._depth = 2
        if self.trace_level >= 2:
            log.info("%d sequences (%d samples per sweep) in %d chunks; %s; epoch end %s; %s packing",
                     self.N, self.S, self.C,
                     (f"block randomizer, window {window} {'samples' if sample_based else 'chunks'}, seed {seed}"
                      if randomize else "no randomization"),
                     "none" if epoch_end is None else f"at sample {epoch_end}",
                     "truncated BPTT" if self.T else ("frame" if frame_mode else "sequence"))
        self._local_cache: dict = {}
        self._needed_cache: dict = {}
        self._ctx_cache: dict = {}
        self._queue: deque = deque()  # entries of _finish, handed out one per call
        self._queue_parts: list = []  # the PackedBatch objects the entries index
        self._queue_key = None
        self._sample_bytes = sum(
            (int(np.prod(i.sample_shape, dtype=np.int64)) * np.dtype(i.dtype).itemsize) if not i.is_sparse else 64
            for i in stream_infos) or 4

    # --- positions ----------------------------------------------------------------------------
    def position(self) -> int:
        """Global sample position of the cursor."""
        k, i = self.cursor
        return k * self.S + int(self.randomizer.timeline(k).start[i])

    def _normalize(self, k: int, i: int) -> tuple[int, int]:
        return (k + 1, 0) if i >= self.N else (k, i)

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
            loc = np.arange(self.N, dtype=np.int64)
            cum = tl.start[1:]
        else:
            if self.randomized:
                mask = (tl.rchunk % W) == r
            else:
                mask = ((k * self.N + np.arange(self.N, dtype=np.int64)) % W) == r
            loc = np.flatnonzero(mask).astype(np.int64)
            cum = np.cumsum(tl.length[loc])
        if len(self._local_cache) > 8:
            self._local_cache.clear()
        self._local_cache[key] = (loc, cum)
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
            if len(self._ctx_cache) > 8:
                self._ctx_cache.clear()
            self._ctx_cache[key] = ctx
        return ctx

    def walk(self, cursor: tuple[int, int], budget: int, W: int, r: int) -> Plan:
        """The sequences one call of ``budget`` local samples takes from ``cursor``.

        ``plan.segs`` holds ``(sweep, a, b, loc)``: local positions ``loc[a:b]`` of that sweep
        (``loc`` None: all positions, so the positions are ``a..b-1``).
        """
        k, i = cursor
        k0 = k
        plan = Plan()
        taken = 0
        idle_sweeps = 0
        searchsorted = np.searchsorted
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
            if (self.E is not None and k * self.S >= self.E) or idle_sweeps > W + 1:
                plan.end, plan.reached_end = (k, 0), True
                return plan

    def next_local(self, cursor: tuple[int, int], W: int, r: int):
        """``(sweep, position, crossed_sweep_end)`` of the next local sequence, or None at the end."""
        k, i = cursor
        crossed = False
        idle = 0
        while True:
            tl = self.randomizer.timeline(k)
            nE = self._n_before_end(k, tl)
            if i >= nE:
                return None
            loc, _ = self._local(k, W, r)
            a = int(np.searchsorted(loc, i))
            if a < len(loc) and loc[a] < nE:
                return k, int(loc[a]), crossed
            if nE < self.N:
                return None
            idle += 1
            crossed = True
            k, i = k + 1, 0
            if (self.E is not None and k * self.S >= self.E) or idle > W + 1:
                return None

    # --- chunks -------------------------------------------------------------------------------
    def _needed(self, cursor: tuple[int, int], W: int, r: int) -> set[int]:
        """Chunks the positions just ahead of ``cursor`` need (the current and next two randomized
        chunks, or the next 3W when distributed), plus held chunks still used later this sweep."""
        k, i = cursor
        tl = self.randomizer.timeline(k)
        o = tl.owner(i)
        key = (k if self.randomized or W > 1 else 0, o, W, r)
        need = self._needed_cache.get(key)
        if need is None:
            span = 3 * max(1, W)
            stop = min(self.C, o + span)
            loc, _ = self._local(k, W, r)
            lo, hi = np.searchsorted(loc, [tl.rchunk_start[o], tl.rchunk_start[stop]])
            need = self._chunks_of(tl, loc, lo, hi)
            if o + span > self.C and (self.E is None or (k + 1) * self.S < self.E):
                tl2 = self.randomizer.timeline(k + 1)
                loc2, _ = self._local(k + 1, W, r)
                end2 = tl2.rchunk_start[min(self.C, o + span - self.C)]
                need |= self._chunks_of(tl2, loc2, 0, int(np.searchsorted(loc2, end2)))
            if len(self._needed_cache) > 16:
                self._needed_cache.clear()
            self._needed_cache[key] = need
        held = self.cache.held() if self.raw is None else set(self.cache.held()) | set(self.raw.held())
        later = {c for c in held if tl.last_use[c] >= i}
        return need | later

    def _chunks_of(self, tl: Timeline, loc: np.ndarray, lo: int, hi: int) -> set[int]:
        """The chunks of the local positions ``loc[lo:hi]`` (a count per chunk: no sort)."""
        ids = tl.chunk[lo:hi] if len(loc) == self.N else tl.chunk[loc[lo:hi]]
        return set(np.flatnonzero(np.bincount(ids, minlength=self.C)).tolist())

    def _prefetch(self, need: set[int]) -> None:
        """Start loading the chunks of ``need`` (with random access: their bytes, and parsed only
        those read by chunk)."""
        if self.raw is not None:
            self.raw.prefetch(sorted(need - self._dirty))
            self.cache.prefetch(sorted(need & self._dirty))
        else:
            self.cache.prefetch(sorted(need))

    def _retain(self, keep: set[int], defer: bool = False):
        """Release the chunks not in ``keep``; ``defer``: return a function that runs their
        release (for CTF's byte ranges: a madvise, under the GIL), so that it can wait until the
        next work has been started."""
        dropped = self.cache.retain(keep, defer)
        dropped_raw = self.raw.retain(keep, defer) if self.raw is not None else []

        def release():
            self.cache.release(dropped)
            if self.raw is not None:
                self.raw.release(dropped_raw)
        return release

    def _clear(self) -> None:
        self._retain(set())

    def _selection(self, plans: list):
        """``(chunk ids, indices in chunk, lengths)`` of the plans' sequences, in delivery order."""
        if len(plans) == 1 and len(plans[0].segs) == 1 and plans[0].segs[0][3] is None:
            k, a, b, _ = plans[0].segs[0]
            tl = self.randomizer.timeline(k)
            return tl.chunk[a:b], tl.index[a:b], tl.length[a:b]
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
                return tl.chunk[a:prev], tl.index[a:prev], tl.length[a:prev]
        cs, xs, ls = [], [], []
        for plan in plans:
            for k, a, b, loc in plan.segs:
                tl = self.randomizer.timeline(k)
                pos = slice(a, b) if loc is None else loc[a:b]
                cs.append(tl.chunk[pos])
                xs.append(tl.index[pos])
                ls.append(tl.length[pos])
        if not cs:
            z = np.zeros(0, np.int64)
            return z, z, z
        return np.concatenate(cs), np.concatenate(xs), np.concatenate(ls)

    # --- executing ----------------------------------------------------------------------------
    def _prepare(self, plans: list):
        """The selection of consecutive plans: ``(end_of_sweep flags, counts, sel_chunk,
        sel_index)``. They are packed at once (:meth:`_pack`): one gather per stream and chunk for
        all of them, then each minibatch is a slice, so numpy's overhead is paid once per batch,
        not once per minibatch."""
        sel_chunk, sel_index, sel_len = self._selection(plans)
        if self.frame_mode:
            check_frame_mode(sel_len)
        return [p.end_of_sweep for p in plans], [p.num_sequences for p in plans], sel_chunk, sel_index

    def _begin(self, prep):
        """With random access, start parsing the prepared sequences out of their chunks' bytes:
        ``(chunk ids, pending read)``; None when they go through chunk loading (one of their
        chunks fell back before)."""
        _, _, sel_chunk, sel_index = prep
        if not self.direct or not len(sel_chunk):
            return None
        ids = np.unique(sel_chunk).tolist()
        if any(c in self._dirty for c in ids):
            return None
        return ids, self.corpus.begin_read_sequences({c: self.raw.get(c) for c in ids}, sel_chunk,
                                                     sel_index)

    def _direct(self, prep, begun):
        """The parsed sequences of :meth:`_begin` (waiting for them), or None: chunk loading. A
        parse that reports an issue makes its chunks fall back."""
        if begun is None:
            return None
        ids, pending = begun
        direct = pending()
        if direct is None:
            self._dirty.update(ids)
        return direct

    def _pack(self, prep, direct):
        """Pack a prepared selection from ``direct`` (:meth:`_direct`), or else from the parsed
        chunks: ``(PackedBatch, invalid sequences dropped per minibatch)``."""
        eos, counts, sel_chunk, sel_index = prep
        counts = list(counts)
        if direct is not None:
            n = len(sel_chunk)
            chunks = {0: direct}
            sel_chunk, sel_index = np.zeros(n, np.int64), np.arange(n, dtype=np.int64)
            groups = [(0, sel_index)]
        else:
            groups = group_by_chunk(sel_chunk)
            chunks = {c: self.cache.get(c) for c, _ in groups}
        invalid = [0] * len(counts)
        if any(chunks[c].invalid is not None for c, _ in groups):
            bad = np.zeros(len(sel_chunk), bool)
            for c, pos in groups:
                inv = chunks[c].invalid
                if inv is not None:
                    bad[pos] = inv[sel_index[pos]]
            if bad.any():
                keep = np.ones(len(sel_chunk), bool)
                start = 0
                for j, n in enumerate(counts):
                    nb = int(bad[start:start + n].sum())
                    if nb == n:  # CNTK empties the minibatch without counting
                        keep[start:start + n] = False
                    elif nb:
                        keep[start:start + n] = ~bad[start:start + n]
                        invalid[j] = nb
                    counts[j] = int(keep[start:start + n].sum())
                    start += n
                sel_chunk, sel_index = sel_chunk[keep], sel_index[keep]
                groups = group_by_chunk(sel_chunk)
        return pack_batch(self.stream_infos, chunks, sel_chunk, sel_index, groups, counts, eos,
                          owned=direct is not None), invalid

    def _count_invalid(self, n_invalid: int) -> None:
        if n_invalid:
            self.errors += n_invalid
            if self.trace_level >= 1:
                log.warning("%d invalid sequence(s) removed from the minibatch (%d so far, max_errors %d)",
                            n_invalid, self.errors, self.max_errors)
            if self.errors > self.max_errors:
                raise RuntimeError(f"Number of invalid sequences '{self.errors}' in the input exceeded the "
                                   f"specified maximum number '{self.max_errors}'")

    def _batch_size(self, budget: int) -> int:
        """Minibatches packed together: up to 256, about 16 MB of output at most."""
        return max(1, min(256, (16 << 20) // max(1, budget * self._sample_bytes)))

    def _walk_batch(self, cursor: tuple[int, int], budget: int, W: int, r: int, count: int,
                    bound: tuple[int, int] | None = None) -> list:
        """The plans of up to ``count`` minibatches from ``cursor``, within one sweep; the last plan
        is an empty one that reached the end when the epoch ends there. With ``bound`` (sweep,
        position), only minibatches that start before it (none: ``[]``)."""
        plans = []
        k0, i0 = cursor
        if self.E is not None and k0 * self.S >= self.E:  # at the epoch end: no timeline to compute
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
            cursor = self._normalize(*plan.end)
            if plan.reached_end:
                break
        return plans

    def _start(self, plans: list, key=None) -> _Batch:
        """Prepare a batch and, with random access, start parsing it: in two halves when there are
        two parse threads (the C parser runs each on a thread of its own, without the GIL)."""
        real = [p for p in plans if not (p.num_sequences == 0 and p.reached_end)]
        if self._halves and len(real) >= 2:
            h = len(real) // 2
            preps = [self._prepare(real[:h]), self._prepare(real[h:])]
        else:
            preps = [self._prepare(real)] if real else []
        end = None if plans[-1].reached_end else self._normalize(*plans[-1].end)
        entries = [(*p.end, p.reached_end) for p in real]
        if len(real) < len(plans):
            entries.append((*plans[-1].end, True))
        return _Batch(key, entries, [(prep, self._begin(prep)) for prep in preps], end)

    def _collect(self, batch: _Batch) -> list:
        """Wait for a started batch's parses: ``[(prep, direct or None)]``."""
        return [(prep, self._direct(prep, begun)) for prep, begun in batch.parts]

    def _finish(self, batch: _Batch, parsed: list):
        """Pack a batch: ``(packed parts, queue entries)``. An entry is ``(sweep, position after
        it, reached the epoch end, part, index in part, invalid sequences dropped)``; part -1 marks
        the epoch end (no minibatch). Minibatch objects are made when handed out
        (:class:`~cntkio.engine.packer.PackedBatch`)."""
        packed, entries, e = [], [], 0
        for part, (prep, direct) in enumerate(parsed):
            pb, invalid = self._pack(prep, direct)
            packed.append(pb)
            for j, n in enumerate(invalid):
                entries.append(batch.entries[e] + (part, j, n))
                e += 1
        if e < len(batch.entries):  # the epoch-end marker
            entries.append(batch.entries[e] + (-1, 0, 0))
        return packed, entries

    def _produce(self, cursor: tuple[int, int], budget: int, W: int, r: int, count: int):
        """Walk and pack up to ``count`` minibatches from ``cursor`` (see :meth:`_finish`)."""
        batch = self._start(self._walk_batch(cursor, budget, W, r, count))
        return self._finish(batch, self._collect(batch))

    def next(self, size: int, W: int, r: int):
        """One minibatch dict, or None at the epoch end."""
        if self.no_data_for(W, r):
            return None
        if self.T:
            return self._next_truncated(size, W, r)
        budget = worker_budget(size, W, r, self.trace_level)
        key = (self.generation, budget, W, r)
        if not self._queue or self._queue_key != key:
            self._queue.clear()
            if self._queue_key != key:  # first call with these settings: start the loads now
                self._prefetch(self._needed(self.cursor, W, r))
            count = 1 if self._queue_key != key else self._batch_size(budget)
            if self._pipeline:
                self._queue_parts, entries = self._read_pipelined(key, budget, W, r, count,
                                                                  settled=self._queue_key == key)
                self._queue.extend(entries)
                self._queue_key = key
            else:
                batch = self.prefetcher.take((key, self.cursor)) if self.prefetcher is not None else None
                if batch is None:
                    batch = self._produce(self.cursor, budget, W, r, count)
                self._queue_parts, entries = batch
                self._queue.extend(entries)
                self._queue_key = key
                self._schedule(budget, W, r)
        k, i, _, part, j, n_invalid = self._queue.popleft()
        self.cursor = self._normalize(k, i)
        if part < 0:
            if self.prefetcher is not None:
                self.prefetcher.discard()
            self._drop_queued()
            self._clear()
            return None
        self._count_invalid(n_invalid)
        return self._queue_parts[part].get(j)

    def _read_pipelined(self, key, budget: int, W: int, r: int, count: int, settled: bool):
        """Random access: the batch at the cursor (begun by an earlier call when it walked from
        here with these settings), packed (:meth:`_finish`). Before packing it, the window moves to the batch after
        it, and batches are begun until ``_depth`` are being parsed ahead (on native threads, while
        this one is packed and handed out); those beyond the next one start before
        :meth:`_bound`, within the chunks the window holds. The first call with new settings
        (not ``settled``) begins one small batch only: settings that change from call to call
        (alternating minibatch sizes) would otherwise parse two full batches per call for
        nothing (and wait for them when they are dropped)."""
        ahead = self._ahead
        cursor = self.cursor
        if not ahead or ahead[0].key != (key, cursor):
            ahead.clear()
            ahead.append(self._start(self._walk_batch(cursor, budget, W, r, count), (key, cursor)))
        batch = ahead.popleft()
        parsed = self._collect(batch)
        if batch.end is None:  # the batch reaches the epoch end: nothing more to read
            ahead.clear()
            self._clear()
        else:
            keep = self._needed(batch.end, W, r)
            release = self._retain(keep, defer=True)
            self._prefetch(keep)
            size = self._batch_size(budget) if settled else min(self._batch_size(budget), _FIRST_AHEAD)
            bound = self._bound(batch.end, W)
            while len(ahead) < (self._depth if settled else 1):
                last = ahead[-1] if ahead else batch
                if last.end is None:
                    break
                # the batch right after this one stays within the window by itself (a batch ends
                # in the randomized chunk after the one it starts in); the ones after it start
                # before the bound
                plans = self._walk_batch(last.end, budget, W, r, size, None if last is batch else bound)
                if not plans:
                    break
                ahead.append(self._start(plans, (key, last.end)))
            release()  # after the parses started: they do not wait for the releases
        return self._finish(batch, parsed)

    def _drop_queued(self) -> None:
        """Drop the packed minibatches not handed out and the batches begun ahead (their native
        parses are joined as they go)."""
        self._ahead.clear()
        self._queue.clear()
        self._queue_parts = []

    def _bound(self, cursor: tuple[int, int], W: int) -> tuple[int, int]:
        """(sweep, position) of the last randomized chunk whose chunks :meth:`_needed` keeps for
        ``cursor``. Minibatches starting before it end in it at the latest, so that a batch walked
        with this bound reads only chunks the window holds."""
        k, i = cursor
        tl = self.randomizer.timeline(k)
        stop = tl.owner(i) + 3 * max(1, W) - 1
        if stop <= self.C:
            return k, int(tl.rchunk_start[stop])
        if self.E is not None and (k + 1) * self.S >= self.E:
            return k + 1, 0
        return k + 1, int(self.randomizer.timeline(k + 1).rchunk_start[min(self.C, stop - self.C)])

    def _schedule(self, budget: int, W: int, r: int) -> None:
        """After a batch is queued: release chunks no longer needed, start loading the next ones
        and pack the next batch on the background thread."""
        if not self._queue or self._queue[-1][3] < 0:
            return
        k, i, reached_end = self._queue[-1][:3]
        if reached_end:  # nothing more to read: the queued minibatches are packed
            self._clear()
            return
        start = self._normalize(k, i)
        keep = self._needed(start, W, r)  # the queued minibatches are packed already
        release = self._retain(keep, defer=True)
        self._prefetch(keep)
        if self.prefetcher is not None:
            key = (self._queue_key, start)
            count = self._batch_size(budget)

            def job():
                return self._produce(start, budget, W, r, count)
            self.prefetcher.submit(key, job)
        release()  # after the submit: the next batch does not wait for it

    # --- truncated BPTT -----------------------------------------------------------------------
    def _next_truncated(self, size: int, W: int, r: int):
        slots = max(1, size // self.T)
        if W > slots:
            raise ValueError("Too many workers for minibatch size; please increase minibatch size or "
                             "decrease number of workers.")
        local_slots = slots // W + (1 if r < slots % W else 0)
        dropped = self.slots.resize(local_slots)
        if any(dropped) and self.trace_level >= 1:
            log.warning("truncated BPTT: the number of parallel sequences went down to %d; the rest of "
                        "the sequences in the dropped slots is discarded", local_slots)
        eos = False
        for s in range(local_slots):
            while self.slots.needs(s):
                nxt = self.next_local(self.cursor, W, r)
                if nxt is None:
                    break
                k, i, crossed = nxt
                eos |= crossed
                self._push(s, k, i)
                if i + 1 >= self.N:
                    eos = True
                self.cursor = self._normalize(k, i + 1)
        if self.slots.empty():
            self._clear()
            return None
        mb = self.slots.emit(eos)
        self._retain(self._needed(self.cursor, W, r))
        return mb

    def _push(self, slot: int, k: int, i: int) -> None:
        tl = self.randomizer.timeline(k)
        length = int(tl.length[i])
        if self.frame_mode:
            check_frame_mode(np.array([length]))
        chunk = self.cache.get(int(tl.chunk[i]))
        idx = int(tl.index[i])
        data = {info.name: sequence_arrays(info, chunk, idx) for info in self.stream_infos}
        self.slots.push(slot, k * self.N + i, length, data)

    def set_epoch_end(self, end: int | None) -> None:
        """Move the epoch end to global sample position ``end`` (None: no end). What was planned or
        prefetched under the old end is dropped; the cursor stays where it is."""
        self.E = None if end is None else int(end)
        self._ctx_cache.clear()
        self._local_cache.clear()
        self._needed_cache.clear()
        self.set_state(self.get_state())

    # --- state --------------------------------------------------------------------------------
    def get_state(self) -> dict:
        state = {POSITION_KEY: self.position()}
        if self.slots is not None:
            state[TBPTT_KEY] = self.slots.state()
        return state

    def set_state(self, state) -> None:
        if POSITION_KEY not in state:
            raise ValueError(f"Checkpoint misses required field {POSITION_KEY}")
        pos = int(state[POSITION_KEY])
        if pos < 0:
            raise ValueError(f"Checkpoint field {POSITION_KEY} must be >= 0, got {pos}")
        if self.prefetcher is not None:
            self.prefetcher.discard()
        self._drop_queued()
        self._queue_key = None
        self.generation += 1
        k, off = divmod(pos, self.S)
        tl = self.randomizer.timeline(k)
        i = int(np.searchsorted(tl.start[:self.N + 1], off, side="left"))
        self.cursor = self._normalize(k, i)
        if self.slots is not None:
            self.slots.resize(0)
            slot_state = state.get(TBPTT_KEY) or []
            self.slots.resize(len(slot_state))
            for s, (gs, toff, offs) in enumerate(slot_state):
                for g in gs:
                    gk, gi = divmod(int(g), self.N)
                    self._push(s, gk, gi)
                self.slots.toffset[s] = int(toff)
                for name, v in dict(offs).items():
                    if name in self.slots.offsets[s]:
                        self.slots.offsets[s][name] = int(v)

    def close(self) -> None:
        self._drop_queued()  # first: the parses begun ahead read the mapped file; they are joined
        if self.prefetcher is not None:
            self.prefetcher.close()
        self.cache.close()
        if self.raw is not None:
            self.raw.close()
