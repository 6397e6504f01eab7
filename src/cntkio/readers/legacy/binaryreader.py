"""``readerType = BinaryReader``: the files BinaryWriter wrote (:mod:`.binary`), read on the engine.

    reader = [
        readerType = BinaryReader
        file = (mnist_train_features.bin : mnist_train_labels.bin)     # or one file
        randomize = Auto                                                 # Auto | None | N
    ]

Every section of every file is a stream, named as it was written: ``data`` sections deliver
their values, ``labels`` sections of category labels deliver one-hot vectors of ``labelDim``
(their mapping is in the file), ``categoryLabels`` sections their stored one-hot values. The files
must hold the same number of records and come from the same config (their fingerprints agree);
a section name may appear in one file only.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ...deserializers.base import DeserializerBase
from ...deserializers.protocol import ChunkData, ChunkInfo, DenseStream, SequenceTable
from ...errors import ConfigError
from ...streams import StreamInformation
from ...values import to_array, to_bool, to_choice, to_int, to_str
from .binary import NO_LABEL, BinaryFile, CacheError, rows_reader
from .binremote import ObjectRanges, open_binary, row_span
from .sections import apply_shared_options, block_source_options, info_once, randomize_option
from .urls import REMOTE_KEYS, path_list, remote_keys

__all__ = ["BinaryReaderDeserializer", "build", "DESERIALIZER_TYPE"]

DESERIALIZER_TYPE = "BinaryReaderDeserializer"


class BinaryReaderDeserializer(DeserializerBase):
    """The sections of one or more cntkio binary files as streams (module docstring).

    ``config``: ``{"file": path or [paths], "precision": "float" | "double", "recordsPerChunk": N
    (0: chunks of about chunkSizeInBytes), "chunkSizeInBytes", "cacheViews": bool, "cacheMaps": bool}``:
    the files are read with pread unless a config opts in to mapped minibatches (legacy-readers.md)."""

    key_kind = "numeric"

    def __init__(self, config: Mapping, trace_level: int = 1, **_source_options: Any) -> None:
        raw = config.get("file")
        paths = path_list([to_str(p, "file") for p in (raw if isinstance(raw, (list, tuple)) else to_array(raw, "file"))])
        if not paths:
            raise ConfigError("BinaryReader needs file = one binary file or an array of them", path="file")
        precision = to_choice(config.get("precision", "float"), "precision", ("float", "double"))
        self.dtype = np.float32 if precision == "float" else np.float64
        per = to_int(config.get("recordsPerChunk", 0), "recordsPerChunk", minimum=0)
        chunk_bytes = to_int(config.get("chunkSizeInBytes", 32 << 20), "chunkSizeInBytes", minimum=1)
        #: cacheViews = true: minibatches may be read-only views of the files' maps
        self.views = to_bool(config.get("cacheViews", False), "cacheViews")
        #: cacheMaps = true: runs of records handed out as copy-on-write maps of the files
        self.maps = to_bool(config.get("cacheMaps", False), "cacheMaps")
        self.files: list[BinaryFile] = []
        self.entries: list[tuple[BinaryFile, dict]] = []
        #: the object-store keys: a file at a URL is read by ranged GETs (binremote.py)
        remote = {k: config[k] for k in REMOTE_KEYS if k in config}
        try:
            for p in paths:
                self.files.append(open_binary(p, remote))
            first = self.files[0]
            for bf in self.files:
                if bf.records != first.records:
                    raise CacheError(f"{bf.path!r} holds {bf.records} records, {first.path!r} {first.records}",
                                     path="file")
                if bf.header.get("fingerprint") != first.header.get("fingerprint"):
                    raise CacheError(f"{bf.path!r} and {first.path!r} were written by different configs",
                                     path="file")
                for e in bf.header["sections"]:
                    if any(e["name"] == x["name"] for _, x in self.entries):
                        raise CacheError(f"section {e['name']!r} is in more than one file ({bf.path!r})", path="file")
                    self.entries.append((bf, e))
        except BaseException:
            self.close()
            raise
        self.records = first.records
        self._infos = []
        for i, (_, e) in enumerate(self.entries):
            dim = int(e["labelDim"]) if e["sectionType"] == "labels" and e["dtype"] == "uint32" else int(e["shape"][1])
            self._infos.append(StreamInformation(e["name"], i, "dense", self.dtype, (dim,)))
        row = sum(int(np.prod(e["shape"][1:])) * np.dtype(e["dtype"]).itemsize for _, e in self.entries)
        per = per if per > 0 else max(1, chunk_bytes // max(1, row))
        self._bounds = list(range(0, self.records, per)) + [self.records]

    def stream_infos(self) -> list[StreamInformation]:
        return list(self._infos)

    def chunk_infos(self) -> list[ChunkInfo]:
        return [ChunkInfo(c, b - a, b - a) for c, (a, b) in enumerate(zip(self._bounds, self._bounds[1:]))]

    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        a, b = self._bounds[chunk_id], self._bounds[chunk_id + 1]
        return SequenceTable(np.arange(a, b, dtype=np.int64), np.ones(b - a, np.int64))

    def get_chunk(self, chunk_id: int) -> ChunkData:
        a, b = self._bounds[chunk_id], self._bounds[chunk_id + 1]
        table = self.sequence_infos(chunk_id)
        invalid = np.zeros(b - a, bool)
        for bf in self.files:
            inv = bf.invalid(a, b)
            if inv is not None:
                invalid |= inv.astype(bool)
        offsets = np.arange(b - a + 1, dtype=np.int64)
        streams = {}
        for (bf, e), info in zip(self.entries, self._infos):
            if e["dtype"] == "uint32":
                ids = bf.rows(e, a, b).astype(np.int64)
                values = np.zeros((b - a, info.sample_shape[0]), self.dtype)
                rows = np.flatnonzero(ids != NO_LABEL)
                values[rows, ids[rows]] = 1
            elif np.dtype(e["dtype"]) == self.dtype and (self.views or self.maps) and not _at_url(bf):
                arr = bf.array(e)[a:b]        # a view of the map; the packer reads what it takes
                streams[e["name"]] = (DenseStream(arr, offsets, shared=True) if self.views else
                                      DenseStream(arr, offsets, rows_reader(bf, e, a),
                                                  private_map=(bf.section_map(e), a)))
                continue
            else:
                values = bf.rows(e, a, b)
                if values.dtype != self.dtype:
                    values = values.astype(self.dtype)
            streams[e["name"]] = DenseStream(values, offsets)
        return ChunkData(table, streams, invalid if invalid.any() else None)

    def fetches_ahead(self) -> bool:
        """Whether a file is at a URL (the engine then names the chunks it loads next)."""
        return any(_at_url(bf) for bf in self.files)

    def fetch_ahead(self, chunk_ids: list[int]) -> None:
        """Start the ranged GETs of these chunks' rows and invalid flags (the ranges get_chunk reads)."""
        for c in chunk_ids:
            a, b = self._bounds[c], self._bounds[c + 1]
            for bf, e in self.entries:
                if _at_url(bf):
                    inv = bf.header.get("invalid")
                    bf.source.prefetch([row_span(e, a, b)] + ([row_span(inv, a, b)] if inv else []))

    def label_mapping(self, name: str) -> list[str] | None:
        """The label mapping stored with section ``name`` (None when it has none)."""
        for _, e in self.entries:
            if e["name"] == name:
                return e.get("mapping")
        raise KeyError(name)

    def stats(self, name: str) -> dict[str, list[float]] | None:
        """The statistics stored with data section ``name``."""
        for bf, e in self.entries:
            if e["name"] == name:
                return bf.stats(e)
        raise KeyError(name)

    def close(self) -> None:
        for bf in self.files:
            bf.close()
        self.files = []


