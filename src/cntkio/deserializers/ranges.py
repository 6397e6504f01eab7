"""Byte ranges of an input file read with ``pread``: what CBF, CTF and HTK chunk loads read through.

Must never map the file: a mapped page of a file that another process cuts short faults (SIGBUS)
and ends the process, where a short ``pread`` is a :class:`FileChangedError` naming the file.

The interface is small on purpose, so that another source (an object store, a file kept in
memory) can stand in for a local file: ``size``, ``read_into(buf, offset)``, ``read(offset, n)``
and ``close()``, picklable (a worker process opens the file again). :func:`open_ranges` gives
:class:`FileRanges` (a local file) or :class:`BytesRanges` (bytes in memory).
"""
from __future__ import annotations

import os
import threading
from typing import Union

import numpy as np

from .._native import native
from ..errors import FormatError

__all__ = ["FileChangedError", "FileRanges", "BytesRanges", "ObjectRanges", "Ranges", "open_ranges", "ScratchPool",
           "SCRATCH"]

_READ_STEP = 1 << 30        # one pread call reads at most this much (Linux caps a call near 2 GiB)


class FileChangedError(FormatError, OSError):
    """The file is shorter than when it was opened (another process cut it or replaced it in
    place): the read names the file, the byte range and both sizes. Also an OSError, as a short
    read of a file is."""


class FileRanges:
    """A local file opened once for reading byte ranges (``os.preadv``: no seek, safe from any
    thread). ``size`` is the size when opened; a range past what the file holds when it is read
    raises :class:`FileChangedError`."""

    def __init__(self, path: str, *, what: str = "file") -> None:
        self.path = os.fspath(path)
        self.what = what
        self._fd: int | None = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        self.size = os.fstat(self._fd).st_size

    def fileno(self) -> int:
        """The open file's descriptor (ValueError once closed)."""
        if self._fd is None:
            raise ValueError(f"{self.path}: the {self.what} is closed")
        return self._fd

    def read_into(self, buf, offset: int) -> None:
        """Fill the writable buffer ``buf`` (any C-contiguous array or bytearray) with the bytes
        at ``[offset, offset + len(buf))``."""
        fd = self._fd
        if fd is None:
            raise ValueError(f"{self.path}: the {self.what} is closed")
        view = memoryview(buf).cast("B")
        n, done = len(view), 0
        if offset < 0 or offset + n > self.size:
            raise self._short(offset, n, self.size)
        while done < n:
            got = os.preadv(fd, [view[done:done + _READ_STEP]], offset + done)
            if got <= 0:
                raise self._short(offset, n, os.fstat(fd).st_size)
            done += got

    def read(self, offset: int, n: int) -> np.ndarray:
        """The bytes at ``[offset, offset + n)`` as a new uint8 array."""
        out = np.empty(n, np.uint8)
        self.read_into(out, offset)
        return out

    def _short(self, offset: int, n: int, now: int) -> FileChangedError:
        if now < self.size:
            return FileChangedError(f"the {self.what} changed after it was indexed (it is shorter now)", file=self.path,
                                    offset=offset, expected=f"{self.size} bytes (bytes {offset} to {offset + n} read)",
                                    found=f"{now} bytes")
        return FileChangedError(f"a read of the {self.what} runs past its end", file=self.path, offset=offset,
                                expected=f"bytes {offset} to {offset + n} within its {self.size}",
                                found=f"{now} bytes")

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_fd"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self.path is not None:
            self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class BytesRanges:
    """The same interface over bytes held in memory (``keepDataInMemory``)."""

    def __init__(self, data: bytes, path: str = "<memory>", *, what: str = "file") -> None:
        self.path, self.what, self._data, self.size = path, what, data, len(data)

    def read_into(self, buf, offset: int) -> None:
        view = memoryview(buf).cast("B")
        if offset < 0 or offset + len(view) > self.size:
            raise FileChangedError(f"a read of the {self.what} runs past its end", file=self.path, offset=offset,
                                   expected=f"bytes {offset} to {offset + len(view)} within its {self.size}",
                                   found=f"{self.size} bytes")
        view[:] = memoryview(self._data)[offset:offset + len(view)]

    def read(self, offset: int, n: int) -> np.ndarray:
        out = np.empty(n, np.uint8)
        self.read_into(out, offset)
        return out

    def close(self) -> None:
        pass


class ObjectRanges:
    """The same interface over an object read by ``read(begin, end)`` (an object at a URL:
    :class:`cntkio.remote.RemoteObject`'s ranged GETs); closing it is its owner's."""

    def __init__(self, obj, path: str, *, what: str = "file") -> None:
        self.obj, self.path, self.what, self.size = obj, path, what, obj.size

    def read_into(self, buf, offset: int) -> None:
        view = memoryview(buf).cast("B")
        data = self.obj.read(offset, offset + len(view)) if len(view) else b""
        if len(data) != len(view):
            raise FileChangedError(f"a read of the {self.what} came back short", file=self.path, offset=offset,
                                   expected=f"{len(view)} bytes", found=f"{len(data)} bytes")
        view[:] = data

    def read(self, offset: int, n: int) -> np.ndarray:
        out = np.empty(n, np.uint8)
        self.read_into(out, offset)
        return out

    def close(self) -> None:
        pass


Ranges = Union[FileRanges, BytesRanges, ObjectRanges]


def open_ranges(path: str, *, in_memory: bool = False, what: str = "file") -> Ranges:
    """The file ``path`` read by ranges: from the file (pread), or read whole into memory once."""
    if in_memory:
        with open(path, "rb") as f:
            return BytesRanges(f.read(), os.fspath(path), what=what)
    return FileRanges(path, what=what)


class ScratchPool:
    """Buffers for chunk reads: fresh memory costs a page fault and the kernel's zeroing per page,
    more than the read itself. ``take(n)`` gives a uint8 array of exactly ``n`` bytes: with the C
    core, from its pool of released buffers (``_cbf.pooled``; the buffer goes back to the pool by
    itself once the array and every view of it are gone, so a chunk's arrays may keep viewing it);
    else a view of a buffer kept here, which ``give(a)`` returns once nothing views it any more
    (at most ``count`` buffers and ``limit`` bytes are kept)."""

    def __init__(self, count: int = 4, limit: int = 256 << 20) -> None:
        self.count, self.limit = count, limit
        self._free: list[np.ndarray] = []
        self._lock = threading.Lock()

    def take(self, n: int) -> np.ndarray:
        mod = native("cbf")
        if mod is not None:
            return mod.pooled(n)
        with self._lock:
            best = None
            for i, b in enumerate(self._free):
                if n <= len(b) <= 2 * n + (1 << 20) and (best is None or len(b) < len(self._free[best])):
                    best = i
            buf = self._free.pop(best) if best is not None else None
        if buf is None:
            buf = np.empty(max(n, 1), np.uint8)
        return buf[:n]

    def give(self, a: np.ndarray) -> None:
        base = a.base if isinstance(a.base, np.ndarray) else a
        if not isinstance(base, np.ndarray) or base.base is not None:
            return                                # (a pooled array of the C core: it goes back itself)
        with self._lock:
            if len(self._free) < self.count and sum(len(b) for b in self._free) + len(base) <= self.limit:
                self._free.append(base)


#: the process's pool of chunk-read buffers, shared by every reader (a new reader's first chunk
#: then reuses what an earlier one read into)
SCRATCH = ScratchPool(count=8, limit=256 << 20)
