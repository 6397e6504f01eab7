"""One object of an object store, reached through fsspec: its identity (size and ETag/generation),
and ranged GETs run on the back end's event loop, bounded in number, retried with backoff.

It never reads an object other than by URL through fsspec, never waits for a reply holding the GIL
(callers block on a future), and never returns bytes of a version other than the one it opened.
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import contextlib
import os
import threading
from typing import Any

from .._log import get_logger
from ..errors import RemoteError
from .options import RemoteOptions

__all__ = ["Store", "ObjectChanged", "RemoteNotFound", "RemoteDenied", "identity_of", "file_system", "EXTRAS"]

_log = get_logger("remote")

#: the pip extra that brings each protocol's back end
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure",
          "abfss": "azure", "adl": "azure", "http": "http", "https": "http"}

#: the fields of an fsspec ``info()`` that name an object's version, first found wins
_VERSION_FIELDS = ("ETag", "etag", "generation", "VersionId", "version_id", "md5Hash", "LastModified",
                   "last_modified", "mtime", "Last-Modified")


class ObjectChanged(RemoteError):
    """The object was replaced after it was opened (its ETag or generation differs)."""


class RemoteNotFound(RemoteError, FileNotFoundError):
    """The object does not exist (or the credential may not see it)."""


class RemoteDenied(RemoteError, PermissionError):
    """The store refused the credential or the request (401/403)."""


def identity_of(info: dict) -> str:
    """The version of an object from its fsspec ``info()``: its ETag, generation, version id or
    modification time, as text ("" when the back end gives none)."""
    for name in _VERSION_FIELDS:
        value = info.get(name)
        if value not in (None, ""):
            return f"{name}={value}"
    return ""


_FS_LOCK = threading.Lock()


def file_system(url: str, options: RemoteOptions):
    """``(fs, path)``: the fsspec file system of ``url`` with ``storageOptions`` (fsspec caches
    the instance per options and process), and the path within it. A protocol whose back end is
    not installed raises :class:`~cntkio.errors.RemoteError` naming the extra to install."""
    import fsspec
    protocol = url.split("://", 1)[0].lower()
    try:
        with _FS_LOCK:
            return fsspec.core.url_to_fs(url, **options.storage_options)
    except ImportError as exc:
        extra = EXTRAS.get(protocol)
        hint = f"pip install 'cntkio[{extra}]'" if extra else "install the fsspec back end of this protocol"
        raise RemoteError(f"no back end for {protocol}:// URLs ({exc}); {hint}", url=url) from exc
    except ValueError as exc:
        raise RemoteError(f"{protocol}:// is not a protocol fsspec knows ({exc})", url=url) from exc


class Store:
    """Ranged reads of one object at the version it had when opened.

    ``get(begin, end)`` returns a ``concurrent.futures.Future`` of the bytes: on the file system's
    event loop (s3fs, gcsfs, adlfs, HTTP) or, for a synchronous file system, on a small thread pool.
    S3 and HTTP GETs carry ``If-Match`` with the ETag the object was opened at (a replaced object
    answers 412, raised as :class:`ObjectChanged`); other back ends have the object's identity
    checked again after each read. A connection error, a timeout or a 5xx is retried up to
    ``retries`` times (logged as a warning); then :class:`~cntkio.errors.RemoteError` names the
    URL and the byte range.
    """

    def __init__(self, url: str, options: RemoteOptions, size: int | None = None,
                 version: str | None = None) -> None:
        self.url, self.options = url, options
        self.fs, self.path = file_system(url, options)
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        self.kind = "s3" if "s3" in protocols else "http" if "http" in protocols or "https" in protocols \
            else "other"
        self._async = bool(getattr(self.fs, "async_impl", False))
        self._pid = os.getpid()
        self._sem: asyncio.Semaphore | None = None
        self._pool: cf.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        if size is None or version is None:
            try:
                self.fs.invalidate_cache(self.path)   # a listing made earlier may hold an older version
            except (AttributeError, NotImplementedError):
                pass
            info = self._call(self._info, None, None)
            size, version = int(info["size"]), identity_of(info)
            self._etag = info.get("ETag") or info.get("etag")
        else:
            self._etag = version.split("=", 1)[1] if version.lower().startswith("etag=") else None
        self.size, self.version = int(size), version

    # -- running --------------------------------------------------------------------------------

    def _after_fork(self) -> None:
        """In a forked child (a DataLoader worker) the parent's event loop thread and pool are gone:
        take this process's file system and start afresh."""
        self._pid = os.getpid()
        self.fs, self.path = file_system(self.url, self.options)
        self._sem, self._pool, self._lock = None, None, threading.Lock()

    def _submit(self, make, begin, end, retries: int | None = None) -> cf.Future:
        """Run the coroutine factory ``make`` with retries; a Future of its result."""
        if self._pid != os.getpid():
            self._after_fork()
        if self._async:
            loop = self.fs.loop
            return asyncio.run_coroutine_threadsafe(self._with_retries(make, begin, end, retries), loop)
        with self._lock:
            if self._pool is None:
                self._pool = cf.ThreadPoolExecutor(max_workers=self.options.in_flight,
                                                   thread_name_prefix="cntkio-remote")
        return self._pool.submit(lambda: asyncio.run(self._with_retries(make, begin, end, retries)))

    def _call(self, make, begin, end):
        return self._submit(make, begin, end).result()

    async def _with_retries(self, make, begin, end, retries: int | None = None):
        retries = self.options.retries if retries is None else retries
        if self._async and self._sem is None:   # created on the file system's loop, used there only
            self._sem = asyncio.Semaphore(self.options.in_flight)
        gate: Any = self._sem if self._async else contextlib.nullcontext()  # a pool bounds the others
        attempt = 0
        while True:
            try:
                async with gate:
                    return await make()
            except ObjectChanged:
                raise
            except Exception as exc:  # the back ends raise OSError, their own client errors, timeouts
                status = _status(exc)
                if not _transient(exc, status):
                    raise self._error(exc, begin, end, status) from exc
                if attempt >= retries:
                    raise self._error(exc, begin, end, status, attempt + 1) from exc
                delay = min(30.0, self.options.retry_delay * (2 ** attempt))
                attempt += 1
                _log.warning("%s%s: %s; retry %d of %d in %.2f s", self.url, _range(begin, end),
                             _describe(exc, status), attempt, retries, delay)
                await asyncio.sleep(delay)

    def _error(self, exc, begin, end, status, attempts: int | None = None) -> RemoteError:
        if status == 412:
            return ObjectChanged(f"the object changed while it was read (its version is no longer "
                                 f"{self.version or 'the one opened'}); start again to read the new one",
                                 url=self.url, begin=begin, end=end)
        tail = f" (after {attempts} attempts)" if attempts else ""
        if isinstance(exc, FileNotFoundError) or status == 404:
            return RemoteNotFound(f"{_describe(exc, status)}", url=self.url, begin=begin, end=end)
        if isinstance(exc, PermissionError) or status in (401, 403):
            return RemoteDenied(f"{_describe(exc, status)}", url=self.url, begin=begin, end=end)
        return RemoteError(f"{_describe(exc, status)}{tail}", url=self.url, begin=begin, end=end)

    # -- requests -------------------------------------------------------------------------------

    async def _info(self) -> dict:
        if self._async:
            return await self.fs._info(self.path)
        return self.fs.info(self.path)

    def get(self, begin: int, end: int, retries: int | None = None) -> cf.Future:
        """A Future of bytes ``begin:end`` of the object (as opened); ``retries``: instead of the
        options' (0 for a fetch ahead: the read that needs the bytes retries)."""
        return self._submit(lambda: self._get(begin, end), begin, end, retries)

    async def _get(self, begin: int, end: int) -> bytes:
        if end <= begin:
            return b""
        fs = self.fs
        if self.kind == "s3":
            bucket, key, version_id = fs.split_path(self.path)
            kw: dict[str, Any] = {"Range": f"bytes={begin}-{end - 1}"}
            if version_id:
                kw["VersionId"] = version_id
            if self._etag:
                kw["IfMatch"] = self._etag
            resp = await fs._call_s3("get_object", Bucket=bucket, Key=key, **kw)
            try:
                data = await resp["Body"].read()
            finally:
                resp["Body"].close()
        elif self.kind == "http":
            headers = {"If-Match": self._etag} if self._etag else {}
            data = await fs._cat_file(self.path, start=begin, end=end, headers=headers)
        elif self._async:
            data = await fs._cat_file(self.path, start=begin, end=end)
            await self._verify()
        else:
            data = fs.cat_file(self.path, start=begin, end=end)
            await self._verify()
        if len(data) != end - begin:
            raise _ShortRead(f"the store answered {len(data)} bytes for a range of {end - begin} "
                             "(a server that ignores Range, or an object cut short)")
        return data

    async def _verify(self) -> None:
        """Back ends without a conditional GET: the object's identity, checked after a read (a
        change before the read completed shows here)."""
        info = await self._info()
        if int(info["size"]) != self.size or identity_of(info) != self.version:
            raise ObjectChanged(f"the object changed while it was read (version {self.version!r}, now "
                                f"{identity_of(info)!r}, size {self.size}, now {info['size']})", url=self.url)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


