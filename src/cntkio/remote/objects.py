"""A URL opened for reading: byte ranges as the formats ask for them (a chunk, a frame range, a zip
member, an image), served from the local chunk cache or fetched as parallel ranged GETs, and
ranges fetched ahead of the reader (``prefetch``).

It never reads the object whole unless asked to, never holds more than a bounded amount of bytes
fetched ahead, and is picklable (a worker process opens the same version again, without a HEAD).
"""
from __future__ import annotations

import concurrent.futures as cf
import io
import os
import posixpath
import threading
from collections import OrderedDict

from .._log import get_logger
from .cache import RangeCache, object_key
from .options import RemoteOptions
from .store import ObjectChanged, Store

__all__ = ["RemoteObject", "RemoteFile", "open_object", "resolve", "read_whole", "AHEAD_BYTES"]

_log = get_logger("remote")

#: bytes fetched ahead and held in memory when there is no chunk cache (with one they go to disk)
AHEAD_BYTES = 256 << 20

_CACHES: dict[tuple[str, int], RangeCache] = {}
#: the objects opened in this process, the least recently opened forgotten past ``_MAX_OBJECTS``
#: (a map of single images opens one per image)
_OBJECTS: OrderedDict[tuple, "RemoteObject"] = OrderedDict()
_MAX_OBJECTS = 4096
_REGISTRY_LOCK = threading.Lock()
_AHEAD_POOL: list[tuple[int, cf.ThreadPoolExecutor]] = []


def _cache_for(options: RemoteOptions) -> RangeCache | None:
    """The process's :class:`RangeCache` of ``cacheDir`` (None with ``cacheLimit = 0``); the index
    caches live in the same folder, so one exists whenever a folder is named."""
    key = (options.cache_dir, options.cache_limit)
    with _REGISTRY_LOCK:
        cache = _CACHES.get(key)
        if cache is None:
            cache = _CACHES[key] = RangeCache(options.cache_dir, options.cache_limit)
        return cache


def _ahead_pool() -> cf.ThreadPoolExecutor:
    """The threads that fetch ahead (this process's: a forked child starts its own)."""
    with _REGISTRY_LOCK:
        if not _AHEAD_POOL or _AHEAD_POOL[0][0] != os.getpid():
            _AHEAD_POOL[:] = [(os.getpid(), cf.ThreadPoolExecutor(max_workers=2, thread_name_prefix="cntkio-ahead"))]
        return _AHEAD_POOL[0][1]


def open_object(url: str, options: RemoteOptions) -> "RemoteObject":
    """The object at ``url`` (one per URL and options in a process: its size and version are asked
    for once, and every reader of it reads that version)."""
    token = (url, options.token())
    with _REGISTRY_LOCK:
        obj = _OBJECTS.get(token)
        if obj is not None:
            _OBJECTS.move_to_end(token)
    if obj is None:
        obj = RemoteObject(url, options)
        with _REGISTRY_LOCK:
            obj = _OBJECTS.setdefault(token, obj)
            while len(_OBJECTS) > _MAX_OBJECTS:
                _OBJECTS.popitem(last=False)
    return obj


def forget(url: str) -> None:
    """Open ``url`` afresh on its next use (its size and version asked for again): a new run of a
    tool after the object was replaced."""
    with _REGISTRY_LOCK:
        for token in [t for t in _OBJECTS if t[0] == url]:
            del _OBJECTS[token]


def resolve(base_url: str, path: str) -> str:
    """A path written in the file at ``base_url`` (a map or SCP file): a URL or an absolute path as
    written; ``...`` at its start (CNTK's "the folder of this file") and a relative path are taken
    from the folder of ``base_url``."""
    from ..values import is_url
    if is_url(path) or path.startswith("/"):
        return path
    scheme, rest = base_url.split("://", 1)
    if path.startswith("..."):
        path = path[3:].lstrip("/\\")
    return f"{scheme}://{posixpath.normpath(posixpath.join(posixpath.dirname(rest), path))}"


