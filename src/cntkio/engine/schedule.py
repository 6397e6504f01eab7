"""Parse and prefetch scheduling on the global timeline: what is read ahead of the caller, and where.

Two ways, chosen once per reader:

* **Random access, pipelined** (randomized, every deserializer random-access, e.g. CTF): each
  batch of minibatches parses just its sequences, in delivery order, out of the window's raw
  bytes (``begin_read_sequences``; with two loader threads, in two halves at once). The C parser
  runs each half on a native thread of its own, which takes neither the GIL nor Python objects,
  and batches are pipelined on the caller's thread, without a packing thread: when the queue of
  packed minibatches runs out, the batch at the cursor (begun earlier) is collected, the window
  moves past it, the batches after it are walked and begun until two are being parsed ahead, and
  only then is it packed (packing is a few microseconds of Python per minibatch; the parse is the
  work, and it runs while minibatches are handed out and while the caller trains on them). The
  second batch ahead starts before the last randomized chunk the window keeps
  (:meth:`~cntkio.engine.walk.TimelineWalker.bound`), so no parse reads a chunk the window does
  not hold. The first call with new settings begins one small batch ahead only (settings that
  change at every call would otherwise have two full batches parsed and dropped per call). A
  batch whose parse reports anything (a malformed line, a warning) is packed from whole parsed
  chunks instead, which counts and logs the issues exactly as chunk loading does; its chunks stay
  dirty (:class:`~cntkio.engine.window.ChunkWindow`). Both ways give the same minibatches.
* **Whole chunks**: chunks are parsed whole on the window's loader threads, and the next batch
  of minibatches is packed on a background thread (:class:`~cntkio.engine.prefetch.Prefetcher`)
  while the current one is handed out.

What was begun ahead is dropped on a restore or a change of settings (a native parse dropped runs
to its end first: its thread is joined when its job goes).
"""
from __future__ import annotations

import time
from collections import deque

import numpy as np

from .handoff import Handoff
from .packer import check_frame_mode
from .prefetch import Prefetcher
from .walk import TimelineWalker
from .window import ChunkWindow

__all__ = ["BatchScheduler", "FIRST_AHEAD"]

#: minibatches of the batch begun ahead by the first call with new settings (random access)
FIRST_AHEAD = 16
#: batches being parsed ahead of the one handed out (random access)
_DEPTH = 2
#: minibatches ahead of the cursor whose chunks the window keeps loading (at least: it also
#: keeps the current and next two randomized chunks, which covers them when chunks are large)
_AHEAD_MINIBATCHES = 2


class _Batch:
    """Consecutive minibatches being read: ``key`` ((settings, start cursor) they were walked
    for); ``entries``, per minibatch ``(sweep, position after it, reached the epoch end)``, the
    epoch-end marker last when the batch reaches it; ``parts``: per half its selection
    (:meth:`BatchScheduler.prepare`) and its parse begun (:meth:`BatchScheduler.begin`); ``end``:
    the cursor after the batch (None at the epoch end). No Plan object outlives the walk: the
    entries are tuples of numbers, which the garbage collector stops tracking."""

    __slots__ = ("key", "entries", "parts", "end")

    def __init__(self, key, entries: list, parts: list, end) -> None:
        self.key, self.entries, self.parts, self.end = key, entries, parts, end


