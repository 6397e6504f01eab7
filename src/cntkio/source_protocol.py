"""The source contract: what readers, actions, the torch bridge and tests may call on a minibatch source.

Declarations only (``typing.Protocol``s and the functions that ask them): never imports the engine,
a format or torch, and never probes a source for what it has.

Every source (``MinibatchSource``, a ``UserMinibatchSource``) is a :class:`Source`: its streams,
its checkpoint (``get_checkpoint_state`` / ``restore_from_checkpoint``: the whole state, to resume
exactly), ``close``, and whether it packs truncated BPTT. Reading goes through
:func:`cntkio.user_source.read_minibatch`, one call signature for both kinds (cntk.io gave the two
``next_minibatch`` methods different arguments).

Two capabilities, each declared by implementing its protocol and confirmed per instance (as the
deserializers' :func:`~cntkio.deserializers.protocol.has_random_access`), in the shape of
torchdata.nodes' ``next``/``reset(state)``/``get_state`` and Grain's ``DatasetIterator``:

* :class:`GlobalTimelineSource` (:func:`has_global_timeline`): positions are global sample
  positions on one timeline of sweeps, so a reader can ``seek(position)``, ask ``position()``,
  the ``sweep_size``, and move the epoch end (``set_epoch_end``): CNTK's config epochs
  (``cntkio.readers.EpochReader``), the torch dataset's sweeps and the actions' epochs are all
  cut with these, by one loop (:meth:`cntkio.readers.epochs.EpochReader.epoch`).
* :class:`TensorReadySource` (:func:`has_tensor_ready`): ``next_tensor_ready`` hands out
  minibatches as arrays already in tensor layouts (:mod:`cntkio.tensor_ready`), built on the
  thread that packs them, with no minibatch objects made: the torch bridge's fast path.
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol, runtime_checkable

from .streams import StreamInformation

__all__ = ["Source", "GlobalTimelineSource", "TensorReadySource", "has_global_timeline", "has_tensor_ready",
           "is_truncated"]


@runtime_checkable
class Source(Protocol):
    """What every minibatch source offers (reading: :func:`cntkio.user_source.read_minibatch`)."""

    #: whether minibatches are truncated-BPTT steps of parallel sequences (then a call may emit
    #: the next steps of sequences already started: the position need not move on every call)
    truncated: bool

    def stream_infos(self) -> list[StreamInformation]:
        """The streams of the minibatches."""
        ...

    def get_checkpoint_state(self) -> dict:
        """The whole reading state (JSON-able, string keys)."""
        ...

    def restore_from_checkpoint(self, checkpoint: Mapping) -> None:
        """Continue exactly from a state of :meth:`get_checkpoint_state`."""
        ...

    def close(self) -> None:
        """Release threads, files and memory."""
        ...


@runtime_checkable
class GlobalTimelineSource(Source, Protocol):
    """A source whose positions are global sample positions (every built-in deserializer).

    ``has_global_timeline()`` says whether this instance has one (a ``MinibatchSource`` over a
    ``UserDeserializer`` reads a local timeline and says False)."""

    #: whether sweeps are randomized
    randomize: bool
    #: the legacy readers' ``minibatchMode = full``: an epoch ends before a partial minibatch
    full_minibatches: bool

    def has_global_timeline(self) -> bool:
        ...

    @property
    def sweep_size(self) -> int | None:
        """Samples in one sweep."""
        ...

    @property
    def num_chunks(self) -> int:
        """The chunks the timeline deals out to partitions (after the join)."""
        ...

    @property
    def epoch_end(self) -> int | None:
        """The global position where reading stops (None: never)."""
        ...

    def set_epoch_end(self, end: int | None) -> None:
        """Move the epoch end, keeping the position (a sequence is delivered iff it starts before
        the end, in every partition)."""
        ...

    def position(self) -> int:
        """The global sample position after the last minibatch returned."""
        ...

    def seek(self, position: int) -> int:
        """Go to the first sequence starting at or after ``position`` (what was read ahead is
        dropped); return the position reached."""
        ...


@runtime_checkable
class TensorReadySource(Protocol):
    """A source that hands out minibatches as tensor-ready arrays (:mod:`cntkio.tensor_ready`)."""

    def supports_tensor_ready(self) -> bool:
        """Whether :meth:`next_tensor_ready` serves this instance now."""
        ...

    def next_tensor_ready(self, minibatch_size: int, num_data_partitions: int, partition_index: int,
                          layout: Any) -> Any:
        """The next minibatch as a :class:`~cntkio.tensor_ready.TensorMinibatch` in ``layout`` (a
        :class:`~cntkio.tensor_ready.TensorLayout`), or None at the epoch end; it moves the
        position and counts invalid sequences exactly as ``next_minibatch``."""
        ...


def has_global_timeline(source: object) -> bool:
    """Whether ``source`` declares :class:`GlobalTimelineSource` and has a global timeline."""
    return isinstance(source, GlobalTimelineSource) and bool(source.has_global_timeline())


def has_tensor_ready(source: object) -> bool:
    """Whether ``source`` declares :class:`TensorReadySource` and supports it now."""
    return isinstance(source, TensorReadySource) and bool(source.supports_tensor_ready())


def is_truncated(source: object) -> bool:
    """Whether ``source`` is a :class:`Source` that packs truncated BPTT."""
    return isinstance(source, Source) and bool(source.truncated)
