"""Counters of a minibatch source, for ``MinibatchSource.stats()`` and ``cntkio bench``.

Counted per call of ``next_minibatch`` (a few attribute reads, nothing per sequence): the
minibatches, sequences and samples handed out (the first stream's, as CNTK counts a
minibatch's size), the seconds the caller spent inside the call (waiting for the reader and
making the minibatch), and at the time of asking the packed minibatches waiting in the hand-off
(the prefetch depth) and the invalid sequences dropped so far.
"""
from __future__ import annotations

import threading
import time

__all__ = ["SourceStats", "StageClock"]


class StageClock:
    """Seconds and bytes of the reading stages, added from any thread (per chunk or per batch of
    minibatches, never per sample): ``parse`` (chunk loads on the loader threads, summed over the
    threads, plus waits for sequence parses with random access), ``randomize`` (walking the
    timeline: which sequences each minibatch takes, and selecting them), ``pack`` (packing batches
    of minibatches, with their tensor-ready arrays when a consumer asked for them), and
    ``bytes_loaded`` (the arrays of the chunks loaded; with random access the raw bytes read)."""

    __slots__ = ("seconds", "bytes_loaded", "_lock")

    def __init__(self) -> None:
        self.seconds = {"parse": 0.0, "randomize": 0.0, "pack": 0.0}
        self.bytes_loaded = 0
        self._lock = threading.Lock()

    def add(self, stage: str, seconds: float, nbytes: int = 0) -> None:
        with self._lock:
            self.seconds[stage] += seconds
            self.bytes_loaded += nbytes

    def timed(self, fn, stage: str, count_bytes: bool = False):
        """``fn`` with its calls' time added to ``stage`` (and its result's bytes)."""
        def call(*args, **kwargs):
            t0 = time.perf_counter()
            out = fn(*args, **kwargs)
            self.add(stage, time.perf_counter() - t0, _nbytes(out) if count_bytes else 0)
            return out
        return call

    def as_dict(self) -> dict:
        with self._lock:
            return {"seconds_" + k: v for k, v in self.seconds.items()} | {"bytes_loaded": self.bytes_loaded}


def _nbytes(obj) -> int:
    """Bytes of a loaded chunk's arrays, or of raw bytes (0 when unknown)."""
    streams = getattr(obj, "streams", None)
    if isinstance(streams, dict):
        total = 0
        for st in streams.values():
            for name in ("values", "indptr", "indices", "data"):
                a = getattr(st, name, None)
                total += int(getattr(a, "nbytes", 0) or 0)
        return total
    try:
        return len(obj)
    except TypeError:
        return 0


class SourceStats:
    __slots__ = ("minibatches", "sequences", "samples", "seconds_in_calls", "started")

    def __init__(self) -> None:
        self.minibatches = self.sequences = self.samples = 0
        self.seconds_in_calls = 0.0
        self.started: float | None = None

    def record(self, mb, seconds: float) -> None:
        """One call that returned ``mb`` (a ``Minibatch`` or None)."""
        if self.started is None:
            self.started = time.perf_counter() - seconds
        self.seconds_in_calls += seconds
        if not mb:
            return
        self.minibatches += 1
        for value in mb.values():
            self.sequences += value.num_sequences
            self.samples += value.num_samples
            return

    def record_tensor_ready(self, got, seconds: float) -> None:
        """One call that returned ``got`` (a ``TensorMinibatch`` or None)."""
        if self.started is None:
            self.started = time.perf_counter() - seconds
        self.seconds_in_calls += seconds
        if got is None:
            return
        self.minibatches += 1
        batch, j = got.batch, got.index
        self.sequences += batch.num_sequences[j]
        self.samples += batch.num_samples[j]

    def as_dict(self, handoff=None, clock: StageClock | None = None) -> dict:
        wall = time.perf_counter() - self.started if self.started is not None else 0.0
        stages = clock.as_dict() if clock is not None else {}
        return stages | {"minibatches": self.minibatches, "sequences": self.sequences, "samples": self.samples,
                "seconds_in_calls": self.seconds_in_calls, "seconds_since_first_call": wall,
                "prefetch_depth": len(handoff.queue) if handoff is not None else 0,
                "errors": int(getattr(handoff, "errors", 0)) if handoff is not None else 0}
