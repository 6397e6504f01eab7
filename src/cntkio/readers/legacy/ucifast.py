"""UCIFastReader: space-delimited records, one per line, read on cntkio's engine.

CNTK's oldest reader (configuration-files spec, "UCIFastReader"). A reader section

    reader = [
        readerType = UCIFastReader
        file = mnist_train.txt
        randomize = Auto            # Auto | None | N (records per randomization block)
        features = [ dim = 784; start = 1 ]
        labels = [ dim = 1; start = 0; labelDim = 10; labelMappingFile = labels.map ]
    ]

becomes ONE deserializer (:class:`UCIFastDeserializer`, registry type
``UCIFastReaderDeserializer``) read by the same MinibatchSource as every other format: the
randomizer, packers, prefetch, checkpoints and partitions are the engine's. Each line is a
sequence of one sample; its key is the record number (0-based, blank lines not counted).

* A sub-section with ``dim`` is a stream: columns ``[start, start + dim)``. It is a label
  stream when it has ``labelDim``, ``labelType`` or ``labelMappingFile`` (found in it or, for
  ``labelMappingFile``, inherited from an enclosing section, as the spec's MNIST config shares
  it at the root).
* ``labelType = Category`` (default): the column's text is looked up in ``labelMappingFile``
  (one label per line, line number = id; all-numeric maps compare by value, so ``1.0`` is ``1``)
  and delivered one-hot with ``labelDim`` columns. Without a mapping file the label must be an
  integer in ``[0, labelDim)``. ``Regression``: the ``dim`` columns as numbers.
  ``None``: the section is not delivered.
* Numbers are parsed by the C core (``_native/uci.c``, the CTF parser's correctly rounded
  conversion), chunk by chunk, off the GIL. A record with too few columns, a non-number or a
  label not in the map is reported with file, line and column and dropped, counted against the
  reader's ``maxErrors``.
* ``writerType = BinaryReader`` with ``wfile`` caches the parsed records in a binary file
  (:mod:`cntkio.readers.legacy.binary`) and reads the cache while it is valid.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..._log import get_logger
from ...constants import DEFAULT_CHUNK_SIZE_IN_BYTES
from ...deserializers.base import DeserializerBase
from ...deserializers.protocol import ChunkData, ChunkInfo, DenseStream, SequenceTable
from ...deserializers.ranges import FileRanges
from ...errors import ConfigError, FormatError
from ...streams import StreamInformation
from ...remote import is_remote, local_path, open_object, remote_options
from ...values import to_bool, to_choice, to_int, to_str
from .sections import UCIFastAdapter
from .textparse import index_records, parse_records
from .urls import REMOTE_KEYS, exists, local_file, refuse_url, remote_keys

__all__ = ["UCIFastDeserializer", "UCIStream", "build", "read_label_mapping", "label_values",
           "write_label_map", "DESERIALIZER_TYPE"]

_log = get_logger("readers.legacy.uci")

DESERIALIZER_TYPE = "UCIFastReaderDeserializer"
LABEL_TYPES = ("category", "regression", "none")
#: text chunks of 4 MiB: several chunks of a file are parsed at once on the engine's load threads
UCI_CHUNK_SIZE_IN_BYTES = 4 << 20
#: at most this many bad records are logged one by one per chunk
_LOG_ERRORS = 10


@dataclass
class UCIStream:
    """One stream of a UCIFastReader section: columns ``[start, start + dim)``."""

    name: str
    dim: int
    start: int
    label_type: str | None = None          # None for data; category / regression for labels
    label_dim: int = 0
    mapping: list[str] | None = None       # label id -> label text (category only)
    mapping_file: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def out_dim(self) -> int:
        return self.label_dim if self.label_type == "category" else self.dim


def read_label_mapping(path: str, option: str = "labelMappingFile", remote: Mapping | None = None) -> list[str]:
    """The labels of a mapping file, one per line (line number = id; blank lines ignored at the
    end only). A duplicate label is an error naming both lines. A URL is read from its copy in the
    cache folder (``remote``: the object-store keys)."""
    try:
        with open(local_file(path, remote, option, "label mapping file"), encoding="utf-8") as fh:
            lines = [ln.strip() for ln in fh.read().splitlines()]
    except FileNotFoundError as e:
        raise ConfigError(f"label mapping file {path!r} does not exist", path=option,
                          hint="write it with the createLabelMap action, set allowMapCreation = true to make "
                               "it from the data, or remove labelMappingFile to read integer labels "
                               "0..labelDim-1") from e
    while lines and not lines[-1]:
        lines.pop()
    seen: dict[str, int] = {}
    for i, lab in enumerate(lines):
        if not lab:
            raise ConfigError(f"{path}:{i + 1}: empty label in the label mapping file", path=option)
        if lab in seen:
            raise ConfigError(f"{path}:{i + 1}: label {lab!r} repeats line {seen[lab] + 1}", path=option)
        seen[lab] = i
    return lines


def _numeric_labels(mapping: list[str]) -> np.ndarray | None:
    try:
        return np.array([float(x) for x in mapping], np.float64)
    except ValueError:
        return None


class _LabelTable:
    """Label text/value -> id, vectorized (no Python object per record)."""

    def __init__(self, stream: UCIStream, dtype=np.float64) -> None:
        self.stream = stream
        self.numeric = None if stream.mapping is None else _numeric_labels(stream.mapping)
        if self.numeric is not None:       # compared with values parsed in the reader's precision
            self.numeric = self.numeric.astype(dtype).astype(np.float64)
        self.by_text = stream.mapping is not None and self.numeric is None
        if self.numeric is not None:
            order = np.argsort(self.numeric, kind="stable")
            self.sorted_values, self.sorted_ids = self.numeric[order], order.astype(np.int64)
        if self.by_text:
            width = max(1, max(len(s.encode("utf-8")) for s in stream.mapping))
            self.width = width
            keys = np.array([s.encode("utf-8") for s in stream.mapping], dtype=f"S{width}")
            order = np.argsort(keys, kind="stable")
            self.sorted_keys, self.sorted_ids = keys[order], order.astype(np.int64)

    def ids_from_values(self, v: np.ndarray) -> np.ndarray:
        """Ids of numeric labels; -1 where not a label."""
        if self.numeric is None:                      # no mapping: integers 0..labelDim-1
            ids = v.astype(np.int64)
            ok = (ids == v) & (v >= 0) & (v < self.stream.label_dim)
            return np.where(ok, ids, -1)
        pos = np.searchsorted(self.sorted_values, v)
        pos = np.minimum(pos, len(self.sorted_values) - 1)
        hit = self.sorted_values[pos] == v
        return np.where(hit, self.sorted_ids[pos], -1)

    def ids_from_spans(self, buf: Any, spans: np.ndarray) -> np.ndarray:
        """Ids of text labels given their byte spans in ``buf``; -1 where not in the map."""
        n = len(spans)
        lengths = spans[:, 1] - spans[:, 0]
        out = np.full(n, -1, np.int64)
        ok = (lengths > 0) & (lengths <= self.width)
        if not ok.any():
            return out
        data = np.frombuffer(buf, np.uint8)
        idx = spans[:, :1] + np.arange(self.width)[None, :]
        inside = np.arange(self.width)[None, :] < lengths[:, None]
        chars = np.where(inside & ok[:, None], data[np.minimum(idx, len(data) - 1)], 0).astype(np.uint8)
        keys = np.ascontiguousarray(chars).view(f"S{self.width}").reshape(n)
        pos = np.minimum(np.searchsorted(self.sorted_keys, keys), len(self.sorted_keys) - 1)
        hit = ok & (self.sorted_keys[pos] == keys)
        out[hit] = self.sorted_ids[pos[hit]]
        return out


def label_values(path: str, stream: UCIStream, name: str | None = None) -> list[str]:
    """The distinct label texts of ``stream``'s column in ``path``, in the order they first appear:
    what ``createLabelMap`` writes. CNTK's UCIFastReader gave a label its id when it first saw it
    and wrote the map by id (UCIFastReader.cpp:146-154 and 222-233), so line ``i`` of the map is
    the ``i``-th distinct label of the file. Errors name ``name`` (the URL ``path`` is a copy of)."""
    with open(path, "rb") as fh:
        buf = fh.read()
    begin, end, count, first = index_records(buf, 0, DEFAULT_CHUNK_SIZE_IN_BYTES)
    found: dict[bytes, int] = {}         # label -> record of its first appearance
    ncols = stream.start + 1
    colmap = np.full(ncols, -1, np.int32)
    colmap[stream.start] = -2
    before = 0                           # records of the chunks before this one
    for b, e, n, f in zip(begin.tolist(), end.tolist(), count.tolist(), first.tolist()):
        spans = np.zeros((n, 1, 2), np.int64)
        bad = np.zeros(n, np.uint8)
        _, errors = parse_records(buf, b, e, f, colmap, (), spans, bad)
        if errors:
            rec, line, col, code = errors[0]
            raise FormatError(f"too few columns for the label column {stream.start} of {stream.name!r}",
                              file=name or path, line=line, expected=f"at least {ncols} columns", found=str(col))
        lengths = spans[:, 0, 1] - spans[:, 0, 0]
        width = int(lengths.max()) if n else 1
        data = np.frombuffer(buf, np.uint8)
        idx = spans[:, 0, :1] + np.arange(width)[None, :]
        chars = np.where(np.arange(width)[None, :] < lengths[:, None], data[np.minimum(idx, len(data) - 1)], 0)
        keys = np.ascontiguousarray(chars.astype(np.uint8)).view(f"S{width}").reshape(n)
        uniq, at = np.unique(keys, return_index=True)      # each distinct label of the chunk, once
        for k, i in zip(uniq.tolist(), at.tolist()):
            found.setdefault(k, before + i)                 # an earlier chunk's first sight stays
        before += n
    try:
        return [k.decode("utf-8") for k, _ in sorted(found.items(), key=lambda kv: kv[1])]
    except UnicodeDecodeError as e:
        raise FormatError(f"a label of {stream.name!r} is not UTF-8 text ({e.reason})", file=name or path,
                          found=repr(e.object)) from e


def write_label_map(reader: Any, stream: str, out_path: str) -> list[str]:
    """``createLabelMap`` for a UCIFastReader section: the distinct labels of ``stream``'s column
    (:func:`label_values`), one per line, to ``out_path`` (written to a temporary name, renamed).
    Returns the labels."""
    from ..section import as_section
    sec = as_section(reader, "reader")
    key = sec.local_key(stream)
    if key is None:
        raise sec.error(stream, f"the UCIFastReader section has no section {stream!r}")
    ssec = sec.section(key)
    s = UCIStream(stream, ssec.int("dim", 1, inherit=False, minimum=1), ssec.int("start", 0, inherit=False, minimum=0),
                  "category")
    refuse_url(out_path, "labelMappingFile", "label mapping file")
    data = ssec.str("file")
    labels = label_values(local_file(data, remote_keys(ssec), "file", "the UCIFastReader data file"), s, data)
    if ssec.has_local("labelDim") and len(labels) > ssec.int("labelDim", inherit=False):
        raise ssec.error("labelDim", f"the data holds {len(labels)} distinct labels, more than labelDim = "
                         f"{ssec.int('labelDim', inherit=False)}")
    _write_lines(out_path, labels)
    return labels


def _write_lines(out_path: str, labels: list[str]) -> None:
    """The labels, one per line, to ``out_path`` (a temporary name, then renamed)."""
    folder = os.path.dirname(out_path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    tmp = out_path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        fh.write("".join(f"{lab}\n" for lab in labels))
    os.replace(tmp, out_path)


class UCIFastDeserializer(DeserializerBase):
    """The records of one UCI text file as a deserializer (module docstring).

    ``config``: ``{"file": path, "streams": {name: {"dim", "start", "labelType", "labelDim",
    "labelMappingFile"}}, "recordsPerChunk": N (0: chunks of chunkSizeInBytes),
    "chunkSizeInBytes", "precision", "cache": {...} (optional, see binary.py)}``.
    """

    key_kind = "numeric"

    def __init__(self, config: Mapping, trace_level: int = 1, **_source_options: Any) -> None:
        self.file = to_str(config.get("file"), "file")
        #: the object-store keys (a URL is copied once into <cacheDir>/files/: the text is indexed whole)
        self._remote = {k: config[k] for k in REMOTE_KEYS if k in config}
        self._local = None if is_remote(self.file) else local_path(self.file)
        if not config.get("cache") and not os.path.exists(self.data_path()):
            raise ConfigError(f"the UCIFastReader data file {self.file!r} does not exist", path="file")
        precision = to_choice(config.get("precision", "float"), "precision", ("float", "double"))
        self.dtype = np.float32 if precision == "float" else np.float64
        self.records_per_chunk = to_int(config.get("recordsPerChunk", 0), "recordsPerChunk", minimum=0)
        self.chunk_bytes = to_int(config.get("chunkSizeInBytes", UCI_CHUNK_SIZE_IN_BYTES),
                                  "chunkSizeInBytes", minimum=1)
        self.streams = [_stream(name, spec, self) for name, spec in dict(config.get("streams") or {}).items()]
        self.streams = [s for s in self.streams if s.label_type != "none"]
        if not self.streams:
            raise ConfigError("a UCIFastReader section needs at least one sub-section with dim (and "
                              "start): features = [dim = ...; start = ...]", path="streams")
        self._infos = [StreamInformation(s.name, i, "dense", self.dtype, (s.out_dim,))
                       for i, s in enumerate(self.streams)]
        self._plan_columns()
        self.trace_level = trace_level
        self._cache = None
        cache_conf = config.get("cache")
        #: cacheViews = true: minibatches of the cache may be read-only views of its map;
        #: cacheMaps = true: runs of it copy-on-write maps (both: the file mapped, opted in to)
        self._cache_views = bool(cache_conf and cache_conf.get("views"))
        self._cache_maps = bool(cache_conf and cache_conf.get("maps"))
        if cache_conf:
            from .binary import open_or_build_cache
            self._cache = open_or_build_cache(self, cache_conf)
            # the cache's chunks are views of its map, cheap to make however large: fewer, larger
            # chunks (the engine's 32 MiB, not the text's 4 MiB) cost the engine fewer loads and packs
            cache_bytes = self.chunk_bytes if "chunkSizeInBytes" in config else DEFAULT_CHUNK_SIZE_IN_BYTES
            self._chunks = self._cache.chunk_table(self.records_per_chunk, cache_bytes)
        else:
            buf = _map(self.data_path())   # indexed once; the chunks are then read with pread
            try:
                b, e, c, f = index_records(buf, self.records_per_chunk, self.chunk_bytes)
            finally:
                if not isinstance(buf, bytes):
                    buf.close()
            self._chunks = (b, e, c, f)
            self._src = FileRanges(self.data_path(), what="UCIFastReader file")
        counts = self._chunks[2]
        self._first_key = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=self._first_key[1:])

    def data_path(self) -> str:
        """The local file of the text: the file itself, or for a URL its copy in ``<cacheDir>/files/``,
        named by URL, size and ETag (fetched on the first call)."""
        if self._local is None:
            self._local = local_file(self.file, self._remote, "file", "the UCIFastReader data file")
        return self._local

    def source_state(self) -> dict | None:
        """What a binary cache records of its source (None when it does not exist): a local file's
        name, size and modification time; a URL's size and version (asked for, nothing fetched)."""
        if is_remote(self.file):
            if not exists(self.file, self._remote):
                return None
            obj = open_object(self.file, remote_options(self._remote))
            return {"file": self.file, "size": obj.size, "version": obj.version}
        try:
            st = os.stat(self.file)
        except OSError:
            return None
        return {"file": os.path.basename(self.file), "size": st.st_size, "mtime_ns": st.st_mtime_ns}

    # --- columns --------------------------------------------------------------------------------
    def _plan_columns(self) -> None:
        """Which output each column goes to: stream values (data, regression labels, numeric
        category labels) each get their own array (``colmap`` = array << 16 | column), text
        labels a byte span."""
        ncols = max(s.start + s.dim for s in self.streams)
        self._check_columns(ncols)
        colmap = np.full(ncols, -1, np.int32)
        self._outputs: list[tuple[str, int]] = []
        self._span_index: dict[str, int] = {}
        owner = [None] * ncols
        nspan = 0
        for s in self.streams:
            for j in range(s.start, s.start + s.dim):
                if owner[j] is not None:
                    raise ConfigError(f"column {j} belongs to both {owner[j]!r} and {s.name!r}",
                                      path=f"{s.name}.start")
                owner[j] = s.name
            table = _LabelTable(s, self.dtype) if s.label_type == "category" else None
            s.extra["table"] = table
            if table is not None and table.by_text:
                colmap[s.start] = -2 - nspan
                self._span_index[s.name] = nspan
                nspan += 1
            else:
                k = len(self._outputs)
                colmap[s.start:s.start + s.dim] = (k << 16) | np.arange(s.dim, dtype=np.int32)
                self._outputs.append((s.name, s.dim))
        self._colmap, self._nspan = colmap, nspan

    def _check_columns(self, ncols: int) -> None:
        """The columns the streams read against what the text can hold: a record of ``ncols``
        columns takes at least ``2 * ncols - 1`` bytes (a digit, a space), so a dim no record of
        the file could have is an error, not arrays sized by it."""
        try:
            size = os.path.getsize(self._local or "")
        except OSError:
            return                     # read from its cache only (checked there)
        if 2 * ncols - 1 > size:
            s = max(self.streams, key=lambda s: s.start + s.dim)
            raise ConfigError(f"the streams read {ncols} columns, but the UCIFastReader file {self.file!r} has "
                              f"{size} bytes: not one record of {ncols} columns fits", path=f"{s.name}.dim")

    # --- the protocol ---------------------------------------------------------------------------
    def stream_infos(self) -> list[StreamInformation]:
        return list(self._infos)

    def chunk_infos(self) -> list[ChunkInfo]:
        counts = self._chunks[2]
        return [ChunkInfo(i, int(n), int(n)) for i, n in enumerate(counts)]

    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        a, b = int(self._first_key[chunk_id]), int(self._first_key[chunk_id + 1])
        return SequenceTable(np.arange(a, b, dtype=np.int64), np.ones(b - a, np.int64))

    def get_chunk(self, chunk_id: int) -> ChunkData:
        table = self.sequence_infos(chunk_id)
        readers: dict = {}
        if self._cache is not None:
            a, b = int(self._first_key[chunk_id]), int(self._first_key[chunk_id + 1])
            arrays, invalid, readers = self._cache.records_slice(a, b, self._cache_views, self._cache_maps)
        else:
            arrays, invalid = self.parse_chunk(chunk_id)
        offsets = np.arange(len(table) + 1, dtype=np.int64)
        streams = {}
        for name, values in arrays.items():
            read_rows, private_map = readers.get(name, (None, None))
            streams[name] = DenseStream(values, offsets, read_rows,
                                        self._cache_views and not values.flags.writeable, private_map)
        return ChunkData(table, streams, invalid if invalid is not None and invalid.any() else None)

    def parse_chunk(self, chunk_id: int, buf: Any = None) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Chunk ``chunk_id`` of the text: ``({stream: [n, out_dim]}, invalid[n])``, read with
        ``pread`` (a file cut short meanwhile is a FileChangedError naming it, never SIGBUS), or
        cut out of ``buf`` (the whole text) when given."""
        b, e, n, f = (int(x[chunk_id]) for x in self._chunks)
        if buf is None:
            buf = self._src.read(b, e - b)
            b, e = 0, e - b
        values = {name: np.zeros((n, w), self.dtype) for name, w in self._outputs}
        spans = np.zeros((n, self._nspan, 2), np.int64)
        bad = np.zeros(n, np.uint8)
        got, errors = parse_records(buf, b, e, f, self._colmap, tuple(values.values()), spans, bad)
        ncols = len(self._colmap)
        messages = [self._message(line, col, code, ncols) for _, line, col, code in errors]
        out: dict[str, np.ndarray] = {}
        for s in self.streams:
            table = s.extra["table"]
            if table is None:
                out[s.name] = values[s.name]
                continue
            if table.by_text:
                ids = table.ids_from_spans(buf, spans[:, self._span_index[s.name]])
            else:
                ids = table.ids_from_values(values[s.name][:, 0].astype(np.float64))
            missing = (ids < 0) & (bad == 0)
            if missing.any():
                lines = _record_lines(buf, b, e, f, np.flatnonzero(missing)[:_LOG_ERRORS])
                for ln in lines:
                    messages.append(f"{self.file}:{ln}: column {s.start}: the label of {s.name!r} is not "
                                    f"{'in ' + repr(s.mapping_file) if s.mapping is not None else 'an integer in [0, ' + str(s.label_dim) + ')'}")
                bad[missing] = 1
            onehot = np.zeros((n, s.label_dim), self.dtype)
            rows = np.flatnonzero(ids >= 0)
            onehot[rows, ids[rows]] = 1
            out[s.name] = onehot
        for m in messages[:_LOG_ERRORS]:
            _log.warning("%s (record dropped, counted against maxErrors)", m)
        if len(messages) > _LOG_ERRORS:
            _log.warning("%s: %d more bad records in this chunk", self.file, len(messages) - _LOG_ERRORS)
        return out, bad.astype(bool)

    def _message(self, line: int, col: int, code: int, ncols: int) -> str:
        if code == 1:
            return (f"{self.file}:{line}: expected at least {ncols} space-delimited columns, found {col}")
        owner = next((s.name for s in self.streams if s.start <= col < s.start + s.dim), "?")
        return f"{self.file}:{line}: column {col} ({owner!r}): expected a number"

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
        src = getattr(self, "_src", None)
        if src is not None:
            src.close()


def _record_lines(buf: Any, begin: int, end: int, first_line: int, records: np.ndarray) -> list[int]:
    """The 1-based line numbers of the given 0-based records of ``buf[begin:end]`` (for messages)."""
    data = bytes(buf[begin:end]).split(b"\n")
    out, rec = [], 0
    want = set(int(r) for r in records)
    for i, ln in enumerate(data):
        if ln.strip(b" \t\r"):
            if rec in want:
                out.append(first_line + i)
            rec += 1
    return out


def _map(path: str):
    import mmap
    size = os.path.getsize(path)
    if size == 0:
        return b""
    with open(path, "rb") as fh:
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def _stream(name: str, spec: Mapping, deser: "UCIFastDeserializer | None" = None) -> UCIStream:
    """One stream's section; ``deser``: the deserializer whose data makes a missing label map
    (``allowMapCreation``) and whose object-store keys read a mapping file at a URL."""
    dim = to_int(spec.get("dim"), f"{name}.dim", minimum=1)
    start = to_int(spec.get("start", 0), f"{name}.start", minimum=0)
    is_label = any(k in spec for k in ("labelDim", "labelType", "labelMappingFile", "labelMapping"))
    if not is_label:
        return UCIStream(name, dim, start)
    label_type = to_choice(spec.get("labelType", "category"), f"{name}.labelType", LABEL_TYPES)
    s = UCIStream(name, dim, start, label_type=label_type)
    if label_type == "category":
        if dim != 1:
            raise ConfigError(f"a Category label section reads one column (dim = 1), found dim = {dim}",
                              path=f"{name}.dim", hint="labelType = Regression reads several columns")
        if "labelDim" not in spec:
            raise ConfigError("a Category label section needs labelDim (the number of classes)",
                              path=f"{name}.labelDim")
        s.label_dim = to_int(spec["labelDim"], f"{name}.labelDim", minimum=1)
        mf = spec.get("labelMappingFile")
        if spec.get("labelMapping") is not None:            # given as a list (DataReader.set_label_mapping)
            s.mapping = [str(x) for x in spec["labelMapping"]]
            if len(set(s.mapping)) != len(s.mapping):
                raise ConfigError("labelMapping lists a label twice", path=f"{name}.labelMapping")
            if len(s.mapping) > s.label_dim:
                raise ConfigError(f"labelMapping lists {len(s.mapping)} labels, more than labelDim = "
                                  f"{s.label_dim}", path=f"{name}.labelDim")
        elif mf is not None:
            s.mapping_file = to_str(mf, f"{name}.labelMappingFile")
            remote = deser._remote if deser is not None else None
            if (deser is not None and not exists(s.mapping_file, remote)
                    and to_bool(spec.get("allowMapCreation", False), f"{name}.allowMapCreation")):
                refuse_url(s.mapping_file, f"{name}.labelMappingFile", "label mapping file")
                # CNTK's allowMapCreation = true: the map is made from the data, its labels in the
                # order of first appearance (UCIFastReader.cpp:420-428; CNTK wrote it after the
                # first pass, cntkio before it: the same file)
                _write_lines(s.mapping_file, label_values(deser.data_path(), s, deser.file))
                _log.info("%s: label mapping file %s written from %s", name, s.mapping_file, deser.file)
            s.mapping = read_label_mapping(s.mapping_file, f"{name}.labelMappingFile", remote)
            if len(s.mapping) > s.label_dim:
                raise ConfigError(f"the label mapping file {s.mapping_file!r} lists {len(s.mapping)} labels, "
                                  f"more than labelDim = {s.label_dim}", path=f"{name}.labelDim")
    return s


def build(config: Mapping, **source_options: Any) -> UCIFastDeserializer:
    """The registry's factory of ``UCIFastReaderDeserializer``."""
    return UCIFastDeserializer(config, **source_options)


#: how the reader factory turns a ``readerType = UCIFastReader`` section into this type's config
build.legacy_adapter = UCIFastAdapter()
