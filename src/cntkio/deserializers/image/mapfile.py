"""Map files of the image deserializers, parsed as CNTK 2.7 reads them (cntk-readers-measured 2).

* ImageDeserializer: ``path<TAB>label`` (key = 0-based line number) or ``key<TAB>path<TAB>label``
  (an unsigned 64-bit integer key; any text with ``useNumericSequenceKeys = false``). CRLF, a
  trailing TAB, extra columns and a missing final newline are accepted; the label is its leading
  integer (``1.5`` is 1); a path is bytes as written (any byte a file name may hold).
* Base64ImageDeserializer: ``label<TAB>base64`` or ``key<TAB>label<TAB>base64``; indexed by byte
  offset (the image text stays in the file until its chunk is read), chunked like CTF (a chunk
  ends before the sequence that would take it over ``chunkSizeInBytes``); a key seen twice keeps
  its first line, as CNTK does.

Errors name the map file and the line (0-based, CNTK's count, in the message; 1-based in
``FormatError.line``) and what was wrong.
"""
from __future__ import annotations

import mmap
import os
import re
from dataclasses import dataclass

import numpy as np

from ..._paths import relative_note
from ...errors import FormatError
from ...remote import is_remote, open_object, read_path, resolve

__all__ = ["ImageMap", "Base64Index", "parse_image_map", "index_base64_map", "cached_base64_index",
           "resolve_path", "chunk_bounds", "check_zip_members", "shown", "CACHE_SUFFIX", "MAX_KEY"]

_LEADING_INT = re.compile(rb"\s*([+-]?\d+)")
#: the largest sequence key (CNTK's keys are size_t)
MAX_KEY = 2**64 - 1


