"""BinaryWriter / BinaryReader: cntkio's hierarchical binary file of parsed records.

The file mirrors the reader section that wrote it: one *section* per stream, named as the
stream, with the spec's ``sectionType`` (``data``, ``labels``, ``categoryLabels``; the label
mapping travels in the header, the statistics in an array of their own). Layout, version 2
(little-endian)::

    offset 0   magic  b"CNTKIOBW"
           8   u32    version (2)
          12   u32    0
          16   u64    header offset     (the JSON header is written last, after the arrays)
          24   u64    header length
          32   ...    zero padding to 64
          64   arrays, each starting on a 64-byte boundary, C order: the sections', the
               ``invalid`` flags, each data section's statistics (float64 ``[9, dim]``)

    header (UTF-8 JSON): {"version", "records", "fingerprint", "source": {"file", "size",
        "mtime_ns"}, "sections": [{"name", "sectionType", "dtype", "shape", "offset",
        "labelDim", "mapping", "stats": {"dtype", "shape", "offset"}}],
        "invalid": {"dtype", "shape", "offset"} | null}

``data`` sections hold ``[records, dim]`` float32/float64 values; ``labels`` sections of
category labels hold uint32 label ids (``elementSize = 4``, 0xFFFFFFFF for a record that
failed to parse) with the label mapping in the header; ``categoryLabels`` sections hold the
one-hot ``[records, labelDim]`` values; regression labels are stored as ``labels`` with their
values. Every data section carries the spec's statistics (sum, count, mean, variance, stdDev,
max, min, range, rootMeanSquare, per column; rows of its statistics array in that order).
Version 1 kept the statistics as JSON lists in the header (parsing them was most of the cost
of opening a file); a version 1 cache is rebuilt from its source. The records that failed to
parse are flagged in an ``invalid`` array so a cache read reports the same errors count as a
text read.

A file is written to a temporary name beside the target and renamed when complete. It is read
with ``pread`` (a file cut short by another process is a CacheError naming it, never SIGBUS);
memory-mapped only where a config opts in (``cacheViews``, ``cacheMaps``). The ``fingerprint`` (a hash of the stream definitions, the label
mappings and the precision) and the source file's size and modification time decide whether a
cache may be used: a cache from another config, older than (or of another size than) its
source, or truncated is rebuilt from the source; without the source it is an error naming the
cache file and the reason.
"""
from __future__ import annotations

import functools
import hashlib
import json
import mmap
import os
import struct
import tempfile
import threading
import weakref
from typing import Any, Mapping

import numpy as np

from ..._log import get_logger
from ...deserializers.ranges import SCRATCH, FileChangedError, FileRanges
from ...errors import ConfigError
from .binstats import STAT_NAMES, Stats as _Stats, section_stats

__all__ = ["MAGIC", "VERSION", "BinaryFile", "BinaryCache", "BinaryFileWriter", "write_binary", "write_binaries",
           "open_or_build_cache", "CacheError", "section_stats", "rows_reader", "SectionMap", "MAP_MIN_BYTES",
           "MAP_MAX_LIVE", "live_maps"]

_log = get_logger("readers.legacy.binary")

MAGIC = b"CNTKIOBW"
VERSION = 2
_PREFIX = struct.Struct("<8sIIQQ")
_ALIGN = 64
NO_LABEL = 0xFFFFFFFF
#: runs of rows smaller than this are read into memory of their own rather than mapped (a
#: mapping per small run would use up the process's mappings when a caller keeps many minibatches)
MAP_MIN_BYTES = 1 << 20
#: at most this many mappings live at once (each holds a file descriptor of its own while an array
#: made from it lives); past it, runs are read into memory until minibatches are dropped
MAP_MAX_LIVE = 128
_live_maps = [0]
_live_lock = threading.Lock()


def _unmapped() -> None:
    with _live_lock:
        _live_maps[0] -= 1


class CacheError(ConfigError):
    """A binary file that cannot be used (truncated, another version, another config)."""


