"""A CTF file at a URL (:mod:`cntkio.remote`): the chunks the window loads next fetched ahead (the
deserializer reads a chunk's text through ``ranges.ObjectRanges`` over the same object).

It never reads a local file (a plain path is read with pread by the deserializer).
"""
from __future__ import annotations

from ..protocol import FetchAheadDeserializer

__all__ = ["RemoteChunks"]


class RemoteChunks(FetchAheadDeserializer):
    """Mixin of the CTF deserializer for ``_remote`` (a RemoteObject, or None for a local file)."""

    _remote = None

    def fetches_ahead(self) -> bool:
        """A URL's chunks are fetched ahead of the window (:meth:`fetch_ahead`)."""
        return self._remote is not None and self._data is None

    def fetch_ahead(self, chunk_ids) -> None:
        """Start the ranged GETs of these chunks (the window's next loads) in the background."""
        starts = self.index.starts
        self._remote.prefetch([(int(starts[self._chunks[c][0]]), int(starts[self._chunks[c][1]]))
                               for c in chunk_ids])
