"""The deserializer contract: the data types it speaks and the protocols a format implements.

A deserializer indexes its input into *chunks* of *sequences* and loads one chunk on request.
The engine (composite, randomizer, packer, reader) depends on this module only: every format
that implements :class:`Deserializer` gets randomization, checkpoints and distribution for free
(DESIGN.md, Contracts). Nothing here imports anything of cntkio but :mod:`cntkio.streams`.

Chunk data is columnar: per stream one values array for all samples of the chunk plus sequence
offsets. No Python object per sample or per sequence; packing is slicing arrays.

Four protocols, each a declaration a format makes (by having the members; subclassing
:class:`~cntkio.deserializers.base.DeserializerBase` gives the defaults):

* :class:`Deserializer`: what every format implements.
* :class:`RandomAccessDeserializer`: the optional capability to parse single sequences out of
  a chunk's raw bytes. A format declares it by implementing its four methods, and says at run
  time whether this instance can use it with :meth:`~RandomAccessDeserializer.supports_random_access`
  (CTF: not with ``numChunksToCache``). The engine asks :func:`has_random_access` only.
* :class:`GlobalRandomizationDeserializer`: a random-access format whose raw chunk bytes cost no
  memory to hold (where a chunk's sequences lie in the file): it can be read with cntkio's global randomization. The engine
  asks :func:`supports_global_randomization` only.
* :class:`LocalTimelineDeserializer`: a format that knows only its chunk count before loading
  (``UserDeserializer``): ``timeline = "local"`` and ``num_chunks()``; the source reads it with
  the local-timeline randomizers (cntk-io-semantics 2.7). The source asks :func:`is_local_timeline`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Protocol, Union, runtime_checkable

import numpy as np

from ..streams import StreamInformation

__all__ = [
    "FetchAheadDeserializer", "fetches_ahead", "PartBoundDeserializer",
    "ChunkInfo", "SequenceTable", "DenseStream", "SparseStream", "StreamData", "ChunkData",
    "KeyKind", "Timeline", "Deserializer", "RandomAccessDeserializer", "LocalTimelineDeserializer",
    "SweepDependentDeserializer", "has_random_access", "is_local_timeline", "depends_on_sweep",
    "GlobalRandomizationDeserializer", "supports_global_randomization",
    "ranges", "gather_stream",
]

#: ``'numeric'`` (int64/uint64 keys, e.g. CTF sequence ids) or ``'string'`` (HTK/MLF utterance ids).
KeyKind = Literal["numeric", "string"]
#: ``'global'``: chunk and sequence counts are known after indexing (every built-in format);
#: ``'local'``: only the chunk count is known before a chunk is loaded (``UserDeserializer``).
Timeline = Literal["global", "local"]


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
    #: optional: ``read_rows(a, b, out)`` fills ``out`` with ``values[a:b]`` read straight from
    #: the file behind ``values`` (a read-only map), so that a packer taking a run of rows touches
    #: the data once instead of faulting the map in and copying it
    read_rows: Callable[[int, int, np.ndarray], None] | None = field(default=None, repr=False, compare=False)
    #: optional: ``values`` is read-only and may be handed out as it is (a minibatch of a run of
    #: its rows is then a read-only view of them, nothing copied); what a user opts in to
    shared: bool = field(default=False, repr=False, compare=False)
    #: optional: ``(mapper, first)``: row ``r`` of ``values`` is row ``first + r`` of a file that
    #: ``mapper.map_rows(a, b)`` maps copy-on-write (a writable array of rows ``[a, b)`` over a
    #: private map: nothing read until touched, a change copies its page and never reaches the
    #: file or a later read; None when it will not map them). The packer hands a run of rows out
    #: as such a mapping, runs of several chunks that follow each other in one mapper as one
    private_map: tuple[Any, int] | None = field(default=None, repr=False, compare=False)

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
    ``max_errors``. ``dropped`` (optional bool array) marks sequences the deserializer itself
    gave up under its own error budget, already counted and logged there (a CTF sequence that lost
    one stream's sample to a tolerated error): the source removes them without counting them again.
    ``reasons`` (optional) says why sequences are invalid: ``{index in the chunk: message}``, the
    message naming the file, line or key, stream and cause; the source quotes the last one when the
    invalid sequences exceed ``max_errors``.
    """

    sequences: SequenceTable
    streams: dict[str, StreamData]
    invalid: np.ndarray | None = None
    dropped: np.ndarray | None = None
    reasons: dict[int, str] | None = None