def read_whole(url: str, options: RemoteOptions) -> bytes:
    """The whole object at ``url`` (a map, SCP, MLF or label file; a single image)."""
    return bytes(open_object(url, options).read(0, None))


class RemoteObject:
    """One version of one object: ``read(begin, end)`` its bytes (module docstring).

    ``url``, ``size``, ``version`` (ETag, generation, ...: the version read, whatever the store
    holds later), ``key`` (its name in the chunk cache).
    """

    def __init__(self, url: str, options: RemoteOptions, size: int | None = None,
                 version: str | None = None) -> None:
        self.url, self.options = url, options
        self._store = Store(url, options, size, version)
        self.size, self.version = self._store.size, self._store.version
        self.key = object_key(url, self.size, self.version)
        self.cache = _cache_for(options)
        self._disk = self.cache is not None and options.cache_limit > 0
        self._lock = threading.Lock()
        self._ahead: OrderedDict[tuple[int, int], cf.Future] = OrderedDict()
        self._ahead_bytes = 0
        #: bytes fetched from the store and served from the chunk cache (for tests and benchmarks)
        self.fetched = 0
        self.from_cache = 0

    @property
    def caching(self) -> bool:
        """Whether fetched ranges are kept in the chunk cache (``cacheLimit`` > 0)."""
        return self._disk

    # -- reading ------------------------------------------------------------------------------

    def read(self, begin: int, end: int | None = None):
        """Bytes ``begin:end`` (``end`` None: to the end), a ``bytes``-like object. Raises
        :class:`~cntkio.errors.RemoteError` naming the URL and the range when the store fails past
        its retries, or ``ObjectChanged`` when the object was replaced."""
        end = self.size if end is None else min(int(end), self.size)
        begin = max(0, int(begin))
        if end <= begin:
            return b""
        with self._lock:
            fut = self._ahead.pop((begin, end), None)
        if fut is not None:
            with self._lock:
                self._ahead_bytes -= end - begin if not self._disk else 0
            try:
                data = fut.result()       # fetched ahead
            except Exception:             # noqa: BLE001 - a failed fetch ahead is tried again now
                data = None
            if data is not None:
                return data
        return self._fetch(begin, end)

    def read_many(self, ranges) -> list:
        """Bytes of each ``(begin, end)`` range, their GETs all in flight at once (bounded by
        ``remoteInFlight``): the sequence lengths at the start of every CBF chunk, say."""
        clamped = [(max(0, int(a)), min(int(b), self.size)) for a, b in ranges]
        return self._fetch_many([(a, b) for a, b in clamped if b > a], clamped)

    def _fetch(self, begin: int, end: int, ahead: bool = False):
        return self._fetch_many([(begin, end)], [(begin, end)], ahead)[0]

    def _fetch_many(self, wanted: list, order: list, ahead: bool = False) -> list:
        """Fetch ``wanted`` (cache first, then the gaps as parts of ``part_size``); the results in
        the order of ``order`` (empty ranges: ``b""``)."""
        step = self.options.part_size
        plans, parts = [], []
        for begin, end in dict.fromkeys(wanted):
            buf, gaps = self.cache.lookup(self.key, begin, end) if self._disk else (None, [(begin, end)])
            first = len(parts)
            for a, b in gaps:
                parts.extend((p, min(b, p + step)) for p in range(a, b, step))
            plans.append((begin, end, buf, gaps, first, len(parts)))
        futures = [self._store.get(a, b, 0 if ahead else None) for a, b in parts]
        try:
            got = [f.result() for f in futures]
        except BaseException as exc:
            for f in futures:
                f.cancel()
            if isinstance(exc, ObjectChanged):   # the next open in this process takes the new version
                forget(self.url)
            raise
        out = {}
        for begin, end, buf, gaps, i, j in plans:
            missing = sum(b - a for a, b in gaps)
            self.fetched += missing
            self.from_cache += end - begin - missing
            if buf is None and j - i == 1:
                data = got[i]
            else:
                if buf is None:
                    buf = bytearray(end - begin)
                for (a, b), piece in zip(parts[i:j], got[i:j]):
                    buf[a - begin:b - begin] = piece
                data = buf
            if self._disk and gaps:   # the whole range as one entry: read back as one mapping
                self.cache.store(self.key, begin, end, data)
            out[(begin, end)] = data
        return [out.get((a, b), b"") for a, b in order]

    def prefetch(self, ranges) -> None:
        """Start fetching these ``(begin, end)`` ranges in the background (the chunks the reader's
        window will ask for next): into the chunk cache, or held in memory (at most
        ``AHEAD_BYTES``) when there is none. Ranges already cached or under way are skipped."""
        for begin, end in ranges:
            begin, end = max(0, int(begin)), min(int(end), self.size)
            if end <= begin:
                continue
            with self._lock:
                if (begin, end) in self._ahead:
                    continue
                if not self._disk and self._ahead_bytes + (end - begin) > AHEAD_BYTES:
                    return
            if self._disk and self._cached(begin, end):
                continue
            fut = _ahead_pool().submit(self._fetch_ahead, begin, end)
            with self._lock:
                self._ahead[(begin, end)] = fut
                if not self._disk:
                    self._ahead_bytes += end - begin
                while len(self._ahead) > 4 * self.options.in_flight:   # never read: forget the oldest
                    (a, b), old = self._ahead.popitem(last=False)
                    old.cancel()
                    if not self._disk:
                        self._ahead_bytes -= b - a

    def _cached(self, begin: int, end: int) -> bool:
        return self.cache is not None and self.cache.covers(self.key, begin, end)

    def _fetch_ahead(self, begin: int, end: int):
        """A fetch ahead: tried once (a failure is left to the read that needs the bytes, which
        retries and reports it), its bytes into the cache or kept for that read."""
        data = self._fetch(begin, end, ahead=True)
        return None if self._disk else data

    def open(self, buffer_size: int = 1 << 18) -> io.BufferedReader:
        """A read-only, seekable file object over the object (for ``zipfile``), buffered by
        ``buffer_size`` bytes a read."""
        return io.BufferedReader(RemoteFile(self), buffer_size=buffer_size)

    def index_cache_path(self, suffix: str) -> str | None:
        """Where the index cache of this version of the object is kept (``<cacheDir>/index/``), or
        None without a cache folder."""
        if self.cache is None:
            return None
        return self.cache.side_path("index", self.key) + suffix

    def close(self) -> None:
        with self._lock:
            pending, self._ahead = list(self._ahead.values()), OrderedDict()
            self._ahead_bytes = 0
        for f in pending:
            f.cancel()

    def __getstate__(self) -> dict:
        return {"url": self.url, "options": self.options, "size": self.size, "version": self.version}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["url"], state["options"], state["size"], state["version"])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"RemoteObject({self.url!r}, size={self.size}, version={self.version!r})"


class RemoteFile(io.RawIOBase):
    """The object as a raw, seekable, read-only file (reads are ranged reads of :meth:`RemoteObject.read`)."""

    def __init__(self, obj: RemoteObject) -> None:
        super().__init__()
        self.obj, self.pos = obj, 0
        self.name = obj.url

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.obj.size}[whence]
        pos = base + offset
        if pos < 0:
            raise OSError(22, f"negative seek position {pos}", self.obj.url)
        self.pos = pos
        return pos

    def readinto(self, b) -> int:
        n = len(b)
        data = self.obj.read(self.pos, self.pos + n)
        k = len(data)
        b[:k] = data
        self.pos += k
        return k

    def readall(self) -> bytes:
        data = bytes(self.obj.read(self.pos, None))
        self.pos += len(data)
        return data


def check_readable(url: str, options: RemoteOptions, what: str) -> RemoteObject:
    """:func:`open_object`, with a missing object named as ``what`` (``"CTF input file"``):
    FileNotFoundError, as for a local path."""
    try:
        return open_object(url, options)
    except FileNotFoundError as exc:
        raise FileNotFoundError(2, f"{what} does not exist: {url!r} ({exc})", url) from exc
