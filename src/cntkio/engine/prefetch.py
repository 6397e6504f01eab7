"""Background work: chunk loads and the next minibatch, on threads that never outlive the source.

:class:`ChunkCache` holds the loaded chunks the randomizer's window needs. Loads run on a
thread pool (one thread, or several with ``multithreaded_deserializer``); the C parser releases
the GIL, so chunks parse on other cores while the caller packs. :class:`Prefetcher` runs one job
(the next minibatch) ahead on its own thread. Exceptions raised in a worker are re-raised in the
caller when it asks for the result. Released chunks' memory is handed back to the system
(``heap.py``: glibc otherwise keeps chunk-sized buffers in its heap, which grows over a run).
``close()`` cancels pending work and joins the threads; a
source collected without ``close()`` has its reader closed on the closer thread (``closer.py``:
never joined from the garbage collector), or at interpreter exit.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import threading
from typing import Callable, Iterable

from ..deserializers.protocol import ChunkData, Deserializer
from . import heap
from .._log import get_logger

__all__ = ["ChunkCache", "Prefetcher", "default_pool_size"]

log = get_logger("engine.prefetch")


def default_pool_size() -> int:
    """Threads for a multithreaded deserializer: the cores, at most 8."""
    return max(1, min(8, os.cpu_count() or 1))


class ChunkCache:
    """Loaded chunks by id, with background loads and explicit release.

    ``get(c)`` returns the chunk, loading it (or waiting for its background load) if needed.
    ``prefetch(ids)`` starts background loads; ``retain(ids)`` releases every other chunk.
    ``loads`` counts ``get_chunk`` calls (tests use it to check that memory stays bounded).
    """

    def __init__(self, deserializer: Deserializer, threads: int = 1, name: str = "cntkio-chunk",
                 loader: Callable[[int], object] | None = None,
                 release: Callable[[object], None] | None = None) -> None:
        self.deserializer = deserializer
        self._loader = loader if loader is not None else deserializer.get_chunk
        self._release = release
        self._lock = threading.Lock()
        self._futures: dict[int, cf.Future] = {}
        self._pool = cf.ThreadPoolExecutor(max_workers=max(1, int(threads)), thread_name_prefix=name)
        self._closed = False
        self.loads = 0
        self.peak_held = 0
        # the index was built before the chunks are read: what its build freed (an MLF scan's
        # temporaries, several times the file) goes back to the system rather than staying in
        # the heap under the chunks
        heap.trim()

    def _load(self, chunk_id: int) -> ChunkData:
        with self._lock:
            self.loads += 1
        return self._loader(chunk_id)

    def _future(self, chunk_id: int) -> cf.Future:
        with self._lock:
            if self._closed:
                raise RuntimeError("the MinibatchSource is closed")
            fut = self._futures.get(chunk_id)
            if fut is None:
                fut = self._pool.submit(self._load, chunk_id)
                self._futures[chunk_id] = fut
                self.peak_held = max(self.peak_held, len(self._futures))
            return fut

    def get(self, chunk_id: int) -> ChunkData:
        """The chunk's data (waits for a pending load; a load's exception is raised here)."""
        fut = self._future(chunk_id)
        try:
            return fut.result()
        except BaseException:
            with self._lock:  # a failed load is retried on the next request
                if self._futures.get(chunk_id) is fut:
                    del self._futures[chunk_id]
            raise

    def prefetch(self, chunk_ids: Iterable[int]) -> None:
        """Start loading these chunks in the background (no-op for loaded or pending ones)."""
        for c in chunk_ids:
            self._future(int(c))

    def retain(self, chunk_ids: Iterable[int], defer: bool = False) -> list:
        """Release every chunk not in ``chunk_ids``. ``defer``: they leave the cache now, but their
        ``release`` runs when the returned list is passed to :meth:`release`."""
        keep = {int(c) for c in chunk_ids}
        with self._lock:
            dropped = [self._futures.pop(c) for c in [c for c in self._futures if c not in keep]]
        for fut in dropped:
            fut.cancel()
        if defer:
            return dropped
        self.release(dropped)
        return []

    def release(self, dropped: list) -> None:
        """Run the release of chunks :meth:`retain` dropped with ``defer``; the list is emptied
        (the cache's last references to them) and the freed memory returned to the system
        (:func:`~cntkio.engine.heap.trim`)."""
        for fut in dropped:
            self._released(fut)
        if dropped:
            dropped.clear()
            del fut
            heap.trim()

    def _released(self, fut: cf.Future) -> None:
        if self._release is not None and fut.done() and not fut.cancelled() and fut.exception() is None:
            self._release(fut.result())

    def clear(self) -> None:
        """Release every chunk."""
        self.retain(())

    def held(self) -> list[int]:
        """Ids of the chunks loaded or being loaded."""
        with self._lock:
            return sorted(self._futures)

    def close(self) -> None:
        """Cancel pending loads, release everything and join the loader threads."""
        with self._lock:
            self._closed = True
            futures = list(self._futures.values())
            self._futures.clear()
        for f in futures:
            f.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.release(futures)


class Prefetcher:
    """Runs one job ahead on a background thread (the next minibatch).

    ``submit(key, fn)`` starts ``fn()``; ``take(key)`` returns its result if the pending job has
    that key (re-raising its exception), or None when nothing matching is pending (a pending job
    with another key is waited for and dropped).
    """

    def __init__(self, name: str = "cntkio-prefetch") -> None:
        self._pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: tuple[object, cf.Future] | None = None
        self._closed = False

    def submit(self, key: object, fn: Callable[[], object]) -> None:
        if self._closed:
            return
        self.discard()
        self._pending = (key, self._pool.submit(fn))

    def take(self, key: object):
        pending, self._pending = self._pending, None
        if pending is None:
            return None
        pkey, fut = pending
        if pkey != key:
            fut.cancel()
            try:
                fut.result()
            except Exception:  # a dropped job's failure does not concern the caller
                pass
            return None
        return fut.result()

    def discard(self) -> None:
        """Drop the pending job (waiting for it if it already runs)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending[1].cancel()
            try:
                pending[1].result()
            except Exception:  # a dropped job's failure does not concern the caller
                pass

    def close(self) -> None:
        self._closed = True
        self.discard()
        self._pool.shutdown(wait=True, cancel_futures=True)
