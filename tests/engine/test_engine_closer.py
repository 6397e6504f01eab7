"""Readers of sources collected without close() are closed on the closer thread, never joined
from inside the garbage collector (engine/closer.py)."""
from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import threading

import paths
from fakes import FakeDeserializer

from cntkio.engine import closer
from cntkio.source import MinibatchSource


class _Recorder:
    def __init__(self):
        self.closed_on: list[str] = []

    def close(self):
        self.closed_on.append(threading.current_thread().name)


def _loader_threads():
    return {t for t in threading.enumerate() if t.name.startswith("cntkio") and t.name != "cntkio-closer"}


def test_collected_source_is_closed_on_the_closer_thread():
    before = _loader_threads()
    src = MinibatchSource(FakeDeserializer([[1] * 50] * 20), randomization_window_in_chunks=4)
    src.next_minibatch(3)
    assert _loader_threads() - before  # its loader/prefetch threads run
    reader = src._reader
    calls = []
    orig = reader.close
    reader.close = lambda: (calls.append(threading.current_thread().name), orig())[1]
    del src
    gc.collect()
    assert closer.drain(10)
    assert calls == ["cntkio-closer"]                    # closed once, on the closer thread
    assert not [t for t in _loader_threads() - before if t.is_alive()]  # its threads joined


def test_close_later_runs_on_the_closer_thread_and_close_is_synchronous():
    closer.start()
    rec = _Recorder()
    closer.close_later(rec)
    assert closer.drain(10)
    assert rec.closed_on == ["cntkio-closer"]
    # an explicit close() closes in the caller's thread, at once, and only once
    src = MinibatchSource(FakeDeserializer([[1] * 10] * 3), max_sweeps=1)
    reader = src._reader
    calls = []
    orig = reader.close
    reader.close = lambda: (calls.append(threading.current_thread().name), orig())[1]
    src.close()
    assert calls == [threading.current_thread().name]
    src.close()
    del src
    gc.collect()
    assert closer.drain(10)
    assert calls == [threading.current_thread().name]


def test_finalizer_inside_a_held_threading_lock_does_not_join():
    """The deadlock this avoids: a collection inside threading code holding one of its locks ran
    the finalizer, whose join waited for that lock. close_later only queues."""
    closer.start()
    lock = threading.Lock()
    rec = _Recorder()

    class Joining:
        def close(self):
            with lock:          # would block forever if run in the thread holding ``lock``
                rec.close()

    with lock:
        closer.close_later(Joining())   # returns at once: queued
        assert rec.closed_on == []
    assert closer.drain(10)
    assert rec.closed_on == ["cntkio-closer"]


def test_interpreter_exit_closes_what_is_left(tmp_path):
    code = textwrap.dedent("""
        import sys, gc
        sys.path.insert(0, %r)
        from fakes import FakeDeserializer
        from cntkio.source import MinibatchSource
        from cntkio.engine import closer
        class R:
            def close(self):
                print("closed", flush=True)
        srcs = [MinibatchSource(FakeDeserializer([[1] * 50] * 20), randomization_window_in_chunks=4)
                for _ in range(3)]
        for s in srcs:
            s.next_minibatch(3)
        closer.close_later(R())
        print("ok", flush=True)
    """ % str(paths.TESTS))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # two threads print: the lines may interleave ("okclosed")
    assert out.stdout.count("ok") == 1 and out.stdout.count("closed") == 1, out.stdout
