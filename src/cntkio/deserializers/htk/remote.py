"""HTK feature files at URLs (:mod:`cntkio.remote`): headers fetched in parallel when the SCP files
are indexed, and the frames of an utterance (a frame range of an archive) fetched as one ranged GET
when a chunk is read; the frame ranges of the chunks the window loads next are fetched ahead.

It never fetches a whole archive to read some of its utterances.
"""
from __future__ import annotations

import concurrent.futures as cf

import numpy as np

from ...errors import FormatError
from ...remote import RemoteOptions, is_remote, open_object
from .htkfile import HEADER_BYTES, HTKHeader, check_header, read_header

__all__ = ["read_headers", "RemoteFrameFiles"]


def read_headers(paths: list[str], options: RemoteOptions) -> list[HTKHeader]:
    """The checked header of every file (local ones read from disk; at most ``remoteInFlight``
    objects asked for at once)."""
    def one(path: str) -> HTKHeader:
        if not is_remote(path):
            return read_header(path)
        try:
            obj = open_object(path, options)
            raw = bytes(obj.read(0, HEADER_BYTES))
        except OSError as e:
            raise FormatError(f"cannot open the HTK feature file: {e}", file=path) from e
        return check_header(raw, obj.size, path)
    if not any(is_remote(p) for p in paths):
        return [read_header(p) for p in paths]
    with cf.ThreadPoolExecutor(max_workers=max(1, min(options.in_flight, len(paths)))) as pool:
        return list(pool.map(one, paths))


class _RemoteFrames:
    """The frames of one file at a URL, sliced as ``frames[s:e]`` (rows ``s`` to ``e``, fetched
    then: a ``(e - s, dim)`` array in the file's byte order)."""

    def __init__(self, obj, header: HTKHeader) -> None:
        self.obj, self.header = obj, header

    def __getitem__(self, rows: slice) -> np.ndarray:
        h = self.header
        s, e = rows.start or 0, h.num_frames if rows.stop is None else rows.stop
        data = self.obj.read(HEADER_BYTES + s * h.samp_size, HEADER_BYTES + e * h.samp_size)
        return np.frombuffer(data, h.byteorder + "f4").reshape(-1, h.dim)


class RemoteFrameFiles:
    """The frames of feature files at URLs: ``frames(url, header)`` is sliced to fetch a frame
    range; ``prefetch`` starts fetching frame ranges. (Local files are read with pread by the
    deserializer, never through this.)"""

    def __init__(self, options: RemoteOptions) -> None:
        self.options = options

    def frames(self, path: str, header: HTKHeader):
        return _RemoteFrames(open_object(path, self.options), header)

    def close(self) -> None:
        """Nothing held: the objects are the store's (:func:`cntkio.remote.open_object`)."""

    def prefetch(self, path: str, header: HTKHeader, first: int, stop: int) -> None:
        """Start fetching frames ``first:stop`` of the file at ``path`` (no-op for a local file)."""
        if is_remote(path):
            open_object(path, self.options).prefetch([(HEADER_BYTES + first * header.samp_size,
                                                       HEADER_BYTES + stop * header.samp_size)])
