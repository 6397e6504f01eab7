"""The randomization window on the global timeline: which chunks are held, loaded ahead, released.

A :class:`ChunkWindow` keeps the chunks the positions just ahead of the cursor need (the walker's
:meth:`~cntkio.engine.walk.TimelineWalker.span`) plus the held chunks that a later position of
the current sweep still uses, starts loading them on background threads before they are needed,
and releases every other one, so memory is bounded by the randomization window.

With random access (:func:`~cntkio.deserializers.protocol.has_random_access`) the window holds
the chunks' raw bytes instead (for CTF, byte ranges of a read-only mapping of the file, read ahead
by the kernel), by the same rule; a chunk whose direct parse reported an issue is *dirty* and goes
through whole-chunk loading from then on (its issues are counted and logged exactly once).

Chunks are named by the walker's load ids: with a deserializer whose chunk data depends on the
sweep (:func:`~cntkio.deserializers.protocol.depends_on_sweep`), a chunk read in two sweeps is two
loads, each told its sweep.
"""
from __future__ import annotations

from typing import Callable

from ..deserializers.protocol import fetches_ahead
from .prefetch import ChunkCache
from .stats import StageClock
from .walk import TimelineWalker

__all__ = ["ChunkWindow"]


class ChunkWindow:
    """Chunk lifetimes of a global-timeline reader (module docstring).

    ``cache``: the parsed chunks (:class:`~cntkio.engine.prefetch.ChunkCache`); ``raw``: the raw
    bytes with random access, else None; ``dirty``: chunks read whole instead of by sequence.
    """

    def __init__(self, corpus, walker: TimelineWalker, *, threads: int, direct: bool) -> None:
        self.walker = walker
        loader = None
        if walker.stride:  # load ids name (sweep, chunk): the deserializer is told the sweep
            def loader(load_id: int):
                k, c = walker.chunk_of(load_id)
                return corpus.get_chunk(c, sweep=k)
        #: seconds and bytes of the reading stages (:class:`~cntkio.engine.stats.StageClock`)
        self.clock = StageClock()
        self.cache = ChunkCache(corpus, threads=threads,
                                loader=self.clock.timed(loader or corpus.get_chunk, "parse", True))
        self.raw = ChunkCache(corpus, threads=1, name="cntkio-bytes",
                              loader=self.clock.timed(corpus.read_bytes, "parse", True),
                              release=corpus.release_bytes) if direct else None
        self.dirty: set[int] = set()
        self._fetch_ahead = corpus.fetch_ahead if fetches_ahead(corpus) else None
        #: samples of the sweep ahead of the cursor whose chunks are kept loading (the scheduler
        #: sets it from the minibatch size)
        self.ahead = 0

    def needed(self, cursor: tuple[int, int], W: int, r: int) -> set[int]:
        """Chunks the positions just ahead of ``cursor`` need, plus held chunks still used later
        this sweep."""
        held = self.cache.held() if self.raw is None else set(self.cache.held()) | set(self.raw.held())
        return self.walker.span(cursor, W, r, self.ahead) | self.walker.used_later(cursor, held)

    def prefetch(self, need: set[int]) -> None:
        """Start loading the chunks of ``need`` (with random access: their bytes, and parsed only
        the dirty ones); a deserializer reading a URL first starts fetching them all."""
        if self._fetch_ahead is not None and need:
            walker = self.walker
            self._fetch_ahead(sorted({walker.chunk_of(i)[1] for i in need} if walker.stride else need))
        if self.raw is not None:
            self.raw.prefetch(sorted(need - self.dirty))
            self.cache.prefetch(sorted(need & self.dirty))
        else:
            self.cache.prefetch(sorted(need))

    def retain(self, keep: set[int], defer: bool = False) -> Callable[[], None]:
        """Release the chunks not in ``keep``; ``defer``: return a function that runs their
        release (for CTF's byte ranges: a madvise, under the GIL), so that it can wait until the
        next work has been started."""
        dropped = self.cache.retain(keep, defer)
        dropped_raw = self.raw.retain(keep, defer) if self.raw is not None else []

        def release():
            self.cache.release(dropped)
            if self.raw is not None:
                self.raw.release(dropped_raw)
        return release

    def keep_ahead_of(self, cursor: tuple[int, int], W: int, r: int) -> Callable[[], None]:
        """Move the window to ``cursor``: start loading what it needs and drop the rest (deferred:
        call the result once the next work has started)."""
        keep = self.needed(cursor, W, r)
        release = self.retain(keep, defer=True)
        self.prefetch(keep)
        return release

    def clear(self) -> None:
        """Release every chunk (the epoch ended)."""
        self.retain(set())

    def chunk(self, chunk_id: int):
        """A parsed chunk (loaded now, or waited for when its load is under way)."""
        return self.cache.get(chunk_id)

    def raw_bytes(self, chunk_ids) -> dict:
        """``{chunk id: raw bytes}`` of clean chunks (random access)."""
        get = self.raw.get
        return {c: get(c) for c in chunk_ids}

    def close(self) -> None:
        self.cache.close()
        if self.raw is not None:
            self.raw.close()