class BatchScheduler:
    """Reads batches of minibatches ahead of the caller (module docstring) into a
    :class:`~cntkio.engine.handoff.Handoff`."""

    def __init__(self, corpus, walker: TimelineWalker, window: ChunkWindow, handoff: Handoff, *,
                 frame_mode: bool, prefetch: bool, halves: bool) -> None:
        self.corpus = corpus
        self.walker = walker
        self.window = window
        self.handoff = handoff
        self.frame_mode = bool(frame_mode)
        self.direct = window.raw is not None
        self.pipelined = self.direct and bool(prefetch)
        self.prefetcher = Prefetcher() if prefetch and not self.pipelined else None
        self.halves = self.direct and halves
        self.ahead: deque = deque()  # batches begun ahead of the cursor, in order

    # --- one batch ----------------------------------------------------------------------------
    def _walk(self, *args):
        """``walker.walk_batch(*args)``, its time counted as ``randomize`` (the window's clock)."""
        t0 = time.perf_counter()
        plans = self.walker.walk_batch(*args)
        self.window.clock.add("randomize", time.perf_counter() - t0)
        return plans

    def prepare(self, plans: list):
        """The selection of consecutive plans: ``(end_of_sweep flags, counts, sel_chunk,
        sel_index)``. They are packed at once (:meth:`Handoff.pack`): one gather per stream and
        chunk for all of them, then each minibatch is a slice."""
        t0 = time.perf_counter()
        sel_chunk, sel_index, sel_len = self.walker.selection(plans)
        self.window.clock.add("randomize", time.perf_counter() - t0)
        if self.frame_mode:
            check_frame_mode(sel_len)
        return [p.end_of_sweep for p in plans], [p.num_sequences for p in plans], sel_chunk, sel_index

    def begin(self, prep):
        """With random access, start parsing the prepared sequences out of their chunks' bytes:
        ``(chunk ids, pending read)``; None when they go through chunk loading (one of their
        chunks is dirty)."""
        _, _, sel_chunk, sel_index = prep
        if not self.direct or not len(sel_chunk):
            return None
        ids = np.unique(sel_chunk).tolist()
        if any(c in self.window.dirty for c in ids):
            return None
        return ids, self.corpus.begin_read_sequences(self.window.raw_bytes(ids), sel_chunk, sel_index)

    def _direct(self, begun):
        """The parsed sequences of :meth:`begin` (waiting for them), or None: chunk loading. A
        parse that reports an issue makes its chunks dirty."""
        if begun is None:
            return None
        ids, pending = begun
        direct = pending()
        if direct is None:
            self.window.dirty.update(ids)
        return direct

    def start(self, plans: list, key=None) -> _Batch:
        """Prepare a batch and, with random access, start parsing it: in two halves when there are
        two parse threads (the C parser runs each on a thread of its own, without the GIL)."""
        real = [p for p in plans if not (p.num_sequences == 0 and p.reached_end)]
        if self.halves and len(real) >= 2:
            h = len(real) // 2
            preps = [self.prepare(real[:h]), self.prepare(real[h:])]
        else:
            preps = [self.prepare(real)] if real else []
        end = None if plans[-1].reached_end else self.walker.normalize(*plans[-1].end)
        entries = [(*p.end, p.reached_end) for p in real]
        if len(real) < len(plans):
            entries.append((*plans[-1].end, True))
        return _Batch(key, entries, [(prep, self.begin(prep)) for prep in preps], end)

    def collect(self, batch: _Batch) -> list:
        """Wait for a started batch's parses: ``[(prep, direct or None)]``."""
        t0 = time.perf_counter()
        parsed = [(prep, self._direct(begun)) for prep, begun in batch.parts]
        self.window.clock.add("parse", time.perf_counter() - t0)
        return parsed

    def finish(self, batch: _Batch, parsed: list) -> tuple[list, list]:
        """Pack a collected batch (:meth:`Handoff.finish`)."""
        waited = [0.0]
        chunk = self.window.chunk

        def loaded(c: int):  # a chunk, maybe waiting for its load (counted as parse, not pack)
            t = time.perf_counter()
            out = chunk(c)
            waited[0] += time.perf_counter() - t
            return out
        t0 = time.perf_counter()
        packed = self.handoff.finish(batch.entries, parsed, loaded)
        self.window.clock.add("pack", time.perf_counter() - t0 - waited[0])
        return packed

    def produce(self, cursor: tuple[int, int], budget: int, W: int, r: int, count: int):
        """Walk and pack up to ``count`` minibatches from ``cursor``."""
        batch = self.start(self._walk(cursor, budget, W, r, count))
        return self.finish(batch, self.collect(batch))

    # --- the queue runs out -------------------------------------------------------------------
    def refill(self, key, cursor: tuple[int, int], budget: int, W: int, r: int) -> None:
        """Queue the next minibatches from ``cursor`` for the settings ``key`` (the queue is
        empty or was packed for other settings). The first call with new settings reads one
        minibatch (and starts the window's loads for it)."""
        handoff = self.handoff
        settled = handoff.key == key
        if not self.direct:  # chunks loaded whole on the loader threads: keep them busy
            self.window.ahead = _AHEAD_MINIBATCHES * budget * W  # global samples ahead
        handoff.drop()
        if not settled:  # first call with these settings: start the loads now
            self.window.prefetch(self.window.needed(cursor, W, r))
        count = handoff.batch_size(budget) if settled else 1
        if self.pipelined:
            handoff.put(key, self._read_pipelined(key, cursor, budget, W, r, count, settled))
            return
        batch = self.prefetcher.take((key, cursor)) if self.prefetcher is not None else None
        if batch is None:
            batch = self.produce(cursor, budget, W, r, count)
        handoff.put(key, batch)
        self._schedule(budget, W, r)

    def _read_pipelined(self, key, cursor: tuple[int, int], budget: int, W: int, r: int, count: int,
                        settled: bool):
        """Random access: the batch at the cursor (begun by an earlier call when it walked from
        here with these settings), packed. Before packing it, the window moves to the batch after
        it, and batches are begun until ``_DEPTH`` are being parsed ahead (on native threads, while
        this one is packed and handed out); those beyond the next one start before the walker's
        bound, within the chunks the window holds. The first call with new settings (not
        ``settled``) begins one small batch only: settings that change from call to call
        (alternating minibatch sizes) would otherwise parse two full batches per call for
        nothing (and wait for them when they are dropped)."""
        ahead = self.ahead
        if not ahead or ahead[0].key != (key, cursor):
            ahead.clear()
            ahead.append(self.start(self._walk(cursor, budget, W, r, count), (key, cursor)))
        batch = ahead.popleft()
        parsed = self.collect(batch)
        if batch.end is None:  # the batch reaches the epoch end: nothing more to read
            ahead.clear()
            self.window.clear()
        else:
            release = self.window.keep_ahead_of(batch.end, W, r)
            size = self.handoff.batch_size(budget)
            if not settled:
                size = min(size, FIRST_AHEAD)
            bound = self.walker.bound(batch.end, W)
            while len(ahead) < (_DEPTH if settled else 1):
                last = ahead[-1] if ahead else batch
                if last.end is None:
                    break
                # the batch right after this one stays within the window by itself (a batch ends
                # in the randomized chunk after the one it starts in); the ones after it start
                # before the bound
                plans = self._walk(last.end, budget, W, r, size, None if last is batch else bound)
                if not plans:
                    break
                ahead.append(self.start(plans, (key, last.end)))
            release()  # after the parses started: they do not wait for the releases
        return self.finish(batch, parsed)

    def _schedule(self, budget: int, W: int, r: int) -> None:
        """After a batch is queued (whole chunks): release chunks no longer needed, start loading
        the next ones and pack the next batch on the background thread."""
        last = self.handoff.last()
        if last is None or last[3] < 0:
            return
        k, i, reached_end = last[:3]
        if reached_end:  # nothing more to read: the queued minibatches are packed
            self.window.clear()
            return
        start = self.walker.normalize(k, i)
        release = self.window.keep_ahead_of(start, W, r)  # the queued minibatches are packed already
        if self.prefetcher is not None:
            key = (self.handoff.key, start)
            count = self.handoff.batch_size(budget)

            def job():
                return self.produce(start, budget, W, r, count)
            self.prefetcher.submit(key, job)
        release()  # after the submit: the next batch does not wait for it

    def drop(self) -> None:
        """Drop the batches begun ahead and the batch packed in the background (their native
        parses are joined as they go)."""
        self.ahead.clear()
        if self.prefetcher is not None:
            self.prefetcher.discard()

    def close(self) -> None:
        self.ahead.clear()  # first: the parses begun ahead read the mapped file; they are joined
        if self.prefetcher is not None:
            self.prefetcher.close()

