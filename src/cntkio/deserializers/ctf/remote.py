"""A CTF file at a URL (:mod:`cntkio.remote`): the chunks the window loads next fetched ahead, and a
chunk's text handed to the parser from its ranged read instead of the file's mapping.

It never reads a local file (a plain path keeps the deserializer's mapped reading).
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

    def _text(self, base: int, stop: int):
        """``(view, mapping)``: bytes ``base:stop`` parsed in place (no copy), from the file's mapping
        (returned too, for the advice after the parse) or from the URL's ranged read (mapping None)."""
        if self._remote is None or self._data is not None:
            mapping = self._mapping()
            return memoryview(mapping)[base:stop], mapping
        return memoryview(self._remote.read(base, stop)), None
