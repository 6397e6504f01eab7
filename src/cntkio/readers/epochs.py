"""Epochs with CNTK's config-reader semantics, on top of a MinibatchSource.

A CNTK config (``epochSize``, ``minibatchSize``, ``maxEpochs``) reads epochs as consecutive
slices of ONE endless timeline of samples (sweep after sweep, each sweep randomized anew):

* epoch ``e`` is the slice ``[e * epochSize, (e + 1) * epochSize)`` of the global timeline; it
  holds the sequences whose first sample lies in it (a sequence is never split, so the last
  minibatch of an epoch may run past the slice's end by part of a sequence);
* every epoch starts with a seek to its slice's start (CNTK's ``StartMinibatchLoop``), so
  epoch ``e`` reads the same data whether or not the epochs before it were read to the end;
* minibatches hold ``minibatchSize`` samples (whole sequences, at least one), and the last
  minibatch of an epoch is cut to the epoch's remaining budget; a minibatch never crosses a sweep
  end: it is cut to the samples left in the sweep (CNTK's ReaderShim leaves
  ``m_allowMinibatchesToCrossSweepBoundaries`` false, Source/Readers/ReaderLib/Reader.h:42, and its
  randomizers cut the request there, NoRandomizer.cpp:174-180, BlockRandomizer.cpp:276; CNTK's
  ``blank_lines_ignored`` control holds 2 samples of a 2-sample file in an epoch of 3, mb 3);
* ``epochSize = 0`` means one sweep of the data;
* with ``numSubsets > 1`` every worker walks the same global timeline and reads, in epoch ``e``,
  exactly its own sequences of the slice; in truncated BPTT the epoch's slots drain at its end
  (for both, the source's epoch end is moved to the slice end for the epoch with
  ``MinibatchSource.set_epoch_end``).

The conformance controls of CNTK's reader tests pin these rules down (conformance README,
section 3: ``1x1_2_dense`` reads 6 copies of a 1-sample file in 3 epochs of 2; ``10x1_MI_2``
reads 3+3+1 samples per epoch of 7 with minibatches of 3).

:class:`EpochReader` is used by the ``dumpReader`` action and by the ``train``/``eval``/``cv``
actions (cntkio.actions), so that every config command sees the same epochs.
"""
from __future__ import annotations

from typing import Any, Iterator

from .._log import get_logger
from ..constants import POSITION_KEY

__all__ = ["EpochReader", "sweep_size"]

_log = get_logger("readers.epochs")

_POSITION = POSITION_KEY


def sweep_size(source: Any) -> int:
    """The number of timeline samples in one sweep of ``source`` (what ``epochSize=0`` reads)."""
    value = getattr(source, "sweep_size", None)
    if callable(value):
        value = value()
    if value is None:
        raise TypeError(f"{type(source).__name__} does not tell its sweep size (epochSize=0 needs "
                        "a source over built-in deserializers)")
    return int(value)


