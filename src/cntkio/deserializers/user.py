"""Deserializers written in Python: cntk.io's ``UserDeserializer`` (cntk-io-semantics 1.10).

A user subclasses :class:`UserDeserializer` and implements ``stream_infos()``, ``num_chunks()``
and ``get_chunk(chunk_id)``; a ``MinibatchSource`` then randomizes, packs, checkpoints and
distributes the data like a built-in format's. :class:`UserDeserializerAdapter` turns it into the
engine's :class:`~cntkio.deserializers.protocol.Deserializer` protocol: each chunk the user returns
(``{stream name: array | CSR | list of those}``) is checked with CNTK's rules and converted to the
columnar containers. The adapter keeps no reference to a chunk after converting it.

User chunks cannot be described before they are loaded, so ``chunk_infos()`` reports unknown
(-1) sequence and sample counts and the source reads user deserializers with the local-timeline
randomizers (section 2.7), which load chunk by chunk: both classes declare ``timeline = "local"``
(:class:`~cntkio.deserializers.protocol.LocalTimelineDeserializer`;
:func:`~cntkio.deserializers.protocol.is_local_timeline` tells the source).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._log import TraceLogger
from ..minibatch import _is_csr
from ..streams import Record, StreamInformation
from .base import DeserializerBase
from .protocol import (ChunkData, ChunkInfo, DenseStream, LocalTimelineDeserializer, SequenceTable, SparseStream,
                       Timeline)

__all__ = ["UserDeserializer", "UserDeserializerAdapter", "as_deserializer", "convert_chunk"]

_COMPOSITION_ERROR = "Currently composition for user defined deserializers is not supported."


class UserDeserializer:
    """Base class of deserializers written in Python (cntk.io's ``UserDeserializer``).

    Implement :meth:`stream_infos` (the streams, at least one), :meth:`num_chunks` (at least
    one) and :meth:`get_chunk`, then pass an instance to ``MinibatchSource``. The deserializer is
    stateless: ``get_chunk`` may be called for any chunk, in any order, on a prefetch thread.

    A chunk is ``{stream name: data}`` with every stream present. In **sample mode** the data
    is a float32 NumPy array ``(N, *sample_shape)`` (dense) or a CSR matrix with N rows (sparse):
    N sequences of one sample each. In **sequence mode** (any stream given as a list) each
    stream is a list of N items: a float32 array ``(len, *sample_shape)`` (or ``sample_shape``
    for a one-sample sequence) or a CSR matrix of ``len`` rows. A sequence's length is that of
    the stream with ``defines_mb_size`` if there is one, else the longest of its streams (at
    least 1).
    """

    #: Tells ``MinibatchSource`` to use the local-timeline randomizers.
    timeline: Timeline = "local"
    #: cntkio's earlier spelling of the same declaration (still read).
    is_user_deserializer = True
    #: The streams by name, set when a ``MinibatchSource`` takes this deserializer.
    streams: Record

    def __init__(self) -> None:
        pass

    def stream_infos(self) -> list[StreamInformation]:
        """The streams this deserializer exposes (to be implemented)."""
        raise NotImplementedError("should return a list of StreamInformation for all streams")

    def num_chunks(self) -> int:
        """The number of chunks (to be implemented)."""
        raise NotImplementedError("should return the total number of chunks.")

    def get_chunk(self, chunk_id: int) -> dict:
        """The data of chunk ``chunk_id`` (0 <= chunk_id < num_chunks) as ``{stream name: data}``
        (to be implemented)."""
        raise NotImplementedError("should return data for the chunk.")


def _first_dimension(name: str, obj: Any) -> int:
    if isinstance(obj, list):
        return len(obj)
    if isinstance(obj, np.ndarray):
        if obj.ndim == 0:
            raise RuntimeError(f"stream '{name}': a 0-d array has no sequence axis")
        return int(obj.shape[0])
    if _is_csr(obj):
        return int(obj.shape[0])
    raise RuntimeError(f"Unexpected type {type(obj).__name__}, only list, numpy or csr_matrix are "
                       f"expected (stream '{name}').")


def _check_shape(name: str, where: str, found: tuple, expected: tuple) -> None:
    if tuple(found) != tuple(expected):
        raise RuntimeError(f"stream '{name}': {where} has sample shape {tuple(found)}, but the "
                           f"stream declares {tuple(expected)}")


def _dense_samples(si: StreamInformation, arr: np.ndarray, n: int) -> tuple[DenseStream, np.ndarray]:
    if arr.dtype != np.float32:
        raise RuntimeError(f"Only float numbers are currently supported (stream '{si.name}' has "
                           f"{arr.dtype}).")
    if arr.ndim != len(si.sample_shape) + 1:
        raise RuntimeError(f"Dense data supported only as single sample per row (stream "
                           f"'{si.name}': array of shape {arr.shape} for samples of shape "
                           f"{si.sample_shape}).")
    _check_shape(si.name, "the array", arr.shape[1:], si.sample_shape)
    return (DenseStream(np.ascontiguousarray(arr), np.arange(n + 1, dtype=np.int64)),
            np.ones(n, np.int64))


def _sparse_samples(si: StreamInformation, m: Any, n: int) -> tuple[SparseStream, np.ndarray]:
    if m.data.dtype != np.float32:
        raise RuntimeError(f"Only float numbers are currently supported (stream '{si.name}' has "
                           f"{m.data.dtype}).")
    dim = int(np.prod(si.sample_shape, dtype=np.int64))
    if int(m.shape[1]) != dim:
        raise RuntimeError(f"stream '{si.name}': the csr_matrix has {m.shape[1]} columns, but the "
                           f"stream's samples have {dim} elements")
    indptr = np.asarray(m.indptr, np.int64)
    lo, hi = int(indptr[0]), int(indptr[-1])
    return (SparseStream(indptr - lo if lo else indptr, np.asarray(m.indices[lo:hi], np.int32),
                         np.asarray(m.data[lo:hi]), np.arange(n + 1, dtype=np.int64), dim),
            np.ones(n, np.int64))


def _dense_sequences(si: StreamInformation, items: list) -> tuple[DenseStream, np.ndarray]:
    rank = len(si.sample_shape)
    parts, lengths = [], np.empty(len(items), np.int64)
    for i, it in enumerate(items):
        if not isinstance(it, np.ndarray):
            raise RuntimeError(f"Expecting dense data to be represented as a numpy array (stream "
                               f"'{si.name}', sequence {i} is {type(it).__name__}).")
        if it.dtype != np.float32:
            raise RuntimeError(f"Only array of type float is currently supported (stream "
                               f"'{si.name}', sequence {i} has {it.dtype}).")
        if it.ndim == rank:
            it = it.reshape((1,) + it.shape)
        _check_shape(si.name, f"sequence {i}", it.shape[1:], si.sample_shape)
        lengths[i] = it.shape[0]
        parts.append(it)
    values = np.concatenate(parts) if parts else np.zeros((0,) + tuple(si.sample_shape), np.float32)
    offsets = np.zeros(len(items) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return DenseStream(values, offsets), lengths


def _sparse_sequences(si: StreamInformation, items: list) -> tuple[SparseStream, np.ndarray]:
    dim = int(np.prod(si.sample_shape, dtype=np.int64))
    lengths = np.empty(len(items), np.int64)
    row_nnz, indices, data = [], [], []
    for i, it in enumerate(items):
        if not _is_csr(it):
            raise RuntimeError(f"Expecting sparse data to be represented as a csr_matrix (stream "
                               f"'{si.name}', sequence {i} is {type(it).__name__}).")
        if it.data.dtype != np.float32:
            raise RuntimeError(f"Only csr_matrix of float is currently supported (stream "
                               f"'{si.name}', sequence {i} has {it.data.dtype}).")
        if int(it.shape[1]) != dim:
            raise RuntimeError(f"stream '{si.name}': sequence {i} has {it.shape[1]} columns, but "
                               f"the stream's samples have {dim} elements")
        lengths[i] = it.shape[0]
        lo, hi = int(it.indptr[0]), int(it.indptr[-1])
        row_nnz.append(np.diff(it.indptr))
        indices.append(it.indices[lo:hi])
        data.append(it.data[lo:hi])
    total = int(lengths.sum())
    indptr = np.zeros(total + 1, np.int64)
    if total:
        np.cumsum(np.concatenate(row_nnz), out=indptr[1:])
    offsets = np.zeros(len(items) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return (SparseStream(indptr,
                         np.concatenate(indices).astype(np.int32, copy=False) if indices
                         else np.zeros(0, np.int32),
                         np.concatenate(data) if data else np.zeros(0, np.float32), offsets, dim),
            lengths)


def convert_chunk(chunk_id: int, streams: list[StreamInformation], chunk: Any) -> ChunkData:
    """Check a user chunk with CNTK's rules (section 1.10) and convert it to a ChunkData.

    Sequence keys are ``(chunk_id << 32) + index``; lengths follow the sample/sequence mode rule.
    The result references the user's arrays only where no conversion was needed (a contiguous
    float32 array in sample mode), never the chunk dict itself.
    """
    if not isinstance(chunk, dict):
        raise RuntimeError("The chunk should be a dictionary of a stream name into a list of "
                           f"sequences (chunk {chunk_id} is a {type(chunk).__name__})")
    known = {si.name: si for si in streams}
    for key in chunk:
        if not isinstance(key, str):
            raise RuntimeError(f"Expected a string, '{type(key).__name__}' was provided "
                               f"(a key of chunk {chunk_id}).")
        if key not in known:
            raise RuntimeError(f"Stream with name '{key}' does not exist (chunk {chunk_id}; streams: "
                               + ", ".join(f"'{n}'" for n in known) + ")")
    missing = [si.name for si in streams if si.name not in chunk]
    if missing:
        raise RuntimeError(f"Chunk {chunk_id} has no data for stream(s) "
                           + ", ".join(f"'{n}'" for n in missing) + "; every stream must be present")
    first = streams[0]
    size = _first_dimension(first.name, chunk[first.name])
    for si in streams[1:]:
        current = _first_dimension(si.name, chunk[si.name])
        if current != size:
            raise RuntimeError("Please provide an equal number of sequences across all streams in "
                               f"the chunk, currently stream '{first.name}' has {size} sequences, "
                               f"whereas '{si.name}'- {current} (chunk {chunk_id})")
    out: dict = {}
    per_stream_lengths = []
    sequence_mode = False
    for si in streams:
        obj = chunk[si.name]
        if isinstance(obj, list):
            sequence_mode = True
            conv = _sparse_sequences(si, obj) if si.is_sparse else _dense_sequences(si, obj)
        elif not si.is_sparse and isinstance(obj, np.ndarray):
            conv = _dense_samples(si, obj, size)
        elif si.is_sparse and _is_csr(obj):
            conv = _sparse_samples(si, obj, size)
        else:
            raise RuntimeError(f"Unexpected data type '{type(obj).__name__}' for the "
                               f"{'sparse' if si.is_sparse else 'dense'} stream '{si.name}'. "
                               "Please use numpy arrays, csr_matrix or list of those.")
        out[si.name] = conv[0]
        per_stream_lengths.append(conv[1])
    if not sequence_mode:
        lengths = np.ones(size, np.int64)
    else:
        defining = [i for i, si in enumerate(streams) if si.defines_mb_size]
        if len(defining) > 1:
            raise RuntimeError("Only a single stream is allowed to define minibatch size, but at "
                               "least two are found.")
        if defining:
            lengths = per_stream_lengths[defining[0]].copy()
        else:
            lengths = np.maximum(np.max(np.stack(per_stream_lengths), axis=0), 1) if size \
                else np.zeros(0, np.int64)
    keys = (np.int64(chunk_id) << np.int64(32)) + np.arange(size, dtype=np.int64)
    return ChunkData(SequenceTable(keys, lengths.astype(np.int64, copy=False)), out)


class UserDeserializerAdapter(DeserializerBase, LocalTimelineDeserializer):
    """A :class:`UserDeserializer` seen through the engine's Deserializer protocol.

    Validates ``stream_infos()`` (at least one, unique names, at most one ``defines_mb_size``)
    and ``num_chunks()`` (at least one) once; ``get_chunk`` calls the user's and converts. Chunk
    sizes are unknown before loading: ``chunk_infos()`` gives -1 counts, and
    ``sequence_infos(chunk_id)`` loads the chunk to answer.
    """

    timeline: Timeline = "local"
    is_user_deserializer = True

    def __init__(self, user: UserDeserializer, trace_level: int = 1) -> None:
        self.user = user
        self._log = TraceLogger("deserializers.user", trace_level)
        infos = list(user.stream_infos())
        if len(infos) == 0:
            raise ValueError("Deserializer must provide at least one stream")
        names = [si.name for si in infos]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise RuntimeError(f"Two streams with the same name '{dup[0]}' have been found")
        if sum(bool(si.defines_mb_size) for si in infos) > 1:
            raise RuntimeError("Only a single stream is allowed to define minibatch size, but at "
                               "least two are found.")
        self._streams = infos
        try:
            user.streams = Record(**{si.name: si for si in infos})
        except AttributeError:
            pass
        total = int(user.num_chunks())
        if total == 0:
            raise ValueError("Deserializer must provide at least one chunk")
        if total < 0:
            raise ValueError(f"num_chunks() returned {total}; it must be at least 1")
        self._num_chunks = total

    def stream_infos(self) -> list[StreamInformation]:
        return list(self._streams)

    def num_chunks(self) -> int:
        """The user's chunk count (validated once)."""
        return self._num_chunks

    def chunk_infos(self) -> list[ChunkInfo]:
        return [ChunkInfo(i, -1, -1) for i in range(self._num_chunks)]

    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        return self.get_chunk(chunk_id).sequences

    def get_chunk(self, chunk_id: int) -> ChunkData:
        if not 0 <= chunk_id < self._num_chunks:
            raise IndexError(f"chunk id {chunk_id} outside 0..{self._num_chunks - 1}")
        result = convert_chunk(chunk_id, self._streams, self.user.get_chunk(chunk_id))
        if self._log.enabled(2):
            self._log.info("user chunk %d: %d sequences, %d samples", chunk_id,
                           len(result.sequences), int(result.sequences.lengths.sum()))
        return result

    def lookup(self, keys: np.ndarray):
        raise ValueError(_COMPOSITION_ERROR)

    def __repr__(self) -> str:
        return f"UserDeserializerAdapter({type(self.user).__name__})"


def as_deserializer(obj: Any, trace_level: int = 1) -> Any:
    """The engine-side Deserializer of ``obj``: an adapter for a UserDeserializer, else ``obj``."""
    if isinstance(obj, UserDeserializer):
        return UserDeserializerAdapter(obj, trace_level=trace_level)
    return obj
