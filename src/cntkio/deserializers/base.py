"""The deserializer protocol and the columnar chunk containers every format fills.

A deserializer indexes its input into *chunks* of *sequences* and loads one chunk on request.
The engine (composite, randomizer, packer) only ever sees this protocol, so every format gets
randomization, checkpoints and distribution for free (DESIGN.md, Contracts).

Chunk data is columnar: per stream one values array for all samples of the chunk plus sequence
offsets. No Python object per sample or per sequence; packing is slicing arrays.
"""
from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Union

import numpy as np

from ..streams import StreamInformation

__all__ = [
    "ChunkInfo", "SequenceTable", "DenseStream", "SparseStream", "StreamData", "ChunkData",
    "Deserializer", "register_deserializer", "build_deserializer", "registered_deserializers",
]


@dataclass(frozen=True)
class ChunkInfo:
    """One chunk: its id (0..C-1 in input order), sequence count and timeline samples."""

    id: int
    num_sequences: int
    num_samples: int


@dataclass
class SequenceTable:
    """The sequences of one chunk, in input order, without their data.

    ``keys``: int64/uint64 array for numeric keys, object array of str for string keys.
    ``lengths``: int64 timeline lengths (cntk-io-semantics 2.2: the defining stream's sample
    count, or the largest count over the streams).
    """

    keys: np.ndarray
    lengths: np.ndarray

    def __len__(self) -> int:
        return int(self.lengths.shape[0])


@dataclass
class DenseStream:
    """Dense samples of one stream in one chunk.

    ``values[total_samples, *sample_shape]``; sequence ``i`` owns rows
    ``offsets[i]:offsets[i+1]`` (``offsets`` is int64 of length num_sequences + 1).
    """

    values: np.ndarray
    offsets: np.ndarray

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def num_samples(self) -> int:
        return int(self.offsets[-1])


@dataclass
class SparseStream:
    """Sparse samples of one stream in one chunk, CSR over samples.

    Sample ``s`` has the non-zeros ``indices[indptr[s]:indptr[s+1]]`` with values ``data[...]``
    (indices into the flattened sample of size ``dim``); sequence ``i`` owns samples
    ``offsets[i]:offsets[i+1]``. ``indptr`` and ``offsets`` are int64, ``indices`` int32.
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    offsets: np.ndarray
    dim: int

    @property
    def is_sparse(self) -> bool:
        return True

    @property
    def num_samples(self) -> int:
        return int(self.offsets[-1])


StreamData = Union[DenseStream, SparseStream]


@dataclass
class ChunkData:
    """The loaded data of one chunk: the sequence table and one container per stream name.

    ``invalid`` (optional bool array, one per sequence) marks sequences that failed to load
    (e.g. an image that does not decode); the source drops them and counts them against its
    ``max_errors``.
    """

    sequences: SequenceTable
    streams: dict[str, StreamData]
    invalid: np.ndarray | None = None


class Deserializer(ABC):
    """A format reader: indexes the input into chunks and loads a chunk on request.

    Subclasses must be safe to call ``get_chunk`` from several threads at once (the C parser
    releases the GIL, so two chunks parse on two cores). ``key_kind`` is ``'numeric'`` or
    ``'string'`` (a composite joins by key; HTK/MLF keys are strings).
    """

    key_kind: str = "numeric"

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

    #: True when the deserializer can parse single sequences out of a chunk's raw bytes
    #: (:meth:`read_bytes`, :meth:`read_sequences`): the engine then parses a randomized batch's
    #: sequences in delivery order instead of parsing the window's chunks whole first.
    random_access: bool = False

    def read_bytes(self, chunk_id: int):
        """A chunk's raw input, unparsed (an opaque object for :meth:`read_sequences`)."""
        raise NotImplementedError(f"{type(self).__name__} has no random access")

    def release_bytes(self, raw) -> None:
        """The engine no longer needs a :meth:`read_bytes` result (the default does nothing)."""
        return None

    def read_sequences(self, raw: Mapping[int, Any], chunk_ids: np.ndarray,
                       indices: np.ndarray) -> ChunkData | None:
        """The sequences ``indices[i]`` of chunks ``chunk_ids[i]``, in that order, parsed into one
        :class:`ChunkData` (its table holds their keys and lengths) from ``raw[chunk id]``
        (:meth:`read_bytes`); None when they cannot be parsed alone with exactly the result and
        the error accounting of :meth:`get_chunk`: the caller then loads whole chunks."""
        raise NotImplementedError(f"{type(self).__name__} has no random access")

    def begin_read_sequences(self, raw: Mapping[int, Any], chunk_ids: np.ndarray,
                             indices: np.ndarray) -> Callable[[], ChunkData | None]:
        """Start :meth:`read_sequences` and return a function that waits for it and returns its
        result (call it once, from any thread). A deserializer that parses without the GIL
        starts now, so that the caller packs other minibatches meanwhile; this default reads when
        the function is called."""
        return lambda: self.read_sequences(raw, chunk_ids, indices)

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
        keys = np.asarray(keys)
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
                keys = np.concatenate([t.keys for t in tables]) if tables else np.zeros(0, np.int64)
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


DeserializerFactory = Callable[..., Deserializer]
_REGISTRY: dict[str, DeserializerFactory] = {}


def register_deserializer(type_name: str, factory: DeserializerFactory) -> None:
    """Make a deserializer type buildable from its config dict (``{'type': type_name, ...}``).

    ``factory(config, **source_options)`` returns a Deserializer; ``source_options`` carries
    options of the MinibatchSource the deserializer may need (``frame_mode``, ``trace_level``).
    """
    _REGISTRY[type_name] = factory


def registered_deserializers() -> list[str]:
    """The deserializer types cntkio implements."""
    _load_builtin()
    return sorted(_REGISTRY)


def build_deserializer(config: Mapping, **source_options) -> Deserializer:
    """Build a deserializer from its config dict (as the cntk.io factories return)."""
    _load_builtin()
    type_name = config.get("type")
    if type_name not in _REGISTRY:
        raise ValueError(f"unknown deserializer type {type_name!r}; cntkio implements: "
                         + ", ".join(sorted(_REGISTRY)))
    return _REGISTRY[type_name](config, **source_options)


def _load_builtin() -> None:
    # Importing a format package registers it. Imported lazily to keep `import cntkio` light.
    from . import ctf  # noqa: F401
