"""``CNTKBinaryFormatDeserializer``: reads CNTK binary format (CBF) files.

The file is read by byte ranges with ``pread`` (:mod:`..ranges`; never mapped, so a file cut short
by another process is an error naming it, not SIGBUS); the header and chunk table are read once
(they are the index: nothing is built or cached). A chunk is loaded by one read of its bytes and
a walk of its blocks (``layout.walk_chunk``) assembling columnar containers: a dense stream's
values are a zero-copy NumPy view of the chunk's bytes when the layout allows it (a chunk with
one sequence of the stream, or where every sequence has exactly one sample of it), otherwise one
gather of the payload segments; sparse streams become
CSR in the walk itself (the C core's ``sparse_fill``: one pass copying values, row indices and
per-sample counts), or by a few vectorized gathers where the C core is not built or a count is
to be reported. Sparse row indices and
all counts are validated; errors name the file, the chunk, the stream and the field.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np

from ..._paths import missing_file_error
from ..._log import TraceLogger
from ...errors import ConfigError, FormatError
from ...remote import remote_for
from . import remote as remote_cbf
from ...streams import StreamInformation
from ...values import local_path, to_bool, to_choice, to_int
from ..base import DeserializerBase
from ..._native import native
from ..protocol import (ChunkData, ChunkInfo, DenseStream, FetchAheadDeserializer, GlobalRandomizationDeserializer,
                        SequenceTable, SparseStream)
from ..ranges import SCRATCH, BytesRanges, FileRanges, Ranges, open_ranges
from .layout import CBFHeader, chunk_lengths, chunk_words, gather_words, read_header, walk_chunk

__all__ = ["CNTKBinaryFormatDeserializer", "parse_options"]


def _ci(mapping: Mapping) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in mapping.items()}


def parse_options(config: Mapping, **source_options: Any) -> dict[str, Any]:
    """Validate a ``CNTKBinaryFormatDeserializer`` config dict: ``file``, optional ``input``
    (``{name: {alias: file_stream}}``: renames), ``precision``, ``traceLevel``,
    ``keepDataInMemory``. Keys match case-insensitively; raises ConfigError naming the key."""
    opts = _ci(config)
    file = opts.get("file")
    if file is None or str(file) == "":
        raise ConfigError("the input file is not specified", path="file",
                          hint='set file = "path/to/data.cbf"')
    inputs = opts.get("input", {}) or {}
    if not isinstance(inputs, Mapping):
        raise ConfigError(f"expected a section of inputs, found {inputs!r}", path="input")
    renames: dict[str, str] = {}  # file stream -> output name (a later name on one alias wins)
    for name, decl in inputs.items():
        path = f"input.{name}"
        if decl is None:
            decl = {}
        if not isinstance(decl, Mapping):
            raise ConfigError(f"expected a section such as [alias = \"name in the file\"], found {decl!r}",
                              path=path)
        d = _ci(decl)
        if "alias" not in d:
            continue
        alias = d["alias"]
        if alias is None or str(alias) == "":
            raise ConfigError("ParseValue: No value given for 'alias'.", path=path + ".alias",
                              hint="name the stream of the file this input reads")
        renames[str(alias)] = str(name)
    precision = to_choice(opts.get("precision", source_options.get("precision", "float")), "precision",
                          ("float", "double"))
    trace = to_int(opts.get("tracelevel", source_options.get("trace_level", 1)), "traceLevel")
    return {"file": local_path(os.fspath(file)), "renames": renames, "double": precision == "double",
            "trace_level": trace,
            "keep_in_memory": to_bool(opts.get("keepdatainmemory", False), "keepDataInMemory")}


class CNTKBinaryFormatDeserializer(DeserializerBase, FetchAheadDeserializer, GlobalRandomizationDeserializer):
    """Reads a CBF file (the ``CNTKBinaryFormatDeserializer`` config type).

    Streams come from the file's header, in header order, renamed by the config's ``input``
    aliases (streams not named there keep their file names). Sequence keys are the 0-based
    ordinals of the sequences in the file. Sequences with no sample in any stream are dropped (as
    the CTF deserializer drops them), and so are chunks left empty.
    """

    key_kind = "numeric"
    #: sparse streams assembled by the C core during the walk (one pass); False takes the NumPy
    #: gathers (the tested twin, and the path that names a bad count or index)
    fuse_sparse = True

    def __init__(self, config: Mapping, **source_options: Any) -> None:
        self.options = o = parse_options(config, **source_options)
        self.filename: str = o["file"]
        self.trace = TraceLogger("deserializers.cbf", o["trace_level"])
        self.dtype = np.dtype(np.float64 if o["double"] else np.float32)
        self._src: Ranges | None = None
        self._remote = remote_for(self.filename, config, "CBF input file")  # a URL: cntkio.remote
        if self._remote is not None and o["keep_in_memory"]:
            self._src = BytesRanges(bytes(self._remote.read(0, None)), self.filename, what="CBF file")
            self._remote = None
        if self._remote is not None:   # the header and the chunks' sequence lengths, fetched
            self.header, self._size, buf = remote_cbf.header_and_lengths(self._remote, self.filename)
            self._names = self._output_names()
            try:
                self._index(BytesRanges(buf, self.filename, what="CBF file"))
            finally:
                buf.close()
            return
        if self._src is None and not os.path.exists(self.filename):
            raise missing_file_error("CBF input file", self.filename, "the 'file' of a CNTKBinaryFormatDeserializer")
        if self._src is None and os.path.isdir(self.filename):
            raise IsADirectoryError(21, f"CBF input is a directory, not a file: {self.filename!r}",
                                    self.filename)
        if self._src is None:
            self._src = open_ranges(self.filename, in_memory=o["keep_in_memory"], what="CBF file")
        self.header: CBFHeader = read_header(self._src, self.filename)
        self._size = self.header.size
        self._names = self._output_names()
        self._index()
        self.trace.info("%s: %d sequences in %d chunks, %d streams", self.filename,
                        sum(len(t) for t in self._tables), len(self._chunk_ids), len(self._names))

    # -- index --------------------------------------------------------------------------------

    def _output_names(self) -> list[str]:
        renames = self.options["renames"]
        names = [renames.get(s.name, s.name) for s in self.header.streams]
        seen: dict[str, str] = {}
        for s, name in zip(self.header.streams, names):
            if name in seen:
                raise ConfigError(f"two streams of the file would be delivered as {name!r}: "
                                  f"{seen[name]!r} and {s.name!r}", path=f"input.{name}.alias",
                                  hint="rename one of them with another input's alias")
            seen[name] = s.name
        for alias in renames:
            if alias not in {s.name for s in self.header.streams}:
                self.trace.warning("%s: input alias %r names no stream of the file (streams: %s); "
                                   "ignored", self.filename, alias,
                                   ", ".join(s.name for s in self.header.streams))
        return names

    def _index(self, src: Ranges | None = None) -> None:
        h = self.header
        key0 = 0
        chunk_ids, infos, tables, keeps = [], [], [], []
        dropped = 0
        for c in range(len(h.offsets)):
            lengths = chunk_lengths(self._src if src is None else src, h, c, self.filename)
            keys = np.arange(key0, key0 + len(lengths), dtype=np.int64)
            key0 += len(lengths)
            keep = lengths > 0
            if not keep.all():
                dropped += int((~keep).sum())
                keys, lengths = keys[keep], lengths[keep]
            if not len(lengths):
                continue
            chunk_ids.append(c)
            keeps.append(None if keep.all() else keep)
            infos.append(ChunkInfo(len(infos), len(lengths), int(lengths.sum())))
            tables.append(SequenceTable(keys, lengths))
        if dropped:
            self.trace.warning("%s: %d sequence(s) have no sample in any stream and are dropped",
                               self.filename, dropped)
        if not chunk_ids:
            raise FormatError("the file holds no data", file=self.filename,
                              expected="at least one sequence with a sample",
                              found=f"{len(h.offsets)} chunks, {key0} sequences")
        self._chunk_ids, self._infos, self._tables, self._keeps = chunk_ids, infos, tables, keeps

    # -- protocol -----------------------------------------------------------------------------

    def stream_infos(self) -> list[StreamInformation]:
        """The file's streams in header order, under their output names."""
        return [StreamInformation(name, i, "sparse" if s.sparse else "dense", self.dtype, (s.dim,))
                for i, (name, s) in enumerate(zip(self._names, self.header.streams))]

    def chunk_infos(self) -> list[ChunkInfo]:
        """The file's chunks (those with a sequence), in file order."""
        return list(self._infos)

    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        """Keys (ordinals in the file) and lengths of a chunk's sequences."""
        return self._tables[chunk_id]

    def get_chunk(self, chunk_id: int) -> ChunkData:
        """Load a chunk: one read of its bytes (into a reused buffer when no output keeps a view
        of it). Thread-safe (no shared state is written)."""
        c = self._chunk_ids[chunk_id]
        h = self.header
        if self._remote is not None:   # the chunk's bytes, fetched
            raw = np.frombuffer(remote_cbf.chunk(self._remote, h, c)[0], np.uint8)
            words = raw[:len(raw) // 4 * 4].view("<u4")
        else:
            raw = SCRATCH.take(int(h.ends[c]) - int(h.offsets[c]))
            words = chunk_words(self._src, h, c, self.filename, raw)
        lengths = words[:int(h.num_sequences[c])].astype(np.int64)
        lay = walk_chunk(words, h, c, lengths, self.filename, self.fuse_sparse)
        keep = self._keeps[chunk_id]
        streams: dict[str, Any] = {}
        for k, (name, st) in enumerate(zip(self._names, h.streams)):
            starts, counts = lay.starts[k], lay.counts[k]
            if keep is not None:  # dropped sequences have no sample in any stream
                starts, counts = starts[keep], counts[keep]
            offsets = np.zeros(len(counts) + 1, np.int64)
            np.cumsum(counts, out=offsets[1:])
            if st.sparse:
                if lay.filled[k] is not None:  # checked in C; dropped sequences hold nothing
                    data, indices, indptr = lay.filled[k]
                    data = data.view(st.dtype)
                    if data.dtype != self.dtype:
                        data = data.astype(self.dtype)
                    streams[name] = SparseStream(indptr, indices, data, offsets, st.dim)
                    continue
                nnz = lay.nnz[k] if keep is None else lay.nnz[k][keep]
                streams[name] = self._sparse(lay.words, st, starts, counts, nnz, offsets, c)
            else:
                streams[name] = DenseStream(self._dense(lay.words, st, starts, counts), offsets)
        del lay, words
        views = [s.values for s in streams.values() if isinstance(s, DenseStream) and
                 np.may_share_memory(s.values, raw)]
        for v in views:                # read-only, as any chunk's arrays (the engine may share them)
            v.flags.writeable = False
        if not views:
            SCRATCH.give(raw)          # nothing views the chunk's bytes: the next load reuses them
        return ChunkData(self._tables[chunk_id], streams)

    def _dense(self, words: np.ndarray, st, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
        ew, dim = st.value_words, st.dim
        sample_words = dim * ew
        nonempty = np.flatnonzero(counts)
        if len(nonempty) == 1:  # one block: a view of the map, no copy
            s = int(starts[nonempty[0]]) + 1
            flat = words[s:s + int(counts[nonempty[0]]) * sample_words]
            values = flat.view(st.dtype)
        elif len(counts) and ew == 1 and bool((counts == 1).all()) and len(counts) > 1 and \
                bool((np.diff(starts) == 1 + sample_words).all()):
            # every sequence one sample: the samples lie at a fixed stride, a strided view
            base = words[int(starts[0]) + 1:]
            values = np.lib.stride_tricks.as_strided(
                base.view(st.dtype), shape=(len(counts), dim),
                strides=((1 + sample_words) * 4, 4), writeable=False)
            return values if values.dtype == self.dtype else values.astype(self.dtype)
        else:
            values = gather_words(words, starts + 1, counts * sample_words).view(st.dtype)
        values = values.reshape(-1, dim)
        if values.dtype != self.dtype:
            values = values.astype(self.dtype)
        return values

    def _sparse(self, words, st, starts, counts, nnz, offsets, c) -> SparseStream:
        ew = st.value_words
        data = gather_words(words, starts + 2, nnz * ew).view(st.dtype)
        indices = gather_words(words, starts + 2 + nnz * ew, nnz).view(np.int32)
        sizes = gather_words(words, starts + 2 + nnz * (ew + 1), counts).view(np.int32)
        indptr = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=indptr[1:])
        nz_off = np.zeros(len(nnz) + 1, np.int64)
        np.cumsum(nnz, out=nz_off[1:])
        if len(sizes) and int(sizes.min()) < 0:
            s = int(np.flatnonzero(sizes < 0)[0])
            i = int(np.searchsorted(offsets, s, "right") - 1)
            raise self._sparse_error(c, st, i, s - int(offsets[i]), "negative non-zero count of a "
                                     "sample", "nnz_per_sample >= 0", str(int(sizes[s])))
        bad = np.flatnonzero(indptr[offsets] != nz_off)
        if len(bad):
            i = int(bad[0]) - 1
            got = int(indptr[offsets[i + 1]] - indptr[offsets[i]])
            raise self._sparse_error(c, st, i, None, "the counts do not add up: the per-sample "
                                     "non-zero counts do not sum to the sequence's nnz",
                                     f"nnz = {got} (the sum of nnz_per_sample)",
                                     f"nnz = {int(nnz[i])}")
        if len(indices):
            lo, hi = int(indices.min()), int(indices.max())
            if lo < 0 or hi >= st.dim:
                e = int(np.flatnonzero((indices < 0) | (indices >= st.dim))[0])
                sample = int(np.searchsorted(indptr, e, "right") - 1)
                i = int(np.searchsorted(offsets, sample, "right") - 1)
                raise self._sparse_error(c, st, i, sample - int(offsets[i]), "sparse index out of "
                                         "range", f"an index in [0, {st.dim}) (dim = {st.dim})",
                                         str(int(indices[e])))
        if data.dtype != self.dtype:
            data = data.astype(self.dtype)
        return SparseStream(indptr, indices, data, offsets, st.dim)

    def _sparse_error(self, c, st, i, sample, message, expected, found) -> FormatError:
        where = f"chunk {c}, stream {st.name!r}, sequence {i}"
        if sample is not None:
            where += f", sample {sample}"
        return FormatError(f"{where}: {message}", file=self.filename, expected=expected, found=found)

    # -- sequences by index (global randomization) ---------------------------------------------

    def supports_random_access(self) -> bool:
        """False: under the block randomizer whole chunks read faster; the methods below serve
        global randomization (:meth:`supports_global_randomization`)."""
        return False

    def supports_global_randomization(self) -> bool:
        """A local (or in-memory) file: a chunk's raw bytes are where its sequences lie."""
        return self._remote is None

    def read_bytes(self, chunk_id: int):
        """Chunk ``chunk_id`` located, its data not kept: one read and walk of its bytes (the counts
        checked as ``get_chunk`` checks them), then per stream every kept sequence's block: its
        byte offset in the file, sample count and (sparse) non-zero count, 16-24 bytes a sequence."""
        c = self._chunk_ids[chunk_id]
        h = self.header
        raw = SCRATCH.take(int(h.ends[c]) - int(h.offsets[c]))
        words = chunk_words(self._src, h, c, self.filename, raw)
        lay = walk_chunk(words, h, c, words[:int(h.num_sequences[c])].astype(np.int64), self.filename, False)
        keep = self._keeps[chunk_id]
        pick = (lambda a: a) if keep is None else (lambda a: a[keep])
        located = [(pick(lay.starts[k]) * 4 + int(h.offsets[c]), pick(lay.counts[k]),
                    None if lay.nnz[k] is None else pick(lay.nnz[k])) for k in range(len(h.streams))]
        del lay, words
        SCRATCH.give(raw)
        return located

    def read_sequences(self, raw, chunk_ids: np.ndarray, indices: np.ndarray) -> ChunkData | None:
        """The sequences ``indices[i]`` of chunks ``chunk_ids[i]``, in that order (``raw`` from
        :meth:`read_bytes`): a dense stream's samples read from the file straight into the output,
        a sparse stream's blocks into one buffer and gathered from it, each by one call of reads
        (adjacent ranges merged; the C core's ``pread_swap`` without a swap, GIL released). None
        when a sparse block is malformed (the caller then loads the chunks whole, and ``get_chunk``
        names the fault)."""
        chunk_ids, indices = np.asarray(chunk_ids, np.int64), np.asarray(indices, np.int64)
        n = len(chunk_ids)
        if n == 0:
            return None
        order = np.argsort(chunk_ids, kind="stable")
        sorted_ids = chunk_ids[order]
        cuts = np.flatnonzero(np.diff(sorted_ids)) + 1
        streams_h = self.header.streams
        at = np.empty((3, len(streams_h), n), np.int64)     # byte offset, samples, non-zeros
        keys, lengths = np.empty(n, np.int64), np.empty(n, np.int64)
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), n]):
            c = int(sorted_ids[a])
            pos, idx = order[a:b], indices[order[a:b]]
            for k, (off, cnt, nz) in enumerate(raw[c]):
                at[0, k, pos], at[1, k, pos] = off[idx], cnt[idx]
                if nz is not None:
                    at[2, k, pos] = nz[idx]
            keys[pos], lengths[pos] = self._tables[c].keys[idx], self._tables[c].lengths[idx]
        out: dict[str, Any] = {}
        for k, (name, st) in enumerate(zip(self._names, streams_h)):
            counts = at[1, k]
            offsets = np.zeros(n + 1, np.int64)
            np.cumsum(counts, out=offsets[1:])
            if not st.sparse:          # the samples, after each block's count word
                words = self._read_blocks(at[0, k] + 4, counts * (st.dim * st.value_words))
                values = words.view(st.dtype).reshape(-1, st.dim)
                out[name] = DenseStream(values if values.dtype == self.dtype else values.astype(self.dtype), offsets)
                continue
            nnz = at[2, k]
            sizes = 2 + nnz * (st.value_words + 1) + counts
            words = self._read_blocks(at[0, k], sizes)
            starts = np.zeros(n, np.int64)
            np.cumsum(sizes[:-1], out=starts[1:])
            try:
                out[name] = self._sparse(words, st, starts, counts, nnz, offsets, -1)
            except FormatError:
                return None
        return ChunkData(SequenceTable(keys, lengths), out)

    def _read_blocks(self, byte_offsets: np.ndarray, sizes_in_words: np.ndarray) -> np.ndarray:
        """The blocks of ``sizes_in_words[i]`` words at ``byte_offsets[i]``, one after another in
        one new array of little-endian words."""
        dst = np.zeros(len(sizes_in_words), np.int64)
        np.cumsum(sizes_in_words[:-1], out=dst[1:])
        words = np.empty(int(sizes_in_words.sum()), "<u4")
        mod = native("htk")
        if mod is not None and isinstance(self._src, FileRanges):
            mod.pread_swap(words, dst, self._src.fileno(), np.ascontiguousarray(byte_offsets, np.int64),
                           np.ascontiguousarray(sizes_in_words, np.int64), False)
            return words
        for d, o, m in zip(dst.tolist(), byte_offsets.tolist(), sizes_in_words.tolist()):
            if m:
                self._src.read_into(words[d:d + m], o)
        return words

    def fetches_ahead(self) -> bool:
        """A URL's chunks are fetched ahead of the window (:meth:`fetch_ahead`)."""
        return self._remote is not None

    def fetch_ahead(self, chunk_ids) -> None:
        """Start the ranged GETs of these chunks (the window's next loads) in the background."""
        h = self.header
        self._remote.prefetch([(int(h.offsets[c]), int(h.ends[c])) for c in
                               (self._chunk_ids[i] for i in chunk_ids)])

    # -- lifetime -----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the file (arrays already delivered stay valid: they hold their own memory); a
        URL's fetches ahead not started yet are dropped."""
        if self._src is not None:
            self._src.close()
        if self._remote is not None:
            self._remote.close()

    def __repr__(self) -> str:
        return f"CNTKBinaryFormatDeserializer({self.filename!r})"
