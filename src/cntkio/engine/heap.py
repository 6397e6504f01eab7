"""Freed memory handed back to the system after a chunk is released (glibc's ``malloc_trim``).

glibc raises its mmap threshold once a large block that it mapped is freed (up to 32 MB), so the
chunk-sized buffers of a window (an HTK chunk's frames are about 15 MB) and the minibatch outputs
then come from its heap. Freed, they stay there: the heap's free pages remain part of the
process's memory, and as chunks come and go the heaps (the loader thread's arena holds the
chunks, the main one the minibatches) fragment and grow over a run. :func:`trim` asks glibc to
return every whole free page of its heaps (``malloc_trim(0)``: all arenas, free pages inside a
heap too); the chunk window calls it after releasing chunks
(:meth:`~cntkio.engine.prefetch.ChunkCache.release`). In HTK frame mode (small runs, 0.25 and
0.5 GB) it lowered the peak RSS by 6-21 MB, but the peak still grew with the corpus at a fixed
window (docs/speech.md). Fixing the threshold instead (``MALLOC_MMAP_THRESHOLD_``) costs a fresh
mapping, with a page fault per page, for every large buffer, and made frame mode 1.5-2 times
slower.

A trim takes about a millisecond on a heap of 150 MB, and the pages it returns are faulted in
again when reused; it runs at most once per :data:`GAP` times the CPU time of the last one (at
most about 1/GAP of a core), which skips trims when chunks are small and released often.
Elsewhere than glibc (macOS, Windows, musl) :func:`trim` does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
import time

__all__ = ["trim", "available", "GAP"]

#: a trim runs at most once per GAP times the CPU time of the last one
GAP = 50.0

_lock = threading.Lock()
_next = 0.0     # perf_counter time before which no trim runs
#: trims run (tests)
runs = 0


def _load():
    """glibc's ``malloc_trim``, or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.malloc_trim          # glibc only: musl has no malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


_malloc_trim = _load()


def available() -> bool:
    """Whether :func:`trim` can return memory (glibc)."""
    return _malloc_trim is not None


def trim(force: bool = False) -> bool:
    """Return the heap's free pages to the system (glibc; elsewhere nothing); skipped (False)
    when the last trim ended less than :data:`GAP` times its CPU time ago, unless ``force``.
    The GIL is released while glibc trims (ctypes)."""
    global _next, runs
    if _malloc_trim is None:
        return False
    with _lock:
        if not force and time.perf_counter() < _next:
            return False
        _next = float("inf")       # one trim at a time
    cpu = time.thread_time()       # its CPU time (madvise included), not the wall time of a busy machine
    try:
        _malloc_trim(0)
    finally:
        spent = time.thread_time() - cpu
        with _lock:
            _next = time.perf_counter() + GAP * spent
            runs += 1
    return True
