"""Counters of a minibatch source, for ``MinibatchSource.stats()`` and ``cntkio bench``.

Counted per call of ``next_minibatch`` (a few attribute reads, nothing per sequence): the
minibatches, sequences and samples handed out (the first stream's, as CNTK counts a
minibatch's size), the seconds the caller spent inside the call (waiting for the reader and
making the minibatch), and at the time of asking the packed minibatches waiting in the hand-off
(the prefetch depth) and the invalid sequences dropped so far.
"""
from __future__ import annotations

import time

__all__ = ["SourceStats"]


class SourceStats:
    __slots__ = ("minibatches", "sequences", "samples", "seconds_in_calls", "started")

    def __init__(self) -> None:
        self.minibatches = self.sequences = self.samples = 0
        self.seconds_in_calls = 0.0
        self.started: float | None = None

    def record(self, mb, seconds: float) -> None:
        """One call that returned ``mb`` (a ``Minibatch``, a ``PackedRef`` or None)."""
        if self.started is None:
            self.started = time.perf_counter() - seconds
        self.seconds_in_calls += seconds
        if not mb:
            return
        self.minibatches += 1
        packed = getattr(mb, "packed", None)
        if packed is not None and not len(dict.keys(mb)):  # a PackedRef: the batch's bounds
            batch, j = packed
            self.sequences += batch.bounds[j + 1] - batch.bounds[j]
            rows = batch.streams[0][3]
            if rows is not None:
                self.samples += rows[j + 1] - rows[j]
            return
        for value in mb.values():
            self.sequences += value.num_sequences
            self.samples += value.num_samples
            return

    def as_dict(self, handoff=None) -> dict:
        wall = time.perf_counter() - self.started if self.started is not None else 0.0
        return {"minibatches": self.minibatches, "sequences": self.sequences, "samples": self.samples,
                "seconds_in_calls": self.seconds_in_calls, "seconds_since_first_call": wall,
                "prefetch_depth": len(handoff.queue) if handoff is not None else 0,
                "errors": int(getattr(handoff, "errors", 0)) if handoff is not None else 0}
