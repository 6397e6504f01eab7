"""The CTF index: sequences (key, byte range, first line, timeline length) and chunks, plus its
on-disk cache (``cacheIndex=True``).

The index is built by one scan of the file (``backend.scan_index``, see ``_reference``). With
``cacheIndex`` it is written beside the input as ``<file>.ctfidx`` (temporary name, then
``os.replace``) and reused only when it matches the file (size, mtime_ns, SHA-256 of the first
64 KiB) and the options that shape it (aliases, skipSequenceIds, defining stream,
chunkSizeInBytes, format version). The binary layout is documented in ``docs/ctf.md`` and in
``write_cache`` below.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import struct
import tempfile
from dataclasses import dataclass

import numpy as np

from ..._log import get_logger
from ..._progress import bar
from ..ranges import FileRanges
from . import _reference

__all__ = ["CTFIndex", "build_index", "index_options_digest", "read_cache", "write_cache",
           "CACHE_SUFFIX", "CACHE_MAGIC", "CACHE_VERSION"]

_log = get_logger("deserializers.ctf")

CACHE_SUFFIX = ".ctfidx"
CACHE_MAGIC = b"CNTKIOCI"
CACHE_VERSION = 1
HEAD_BYTES = 65536
# magic, cache version, format version, file size, mtime_ns, head sha256, options sha256,
# encoding, ids_mode, 6 pad bytes (arrays start 8-aligned), n sequences, n chunks
_HEADER = struct.Struct("<8sIIQq32s32sBB6xQQ")


@dataclass
class CTFIndex:
    """The scan of one CTF file (arrays as described in ``_reference.scan_index``)."""

    encoding: int
    ids_mode: bool
    keys: np.ndarray          # uint64[n]
    starts: np.ndarray        # int64[n+1]
    first_lines: np.ndarray   # int64[n]
    lengths: np.ndarray       # int64[n]
    chunk_starts: np.ndarray  # int64[C+1]

    @property
    def num_sequences(self) -> int:
        return int(self.keys.shape[0])


def _as(array, dtype) -> np.ndarray:
    if isinstance(array, np.ndarray):
        return np.ascontiguousarray(array, dtype=dtype)
    return np.frombuffer(array, dtype=dtype).copy()


def scan(backend, buf, aliases, skip_ids: bool, defining_stream: int, chunk_size: int) -> CTFIndex:
    """Run ``backend.scan_index`` and wrap its result."""
    enc, ids_mode, keys, starts, first_lines, lengths, chunk_starts = backend.scan_index(
        buf, list(aliases), bool(skip_ids), int(defining_stream), int(chunk_size))
    return CTFIndex(int(enc), bool(ids_mode), _as(keys, np.uint64), _as(starts, np.int64),
                    _as(first_lines, np.int64), _as(lengths, np.int64), _as(chunk_starts, np.int64))


#: Bytes of the file mapped at a time while indexing: the scan's resident memory stays about this
#: size however large the file is (mapped pages count as the process's RSS).
SCAN_WINDOW = 64 << 20


def chunk_bounds(starts: np.ndarray, limit: int) -> np.ndarray:
    """``chunk_starts`` for sequences with byte ranges ``starts[i]:starts[i+1]``: a new chunk starts
    before sequence i when the current chunk's bytes plus sequence i's exceed ``limit``
    (cntk-ctf-behaviours fact 16; the same rule as ``scan_index``). One step per chunk."""
    n = len(starts) - 1
    bounds = [0]
    i = 0
    while i < n:
        j = int(np.searchsorted(starts[1:], starts[i] + limit, side="right"))
        i = max(j, i + 1)
        bounds.append(i)
    return np.asarray(bounds, dtype=np.int64)


def scan_file(path: str, backend, aliases, skip_ids: bool, defining_stream: int, chunk_size: int,
              window: int = SCAN_WINDOW) -> CTFIndex:
    """Index a file by scanning it in windows of about ``window`` bytes (see ``_scan_windows``),
    each read with pread (a file cut short meanwhile is a FileChangedError naming it, never
    SIGBUS). The result equals one ``scan_index`` over the whole file
    (tests/deserializers/ctf/test_ctf_index.py)."""
    src = FileRanges(path, what="CTF file")
    try:
        size = src.size
        if size <= window:
            return scan(backend, src.read(0, size) if size else b"", aliases, skip_ids, defining_stream, chunk_size)

        @contextlib.contextmanager
        def read(off: int, end: int):
            buf = bytearray(end - off)
            src.read_into(buf, off)
            yield buf, 0
        progress = bar(total=size, desc=f"index {os.path.basename(path)}", unit="B", unit_scale=True)
        try:
            return _scan_windows(read, size, backend, aliases, skip_ids, defining_stream, chunk_size, window,
                                 progress)
        finally:
            if progress is not None:
                progress.close()
    finally:
        src.close()


def _scan_windows(windows, size: int, backend, aliases, skip_ids: bool, defining_stream: int,
                  chunk_size: int, window: int = SCAN_WINDOW, progress=None) -> CTFIndex:
    """Index ``size`` bytes read as windows of about ``window`` bytes: ``windows(off, end)`` is a
    context manager giving ``(buffer, start)``, bytes ``off:end`` at ``buffer[start:]`` (a buffer
    with ``rfind``: a bytearray, an mmap, bytes).

    Each window ends at a line end; its last sequence may continue in the next window, so it is
    dropped and the next window starts at its first byte (a sequence start is a line with an id,
    or any data line without ids). Keys without ids, line numbers and byte offsets are shifted to
    the file's; ids mode and encoding come from the first window; chunks are cut over the whole
    file. ``progress``: a tqdm bar over the bytes (cntkio._progress), or None.
    """
    parts: list[tuple] = []
    encoding = ids_mode = None
    off = line0 = seq0 = 0
    w = window
    while off < size:
        end = min(off + w, size)
        with windows(off, end) as (m, start):
            view = memoryview(m)[start:start + end - off]
            try:
                last = end == size
                cut = len(view) if last else m.rfind(b"\n", start, start + end - off) + 1 - start
                if cut <= 0:                   # no line end in the window: widen it
                    w *= 2
                    continue
                idx = scan(backend, view[:cut], aliases,
                           skip_ids or ids_mode is False, defining_stream, chunk_size)
                if idx.num_sequences == 0:     # only blank or comment lines: count them
                    blank_lines = int(np.count_nonzero(np.frombuffer(view[:cut], np.uint8) == 10))
            finally:
                view.release()
        if encoding is None:
            encoding = idx.encoding
            if encoding >= _reference.ENCODING_UTF16LE:
                return idx
        n = idx.num_sequences
        keep = n if last else n - 1
        if not last and n == 1:                # one sequence fills the window: widen it
            w *= 2
            continue
        if n and ids_mode is None:
            ids_mode = idx.ids_mode
        if keep > 0:
            keys = idx.keys[:keep] if ids_mode else idx.keys[:keep] + np.uint64(seq0)
            parts.append((keys, idx.starts[:keep] + off, idx.first_lines[:keep] + line0,
                          idx.lengths[:keep]))
            seq0 += keep
        if last:
            break
        if n == 0:
            line0 += blank_lines
            off += cut
        else:
            line0 += int(idx.first_lines[keep]) - 1
            off += int(idx.starts[keep])
        w = window
        if progress is not None:
            progress.update(off - progress.n)

    def cat(k: int, dt) -> np.ndarray:
        return np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, dt)

    starts = np.append(cat(1, np.int64), np.int64(size))
    return CTFIndex(int(encoding or 0), bool(ids_mode), cat(0, np.uint64), starts, cat(2, np.int64),
                    cat(3, np.int64), chunk_bounds(starts, min(int(chunk_size), size)))


def index_options_digest(aliases, skip_ids: bool, defining_stream: int, chunk_size: int) -> bytes:
    """SHA-256 of the options that shape the index (the cache is reused only when they match).

    The hashed text is compact, key-sorted JSON of ``{"aliases": [hex of each alias],
    "chunk_size": int, "defining_stream": int, "format_version": int, "skip_ids": bool}``.
    """
    text = json.dumps({"aliases": [bytes(a).hex() for a in aliases], "chunk_size": int(chunk_size),
                       "defining_stream": int(defining_stream),
                       "format_version": _reference.FORMAT_VERSION, "skip_ids": bool(skip_ids)},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).digest()


def file_fingerprint(path: str) -> tuple[int, int, bytes]:
    """``(size, mtime_ns, sha256 of the first 64 KiB)`` of a file."""
    st = os.stat(path)
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    return st.st_size, st.st_mtime_ns, hashlib.sha256(head).digest()


def cache_path(path: str) -> str:
    """Where the index cache of ``path`` lives: ``<path>.ctfidx``."""
    return path + CACHE_SUFFIX


def write_cache(path: str, index: CTFIndex, fingerprint, options_digest: bytes) -> str:
    """Write the index cache beside ``path`` (temporary file, then ``os.replace``).

    Layout, all little-endian: a 120-byte header ``magic "CNTKIOCI", u32 cache version,
    u32 format version, u64 file size, i64 mtime_ns, 32-byte SHA-256 of the first 64 KiB,
    32-byte options digest, u8 encoding, u8 ids_mode, 6 zero bytes, u64 n, u64 C``; then the
    arrays ``keys u64[n], starts i64[n+1], first_lines i64[n], lengths i64[n],
    chunk_starts i64[C+1]``; then a 32-byte SHA-256 of everything before it. Returns the cache
    path. Raises OSError when the file cannot be written (the caller warns).
    """
    size, mtime_ns, head = fingerprint
    n = index.num_sequences
    c = int(index.chunk_starts.shape[0]) - 1
    header = _HEADER.pack(CACHE_MAGIC, CACHE_VERSION, _reference.FORMAT_VERSION, size, mtime_ns,
                          head, options_digest, index.encoding, int(index.ids_mode), n, c)
    body = b"".join([header, index.keys.astype("<u8").tobytes(),
                     index.starts.astype("<i8").tobytes(), index.first_lines.astype("<i8").tobytes(),
                     index.lengths.astype("<i8").tobytes(),
                     index.chunk_starts.astype("<i8").tobytes()])
    target = cache_path(path)
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(target) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(body)
            f.write(hashlib.sha256(body).digest())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


def read_cache(path: str, fingerprint, options_digest: bytes) -> tuple[CTFIndex | None, str]:
    """The cached index of ``path`` if it is valid for this file and these options.

    Returns ``(index, "")`` or ``(None, reason)`` with the reason it was not used.
    """
    target = cache_path(path)
    try:
        with open(target, "rb") as f:
            blob = f.read()
    except FileNotFoundError:
        return None, "no cache file"
    except OSError as exc:
        return None, f"cannot read {target}: {exc}"
    if len(blob) < _HEADER.size + 32:
        return None, "cache file is truncated"
    if hashlib.sha256(blob[:-32]).digest() != blob[-32:]:
        return None, "cache file checksum mismatch (corrupt or truncated)"
    (magic, version, fmt, size, mtime_ns, head, opts, enc, ids_mode, n, c) = \
        _HEADER.unpack_from(blob, 0)
    if magic != CACHE_MAGIC:
        return None, "not a cntkio CTF index cache"
    if version != CACHE_VERSION or fmt != _reference.FORMAT_VERSION:
        return None, f"cache version {version}/{fmt}, expected {CACHE_VERSION}/{_reference.FORMAT_VERSION}"
    want_size, want_mtime, want_head = fingerprint
    if size != want_size:
        return None, f"input size changed ({size} -> {want_size} bytes)"
    if mtime_ns != want_mtime:
        return None, "input modification time changed"
    if head != want_head:
        return None, "input content changed (first 64 KiB)"
    if opts != options_digest:
        return None, "reader options that shape the index changed"
    expected = _HEADER.size + 8 * (n + (n + 1) + n + n + (c + 1)) + 32
    if len(blob) != expected:
        return None, "cache file has the wrong length"
    pos = _HEADER.size

    def take(count, dtype):
        nonlocal pos
        arr = np.frombuffer(blob, dtype=dtype, count=count, offset=pos).astype(dtype[1:])
        pos += 8 * count
        return arr

    keys = take(n, "<u8")
    starts = take(n + 1, "<i8")
    first_lines = take(n, "<i8")
    lengths = take(n, "<i8")
    chunk_starts = take(c + 1, "<i8")
    return CTFIndex(int(enc), bool(ids_mode), keys, starts, first_lines, lengths, chunk_starts), ""


def build_index(path: str, backend, aliases, skip_ids: bool, defining_stream: int,
                chunk_size: int, use_cache: bool, data: bytes | None = None, remote=None) -> CTFIndex:
    """Index ``path``: from the cache when allowed and valid, else by scanning (and caching).

    ``data`` is the file content when the caller already holds it (keepDataInMemory). ``remote``:
    the :class:`~cntkio.remote.RemoteObject` of a URL, scanned in large ranges, its index cache
    kept in the chunk cache's folder under its URL, size and ETag (``cntkio.remote.ctf_index``).
    """
    if remote is not None:
        return _remote_index(remote, backend, aliases, skip_ids, defining_stream, chunk_size, use_cache,
                             data)
    fingerprint = digest = None
    if use_cache:
        fingerprint = file_fingerprint(path)
        digest = index_options_digest(aliases, skip_ids, defining_stream, chunk_size)
        cached, reason = read_cache(path, fingerprint, digest)
        if cached is not None:
            _log.info("%s: index loaded from cache %s", path, cache_path(path))
            return cached
        _log.info("%s: index cache not used (%s); scanning the file", path, reason)
    if data is not None:
        index = scan(backend, data, aliases, skip_ids, defining_stream, chunk_size)
    else:
        index = scan_file(path, backend, aliases, skip_ids, defining_stream, chunk_size)
    if use_cache and index.encoding < _reference.ENCODING_UTF16LE:
        try:
            where = write_cache(path, index, fingerprint, digest)
            _log.info("%s: index cache written to %s", path, where)
        except OSError as exc:
            _log.warning("%s: could not write the index cache %s (%s); continuing without it",
                         path, cache_path(path), exc)
    return index


def _remote_index(remote, backend, aliases, skip_ids: bool, defining_stream: int, chunk_size: int,
                  use_cache: bool, data: bytes | None) -> CTFIndex:
    """:func:`build_index` of a URL: the object read once, in ranges of ``SCAN_WINDOW`` bytes (the
    next one fetched while this one is scanned; they land in the chunk cache, so a first sweep
    reads from disk what fits there); with ``cacheIndex`` the index is kept under the chunk cache's
    folder (``<cacheDir>/index/``), named by the object's URL, size and ETag/generation."""
    target = remote.index_cache_path("") if use_cache else None
    fingerprint = (remote.size, 0, hashlib.sha256(f"{remote.url}\n{remote.version}".encode()).digest())
    digest = index_options_digest(aliases, skip_ids, defining_stream, chunk_size)
    if target is not None:
        cached, reason = read_cache(target, fingerprint, digest)
        if cached is not None:
            _log.info("%s: index loaded from cache %s", remote.url, cache_path(target))
            return cached
        _log.info("%s: index cache not used (%s); scanning the object", remote.url, reason)
    if data is not None:
        index = scan(backend, data, aliases, skip_ids, defining_stream, chunk_size)
    else:
        @contextlib.contextmanager
        def fetched(off: int, end: int):
            if remote.caching:   # the next window lands in the chunk cache while this one is scanned
                remote.prefetch([(end, min(end + SCAN_WINDOW, remote.size))])
            data = remote.read(off, end)
            yield (bytes(data) if isinstance(data, memoryview) else data), 0   # a buffer with rfind
        index = _scan_windows(fetched, remote.size, backend, aliases, skip_ids, defining_stream, chunk_size,
                              SCAN_WINDOW)
    if target is not None and index.encoding < _reference.ENCODING_UTF16LE:
        try:
            write_cache(target, index, fingerprint, digest)
        except OSError as exc:
            _log.warning("%s: could not write the index cache %s (%s); continuing without it",
                         remote.url, cache_path(target), exc)
    return index
