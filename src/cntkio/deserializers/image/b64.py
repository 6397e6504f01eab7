"""Base64ImageDeserializer: ``[key<TAB>]label<TAB>base64`` lines, indexed by byte offset and
chunked like CTF (``mapfile.index_base64_map``; ``cacheIndex = true`` keeps the index beside the
map as ``<map>.b64idx``), read through a read-only mapping of the file.

It is a random-access deserializer (``deserializers.protocol.RandomAccessDeserializer``): a
randomized source keeps only the window's text mapped and decodes each batch's images in delivery
order, on this deserializer's decode threads (OpenCV and base64 decoding release the GIL), rather
than decoding whole chunks of a few thousand images up front. A batch in which any image fails is
handed back (None) and read through ``get_chunk`` instead, which logs and counts each failure
exactly once. Both ways give the same pixels: an image's random draws depend on its position in
the file, not on how it was read.
"""
from __future__ import annotations

import base64
import binascii
import concurrent.futures as cf
import math
import mmap
import os
import threading
from typing import Any, Mapping

import numpy as np

from ..._log import get_logger
from ...errors import FormatError
from ...remote import local_copy
from ...values import to_bool
from ..protocol import ChunkData, ChunkInfo, SequenceTable
from .deserializer import ImageCore
from .mapfile import cached_base64_index

__all__ = ["Base64ImageDataDeserializer"]

_log = get_logger("deserializers.image")

#: images per decode task of a random-access read (smaller batches are decoded in one task)
_PER_TASK = 8


def _nothing() -> None:
    return None