def _align(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


class BinaryFile:
    """One binary file: its header and its sections' rows, read with ``pread`` (a file cut short
    by another process is then a CacheError naming it, never SIGBUS). The whole file is also
    mapped, read-only, when ``array`` is asked for (``cacheViews``) or runs are mapped
    copy-on-write (``map_rows``, ``cacheMaps``): what a caller opts in to, as those mappings must
    not see the file cut short while they live."""

    def __init__(self, path: str, src: Any = None) -> None:
        self.path = path      # src: the ranges of a file at a URL (binremote.py); None: the local file
        try:
            self._src: Any = src if src is not None else FileRanges(path, what="binary file")
        except OSError as e:
            raise CacheError(f"binary file {path!r} cannot be opened: {e.strerror}") from e
        size = self._src.size
        self._fd = self._src.fileno() if hasattr(os, "preadv") and src is None else None
        self._mm: mmap.mmap | None = None
        self._map_lock = threading.Lock()
        self._arrays: dict[int, np.ndarray] = {}
        self._maps: dict[int, SectionMap] = {}
        if size < _PREFIX.size:
            self.close()
            raise CacheError(f"binary file {path!r} is truncated ({size} bytes, not even a header)")
        magic, version, _, hoff, hlen = _PREFIX.unpack_from(self._bytes(0, _PREFIX.size), 0)
        if magic != MAGIC:
            self.close()
            raise CacheError(f"{path!r} is not a cntkio binary file (magic {magic!r})")
        if version != VERSION:
            self.close()
            raise CacheError(f"binary file {path!r} has version {version}; this cntkio reads version {VERSION}")
        if hoff + hlen > size or hoff < _ALIGN:
            self.close()
            raise CacheError(f"binary file {path!r} is truncated: its header ends at byte {hoff + hlen}, "
                             f"the file has {size}")
        try:
            self.header = json.loads(self._bytes(hoff, hlen).decode("utf-8"))
        except (ValueError, RecursionError) as e:
            self.close()
            raise CacheError(f"binary file {path!r} has a damaged header: {e}") from e
        try:
            self._check_header(hoff)
        except CacheError:
            self.close()
            raise
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
            self.close()
            raise CacheError(f"binary file {path!r} has a damaged header: {type(e).__name__}: {e}") from e

    def _check_header(self, hoff: int) -> None:
        """The header's records and sections, each array within the data before the header, each
        section holding the header's records of a byte at least (no file holds more records)."""
        path = self.path
        self.records = int(self.header["records"])
        if self.records < 0:
            raise ValueError(f"records {self.records}")
        self.sections = {s["name"]: s for s in self.header["sections"]}
        for x in self.header["sections"]:
            if x.get("stats") and int(x["stats"]["shape"][0]) != len(STAT_NAMES):
                raise ValueError(f"section {x['name']!r}: statistics of {x['stats']['shape'][0]} rows, "
                                 f"not {len(STAT_NAMES)}")
        per_record = list(self.header["sections"]) + ([self.header["invalid"]] if self.header.get("invalid") else [])
        for s in per_record:
            if int(np.prod([int(d) for d in s["shape"][1:]], dtype=object)) < 1:
                raise ValueError(f"section {s.get('name', 'invalid')!r} has records of no value")
            if int(s["shape"][0]) != self.records:
                raise ValueError(f"section {s.get('name', 'invalid')!r} holds {s['shape'][0]} records, "
                                 f"the header {self.records}")
        for s in per_record + [dict(x["stats"], name=f"{x['name']} stats") for x in self.header["sections"]
                               if x.get("stats")]:
            dt, shape, offset = np.dtype(s["dtype"]), [int(d) for d in s["shape"]], int(s["offset"])
            if dt.hasobject or dt.itemsize == 0 or min(shape, default=0) < 0 or offset < _ALIGN:
                raise ValueError(f"section {s.get('name', 'invalid')!r}: dtype {dt}, shape {shape}, offset {offset}")
            need = offset + int(np.prod(shape, dtype=object)) * dt.itemsize
            if need > hoff:
                raise CacheError(f"binary file {path!r} is truncated: section {s.get('name', 'invalid')!r} "
                                 f"ends at byte {need}, past the data ({hoff} bytes)")

    @property
    def source(self) -> Any:
        """The byte ranges read: a local file's :class:`FileRanges`, a URL's ``ObjectRanges``."""
        return self._src

    def _bytes(self, offset: int, n: int) -> bytes:
        src = self._src
        if src is None:
            raise CacheError(f"binary file {self.path!r} is closed")
        try:
            return src.read(offset, n).tobytes()
        except FileChangedError as e:
            raise CacheError(f"binary file {self.path!r} changed while it was read: {e.reason}") from e

    def rows(self, entry: Mapping, a: int, b: int) -> np.ndarray:
        """Rows ``[a, b)`` of a section as an array of their own, read from the file (into
        memory of the readers' pool: no fresh page to fault in and zero per chunk)."""
        shape, dtype = (b - a,) + tuple(int(d) for d in entry["shape"][1:]), np.dtype(entry["dtype"])
        out = SCRATCH.take(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize).view(dtype).reshape(shape)
        self.read_rows(entry, a, b, out)
        return out

    def _mapping(self) -> mmap.mmap:
        with self._map_lock:
            if self._mm is None:
                if self._src is None:
                    raise CacheError(f"binary file {self.path!r} is closed")
                self._mm = mmap.mmap(self._src.fileno(), 0, access=mmap.ACCESS_READ)
            return self._mm

    def array(self, entry: Mapping) -> np.ndarray:
        """A section's whole array over the file's read-only map (``cacheViews``), one object per
        section: the chunks' slices of it share it as their base (the packer views a run across
        chunks through it)."""
        key = int(entry["offset"])
        arr = self._arrays.get(key)
        if arr is None:
            buf = self._mapping()
            with self._map_lock:      # chunks load on several threads: one array, or no shared span
                arr = self._arrays.get(key)
                if arr is None:
                    arr = self._arrays[key] = np.ndarray(tuple(entry["shape"]), np.dtype(entry["dtype"]),
                                                         buffer=buf, offset=key)
        return arr

    def stats(self, entry: Mapping) -> dict[str, list[float]] | None:
        """A data section's statistics (``sum``, ``count``, ``mean``, ``variance``, ``stdDev``,
        ``max``, ``min``, ``range``, ``rootMeanSquare``, per column); None for other sections."""
        where = entry.get("stats")
        if where is None:
            return None
        arr = self.rows(where, 0, int(where["shape"][0]))
        return {k: arr[i].tolist() for i, k in enumerate(STAT_NAMES)}

    def invalid(self, a: int = 0, b: int | None = None) -> np.ndarray | None:
        """The flags of records ``[a, b)`` that failed to parse (read from the file), or None
        when none did."""
        inv = self.header.get("invalid")
        if inv is None:
            return None
        return self.rows(inv, a, self.records if b is None else b)

    def read_rows(self, entry: Mapping, a: int, b: int, out: np.ndarray) -> None:
        """Rows ``[a, b)`` of a section into ``out`` (C-contiguous, the section's dtype and row
        shape), read from the file at their offset."""
        src = self._src
        if src is None:
            raise CacheError(f"binary file {self.path!r} is closed")
        row = int(np.prod(entry["shape"][1:], dtype=np.int64)) * np.dtype(entry["dtype"]).itemsize
        try:
            src.read_into(out.reshape(-1).view(np.uint8), int(entry["offset"]) + a * row)
        except FileChangedError as e:
            raise CacheError(f"binary file {self.path!r} is truncated: section {entry.get('name')!r} "
                             f"ends before byte {int(entry['offset']) + b * row} ({e.reason})") from e

    def section_map(self, entry: Mapping) -> "SectionMap":
        """The :class:`SectionMap` of a section (one object per section)."""
        key = int(entry["offset"])
        m = self._maps.get(key)
        if m is None:
            m = self._maps[key] = SectionMap(self, entry)
        return m

    def map_rows(self, entry: Mapping, a: int, b: int) -> np.ndarray | None:
        """Rows ``[a, b)`` of a section as a writable copy-on-write mapping of the file (a private
        map of the pages holding them): nothing is read until touched, a page is paged in from
        the page cache when read and copied when written, and a change never reaches the file,
        another mapping or a later read. None when the run is under :data:`MAP_MIN_BYTES` or the
        system cannot map it (the caller reads the rows into memory instead)."""
        fd = self._fd
        row = int(np.prod(entry["shape"][1:], dtype=np.int64)) * np.dtype(entry["dtype"]).itemsize
        n = (b - a) * row
        if fd is None or n < MAP_MIN_BYTES:
            return None
        pos = int(entry["offset"]) + a * row
        base = pos - pos % mmap.ALLOCATIONGRANULARITY
        with _live_lock:
            if _live_maps[0] >= MAP_MAX_LIVE:
                return None
            _live_maps[0] += 1
        try:
            mm = mmap.mmap(fd, pos + n - base, access=mmap.ACCESS_COPY, offset=base)
        except ValueError as e:           # the mapping would reach past the end of the file
            _unmapped()
            raise CacheError(f"binary file {self.path!r} is truncated: section {entry['name']!r} "
                             f"ends before byte {pos + n}") from e
        except OSError:              # out of mappings, descriptors or address space: read the rows
            _unmapped()
            return None
        weakref.finalize(mm, _unmapped).atexit = False
        arr = np.frombuffer(mm, np.dtype(entry["dtype"]), (b - a) * (row // np.dtype(entry["dtype"]).itemsize),
                            pos - base)
        return arr.reshape((b - a,) + tuple(entry["shape"][1:]))

    def close(self) -> None:
        self._fd = None
        src, self._src = getattr(self, "_src", None), None
        if src is not None:
            src.close()
        self._arrays = {}
        mm, self._mm = getattr(self, "_mm", None), None
        if mm is not None:
            try:
                mm.close()
            except BufferError:          # a view still alive; the map closes with it
                pass


class BinaryFileWriter:
    """One binary file being written: ``write`` chunks of records in order, then ``finish``
    (header, rename) or ``abort``. ``sections`` = ``[{"name", "sectionType", "dtype", "shape" (per
    record), ...}]``. The file is a temporary name beside ``path`` until ``finish``."""

    def __init__(self, path: str, records: int, sections: list[dict]) -> None:
        self.path, self.records = path, int(records)
        self.entries, offset = [], _ALIGN
        for sec in sections:
            e = dict(sec)
            e["shape"] = [self.records, *sec["shape"]]
            e["offset"] = offset
            offset = _align(offset + int(np.prod(e["shape"])) * np.dtype(e["dtype"]).itemsize)
            self.entries.append(e)
        self.inv_entry = {"dtype": "uint8", "shape": [self.records], "offset": offset}
        self.data_end = _align(offset + self.records)
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=folder)
        self.fh = os.fdopen(fd, "wb+")
        try:
            size = max(self.data_end, _ALIGN)
            self.fh.truncate(size)
            self.mm = mmap.mmap(self.fh.fileno(), size)
            self.arrays = {e["name"]: np.ndarray(tuple(e["shape"]), np.dtype(e["dtype"]), buffer=self.mm,
                                                 offset=e["offset"]) for e in self.entries}
            self.inv = np.ndarray((self.records,), np.uint8, buffer=self.mm, offset=offset)
        except BaseException:
            self.abort()
            raise
        self.stats = {e["name"]: _Stats(int(np.prod(e["shape"][1:]))) for e in self.entries
                      if e["sectionType"] == "data"}
        self.pos = 0
        self.any_invalid = False

    def write(self, data: Mapping[str, np.ndarray], invalid: np.ndarray) -> None:
        n = len(invalid)
        if self.pos + n > self.records:
            raise ValueError(f"more records than announced ({self.records})")
        for e in self.entries:
            self.arrays[e["name"]][self.pos:self.pos + n] = data[e["name"]]
            if e["name"] in self.stats:
                self.stats[e["name"]].add(data[e["name"]])
        self.inv[self.pos:self.pos + n] = invalid
        self.any_invalid = self.any_invalid or bool(np.any(invalid))
        self.pos += n

    def finish(self, header_extra: Mapping) -> None:
        try:
            if self.pos != self.records:
                raise ValueError(f"{self.pos} records written, {self.records} announced")
            # each data section's statistics: a float64 [9, dim] array (rows in STAT_NAMES'
            # order) after the data, so that opening the file parses no number per column
            stats_at, end = [], self.data_end
            for e in self.entries:
                if e["name"] in self.stats:
                    res = self.stats[e["name"]].result()
                    arr = np.array([res[k] for k in STAT_NAMES], np.float64)
                    e["stats"] = {"dtype": "float64", "shape": list(arr.shape), "offset": end}
                    stats_at.append((end, arr))
                    end = _align(end + arr.nbytes)
            del self.arrays, self.inv
            self.mm.flush()
            self.mm.close()
            header = dict(header_extra)
            header.update(version=VERSION, records=self.records, sections=self.entries,
                          invalid=self.inv_entry if self.any_invalid else None)
            blob = json.dumps(header, sort_keys=True).encode("utf-8")
            for off, arr in stats_at:
                self.fh.seek(off)
                self.fh.write(arr.tobytes())
            self.fh.seek(end)
            self.fh.write(blob)
            self.fh.seek(0)
            self.fh.write(_PREFIX.pack(MAGIC, VERSION, 0, end, len(blob)))
            self.fh.flush()
            os.fsync(self.fh.fileno())
            self.fh.close()
            os.chmod(self.tmp, 0o666 & ~_umask())
            os.replace(self.tmp, self.path)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        for name in ("arrays", "inv"):
            self.__dict__.pop(name, None)
        mm = self.__dict__.pop("mm", None)
        if mm is not None:
            try:
                mm.close()
            except (BufferError, ValueError):
                pass
        if not self.fh.closed:
            self.fh.close()
        if os.path.exists(self.tmp):
            os.unlink(self.tmp)


def write_binaries(files: Mapping[str, list[dict]], records: int, chunks, *, header_extra: Mapping) -> None:
    """Write one binary file per path of ``files`` (``{path: sections}``) in ONE pass over
    ``chunks`` (``({name: array[n, ...]}, invalid[n])`` in record order)."""
    writers: list[BinaryFileWriter] = []
    try:
        for path, secs in files.items():
            writers.append(BinaryFileWriter(path, records, secs))
        for data, invalid in chunks:
            for w in writers:
                w.write(data, invalid)
        for w in writers:
            w.finish(header_extra)
    except BaseException:
        for w in writers:
            if not w.fh.closed:
                w.abort()
        raise


def write_binary(path: str, records: int, sections: list[dict], chunks, *, header_extra: Mapping) -> None:
    """Write one binary file (:func:`write_binaries` with one path)."""
    write_binaries({path: sections}, records, chunks, header_extra=header_extra)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --- the UCIFastReader cache --------------------------------------------------------------------

def fingerprint(deser: Any) -> str:
    """What a cache must have been written for: the stream definitions, mappings, precision."""
    desc = {"precision": np.dtype(deser.dtype).name,
            "streams": [{"name": s.name, "dim": s.dim, "start": s.start, "labelType": s.label_type,
                         "labelDim": s.label_dim, "mapping": s.mapping} for s in deser.streams]}
    return hashlib.sha256(json.dumps(desc, sort_keys=True).encode("utf-8")).hexdigest()


def _read_chunk_rows(bf: BinaryFile, entry: Mapping, first: int, r0: int, r1: int, out: np.ndarray) -> None:
    bf.read_rows(entry, first + r0, first + r1, out)


def rows_reader(bf: BinaryFile, entry: Mapping, first: int):
    """The ``DenseStream.read_rows`` of a chunk whose rows start at record ``first``."""
    return functools.partial(_read_chunk_rows, bf, entry, first)


def live_maps() -> int:
    """Mappings made by :meth:`BinaryFile.map_rows` that are still alive."""
    with _live_lock:
        return _live_maps[0]


class SectionMap:
    """A section's rows mapped copy-on-write (``DenseStream.private_map``'s mapper): one object per
    section and file, so the packer can tell that two chunks' runs follow each other in it."""

    __slots__ = ("bf", "entry")

    def __init__(self, bf: BinaryFile, entry: Mapping) -> None:
        self.bf, self.entry = bf, entry

    def map_rows(self, a: int, b: int) -> np.ndarray | None:
        """Records ``[a, b)`` of the section (:meth:`BinaryFile.map_rows`)."""
        return self.bf.map_rows(self.entry, a, b)


class BinaryCache:
    """The records of a UCIFastReader section read from its binary cache file(s)."""

    def __init__(self, deser: Any, files: dict[str, str]) -> None:
        self.deser = deser
        self.files: dict[str, BinaryFile] = {}
        self.where: dict[str, BinaryFile] = {}
        try:
            for name, path in files.items():
                bf = self.files.get(path) or BinaryFile(path)
                self.files[path] = bf
                if name not in bf.sections:
                    raise CacheError(f"binary file {path!r} has no section {name!r} "
                                     f"(it has {', '.join(bf.sections)})")
                self.where[name] = bf
        except BaseException:
            self.close()
            raise
        self.records = next(iter(self.files.values())).records

    def check(self, source: dict | None) -> str | None:
        """Why this cache must not be used for the current config and source, or None."""
        fp = fingerprint(self.deser)
        for path, bf in self.files.items():
            if bf.header.get("fingerprint") != fp:
                return f"{path!r} was written by another config (streams, label mapping or precision differ)"
            if bf.records != self.records:
                return f"{path!r} holds {bf.records} records, the other cache files {self.records}"
            if source is not None and bf.header.get("source") != source:
                return f"{path!r} was written from another version of {source['file']!r} (size or time differ)"
        return None

    def chunk_table(self, records_per_chunk: int, chunk_bytes: int):
        row = sum(int(np.prod(bf.sections[n]["shape"][1:])) * np.dtype(bf.sections[n]["dtype"]).itemsize
                  for n, bf in self.where.items())
        per = records_per_chunk if records_per_chunk > 0 else max(1, chunk_bytes // max(1, row))
        counts = [min(per, self.records - a) for a in range(0, self.records, per)]
        z = np.zeros(len(counts), np.int64)
        return z, z, np.array(counts, np.int64), z

    def records_slice(self, a: int, b: int, views: bool = False, maps: bool = False):
        """Records ``[a, b)``: ``({stream: values}, invalid, {stream: (read_rows, private_map)})``,
        every section's rows read from the file (``pread``). Opted in: ``views`` (``cacheViews``)
        gives dense sections stored as delivered as read-only views of the file's map, ``maps``
        (``cacheMaps``) as views of the map that carry a ``read_rows(r0, r1, out)`` reading their
        rows from the file and a ``DenseStream.private_map`` (``(section map, a)``) mapping a run
        of them copy-on-write. Mapped arrays fault (SIGBUS) if the file is cut short while they
        live: the default reads."""
        out, readers = {}, {}
        invalid = np.zeros(b - a, bool)
        for bf in self.files.values():
            inv = bf.invalid(a, b)
            if inv is not None:
                invalid |= inv.astype(bool)
        for s in self.deser.streams:
            bf = self.where[s.name]
            entry = bf.sections[s.name]
            if s.label_type == "category" and entry["sectionType"] == "labels":
                ids = bf.rows(entry, a, b).astype(np.int64)
                onehot = np.zeros((b - a, s.label_dim), self.deser.dtype)
                rows = np.flatnonzero(ids != NO_LABEL)
                onehot[rows, ids[rows]] = 1
                out[s.name] = onehot
            elif np.dtype(entry["dtype"]) == self.deser.dtype and (views or maps):
                out[s.name] = bf.array(entry)[a:b]       # a view of the map; the packer reads what it takes
                if not views:
                    readers[s.name] = (rows_reader(bf, entry, a), (bf.section_map(entry), a))
            else:
                arr = bf.rows(entry, a, b)
                out[s.name] = arr if arr.dtype == self.deser.dtype else arr.astype(self.deser.dtype)
        return out, invalid, readers

    def close(self) -> None:
        for bf in self.files.values():
            bf.close()
        self.files = {}


def _sections_for(deser: Any, types: Mapping[str, str]) -> list[dict]:
    out = []
    for s in deser.streams:
        kind = types.get(s.name)
        if s.label_type == "category":
            kind = kind if kind in ("labels", "categoryLabels") else "labels"
            e = {"name": s.name, "sectionType": kind, "labelDim": s.label_dim, "mapping": s.mapping}
            if kind == "labels":
                e.update(dtype="uint32", shape=[])
            else:
                e.update(dtype=np.dtype(deser.dtype).name, shape=[s.label_dim])
        else:
            kind = "labels" if s.label_type == "regression" else "data"
            e = {"name": s.name, "sectionType": kind, "dtype": np.dtype(deser.dtype).name, "shape": [s.dim]}
        out.append(e)
    return out


def _text_chunks(deser: Any, buf: Any, chunks, names: set[str], sections: list[dict]):
    kinds = {e["name"]: e["sectionType"] for e in sections}
    saved = getattr(deser, "_chunks", None)
    deser._chunks = chunks
    try:
        for c in range(len(chunks[2])):
            arrays, invalid = deser.parse_chunk(c, buf)
            data = {}
            for s in deser.streams:
                if s.name not in names:
                    continue
                v = arrays[s.name]
                if s.label_type == "category" and kinds[s.name] == "labels":
                    ids = np.where(invalid, NO_LABEL, v.argmax(1)).astype(np.uint32)
                    data[s.name] = ids
                else:
                    data[s.name] = v
            yield data, invalid
    finally:
        deser._chunks = saved


def open_or_build_cache(deser: Any, conf: Mapping) -> BinaryCache:
    """The cache of a UCIFastReader deserializer: opened when valid, else (re)built from the text."""
    from .textparse import index_records
    files: dict[str, str] = dict(conf["files"])
    source = deser.source_state()     # a URL's: its size and version, nothing fetched
    if all(os.path.exists(p) for p in files.values()):
        try:
            cache = BinaryCache(deser, files)
            why = cache.check(source)
        except CacheError as e:
            cache, why = None, e.reason
        if why is None:
            _log.info("UCIFastReader: reading the binary cache %s", ", ".join(sorted(set(files.values()))))
            return cache
        if cache is not None:
            cache.close()
        if source is None:
            raise CacheError(f"the binary cache cannot be used: {why}; its source {deser.file!r} does "
                             "not exist to rebuild it", path="wfile")
        _log.warning("UCIFastReader: rebuilding the binary cache: %s", why)
    elif source is None:
        missing = [p for p in files.values() if not os.path.exists(p)]
        raise ConfigError(f"the UCIFastReader data file {deser.file!r} does not exist, nor its binary "
                          f"cache {missing[0]!r}", path="file")
    with open(deser.data_path(), "rb") as fh:      # a URL: its copy in <cacheDir>/files/
        size = os.path.getsize(fh.name)
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    try:
        chunks = index_records(buf, 0, deser.chunk_bytes)
        records = int(chunks[2].sum())
        wrecords = int(conf.get("wrecords") or 0)
        if wrecords and records > wrecords:
            _log.warning("UCIFastReader: %d records, more than wrecords = %d: CNTK's preallocated cache would "
                         "have failed; cntkio's grows as it is written", records, wrecords)
        sections = _sections_for(deser, conf.get("sectionTypes", {}))
        by_file: dict[str, list[dict]] = {}
        for e in sections:
            by_file.setdefault(files[e["name"]], []).append(e)
        extra = {"fingerprint": fingerprint(deser), "source": source}
        names = {e["name"] for e in sections}
        write_binaries(by_file, records, _text_chunks(deser, buf, chunks, names, sections), header_extra=extra)
        _log.info("UCIFastReader: wrote the binary cache %s (%d records)", ", ".join(by_file), records)
    finally:
        if not isinstance(buf, bytes):
            buf.close()
    cache = BinaryCache(deser, files)
    why = cache.check(source)
    if why is not None:            # the source changed while it was being read
        cache.close()
        raise CacheError(f"the binary cache just written cannot be used: {why}", path="wfile")
    return cache
