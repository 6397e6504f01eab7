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

The same loop (:meth:`EpochReader.epoch`) serves every caller that cuts a timeline into epochs:
the config actions (``dumpReader``, ``train``, ``eval``, ``cv``...), their torch.distributed mode
(the epoch advanced by the samples all processes read, ``global_samples``) and the PyTorch
dataset (a sweep per iteration, read as tensor-ready minibatches). It talks to the source through
:mod:`cntkio.source_protocol` only: ``seek``, ``position``, ``set_epoch_end``.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping

from .._log import get_logger
from ..source_protocol import has_global_timeline, has_tensor_ready, is_truncated
from ..user_source import read_minibatch

__all__ = ["EpochReader", "sweep_size"]

_log = get_logger("readers.epochs")


def sweep_size(source: Any) -> int:
    """The number of timeline samples in one sweep of ``source`` (what ``epochSize=0`` reads)."""
    value = source.sweep_size if has_global_timeline(source) else None
    if value is None:
        raise TypeError(f"{type(source).__name__} does not tell its sweep size (epochSize=0 needs "
                        "a source over built-in deserializers)")
    return int(value)


def _local_samples(mb) -> int:
    return max((int(md.num_samples) for md in mb.values()), default=0) if mb else 0


class EpochReader:
    """Reads epochs of ``epoch_size`` samples in minibatches of ``minibatch_size`` from a
    source with a global timeline (:class:`~cntkio.source_protocol.GlobalTimelineSource`).

    ``num_subsets``/``subset_num`` read one worker's part (CNTK's ``StartDistributedMinibatchLoop``:
    all workers walk the same global timeline, each gets its own sequences). ``epoch(e)`` yields
    the minibatch dicts of epoch ``e``; epochs may be read in any order, or again.
    ``within_source_end``: an epoch also ends at the source's own epoch end (its ``max_samples``
    or ``max_sweeps``); False reads every epoch whole whatever they say (the PyTorch dataset:
    one sweep per iteration).
    """

    def __init__(self, source: Any, minibatch_size: int, epoch_size: int = 0, *,
                 num_subsets: int = 1, subset_num: int = 0, within_source_end: bool = True) -> None:
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
        self.within_source_end = bool(within_source_end)
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

    def _source(self):
        source = self.source
        if not has_global_timeline(source):
            raise TypeError(f"{type(source).__name__} has no global timeline position; config epochs "
                            "need a source over built-in deserializers (cntkio.source_protocol."
                            "GlobalTimelineSource)")
        return source

    def position(self) -> int:
        """The source's global timeline position (after the last minibatch returned)."""
        return int(self._source().position())

    def seek(self, position: int) -> int:
        """Move the source to the first sequence starting at or after ``position``; return the
        position it reports."""
        return int(self._source().seek(int(position)))

    def epoch(self, epoch: int, *, layout: Any = None, global_samples: Callable[[int], int] | None = None,
              state: Mapping | None = None) -> Iterator[Any]:
        """The minibatches of epoch ``epoch`` (each a ``{StreamInformation: MinibatchData}``).

        ``layout`` (a :class:`~cntkio.tensor_ready.TensorLayout`, for a source that offers
        tensor-ready minibatches): yield ``TensorMinibatch`` objects instead. ``global_samples``
        (torch.distributed): called with the samples this process read in each minibatch, it
        returns the samples all processes read together; the epoch then advances by those, every
        process asking for the same sizes, so all take the same number of steps. ``state``: a
        checkpoint (``get_checkpoint_state``) taken while reading this epoch, with the same
        partition: the epoch continues exactly from there instead of from its start."""
        source = self._source()
        start, end = self.bounds(epoch)
        _log.info("epoch %d: global samples [%d, %d), minibatches of %d%s", epoch, start, end,
                  self.minibatch_size,
                  f", subset {self.subset_num} of {self.num_subsets}" if self.num_subsets > 1 else "")
        W, r = self.num_subsets, self.subset_num
        if layout is not None and has_tensor_ready(source):
            def read(size: int):
                return source.next_tensor_ready(size, W, r, layout)
        else:
            def read(size: int):
                mb = read_minibatch(source, size, W, r)
                return mb if mb else None
        truncated = is_truncated(source)
        if global_samples is not None:
            if state is not None:
                raise ValueError("an epoch counted by global_samples starts at its start (no state)")
            yield from self._by_global_count(read, start, end, global_samples)
            return
        sweep = source.sweep_size or 0
        full = source.full_minibatches and not truncated
        # one worker reading exactly one sweep: no sequence straddles the epoch's end and no
        # minibatch can cross a sweep end, so reading whole minibatches until the source stops at
        # the end takes the same sequences as cutting each request (and asks no position per call)
        one_sweep = W == 1 and not truncated and not full and bool(sweep) and start % sweep == 0 and \
            end - start == sweep
        if one_sweep or W > 1 or truncated:
            yield from self._to_epoch_end(read, start, end, state, truncated, None if one_sweep else sweep)
        else:
            yield from self._by_position(read, start, end, full, state, sweep)

    def _go(self, start: int, state: Mapping | None) -> int:
        """Seek to the epoch's start, or restore ``state``; the position reached."""
        source = self.source
        if state is None:
            return int(source.seek(start))
        source.restore_from_checkpoint(state)
        return int(source.position())

    def _size(self, pos: int, end: int, sweep: int) -> int:
        """A request's size: the minibatch size cut to the samples left in the epoch and in the
        sweep."""
        size = min(self.minibatch_size, end - pos)
        return min(size, sweep - pos % sweep) if sweep else size

    def _to_epoch_end(self, read, start: int, end: int, state: Mapping | None, truncated: bool,
                      sweep: int | None) -> Iterator[Any]:
        """Read with the source's epoch end at the slice end. Each worker walks its own sequences
        with a local budget, so the global position seen between calls cannot stop it at the slice
        end (a worker whose sequences are spread unevenly would take sequences of the next epoch);
        in truncated BPTT a call emits the next steps of the sequences in its slots, so the
        position does not even move on every call. The source stops exactly at an epoch end (a
        sequence is delivered iff its global start is below it, cntk-io-semantics 2.4; in
        truncated BPTT the slots then drain), so the slice end is set there for this epoch (the
        seek drops anything read ahead under the old end). ``sweep`` None: whole minibatches
        until the source stops (one worker, one sweep); else each request is cut as
        :meth:`_by_position` cuts it."""
        source = self.source
        old_end = source.epoch_end
        source.set_epoch_end(end if old_end is None or not self.within_source_end else min(old_end, end))
        try:
            pos = self._go(start, state)
            W = self.num_subsets
            while sweep is None or truncated or pos < end:
                size = self.minibatch_size if sweep is None or truncated else self._size(pos, end, sweep)
                # the worker's budget is size // workers (at least 1); asking for less than one
                # sample per worker changes nothing but a warning
                got = read(max(size, W))
                if got is None:
                    return
                if sweep is None:
                    yield got
                    continue
                new_pos = source.position()
                yield got
                if not truncated and new_pos <= pos:
                    raise RuntimeError(f"the source did not advance (position {pos})")
                pos = new_pos
        finally:
            source.set_epoch_end(old_end)

    def _by_position(self, read, start: int, end: int, full: bool, state: Mapping | None,
                     sweep: int) -> Iterator[Any]:
        """One worker: each minibatch's budget is cut to the samples left in the epoch (CNTK's
        config epochs) and in the sweep; ``full`` (the legacy ``minibatchMode = full``): no partial
        minibatch at an epoch's end, the records left are skipped (the next epoch starts at its own
        slice)."""
        source = self.source
        pos = self._go(start, state)
        while pos < end:
            if full and end - pos < self.minibatch_size:
                return
            got = read(self._size(pos, end, sweep))
            if got is None:
                return                    # the source's own limit ended it
            new_pos = source.position()
            yield got
            if new_pos <= pos:
                raise RuntimeError(f"the source did not advance (position {pos})")
            pos = new_pos

    def _by_global_count(self, read, start: int, end: int, global_samples) -> Iterator[Any]:
        """torch.distributed: every process asks for ``min(minibatch_size, samples left)`` and the
        epoch advances by the samples all processes read (a process's own position cannot serve:
        each stops at the start of its next own sequence, so positions differ between
        processes, and so would their last minibatches)."""
        self.source.seek(start)
        consumed = start
        mb_size = self.minibatch_size
        while consumed < end:
            got = read(min(mb_size, end - consumed))
            n = int(global_samples(_local_samples(got)))
            if n == 0:
                return                    # every process's source has ended
            consumed += n
            yield {} if got is None else got   # this process may have read nothing this step

    def epochs(self, max_epochs: int, first: int = 0) -> Iterator[tuple[int, Iterator[Any]]]:
        """``(epoch index, minibatch iterator)`` for epochs ``first .. max_epochs-1``."""
        for e in range(first, max_epochs):
            yield e, self.epoch(e)