def _at_url(bf: BinaryFile) -> bool:
    return isinstance(bf.source, ObjectRanges)


class BinaryReaderAdapter:
    """``readerType = BinaryReader`` section -> ``BinaryReaderDeserializer`` config."""

    deserializer_type = DESERIALIZER_TYPE

    def config(self, sec: Any, spec: Any) -> dict:
        apply_shared_options(sec, spec)
        if sec.exists("windowSize"):
            info_once("windowSize", "%s = %d: the binary file is memory-mapped whole; the engine holds only "
                      "its randomization window", sec.key_path("windowSize"), sec.int("windowSize", minimum=0))
        files = path_list([str(x) for x in sec.list("file")])      # a URL's ':' splits no array
        randomize, block = randomize_option(sec)
        config = {"type": self.deserializer_type, "file": files,
                  "recordsPerChunk": block if randomize else 0,
                  "precision": "float" if spec.dtype == "float32" else "double", **remote_keys(sec)}
        for key in ("cacheViews", "cacheMaps"):
            if sec.exists(key):
                config[key] = sec.bool(key)
        try:
            probe = BinaryReaderDeserializer(config)
        except ConfigError as e:
            raise sec.error("file", e.reason, e.hint) from e
        spec.stream_names.extend(i.name for i in probe.stream_infos())
        probe.close()
        return config

    def source_options(self, sec: Any, spec: Any) -> None:
        block_source_options(sec, spec)


def build(config: Mapping, **source_options: Any) -> BinaryReaderDeserializer:
    """The registry's factory of ``BinaryReaderDeserializer``."""
    return BinaryReaderDeserializer(config, **source_options)


build.legacy_adapter = BinaryReaderAdapter()
