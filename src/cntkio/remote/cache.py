"""The local cache of fetched byte ranges (``cacheDir``, ``cacheLimit``): one file per range read,
least recently used ranges dropped first, shared by every process on the machine.

It never serves bytes of another version of an object (entries live under a key made of the URL,
the size and the ETag/generation), never shows a half-written entry (a temporary name, then
``os.replace``), and never grows past ``cacheLimit`` for longer than one entry's write.
"""
from __future__ import annotations

import bisect
import errno
import hashlib
import mmap
import os
import tempfile
import threading

from .._log import get_logger

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux or macOS: one process at a time
    fcntl = None  # type: ignore[assignment]

__all__ = ["RangeCache", "object_key"]

_log = get_logger("remote")


def object_key(url: str, size: int, version: str) -> str:
    """The cache's name for one version of an object: SHA-256 of URL, size and version."""
    return hashlib.sha256(f"{url}\n{size}\n{version}".encode()).hexdigest()[:40]


class RangeCache:
    """Ranges of objects kept as files ``<cacheDir>/ranges/<object key>/<begin>-<end>``.

    ``lookup(key, begin, end)`` returns the bytes held for the range and the gaps still to fetch;
    ``store(key, begin, end, data)`` adds one. Using an entry sets its modification time (the LRU
    order); storing one adds its size to ``<cacheDir>/usage`` under an exclusive ``flock`` of
    ``<cacheDir>/lock``, and past ``limit`` the oldest entries of every object are deleted (all
    processes sharing the folder see the same count). A reader that loses an entry to another
    process's eviction fetches the range again.
    """

    def __init__(self, root: str, limit: int) -> None:
        self.root, self.limit = root, int(limit)
        self._ranges_dir = os.path.join(root, "ranges")
        os.makedirs(self._ranges_dir, exist_ok=True)
        self._lock = threading.Lock()
        self._known: dict[str, list[tuple[int, int]]] = {}
        self._longest: dict[str, int] = {}

    # -- entries of one object ------------------------------------------------------------------

    def _dir(self, key: str) -> str:
        return os.path.join(self._ranges_dir, key)

    def _list(self, key: str) -> list[tuple[int, int]]:
        try:
            names = os.listdir(self._dir(key))
        except FileNotFoundError:
            names = []
        out = []
        for name in names:
            a, sep, b = name.partition("-")
            if sep and a.isdigit() and b.isdigit():
                out.append((int(a), int(b)))
        out.sort()
        with self._lock:
            self._known[key] = out
            self._longest[key] = max((b - a for a, b in out), default=0)
        return out

    def _cover(self, key: str, entries: list[tuple[int, int]], begin: int, end: int):
        """``(pieces, gaps)``: entries covering ``begin:end`` in order, as ``(entry, a, b)`` (the
        part ``a:b`` read from ``entry``), and the parts no entry covers. Greedy: at each position
        the entry that started at or before it and reaches furthest."""
        longest = self._longest.get(key, 0)
        lo = bisect.bisect_left(entries, (begin - longest, -1))
        hi = bisect.bisect_left(entries, (end, -1))
        pieces, gaps = [], []
        pos, k, reach = begin, lo, None
        while pos < end:
            while k < hi and entries[k][0] <= pos:
                if reach is None or entries[k][1] > reach[1]:
                    reach = entries[k]
                k += 1
            if reach is not None and reach[1] > pos:
                stop = min(end, reach[1])
                pieces.append((reach, pos, stop))
            else:
                stop = entries[k][0] if k < hi else end
                gaps.append((pos, stop))
            pos = stop
        return pieces, gaps

    def covers(self, key: str, begin: int, end: int) -> bool:
        """Whether ``begin:end`` is held, as far as this process knows (no listing)."""
        with self._lock:
            entries = self._known.get(key)
        return bool(entries) and not self._cover(key, entries, begin, end)[1]

    def lookup(self, key: str, begin: int, end: int, refresh: bool = True):
        """``(buffer, gaps)``: a ``bytearray`` of ``end - begin`` bytes with every cached part
        filled in, and the ``(a, b)`` parts still missing (None instead of the buffer when
        nothing is cached). ``refresh``: on a miss, list the object's entries again (another
        process may have stored them)."""
        with self._lock:
            entries = self._known.get(key)
        if entries is None:
            entries = self._list(key)
        pieces, gaps = self._cover(key, entries, begin, end)
        if gaps and refresh:
            entries = self._list(key)
            pieces, gaps = self._cover(key, entries, begin, end)
        if not pieces:
            return None, [(begin, end)]
        if len(pieces) == 1 and not gaps:      # one entry holds it all: its pages, mapped (no copy)
            mapped = self._mapped(key, *pieces[0])
            if mapped is not None:
                return mapped, []
        out = bytearray(end - begin)
        view = memoryview(out)
        for (a0, b0), a, b in pieces:
            path = os.path.join(self._dir(key), f"{a0}-{b0}")
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:  # evicted by another process since it was listed
                self._list(key)
                gaps.append((a, b))
                continue
            try:
                n = os.preadv(fd, [view[a - begin:b - begin]], a - a0) if hasattr(os, "preadv") \
                    else _pread_into(fd, view[a - begin:b - begin], a - a0)
                if n != b - a:
                    gaps.append((a, b))
                    continue
                try:
                    os.utime(fd)          # most recently used
                except OSError:
                    pass
            finally:
                os.close(fd)
        gaps.sort()
        return out, gaps

    def _mapped(self, key: str, entry: tuple[int, int], a: int, b: int):
        """Bytes ``a:b`` of an entry as a read-only view of its mapped file (the entry is never
        changed in place: a deletion leaves the mapping valid), or None when it is gone."""
        try:
            fd = os.open(os.path.join(self._dir(key), f"{entry[0]}-{entry[1]}"), os.O_RDONLY)
        except FileNotFoundError:
            self._list(key)
            return None
        try:
            if os.fstat(fd).st_size != entry[1] - entry[0]:
                return None
            m = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            try:
                os.utime(fd)          # most recently used
            except OSError:
                pass
        finally:
            os.close(fd)
        return memoryview(m)[a - entry[0]:b - entry[0]]

    def store(self, key: str, begin: int, end: int, data) -> bool:
        """Keep ``data`` (bytes ``begin:end`` of object ``key``); False when it is larger than the
        cache or cannot be written (a warning is logged; reading goes on without it)."""
        n = end - begin
        if self.limit <= 0 or n <= 0 or n > self.limit:
            return False
        folder = self._dir(key)
        try:
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp", dir=folder)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                self._commit(tmp, os.path.join(folder, f"{begin}-{end}"), n)
            except BaseException:
                _unlink(tmp)
                raise
        except OSError as exc:
            _log.warning("the chunk cache %s cannot be written (%s); reading on without it", self.root, exc)
            return False
        with self._lock:
            entries = list(self._known.get(key, ()))   # copied: readers hold the old list
            bisect.insort(entries, (begin, end))
            self._known[key] = entries
            self._longest[key] = max(self._longest.get(key, 0), n)
        return True

    # -- the size bound ---------------------------------------------------------------------------

    def _commit(self, tmp: str, target: str, added: int) -> None:
        """Rename the written entry into place and count it, under the lock (so the count is the
        files' total, whatever other processes do); evict past the limit."""
        with _Flock(os.path.join(self.root, "lock")):
            usage_path = os.path.join(self.root, "usage")
            try:
                with open(usage_path) as f:
                    usage = int(f.read().strip() or 0)
            except (OSError, ValueError):
                usage = self._scan_total()
            try:
                usage -= os.stat(target).st_size     # the same range stored again: replaced
            except FileNotFoundError:
                pass
            os.replace(tmp, target)
            usage += added
            if usage > self.limit:
                usage = self._evict()
            _write_text(usage_path, str(usage))

    def _scan(self) -> list[tuple[float, int, str]]:
        out = []
        for obj in os.scandir(self._ranges_dir):
            if not obj.is_dir():
                continue
            for entry in os.scandir(obj.path):
                if entry.name.startswith(".tmp"):
                    continue
                try:
                    st = entry.stat()
                except FileNotFoundError:
                    continue
                out.append((st.st_mtime, st.st_size, entry.path))
        return out

    def _scan_total(self) -> int:
        return sum(s for _, s, _ in self._scan())

    def _evict(self) -> int:
        """Delete the least recently used entries down to 90% of the limit; the bytes left."""
        entries = sorted(self._scan())
        total = sum(s for _, s, _ in entries)
        target = int(self.limit * 0.9)
        dropped = 0
        for _, size, path in entries:
            if total <= target:
                break
            _unlink(path)
            total -= size
            dropped += 1
        if dropped:
            with self._lock:
                self._known.clear()
            _log.info("chunk cache %s: %d least recently used ranges deleted, %d bytes kept",
                      self.root, dropped, total)
        return total

    def usage(self) -> int:
        """The bytes held now (counted from the files)."""
        return self._scan_total()

    # -- other files kept in the cache folder -----------------------------------------------------

    def side_path(self, kind: str, key: str) -> str:
        """Where a small derived file of an object is kept (``<cacheDir>/<kind>/<key>``: the index
        cache of ``cacheIndex``); not counted against the limit."""
        folder = os.path.join(self.root, kind)
        os.makedirs(folder, exist_ok=True)
        return os.path.join(folder, key)


class _Flock:
    """An exclusive ``flock`` of a lock file for the duration of a ``with``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is not None:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        if fcntl is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _write_text(path: str, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp", dir=os.path.dirname(path))
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise


def _pread_into(fd: int, view: memoryview, offset: int) -> int:  # pragma: no cover - no preadv
    data = os.pread(fd, len(view), offset)
    view[:len(data)] = data
    return len(data)
