"""Closing readers that were collected without ``close()``, off the garbage collector's back.

A reader's ``close()`` joins its loader and prefetch threads (their native parses read the mapped
files, so the files are closed only after them). Joining threads from a garbage-collection
callback can deadlock: a collection may run inside ``threading`` code that holds one of its
module locks (a new thread's start-up, for one), and ``Thread.join`` then waits for the same lock
in the same thread. So a source's finalizer does not close the reader itself: it puts the reader
on a ``queue.SimpleQueue`` (made to be called from ``__del__`` and weakref callbacks) and a
daemon thread started in ordinary code, ``cntkio-closer``, closes it.

At interpreter exit, an ``atexit`` hook registered after ``weakref.finalize``'s own (so it runs
first) closes what is queued in the calling thread and makes later finalizers close at once:
exit hooks run in ordinary code, where joining is safe.
"""
from __future__ import annotations

import atexit
import queue
import threading
from .._log import get_logger

_log = get_logger("engine")

_queue: "queue.SimpleQueue[object]" = queue.SimpleQueue()
_lock = threading.Lock()
_thread: threading.Thread | None = None
_exiting = False
_hooked = False


def _close(reader) -> None:
    try:
        reader.close()
    except Exception:  # a close that fails must not stop the others (nobody to report to)
        _log.exception("closing a collected MinibatchSource's reader failed")


def _loop() -> None:
    while True:
        reader = _queue.get()
        if reader is None:
            return
        _close(reader)
        del reader


def start() -> None:
    """Start the closer thread (and the exit hook) if not running. Call from ordinary code (a
    source's constructor, after its ``weakref.finalize`` exists), never from a finalizer."""
    global _thread, _hooked
    with _lock:
        if not _hooked:
            atexit.register(_at_exit)
            _hooked = True
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, name="cntkio-closer", daemon=True)
            _thread.start()


def close_later(reader) -> None:
    """A source's finalizer: queue ``reader`` for the closer thread (closed here at exit, or when
    the closer is not running)."""
    if reader is None:
        return
    t = _thread
    if _exiting or t is None or not t.is_alive() or t is threading.current_thread():
        _close(reader)
    else:
        _queue.put(reader)


def _at_exit() -> None:
    global _exiting
    _exiting = True
    t = _thread
    if t is not None and t.is_alive():
        _queue.put(None)
        t.join()
    while True:  # what the closer had not taken yet
        try:
            reader = _queue.get_nowait()
        except queue.Empty:
            return
        if reader is not None:
            _close(reader)


def drain(timeout: float = 10.0) -> bool:
    """Wait until the readers queued so far are closed (tests; ``True`` when they are)."""
    done = threading.Event()
    close_later(_Marker(done))
    return done.wait(timeout)


class _Marker:
    """Queued by ``drain``: its ``close`` marks the readers before it as closed."""

    def __init__(self, event: threading.Event) -> None:
        self._event = event

    def close(self) -> None:
        self._event.set()