@runtime_checkable
class Deserializer(Protocol):
    """A format reader: indexes the input into chunks and loads a chunk on request.

    * ``key_kind`` is ``'numeric'`` or ``'string'`` (a composite joins by key; HTK/MLF keys are
      strings).
    * ``get_chunk`` must be safe to call from several threads at once (the engine loads chunks on
      a pool; the CTF C parser releases the GIL, so two chunks parse on two cores). It may be
      called for any chunk, in any order, any number of times (every sweep loads a chunk again),
      and must return the same data each time; errors are counted once per chunk.
    * Chunk data is columnar (:class:`ChunkData`): no Python object per sample or sequence.
    * Chunk ids are ``0..C-1`` in input order; ``chunk_infos()`` describes them all without
      loading data (a local-timeline deserializer reports -1 counts, see
      :class:`LocalTimelineDeserializer`).

    :class:`~cntkio.deserializers.base.DeserializerBase` implements :meth:`lookup` and
    :meth:`close` from the other methods; a format subclasses it and writes the four others.
    """

    key_kind: str

    def stream_infos(self) -> list[StreamInformation]:
        """The streams this deserializer delivers."""
        ...

    def chunk_infos(self) -> list[ChunkInfo]:
        """All chunks, in input order."""
        ...

    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        """The sequences of a chunk (keys and timeline lengths), without loading its data."""
        ...

    def get_chunk(self, chunk_id: int) -> ChunkData:
        """Load a chunk's data (thread-safe)."""
        ...

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where the sequences with these keys are: ``(chunk_ids, index_in_chunk)``, -1 if absent.

        Used when this deserializer is a secondary in a composite. A key that occurs more than
        once makes the join ambiguous and raises ValueError.
        """
        ...

    def close(self) -> None:
        """Release files and memory."""
        ...


@runtime_checkable
class RandomAccessDeserializer(Deserializer, Protocol):
    """A deserializer that can parse single sequences out of a chunk's raw bytes.

    When :func:`has_random_access` says so, a randomized reader parses each batch of minibatches'
    sequences in delivery order (:meth:`begin_read_sequences`) instead of parsing the window's
    chunks whole first: the same minibatches, less memory, no wait for the window.
    """

    def supports_random_access(self) -> bool:
        """Whether this instance can serve :meth:`read_sequences` now (a format may declare the
        capability and turn it off by option: CTF with ``numChunksToCache``)."""
        ...

    def read_bytes(self, chunk_id: int) -> Any:
        """A chunk's raw input, unparsed (an opaque object for :meth:`read_sequences`)."""
        ...

    def release_bytes(self, raw: Any) -> None:
        """The engine no longer needs a :meth:`read_bytes` result."""
        ...

    def read_sequences(self, raw: Mapping[int, Any], chunk_ids: np.ndarray,
                       indices: np.ndarray) -> ChunkData | None:
        """The sequences ``indices[i]`` of chunks ``chunk_ids[i]``, in that order, parsed into one
        :class:`ChunkData` (its table holds their keys and lengths) from ``raw[chunk id]``
        (:meth:`read_bytes`); None when they cannot be parsed alone with exactly the result and
        the error accounting of :meth:`get_chunk`: the caller then loads whole chunks."""
        ...

    def begin_read_sequences(self, raw: Mapping[int, Any], chunk_ids: np.ndarray,
                             indices: np.ndarray) -> Callable[[], ChunkData | None]:
        """Start :meth:`read_sequences` and return a function that waits for it and returns its
        result (call it once, from any thread). A deserializer that parses without the GIL
        starts now, so that the caller packs other minibatches meanwhile."""
        ...


@runtime_checkable
class GlobalRandomizationDeserializer(RandomAccessDeserializer, Protocol):
    """A deserializer that reads single sequences by index (the methods of
    :class:`RandomAccessDeserializer`) out of raw chunk bytes (:meth:`read_bytes`) that cost no
    memory to hold: for every chunk at once, a table of where its sequences lie in the file
    (CBF). Only such a corpus is read with cntkio's global
    randomization (``MinibatchSource(global_randomization=True)``,
    :mod:`cntkio.engine.index_shuffle`), whose every batch of minibatches reads a few sequences
    from nearly every chunk. ``supports_random_access`` may say False (CBF: under the block
    randomizer whole chunks read faster); the read methods then serve global
    randomization only.
    """

    def supports_global_randomization(self) -> bool:
        """Whether this instance can hold every chunk's raw bytes at once now (a URL: no)."""
        ...


@runtime_checkable
class LocalTimelineDeserializer(Deserializer, Protocol):
    """A deserializer that knows only its chunk count before loading (``UserDeserializer``).

    ``chunk_infos()`` reports -1 sequence and sample counts and ``sequence_infos(c)`` may load
    the chunk; the source reads it with the local-timeline randomizers, chunk by chunk.
    """

    timeline: Timeline

    def num_chunks(self) -> int:
        """The number of chunks (at least 1)."""
        ...