def shown(text: str) -> str:
    """A path or message as it can be printed: bytes that are not UTF-8 (kept in a path as
    surrogates, :func:`os.fsdecode`) written as ``\\xNN``."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


@dataclass
class ImageMap:
    """A parsed image map: per line its key, path (as written), label and 0-based line number."""

    keys: np.ndarray     # uint64, or str objects (useNumericSequenceKeys = false)
    paths: list          # str (os.fsdecode of the bytes written)
    labels: np.ndarray   # int64
    lines: np.ndarray    # int64, 0-based


@dataclass
class Base64Index:
    """An indexed Base64 map: per sequence its key, label, line and the byte range of its base64
    text; ``chunk_starts`` the first sequence of each chunk (plus the end)."""

    keys: np.ndarray
    labels: np.ndarray
    lines: np.ndarray
    begin: np.ndarray
    end: np.ndarray
    chunk_starts: np.ndarray


def _columns(line: bytes) -> list[bytes]:
    if line.endswith(b"\r"):
        line = line[:-1]
    cols = line.split(b"\t")
    while len(cols) > 1 and cols[-1] == b"":
        cols.pop()
    return cols


def _bad_format(map_file: str, n: int) -> FormatError:
    return FormatError(f"Invalid map file format, must contain 2 or 3 tab-delimited columns, line {n} in "
                       f"file {map_file}.", file=map_file, line=n + 1,
                       expected="path<TAB>label or key<TAB>path<TAB>label")


def _key(text: bytes, map_file: str, n: int) -> int:
    """A numeric sequence key: ASCII digits, at most 2^64 - 1 (CNTK's size_t)."""
    b = text.strip()
    if not b.isdigit():
        s = b.decode("utf-8", "backslashreplace")
        raise FormatError(f"Invalid numeric sequence id '{s}', line {n} in file {map_file}.", file=map_file,
                          line=n + 1, expected="an unsigned integer sequence key", found=repr(s))
    if len(b) > 20 or int(b) > MAX_KEY:
        raise FormatError(f"Invalid numeric sequence id '{b.decode()}', line {n} in file {map_file}.", file=map_file,
                          line=n + 1, expected=f"an unsigned 64-bit sequence key (at most {MAX_KEY})",
                          found=f"a {len(b.lstrip(b'0')) or 1}-digit number")
    return int(b)


def _text_key(text: bytes) -> str:
    """A string sequence key (``useNumericSequenceKeys = false``): the column as written."""
    return text.strip().decode("utf-8", "surrogateescape")


def _label(text: bytes, column: str, map_file: str, n: int) -> int:
    if text.isdigit():              # the usual case, at once (ASCII digits only)
        return int(text)
    m = _LEADING_INT.match(text)
    if m is None:
        raise FormatError(f"Cannot parse label value on line {n}, {column} column, in file {map_file}.",
                          file=map_file, line=n + 1, expected="an integer class id",
                          found=repr(text.decode("utf-8", "replace")))
    return int(m.group(1))


def _check_label(label: int, label_dim: int | None, what: str, map_file: str, n: int) -> None:
    if label_dim is not None and not 0 <= label < label_dim:
        raise FormatError(f"Image '{what}' has invalid class id '{label}'. It is exceeding the label dimension "
                          f"of '{label_dim}'. Line {n} in file {map_file}.", file=map_file, line=n + 1,
                          expected=f"a class id in 0..{label_dim - 1}", found=str(label))


def _split_lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()               # the final newline ends the last line
    return lines


def parse_image_map(map_file: str, label_dim: int | None, numeric_keys: bool = True, config=None) -> ImageMap:
    """Parse an ImageDeserializer map file; ``label_dim`` None: labels are not checked;
    ``numeric_keys`` False: keys are strings (the first column, or the line number). A URL is read
    through :mod:`cntkio.remote` with the remote options of ``config``."""
    try:
        data = read_path(map_file, config)
    except OSError as e:
        raise FormatError(f"Could not open map file: {e.strerror or e}{relative_note(map_file)}", file=map_file) from e
    lines = _split_lines(data)
    n_lines = len(lines)
    keys = np.empty(n_lines, np.uint64 if numeric_keys else object)
    labels = np.empty(n_lines, np.int64)
    paths: list[str] = []
    for n, line in enumerate(lines):
        cols = _columns(line)
        if len(cols) < 2 or cols[0] == b"" and len(cols) == 2 and cols[1] == b"":
            raise _bad_format(map_file, n)
        key: int | str
        if len(cols) == 2:
            key, path, label = (n if numeric_keys else str(n)), cols[0], _label(cols[1], "second", map_file, n)
        else:
            key = _key(cols[0], map_file, n) if numeric_keys else _text_key(cols[0])
            path, label = cols[1], _label(cols[2], "third", map_file, n)
        p = os.fsdecode(path)           # a file name is bytes: any of them is kept (surrogateescape)
        _check_label(label, label_dim, shown(p), map_file, n)
        keys[n], labels[n] = key, label
        paths.append(p)
    if not paths:
        raise FormatError(f"the map file {map_file} lists no image", file=map_file,
                          expected="path<TAB>label lines", found="none")
    return ImageMap(keys, paths, labels, np.arange(n_lines, dtype=np.int64))


def resolve_path(path: str, map_dir: str, cwd: str | None = None) -> str:
    """Where an image of the map lies: an absolute path as written; ``...`` at its start stands
    for the map file's folder (CNTK's syntax); a relative path is taken from the working directory
    (``cwd``, else the current one) when it exists there (CNTK's rule), else from the map file's
    folder. An ``archive.zip@inner`` path resolves its archive part."""
    arch, sep, inner = path.partition(".zip@")
    head = arch + ".zip" if sep else path
    if is_remote(map_dir) or is_remote(head):   # a map at a URL: its paths are taken from its folder
        head = resolve(map_dir + "/", head)
    elif head.startswith("..."):
        head = os.path.join(map_dir, head[3:].lstrip("/\\"))
    elif not os.path.isabs(head):
        here = head if cwd is None else os.path.join(cwd, head)
        head = here if os.path.exists(here) else os.path.join(map_dir, head)
    return head + "@" + inner if sep else head


def check_zip_members(map_file: str, paths: list, lines: np.ndarray, map_dir: str, cwd: str,
                      remote_options=None) -> None:
    """Every ``archive.zip@/member`` path of the map names an archive that exists and holds that
    member; else CNTK's error (it checks when the archive's sequences are registered, ZipByteReader),
    naming the map lines, the members and the archives. An archive at a URL is read with
    ``remote_options`` (its central directory only)."""
    import zipfile

    members: dict[str, set | None] = {}
    missing: list[str] = []
    for n, p in zip(lines.tolist(), paths):
        if ".zip@" not in p:
            continue
        arch = resolve_path(p, map_dir, cwd).partition("@")[0]
        inner = p.partition(".zip@")[2].lstrip("/")
        if arch not in members:
            try:
                source = open_object(arch, remote_options).open(1 << 18) if is_remote(arch) else arch
                with zipfile.ZipFile(source) as z:
                    members[arch] = set(z.namelist())
            except (OSError, zipfile.BadZipFile) as e:
                members[arch] = None
                missing.append(f"{shown(map_file)}:{n + 1}: the archive '{shown(arch)}' cannot be read ({e})")
        names = members[arch]
        if names is not None and inner not in names:
            missing.append(f"{shown(map_file)}:{n + 1}: '{shown(p)}': the archive '{shown(arch)}' has no member "
                           f"'{shown(inner)}'")
    if missing:
        more = f" (and {len(missing) - 10} more)" if len(missing) > 10 else ""
        raise FormatError("Cannot retrieve image data for some sequences. For more detail, please see the log "
                          "file. " + "; ".join(missing[:10]) + more, file=map_file,
                          expected="every zip member the map names", found=f"{len(missing)} missing")


def chunk_bounds(begin: np.ndarray, end: np.ndarray, limit: int) -> np.ndarray:
    """First sequence of each chunk, plus the end: a chunk ends before the sequence that would take
    its bytes over ``limit`` (CTF's rule; every chunk holds at least one sequence)."""
    n = len(begin)
    bounds = [0]
    i = 0
    while i < n:
        j = int(np.searchsorted(end, begin[i] + limit, side="right"))
        i = max(j, i + 1)
        bounds.append(i)
    return np.asarray(bounds, np.int64)


def index_base64_map(map_file: str, label_dim: int | None, chunk_size: int,
                     numeric_keys: bool = True) -> Base64Index:
    """Index a Base64ImageDeserializer map file (one line per image; the text is not decoded);
    ``numeric_keys`` False: keys are strings (the first of three columns, or the line number)."""
    try:
        f = open(map_file, "rb")
    except OSError as e:
        raise FormatError(f"Could not open map file: {e.strerror}{relative_note(map_file)}", file=map_file) from e
    with f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise FormatError(f"the map file {map_file} is empty", file=map_file,
                              expected="[key<TAB>]label<TAB>base64 lines", found="an empty file")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            buf = np.frombuffer(m, np.uint8)
            nl = np.flatnonzero(buf == 10)
            starts = np.concatenate([[0], nl + 1])
            stops = np.concatenate([nl, [size]])
            keep = stops > starts          # drop the empty piece after the final newline
            if len(keep) and starts[-1] >= size:
                keep[-1] = False
            starts, stops = starts[keep], stops[keep]
            del buf
            keys: list = []
            labels, lines, begin, end = [], [], [], []
            seen: set = set()
            for n, (a, b) in enumerate(zip(starts.tolist(), stops.tolist())):
                head = m[a:min(b, a + 256)]
                t1 = head.find(b"\t")
                t2 = head.find(b"\t", t1 + 1) if t1 >= 0 else -1
                if t1 < 0:
                    raise FormatError(f"Invalid map file format, must contain 2 or 3 tab-delimited columns, "
                                      f"line {n} in file {map_file}.", file=map_file, line=n + 1,
                                      expected="[key<TAB>]label<TAB>base64")
                key: int | str
                if t2 >= 0:
                    key = _key(head[:t1], map_file, n) if numeric_keys else _text_key(head[:t1])
                    label = _label(head[t1 + 1:t2], "second", map_file, n)
                    data_at = a + t2 + 1
                else:
                    key = n if numeric_keys else str(n)
                    label = _label(head[:t1], "first", map_file, n)
                    data_at = a + t1 + 1
                _check_label(label, label_dim, f"line {n}", map_file, n)
                if key in seen:
                    continue                 # CNTK keeps the first line of a key
                seen.add(key)
                stop = b - 1 if b > data_at and m[b - 1] == 13 else b
                keys.append(key)
                labels.append(label)
                lines.append(n)
                begin.append(data_at)
                end.append(stop)
    begin_a = np.asarray(begin, np.int64)
    end_a = np.asarray(end, np.int64)
    keys_a = np.asarray(keys, np.uint64) if numeric_keys else np.array(keys, dtype=object)
    return Base64Index(keys_a, np.asarray(labels, np.int64), np.asarray(lines, np.int64),
                       begin_a, end_a, chunk_bounds(begin_a, end_a, max(1, int(chunk_size))))


# --- the Base64 index cache (cacheIndex = true) ----------------------------------------------------

#: the cache beside the map file: ``<map>.b64idx`` (a NumPy .npz)
CACHE_SUFFIX = ".b64idx"
_CACHE_VERSION = 2       # 2: keys are uint64
_HEAD = 1 << 16


def _fingerprint(path: str) -> np.ndarray:
    """``(size, mtime_ns)`` of the file and the first 64 KiB's CRC, as int64s."""
    import zlib
    st = os.stat(path)
    with open(path, "rb") as f:
        crc = zlib.crc32(f.read(_HEAD))
    return np.array([st.st_size, st.st_mtime_ns, crc], np.int64)


def cached_base64_index(map_file: str, label_dim: int | None, chunk_size: int, use_cache: bool,
                        log=None, numeric_keys: bool = True) -> Base64Index:
    """:func:`index_base64_map`, reusing ``<map>.b64idx`` when ``use_cache`` and it was made from
    this very file (size, modification time, first 64 KiB) with the same options; otherwise the
    index is built and, with ``use_cache``, written there (temporary name, then renamed; a folder
    that cannot be written only logs a warning)."""
    target = map_file + CACHE_SUFFIX
    if not numeric_keys:            # string keys are not cached (an object array): index again
        return index_base64_map(map_file, label_dim, chunk_size, numeric_keys)
    options = np.array([_CACHE_VERSION, -1 if label_dim is None else label_dim, chunk_size], np.int64)
    if use_cache and os.path.exists(target):
        try:
            with np.load(target) as z:
                if np.array_equal(z["fingerprint"], _fingerprint(map_file)) and np.array_equal(z["options"], options):
                    return Base64Index(*(z[k] for k in ("keys", "labels", "lines", "begin", "end", "chunk_starts")))
        except (OSError, ValueError, KeyError) as e:
            if log is not None:
                log.warning("%s: the index cache %s cannot be read (%s); indexing again", map_file, target, e)
    index = index_base64_map(map_file, label_dim, chunk_size)
    if use_cache:
        import tempfile
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(target) + ".", suffix=".tmp",
                                   dir=os.path.dirname(os.path.abspath(target)))
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, fingerprint=_fingerprint(map_file), options=options, keys=index.keys,
                         labels=index.labels, lines=index.lines, begin=index.begin, end=index.end,
                         chunk_starts=index.chunk_starts)
            os.replace(tmp, target)
        except OSError as e:
            if os.path.exists(tmp):
                os.unlink(tmp)
            if log is not None:
                log.warning("%s: cannot write the index cache %s: %s", map_file, target, e)
    return index
