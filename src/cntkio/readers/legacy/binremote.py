"""A BinaryReader file at a URL (:mod:`cntkio.remote`): the prefix and the JSON header fetched on
open, a chunk's rows of each section (and its invalid flags) one ranged GET each, fetched ahead.

It never fetches the object whole, never maps it (``cacheViews``/``cacheMaps`` need a local file)
and never writes it; a replaced object is ``ObjectChanged`` naming the URL.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ...remote import RemoteObject, check_readable, is_remote, local_path, remote_options
from .binary import BinaryFile, CacheError

__all__ = ["ObjectRanges", "open_binary", "row_span"]


def row_span(entry: Mapping, a: int, b: int) -> tuple[int, int]:
    """The bytes of rows ``[a, b)`` of a section (or of the invalid flags) in its file."""
    row = int(np.prod(entry["shape"][1:], dtype=np.int64)) * np.dtype(entry["dtype"]).itemsize
    pos = int(entry["offset"]) + a * row
    return pos, pos + (b - a) * row


class ObjectRanges:
    """The byte ranges of an object, as :class:`~cntkio.deserializers.ranges.FileRanges` gives a
    local file's (``size``, ``read``, ``read_into``): ranged reads of :class:`RemoteObject`, served
    from the chunk cache or fetched."""

    def __init__(self, obj: RemoteObject) -> None:
        self.obj, self.path, self.size, self.what = obj, obj.url, obj.size, "binary file"

    def read_into(self, buf, offset: int) -> None:
        view = memoryview(buf).cast("B")
        n = len(view)
        data = self.obj.read(offset, offset + n)
        if len(data) != n:
            raise CacheError(f"binary file {self.path!r} is truncated: bytes {offset} to {offset + n} read, "
                             f"the object has {self.size}")
        view[:] = data

    def read(self, offset: int, n: int) -> np.ndarray:
        out = np.empty(n, np.uint8)
        self.read_into(out, offset)
        return out

    def prefetch(self, spans: list[tuple[int, int]]) -> None:
        """Start fetching these byte ranges (the ones the next chunks read)."""
        self.obj.prefetch(spans)

    def fileno(self) -> int:
        raise CacheError(f"binary file {self.path!r} is at a URL: it is read by ranged GETs, never mapped "
                         "(cacheViews and cacheMaps need a local file)")

    def close(self) -> None:
        pass


def open_binary(path: str, remote: Mapping | None) -> BinaryFile:
    """The binary file at ``path``: at a URL over its :class:`ObjectRanges` (``remote``: the
    object-store keys of the reader section); a local path (``file://`` too) read with pread."""
    if not is_remote(path):
        return BinaryFile(local_path(path))
    try:
        obj = check_readable(path, remote_options(remote), "binary file")
    except FileNotFoundError as e:
        raise CacheError(f"binary file {path!r} cannot be opened: {e.strerror or e}") from e
    return BinaryFile(path, ObjectRanges(obj))