class Base64ImageDataDeserializer(ImageCore):
    """``type = "Base64ImageDeserializer"`` (module docstring)."""

    def __init__(self, config: Mapping, trace_level: int = 1, **source_options: Any) -> None:
        super().__init__(config, trace_level, **source_options)
        # a map at a URL is read whole to be indexed: one copy in cacheDir (cntkio.remote.local_copy)
        # is indexed (its index cache kept beside it) and read by chunk as a local map is
        self._local = local_copy(self.map_file, config)
        ix = cached_base64_index(self._local, self.cfg.label_dim, self.cfg.chunk_size,
                                 to_bool(config.get("cacheIndex", False), "cacheIndex"), _log,
                                 self.cfg.numeric_keys)
        self.key_kind = "numeric" if self.cfg.numeric_keys else "string"
        self.index = ix
        cs = ix.chunk_starts
        self._chunks = [ChunkInfo(c, int(cs[c + 1] - cs[c]), int(cs[c + 1] - cs[c])) for c in range(len(cs) - 1)]
        self._lock = threading.Lock()
        self._file = open(self._local, "rb")
        self._map: mmap.mmap | None = None
        self._pool: cf.ThreadPoolExecutor | None = None
        self._threads = max(1, min(8, os.cpu_count() or 1))
        first = None
        if self.cfg.declared is None:           # no Scale: the first image gives the stream's shape
            img, why = self._image(0)
            if img is None:
                raise FormatError(f"the first image of the map cannot be read, and without a Scale "
                                  f"transform it gives the image stream's shape: {why}",
                                  file=self.map_file, line=int(ix.lines[0]) + 1)
            first = img
        self._set_shape(first)

    # --- reading ---------------------------------------------------------------------------
    def _mapping(self) -> mmap.mmap:
        with self._lock:
            if self._map is None:
                if self._file is None:
                    raise ValueError(f"{self.map_file}: the deserializer is closed")
                self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            return self._map

    def _image(self, i: int, sweep: int = 0):
        """Sequence ``i`` (its position in the file) decoded and transformed, or ``(None, why)``;
        ``why`` names the map line (1-based), the key, the stream and the cause."""
        ix = self.index
        where = self._where(ix.lines[i], ix.keys[i])
        text = self._mapping()[int(ix.begin[i]):int(ix.end[i])]
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as e:
            return None, f"{where}: Could not decompress sequence: bad base64 ({e})"
        try:
            img = self._decode(np.frombuffer(raw, np.uint8)) if raw else None
        except self._cv2.error as e:        # e.g. a header claiming a huge size: a bad sequence too
            return None, f"{where}: Could not decompress sequence: {str(e).strip()}"
        if img is None:
            return None, f"{where}: Could not decompress sequence: not an image"
        try:
            return self._transform(img, i, sweep), where
        except (ValueError, self._cv2.error) as e:
            return None, f"{where}: {e}"

    def _decode_into(self, positions: np.ndarray, values: np.ndarray) -> bool:
        """Decode the images at ``positions`` into ``values``; False at the first failure."""
        for j, i in enumerate(positions.tolist()):
            img, _ = self._image(i)
            if img is None:
                return False
            try:
                self._layout(img, values[j])
            except ValueError:
                return False
        return True

    # --- the deserializer contract ------------------------------------------------------------
    def chunk_infos(self) -> list[ChunkInfo]:
        return self._chunks

    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        a, b = int(self.index.chunk_starts[chunk_id]), int(self.index.chunk_starts[chunk_id + 1])
        return SequenceTable(self.index.keys[a:b], np.ones(b - a, np.int64))

    def get_chunk(self, chunk_id: int, sweep: int = 0) -> ChunkData:
        """The images of chunk ``chunk_id`` as sweep ``sweep`` reads it (it seeds the random
        transforms, as for the ImageDeserializer)."""
        a, b = int(self.index.chunk_starts[chunk_id]), int(self.index.chunk_starts[chunk_id + 1])
        images, where = zip(*(self._image(i, sweep) for i in range(a, b)))
        return self._pack(self.index.keys[a:b], self.index.labels[a:b], list(images), list(where))

    # --- random access ------------------------------------------------------------------------
    def supports_random_access(self) -> bool:
        return True

    def read_bytes(self, chunk_id: int):
        """The chunk's text stays in the file's mapping: ``(mapping, begin, end)``."""
        a, b = int(self.index.chunk_starts[chunk_id]), int(self.index.chunk_starts[chunk_id + 1])
        return self._mapping(), int(self.index.begin[a]), int(self.index.end[b - 1])

    def read_sequences(self, raw, chunk_ids: np.ndarray, indices: np.ndarray) -> ChunkData | None:
        """The images ``indices[i]`` of chunks ``chunk_ids[i]``, in that order; None when one of
        them fails (the caller then reads whole chunks, which count and log the failures)."""
        return self.begin_read_sequences(raw, chunk_ids, indices)()

    def begin_read_sequences(self, raw, chunk_ids: np.ndarray, indices: np.ndarray):
        """:meth:`read_sequences` started on the decode threads; the returned function waits."""
        chunk_ids = np.asarray(chunk_ids, np.int64)
        positions = self.index.chunk_starts[chunk_ids] + np.asarray(indices, np.int64)
        n = len(positions)
        if n == 0:
            return _nothing
        values = np.zeros((n,) + self._sample_shape, self.cfg.dtype)
        tasks = max(1, min(self._threads, math.ceil(n / _PER_TASK)))
        bounds = np.linspace(0, n, tasks + 1).astype(np.int64)
        with self._lock:
            if self._pool is None:
                self._pool = cf.ThreadPoolExecutor(self._threads, thread_name_prefix="cntkio-b64")
            pool = self._pool
        futures = [pool.submit(self._decode_into, positions[a:b], values[a:b])
                   for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()) if b > a]

        def finish() -> ChunkData | None:
            if not all(f.result() for f in futures):
                return None
            return self._chunk_data(self.index.keys[positions], self.index.labels[positions], values, None)
        return finish

    def close(self) -> None:
        """Join the decode threads and unmap the file."""
        with self._lock:
            pool, self._pool = self._pool, None
            m, self._map = self._map, None
            f, self._file = self._file, None
        if pool is not None:
            pool.shutdown(wait=True)
        if m is not None:
            try:
                m.close()
            except BufferError:       # a view of it is still alive somewhere: the GC closes it
                pass
        if f is not None:
            f.close()
