"""User-driven minibatch sources (cntk-io-semantics 1.8 and 1.9).

``UserMinibatchSource`` is the abstract base of sources written entirely in Python (they do their
own packing, distribution and checkpoints); ``MinibatchSourceFromData`` is the in-memory one
cntk.io ships, built on it. ``read_minibatch`` reads any source (built-in or user) with one call
signature, for code that accepts both (the torch integration, ``cntkio.testing``).
"""
from __future__ import annotations

import functools
from typing import Any, Iterator, Mapping

import numpy as np

from ._log import TraceLogger
from .constants import INFINITELY_REPEAT
from .minibatch import MinibatchData, Value, _is_csr
from .streams import Record, StreamInformation

__all__ = ["UserMinibatchSource", "MinibatchSourceFromData", "read_minibatch",
           "Tensor", "SparseTensor", "Sequence", "tensor"]


def _check_checkpoint_keys(state: Any) -> Any:
    for key in (state or {}):
        if not isinstance(key, str):
            raise ValueError('the keys of the checkpoint dictionary must be strings. You gave '
                             f'"{key}" of type {type(key)}')
    return state


class UserMinibatchSource:
    """Base class of minibatch sources written in Python (cntk.io's ``UserMinibatchSource``).

    Subclasses implement :meth:`stream_infos` and :meth:`next_minibatch`, and set up their
    state **before** calling ``super().__init__()``, which calls ``stream_infos()`` to build
    :attr:`streams`. Override :meth:`get_checkpoint_state` / :meth:`restore_from_checkpoint` to
    support checkpoints: keys of the state must be strings (checked on every call).
    A :class:`~cntkio.source_protocol.Source` (with no global timeline).
    """

    #: the packing is the subclass's own: not truncated BPTT as far as cntkio knows
    truncated = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        user = cls.__dict__.get("get_checkpoint_state")
        if user is not None and not getattr(user, "_cntkio_checked", False):
            @functools.wraps(user)
            def get_checkpoint_state(self, *args, **kw):
                return _check_checkpoint_keys(user(self, *args, **kw))
            get_checkpoint_state._cntkio_checked = True  # type: ignore[attr-defined]
            cls.get_checkpoint_state = get_checkpoint_state  # type: ignore[method-assign]

    def __init__(self) -> None:
        infos = list(self.stream_infos())
        self.streams = Record(**{si.m_name: si for si in infos})

    def stream_infos(self) -> list[StreamInformation]:
        """The streams of this source (to be implemented by the subclass)."""
        raise NotImplementedError

    def stream_info(self, name: str) -> StreamInformation:
        """The stream called ``name``; RuntimeError when there is none or more than one."""
        found = [si for si in self.stream_infos() if si.m_name == name]
        if len(found) != 1:
            names = ", ".join(repr(si.m_name) for si in self.stream_infos())
            what = "no stream" if not found else f"{len(found)} streams"
            raise RuntimeError(f"{what} named {name!r} in this source (streams: {names})")
        return found[0]

    def __getitem__(self, name: str) -> StreamInformation:
        return self.stream_info(name)

    def next_minibatch(self, num_samples: int, number_of_workers: int, worker_rank: int,
                       device: Any = None) -> dict:
        """At most ``num_samples`` samples of this worker's data as ``{StreamInformation:
        MinibatchData}``, or ``{}`` at the end (to be implemented by the subclass)."""
        raise NotImplementedError

    def get_checkpoint_state(self) -> dict:
        """The state to resume from (string keys); ``{}`` by default."""
        return {}

    get_checkpoint_state._cntkio_checked = True  # type: ignore[attr-defined]

    def restore_from_checkpoint(self, state: Mapping) -> None:
        """Resume from a state of :meth:`get_checkpoint_state`. The default accepts only an empty
        state: a subclass that keeps state must override it."""
        if state:
            raise NotImplementedError("in order to use checkpointing on UserMinibatchSource, you "
                                      "need to implement restore_from_checkpoint(checkpoint)")

    def is_infinite(self) -> bool:
        """Whether the source never ends; False unless overridden."""
        return False

    def iter(self, minibatch_size: int = 256, num_data_partitions: int | None = None,
             partition_index: int | None = None) -> Iterator[dict]:
        """Yield minibatches of ``minibatch_size`` samples until the source returns ``{}``
        (as ``MinibatchSource.iter``; an endless source never stops)."""
        workers = 1 if num_data_partitions is None else int(num_data_partitions)
        rank = 0 if partition_index is None else int(partition_index)
        while True:
            mb = self.next_minibatch(minibatch_size, workers, rank)
            if not mb:
                return
            yield mb

    def __iter__(self) -> Iterator[dict]:
        return self.iter()

    def close(self) -> None:
        """Release resources; nothing by default."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_minibatch(source: Any, minibatch_size: int, num_data_partitions: int = 1,
                   partition_index: int = 0, device: Any = None) -> dict:
    """``next_minibatch`` of any source: a ``MinibatchSource`` (keyword partition arguments)
    or a :class:`UserMinibatchSource` (positional ``number_of_workers, worker_rank``)."""
    if isinstance(source, UserMinibatchSource):
        return source.next_minibatch(minibatch_size, num_data_partitions, partition_index, device)
    return source.next_minibatch(minibatch_size, device=device,
                                 num_data_partitions=num_data_partitions,
                                 partition_index=partition_index)


# --- variable types for MinibatchSourceFromData ---------------------------------------------------
class _Type:
    """A variable type as ``cntk.layers.typing`` builds it: shape (None if unknown), sparsity,
    element type and whether it has a sequence axis."""

    def __init__(self, shape=None, is_sparse=False, dtype=None, is_sequence=False):
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        self.shape = None if shape is None else tuple(int(s) for s in shape)
        self.is_sparse = bool(is_sparse)
        self.dtype = None if dtype is None else np.dtype(dtype)
        self.is_sequence = bool(is_sequence)

    @property
    def dynamic_axes(self) -> tuple:
        return ("batch", "sequence") if self.is_sequence else ("batch",)

    def __getitem__(self, shape) -> "_Type":
        return _Type(shape, self.is_sparse, self.dtype, self.is_sequence)

    def __repr__(self) -> str:
        kind = "SparseTensor" if self.is_sparse else "Tensor"
        inner = f"{kind}[{self.shape}]" if self.shape is not None else kind.lower()
        return f"Sequence[{inner}]" if self.is_sequence else inner


class _SequenceOf:
    def __getitem__(self, inner) -> _Type:
        inner = inner if isinstance(inner, _Type) else _Type(inner)
        return _Type(inner.shape, inner.is_sparse, inner.dtype, True)

    def __repr__(self) -> str:
        return "Sequence"


#: ``Tensor[3]``: a dense sample of shape (3,), no sequence axis (cntk.layers.typing).
Tensor = _Type()
#: ``SparseTensor[1000]``: a sparse sample type.
SparseTensor = _Type(is_sparse=True)
#: ``tensor``: a dense sample of a shape taken from the data.
tensor = _Type()
#: ``Sequence[tensor]``: a type with a sequence axis.
Sequence = _SequenceOf()


def _type_info(t: Any) -> tuple[bool, Any, Any]:
    """(is_sequence, shape or None, is_sparse or None) of a cntkio or cntk-like type."""
    axes = getattr(t, "dynamic_axes", None)
    if axes is None:
        raise ValueError(f"type must be a variable type, e.g. Tensor[13] or Sequence[tensor], "
                         f"not {t!r}")
    is_sequence = bool(axes) and len(axes) > 1
    shape = getattr(t, "shape", None)
    if shape is not None and not isinstance(shape, tuple):
        try:
            shape = tuple(shape)
        except TypeError:
            shape = None
    return is_sequence, shape, getattr(t, "is_sparse", None)


class MinibatchSourceFromData(UserMinibatchSource):
    """An in-memory source without randomization (cntk.io's ``MinibatchSourceFromData``).

    ``data_streams`` maps a stream name to its data, or to ``(data, type)``. Data is a NumPy array
    (one row per item), a SciPy CSR matrix, a :class:`~cntk.minibatch.Value`, or a list (one item
    per entry). Only a type with a sequence axis (``Sequence[tensor]``) makes a stream
    sequential: each list item is then a sequence of ``len(item)`` samples; otherwise every item
    is one sample. The data is not copied. Reading goes through the items in order and wraps
    around; ``max_samples`` ends it. Checkpoints are ``{'cursor', 'total_num_samples'}``.
    """

    def __init__(self, data_streams: Mapping[str, Any], max_samples: int = INFINITELY_REPEAT) -> None:
        if not data_streams:
            raise ValueError("at least one stream must be specified, in the form name=data or "
                             "name=(data, type)")
        self._data: dict[str, Any] = {}
        self._is_sequence: dict[str, bool] = {}
        self._infos: list[StreamInformation] = []
        self._lengths: dict[str, np.ndarray] = {}
        self._max_samples = int(max_samples)
        self._log = TraceLogger("user_source")
        self._warned_empty = False
        num_items = -1
        for stream_id, (name, arg) in enumerate(data_streams.items()):
            if isinstance(arg, tuple):
                value, typ = arg
                is_sequence, type_shape, type_sparse = _type_info(typ)
            else:
                value, is_sequence, type_shape, type_sparse = arg, False, None, None
            if isinstance(value, list) and not value:
                raise ValueError("data is empty")
            first = value[0] if isinstance(value, list) else value
            if not isinstance(first, (np.ndarray, Value)) and not _is_csr(first):
                raise TypeError("data must be a numpy.array or scipy.sparse.csr_matrix, or a list "
                                "of those")
            is_sparse = _is_csr(first) or (isinstance(first, Value) and first.is_sparse)
            if type_sparse and not is_sparse:
                raise ValueError(f"stream {name!r}: the type is sparse but the data is dense")
            sample_shape = self._sample_shape(name, value, first, is_sequence)
            if type_shape is not None and tuple(type_shape) != tuple(sample_shape):
                raise ValueError(f"stream {name!r}: specified type's shape {tuple(type_shape)} "
                                 f"does not match the data's shape {tuple(sample_shape)}")
            dtype = first.dtype
            n = len(value) if isinstance(value, (list, Value)) else value.shape[0]
            if num_items == -1:
                if n == 0:
                    raise ValueError("data is empty")
                num_items = n
            elif n != num_items:
                raise TypeError("all data items must have the same first dimension")
            self._lengths[name] = self._item_lengths(value, is_sequence)
            self._data[name] = value
            self._is_sequence[name] = is_sequence
            self._infos.append(StreamInformation(name, stream_id, "sparse" if is_sparse else "dense",
                                                 dtype, sample_shape))
        self._num_items = num_items
        self._cum = {name: np.concatenate([[0], np.cumsum(l)]) for name, l in self._lengths.items()}
        self._cursor = 0
        self._total_num_samples = 0
        super().__init__()

    @staticmethod
    def _sample_shape(name, value, first, is_sequence) -> tuple:
        if isinstance(value, Value):
            return value.sample_shape
        if isinstance(value, list):
            if is_sequence:
                return tuple(first.shape[1:])
            if _is_csr(first):
                return (int(first.shape[1]),)
            return tuple(first.shape)
        if is_sequence:
            if isinstance(value, np.ndarray) and value.ndim >= 2:
                return tuple(value.shape[2:])  # (N, T, *shape): N sequences of T samples
            raise ValueError(f"stream {name!r}: a sequence type needs a list of sequences or an "
                             f"array (N, T, *shape), found {type(value).__name__}")
        return tuple(value.shape[1:])

    @staticmethod
    def _item_lengths(value, is_sequence) -> np.ndarray:
        if isinstance(value, Value):
            return value.sequence_lengths if is_sequence else np.ones(len(value), np.int64)
        if isinstance(value, list) and is_sequence:
            return np.fromiter((it.shape[0] for it in value), np.int64, len(value))
        if isinstance(value, np.ndarray) and is_sequence:
            return np.full(value.shape[0], value.shape[1], np.int64)
        n = len(value) if isinstance(value, list) else value.shape[0]
        return np.ones(n, np.int64)

    def stream_infos(self) -> list[StreamInformation]:
        """One stream per entry of ``data_streams``, ids in the given order."""
        return list(self._infos)

    def _fit(self, begin: int, num_samples: int) -> tuple[int, dict]:
        """Items ``begin..end-1`` fit: per-stream sums <= num_samples and the total stays within
        max_samples. Quirk kept from cntk.io: an item larger than the request gives none."""
        budget = min(num_samples, self._max_samples - self._total_num_samples)
        end = begin
        block = max(64, 2 * num_samples)
        while end < self._num_items:
            start, hi = end, min(self._num_items, end + block)
            m = np.zeros(hi - start, np.int64)
            for c in self._cum.values():
                np.maximum(m, c[start + 1:hi + 1] - c[begin], out=m)
            end = start + int(np.searchsorted(m, budget, side="right"))  # m is non-decreasing
            if end < hi:
                break
        actual = {name: int(c[end] - c[begin]) for name, c in self._cum.items()}
        return end, actual

    def next_minibatch(self, num_samples: int, number_of_workers: int = 1, worker_rank: int = 0,
                       device: Any = None) -> dict:
        """The next items that fit ``num_samples`` (whole items; per stream, the sample count is
        at most ``num_samples``), as ``{StreamInformation: MinibatchData}``; ``{}`` once
        ``max_samples`` samples were delivered. With several workers, each takes rows
        ``begin+rank : end+rank : workers`` of the items (``num_sequences`` still reports
        ``end - begin``, as cntk.io)."""
        if self._total_num_samples >= self._max_samples:
            return {}
        begin = self._cursor
        end, actual = self._fit(begin, num_samples)
        if end == begin and not self._warned_empty:
            self._warned_empty = True
            self._log.warning("MinibatchSourceFromData: the item at position %d is longer than "
                              "the requested %d samples; the minibatch is empty (cntk.io "
                              "behaviour)", begin, num_samples)
        self._total_num_samples += max(actual.values())
        at_end = end == self._num_items
        sweep_end = at_end or self._total_num_samples >= self._max_samples
        result = {}
        for si in self._infos:
            value = self._slice(si, begin, end, number_of_workers, worker_rank)
            result[si] = MinibatchData(value, end - begin, actual[si.name], sweep_end)
        self._cursor = 0 if at_end else end
        return result

    def _slice(self, si: StreamInformation, begin: int, end: int, workers: int, rank: int) -> Value:
        arg = self._data[si.name]
        if isinstance(arg, Value):
            if workers != 1:
                raise ValueError("distributed reading from Value objects is not supported")
            return arg._slice_rows(begin, end)
        part = arg[begin + rank:end + rank:workers]
        if isinstance(part, list):
            if not part:
                return _empty_value(si, self._is_sequence[si.name])
            if self._is_sequence[si.name]:
                return Value(batch=part)
            if si.is_sparse:
                import scipy.sparse as sp
                return Value(batch=sp.vstack(part, format="csr"))
            return Value(batch=np.stack(part))
        if workers != 1:
            part = part.copy()
        if self._is_sequence[si.name]:  # dense (n, T, *shape): n full sequences of T samples
            n, t = part.shape[0], part.shape[1]
            mask = np.ones((n, t), np.int8)
            if t:
                mask[:, 0] = 2
            return Value._from_packed(mask, part.shape[2:], dtype=part.dtype,
                                      values=np.ascontiguousarray(part).reshape((n * t,) + part.shape[2:]))
        return Value(batch=part)

    def get_checkpoint_state(self) -> dict:
        """``{'cursor': next item, 'total_num_samples': samples delivered}``."""
        return {"cursor": self._cursor, "total_num_samples": self._total_num_samples}

    def restore_from_checkpoint(self, checkpoint: Mapping) -> None:
        """Resume at a state of :meth:`get_checkpoint_state`."""
        for key in ("cursor", "total_num_samples"):
            if key not in checkpoint:
                raise ValueError(f"Checkpoint misses required field {key} (found keys: "
                                 f"{sorted(checkpoint)})")
        cursor = int(checkpoint["cursor"])
        if not 0 <= cursor < self._num_items:
            raise ValueError(f"Checkpoint field cursor is {cursor}, outside the data's "
                             f"0..{self._num_items - 1}")
        self._cursor = cursor
        self._total_num_samples = int(checkpoint["total_num_samples"])

    def is_infinite(self) -> bool:
        """True when no ``max_samples`` limit was given."""
        return self._max_samples == INFINITELY_REPEAT


def _empty_value(si: StreamInformation, is_sequence: bool) -> Value:
    mask = np.zeros((0, 0 if is_sequence else 1), np.int8)
    if si.is_sparse:
        return Value._from_packed(mask, si.sample_shape, indptr=np.zeros(1, np.int64),
                                  indices=np.zeros(0, np.int32), data=np.zeros(0, si.dtype),
                                  dtype=si.dtype, seq_axis=is_sequence)
    return Value._from_packed(mask, si.sample_shape,
                              values=np.zeros((0,) + tuple(si.sample_shape), si.dtype),
                              dtype=si.dtype, seq_axis=is_sequence)