class _ShortRead(OSError):
    pass


def _range(begin, end) -> str:
    return "" if begin is None else f" bytes {begin}-{end}"


def _status(exc: BaseException) -> int | None:
    """The HTTP status behind a back end's error, when it tells one."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        status = getattr(e, "status", None)
        if isinstance(status, int):
            return status
        response = getattr(e, "response", None)
        if isinstance(response, dict):
            code = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if isinstance(code, int):
                return code
            if response.get("Error", {}).get("Code") == "PreconditionFailed":
                return 412
        if "PreconditionFailed" in str(e) or "Precondition Failed" in str(e):
            return 412
        e = e.__cause__ or e.__context__
    return None


def _transient(exc: BaseException, status: int | None) -> bool:
    """Worth another try: a connection error, a timeout, a short read, 408/429/5xx; not a missing
    object, a refused credential, a changed object or a bad request."""
    if status is not None:
        return status in (408, 429) or status >= 500
    if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError,
                        ValueError, TypeError, KeyError)):
        return False
    return isinstance(exc, (OSError, TimeoutError, asyncio.TimeoutError, ConnectionError)) or \
        type(exc).__module__.split(".")[0] in ("aiohttp", "botocore", "aiobotocore", "urllib3", "requests")


def _describe(exc: BaseException, status: int | None) -> str:
    text = str(exc) or type(exc).__name__
    name = type(exc).__name__
    return f"{name}: {text}" + (f" (HTTP {status})" if status is not None and str(status) not in text else "")