@runtime_checkable
class SweepDependentDeserializer(Deserializer, Protocol):
    """A deserializer whose chunk data depends on the sweep that reads it (random image
    transforms: a new crop in every sweep, drawn from ``(seed, sweep, position)``).

    When :func:`depends_on_sweep` says so, the engine loads a chunk again for every sweep that
    reads it and passes the sweep: ``get_chunk(chunk_id, sweep=k)`` (it then reads whole chunks,
    not by sequence).
    """

    def depends_on_sweep(self) -> bool:
        """Whether this instance's chunk data depends on the sweep (images: only when a random
        transform is configured)."""
        ...

    def get_chunk(self, chunk_id: int, sweep: int = 0) -> ChunkData:
        """Chunk ``chunk_id`` as sweep ``sweep`` reads it."""
        ...


@runtime_checkable
class FetchAheadDeserializer(Deserializer, Protocol):
    """A deserializer reading an object store (a URL, :mod:`cntkio.remote`): told which chunks the
    window loads next, it starts their ranged GETs in the background, so that the network works
    while earlier chunks are parsed.

    When :func:`fetches_ahead` says so, the engine calls ``fetch_ahead(chunk_ids)`` with the chunks
    it is about to load (it returns at once).
    """

    def fetches_ahead(self) -> bool:
        """Whether this instance reads from a store now (a local file: False)."""
        ...

    def fetch_ahead(self, chunk_ids: list[int]) -> None:
        """Start fetching these chunks' bytes (no-op for those already fetched)."""
        ...


@runtime_checkable
class PartBoundDeserializer(Deserializer, Protocol):
    """A deserializer whose sequences are bounded by another part of the composite it is joined in
    (HTK labels by their features' lengths): the composite calls ``bind_composite(parts)`` once,
    with every part, before it reads a chunk."""

    def bind_composite(self, parts: list) -> None:
        """Check this part's sequences against the other ``parts`` (and mark those that exceed
        them invalid)."""
        ...


def fetches_ahead(d: object) -> bool:
    """Whether ``d`` declares :class:`FetchAheadDeserializer` and reads from a store now."""
    return isinstance(d, FetchAheadDeserializer) and bool(d.fetches_ahead())


def depends_on_sweep(d: object) -> bool:
    """Whether ``d`` declares :class:`SweepDependentDeserializer` and its data depends on the
    sweep now."""
    return isinstance(d, SweepDependentDeserializer) and bool(d.depends_on_sweep())


def has_random_access(d: object) -> bool:
    """Whether ``d`` declares :class:`RandomAccessDeserializer` and supports it now."""
    return isinstance(d, RandomAccessDeserializer) and bool(d.supports_random_access())


def supports_global_randomization(d: object) -> bool:
    """Whether ``d`` declares :class:`GlobalRandomizationDeserializer` and can read sequences by
    index out of raw bytes it can hold for every chunk at once, now."""
    return isinstance(d, GlobalRandomizationDeserializer) and bool(d.supports_global_randomization())


def is_local_timeline(d: object) -> bool:
    """Whether ``d`` is read on the local timeline (declares ``timeline = "local"``, as every
    ``UserDeserializer`` does). ``is_user_deserializer = True``, cntkio's earlier spelling of the
    same declaration, is still honoured."""
    return getattr(d, "timeline", "global") == "local" or bool(getattr(d, "is_user_deserializer", False))


# --- selections of chunk data (the engine's packers, the composite and the CBF writer) ---------------
def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + n)`` for every pair, vectorised (int64)."""
    lengths = np.asarray(lengths, np.int64)
    total = int(lengths.sum()) if len(lengths) else 0
    if total == 0:
        return np.zeros(0, np.int64)
    starts = np.asarray(starts, np.int64)
    ends = np.cumsum(lengths)
    out = np.arange(total, dtype=np.int64)
    out += np.repeat(starts - (ends - lengths), lengths)
    return out


def gather_stream(stream, seq_indices: np.ndarray):
    """The sequences ``seq_indices`` of one chunk stream, in that order, as a new container."""
    idx = np.asarray(seq_indices, np.int64)
    off = stream.offsets
    lens = off[idx + 1] - off[idx]
    new_off = np.zeros(len(idx) + 1, np.int64)
    np.cumsum(lens, out=new_off[1:])
    rows = ranges(off[idx], lens)
    if not stream.is_sparse:
        return DenseStream(stream.values[rows], new_off)
    nnz = stream.indptr[rows + 1] - stream.indptr[rows]
    indptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(nnz, out=indptr[1:])
    elems = ranges(stream.indptr[rows], nnz)
    return SparseStream(indptr, stream.indices[elems], stream.data[elems], new_off, stream.dim)
