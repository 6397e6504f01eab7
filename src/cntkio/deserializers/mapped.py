"""What a deserializer reading one file through a read-only memory map shares (CTF, CBF): picklable
for worker processes (the file is opened again, never the map or the lock), and released by
``close()`` even while arrays still view the map (the mapping then goes with the last view)."""
from __future__ import annotations

import mmap
import os
import threading

__all__ = ["MappedFile"]


class MappedFile:
    """Mixin for a deserializer with ``filename``, ``_fd`` (None once closed), ``_map`` (the mmap,
    made on first use), ``_lock`` and ``_data`` (the bytes when kept in memory, else None);
    ``_remote``: the :class:`~cntkio.remote.RemoteObject` of a URL (no file, no map)."""

    _remote = None

    def _mapping(self):
        """The whole file mapped read-only (made once), or the in-memory data."""
        if self._data is not None:
            return memoryview(self._data)
        with self._lock:
            if self._map is None:
                if self._fd is None:
                    raise ValueError(f"{self.filename}: the deserializer is closed")
                self._map = mmap.mmap(self._fd, 0, access=mmap.ACCESS_READ)
            return self._map

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_fd"] = None
        state["_map"] = None
        state["_lock"] = None
        state.pop("_key_table_lock", None)
        state.pop("_key_table_cache", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        if self._data is None and self._remote is None:
            self._fd = os.open(self.filename, os.O_RDONLY | getattr(os, "O_BINARY", 0))

    def close(self) -> None:
        """Release the map and the file (arrays still viewing the map keep it alive); a URL's
        fetches ahead not started yet are dropped."""
        if self._remote is not None:
            self._remote.close()
        m, self._map = self._map, None
        if m is not None:
            try:
                m.close()
            except BufferError:  # a parse or an array still holds it: it goes with the last view
                pass
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