class EpochReader:
    """Reads epochs of ``epoch_size`` samples in minibatches of ``minibatch_size`` from a
    MinibatchSource built with the default (endless) ``max_samples``.

    ``num_subsets``/``subset_num`` read one worker's part (CNTK's ``StartDistributedMinibatchLoop``:
    all workers walk the same global timeline, each gets its own sequences). ``epoch(e)`` yields
    the minibatch dicts of epoch ``e``; epochs may be read in any order, or again.
    """

    def __init__(self, source: Any, minibatch_size: int, epoch_size: int = 0, *,
                 num_subsets: int = 1, subset_num: int = 0) -> None:
        if minibatch_size <= 0:
            raise ValueError(f"minibatch_size must be positive, found {minibatch_size}")
        if epoch_size < 0:
            raise ValueError(f"epoch_size must be >= 0 (0 = one sweep), found {epoch_size}")
        if not 0 <= subset_num < num_subsets:
            raise ValueError(f"subset_num must be in [0, {num_subsets}), found {subset_num}")
        self.source = source
        self.minibatch_size = int(minibatch_size)
        self.num_subsets = int(num_subsets)
        self.subset_num = int(subset_num)
        self._epoch_size = int(epoch_size)

    @property
    def epoch_size(self) -> int:
        """Samples per epoch (one sweep's worth when constructed with 0)."""
        if self._epoch_size == 0:
            self._epoch_size = sweep_size(self.source)
            if self._epoch_size == 0:
                raise ValueError("epochSize=0 means one sweep, but the data has no samples")
        return self._epoch_size

    def bounds(self, epoch: int) -> tuple[int, int]:
        """The global timeline slice ``[start, end)`` of epoch ``epoch``."""
        size = self.epoch_size
        return epoch * size, (epoch + 1) * size

    def position(self) -> int:
        """The source's global timeline position (after the last minibatch returned)."""
        state = self.source.get_checkpoint_state()
        if _POSITION not in state:
            raise TypeError(f"{type(self.source).__name__} has no global timeline position "
                            f"(checkpoint keys: {', '.join(map(str, state))}); config epochs need a "
                            "source over built-in deserializers")
        return int(state[_POSITION])

    def seek(self, position: int) -> int:
        """Move the source to the first sequence starting at or after ``position``; return the
        position it reports."""
        if self.position() != position:
            self.source.restore_from_checkpoint({_POSITION: int(position)})
        return self.position()

    def epoch(self, epoch: int) -> Iterator[dict]:
        """The minibatches of epoch ``epoch`` (each a ``{StreamInformation: MinibatchData}``)."""
        start, end = self.bounds(epoch)
        _log.info("epoch %d: global samples [%d, %d), minibatches of %d%s", epoch, start, end,
                  self.minibatch_size,
                  f", subset {self.subset_num} of {self.num_subsets}" if self.num_subsets > 1 else "")
        kwargs: dict[str, Any] = {}
        if self.num_subsets > 1:
            kwargs = {"num_data_partitions": self.num_subsets, "partition_index": self.subset_num}
        truncated = bool(getattr(self.source, "truncation_length", 0) or getattr(self.source, "parallel_sequences", 0))
        engine = None
        if self.num_subsets > 1 or truncated:
            # Each worker walks its own sequences with a local budget, so the global position seen
            # between calls cannot stop it at the slice end: a worker whose sequences are spread
            # unevenly would take sequences of the next epoch. In truncated BPTT a call emits the
            # next steps of the sequences in its slots, so the position does not even move on
            # every call. The engine's global-timeline reader stops exactly at an epoch end (a
            # sequence is delivered iff its global start is below it, cntk-io-semantics 2.4; in
            # truncated BPTT the slots then drain), so the slice end is set there for this epoch,
            # and the seek below drops anything prefetched under the old end.
            has_end = hasattr(self.source, "set_epoch_end") and getattr(self.source, "sweep_size", None) is not None
            engine = self.source if has_end else None
            if engine is None and truncated:
                raise TypeError(f"{type(self.source).__name__}: truncated BPTT epochs need a "
                                "MinibatchSource over built-in deserializers")
        old_end = None
        if engine is not None:
            old_end = engine.epoch_end
            engine.set_epoch_end(end if old_end is None else min(old_end, end))
            self.source.restore_from_checkpoint({_POSITION: int(start)})
            pos = self.position()
        else:
            pos = self.seek(start)
        # legacy readers' minibatchMode = Full: no partial minibatch at an epoch's end, the
        # records left are skipped (the next epoch starts at its own slice anyway)
        full = bool(getattr(self.source, "full_minibatches", False)) and not truncated
        sweep = self._sweep()
        try:
            while truncated or pos < end:
                if full and end - pos < self.minibatch_size:
                    break
                size = self.minibatch_size if truncated else min(self.minibatch_size, end - pos)
                if not truncated and sweep:
                    size = min(size, sweep - pos % sweep)     # no minibatch crosses a sweep end
                if engine is not None:
                    # the worker's budget is size // workers (at least 1); asking for less than
                    # one sample per worker changes nothing but a warning
                    size = max(size, self.num_subsets)
                mb = self.source.next_minibatch(size, **kwargs)
                if not mb:
                    break                    # the epoch (or the source's own limit) ended
                new_pos = self.position()
                yield mb
                if not truncated and new_pos <= pos:
                    raise RuntimeError(f"the source did not advance (position {pos})")
                pos = new_pos
        finally:
            if engine is not None:
                engine.set_epoch_end(old_end)

    def _sweep(self) -> int:
        """The sweep size, or 0 when the source does not tell it."""
        try:
            return sweep_size(self.source)
        except TypeError:
            return 0

    def epochs(self, max_epochs: int, first: int = 0) -> Iterator[tuple[int, Iterator[dict]]]:
        """``(epoch index, minibatch iterator)`` for epochs ``first .. max_epochs-1``."""
        for e in range(first, max_epochs):
            yield e, self.epoch(e)
