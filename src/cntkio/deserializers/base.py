"""A convenience base class for deserializers, and the names this module has always exported.

The contract itself is :mod:`cntkio.deserializers.protocol` (the ``Deserializer`` protocol, the
optional ``RandomAccessDeserializer`` capability and the columnar chunk containers). A format may
implement it from scratch; subclassing :class:`DeserializerBase` gives the parts that follow from
the rest: :meth:`~DeserializerBase.lookup` (a key index built from ``sequence_infos``, for joins),
:meth:`~DeserializerBase.close`, and, for a random-access format, ``release_bytes`` and
``begin_read_sequences``.

The registry of types by config name is :mod:`cntkio.registry`; ``register_deserializer``,
``build_deserializer`` and ``registered_deserializers`` are re-exported here as before.
``Deserializer`` here is :class:`DeserializerBase` (the class formats subclassed before the
protocol existed); the protocol is ``cntkio.deserializers.protocol.Deserializer``.
"""
from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import Any, Callable, Mapping

import numpy as np

from ..registry import _DESERIALIZERS, build_deserializer, register_deserializer, registered_deserializers
from ..streams import StreamInformation
from .protocol import (ChunkData, ChunkInfo, DenseStream, SequenceTable, SparseStream, StreamData,
                       Timeline)

__all__ = [
    "ChunkInfo", "SequenceTable", "DenseStream", "SparseStream", "StreamData", "ChunkData",
    "DeserializerBase", "Deserializer", "register_deserializer", "build_deserializer",
    "registered_deserializers",
]

#: the registry's table of deserializer types (kept under its old name; see cntkio.registry)
_REGISTRY = _DESERIALIZERS


class DeserializerBase(ABC):
    """A base for formats implementing the :class:`~cntkio.deserializers.protocol.Deserializer`
    protocol: implement :meth:`stream_infos`, :meth:`chunk_infos`, :meth:`sequence_infos` and
    :meth:`get_chunk` (thread-safe: the engine loads chunks on a pool).

    ``key_kind`` is ``'numeric'`` or ``'string'``; ``timeline`` is ``'global'`` (counts known
    after indexing). A random-access format also implements ``supports_random_access``,
    ``read_bytes`` and ``read_sequences`` (see
    :class:`~cntkio.deserializers.protocol.RandomAccessDeserializer`); this class then supplies
    :meth:`release_bytes` and :meth:`begin_read_sequences`.
    """

    key_kind: str = "numeric"
    timeline: Timeline = "global"

    @abstractmethod
    def stream_infos(self) -> list[StreamInformation]:
        """The streams this deserializer delivers."""

    @abstractmethod
    def chunk_infos(self) -> list[ChunkInfo]:
        """All chunks, in input order."""

    @abstractmethod
    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        """The sequences of a chunk (keys and timeline lengths), without loading its data."""

    @abstractmethod
    def get_chunk(self, chunk_id: int) -> ChunkData:
        """Load a chunk's data."""

    def release_bytes(self, raw) -> None:
        """The engine no longer needs a ``read_bytes`` result (the default does nothing)."""
        return None

    def begin_read_sequences(self, raw: Mapping[int, Any], chunk_ids: np.ndarray,
                             indices: np.ndarray) -> Callable[[], ChunkData | None]:
        """Start ``read_sequences`` and return a function that waits for it and returns its
        result (call it once, from any thread). A deserializer that parses without the GIL
        starts now, so that the caller packs other minibatches meanwhile; this default reads when
        the function is called."""
        return lambda: self.read_sequences(raw, chunk_ids, indices)  # type: ignore[attr-defined]

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where the sequences with these keys are: ``(chunk_ids, index_in_chunk)``, -1 if absent.

        Used when this deserializer is a secondary in a composite. A key that occurs more than
        once makes the join ambiguous and raises ValueError.
        """
        table = self._key_table()
        if self.key_kind == "string":
            lut = table
            chunk = np.fromiter((lut.get(k, (-1, -1))[0] for k in keys), np.int64, len(keys))
            index = np.fromiter((lut.get(k, (-1, -1))[1] for k in keys), np.int64, len(keys))
            return chunk, index
        sorted_keys, chunk_of, index_of = table
        keys = _unsigned(np.asarray(keys))
        pos = np.searchsorted(sorted_keys, keys)
        pos_c = np.minimum(pos, max(len(sorted_keys) - 1, 0))
        found = (pos < len(sorted_keys)) & (sorted_keys[pos_c] == keys) if len(sorted_keys) else \
            np.zeros(len(keys), bool)
        return np.where(found, chunk_of[pos_c], -1), np.where(found, index_of[pos_c], -1)

    def _key_table(self):
        lock = self.__dict__.setdefault("_key_table_lock", threading.Lock())
        with lock:
            cached = self.__dict__.get("_key_table_cache")
            if cached is not None:
                return cached
            tables = [self.sequence_infos(c.id) for c in self.chunk_infos()]
            if self.key_kind == "string":
                lut: dict = {}
                for cid, t in enumerate(tables):
                    for i, k in enumerate(t.keys):
                        if k in lut:
                            raise ValueError(f"{self!r}: duplicate sequence key {k!r}: "
                                             "a join by key would be ambiguous")
                        lut[k] = (cid, i)
                cached = lut
            else:
                keys = _unsigned(np.concatenate([t.keys for t in tables])) if tables else np.zeros(0, np.uint64)
                chunk_of = np.concatenate([np.full(len(t), cid, np.int64) for cid, t in enumerate(tables)]) \
                    if tables else np.zeros(0, np.int64)
                index_of = np.concatenate([np.arange(len(t), dtype=np.int64) for t in tables]) \
                    if tables else np.zeros(0, np.int64)
                order = np.argsort(keys, kind="stable")
                keys, chunk_of, index_of = keys[order], chunk_of[order], index_of[order]
                dup = np.flatnonzero(keys[1:] == keys[:-1])
                if len(dup):
                    raise ValueError(f"{self!r}: duplicate sequence key {keys[dup[0]].item()!r}: "
                                     "a join by key would be ambiguous")
                cached = (keys, chunk_of, index_of)
            self.__dict__["_key_table_cache"] = cached
            return cached

    def close(self) -> None:  # noqa: B027 (optional to override: most formats hold nothing to release)
        """Release files and memory. The default does nothing."""


#: The name formats subclassed before the protocol existed.
Deserializer = DeserializerBase


def _unsigned(keys: np.ndarray) -> np.ndarray:
    """Numeric sequence keys as uint64 (CNTK's keys are unsigned 64-bit): int64 keys are converted
    bit for bit, so that keys of 2^63 and more compare equal however a format stores them (a mixed
    int64/uint64 comparison would go through float64 and confuse large keys)."""
    if keys.dtype == np.uint64:
        return keys
    if keys.dtype.kind in "iu":
        return keys.astype(np.int64, copy=False).view(np.uint64) if keys.dtype.kind == "i" else keys.astype(np.uint64)
    return keys.astype(np.uint64)
