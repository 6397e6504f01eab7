"""Background loads: caching, release, errors, and no thread outliving close() or the interpreter."""
import subprocess
import sys
import textwrap
import threading

import pytest

from cntkio.engine.prefetch import ChunkCache, Prefetcher
from fakes import FakeDeserializer
import paths


def test_chunk_cache_loads_once_and_releases():
    d = FakeDeserializer([[1], [1], [1]])
    cache = ChunkCache(d, threads=2)
    cache.prefetch([0, 1])
    assert cache.get(0) is cache.get(0)
    cache.retain([1])
    assert cache.held() == [1]
    cache.get(1)
    cache.get(2)
    assert sorted(d.loads) == [0, 1, 2] and cache.loads == 3
    cache.close()
    with pytest.raises(RuntimeError, match="closed"):
        cache.get(0)


def test_failed_load_raises_in_caller_and_is_retried():
    d = FakeDeserializer([[1], [1]], fail_chunk=1)
    cache = ChunkCache(d)
    cache.prefetch([1])
    for _ in range(2):
        with pytest.raises(OSError, match="cannot read chunk 1"):
            cache.get(1)
    assert d.loads.count(1) == 2
    cache.close()


def test_prefetcher_key_match_and_errors():
    before = set(threading.enumerate())  # an earlier test's source may still be closing its own
    p = Prefetcher()
    p.submit("a", lambda: 42)
    assert p.take("b") is None  # another key: dropped
    p.submit("a", lambda: 42)
    assert p.take("a") == 42
    p.submit("a", lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        p.take("a")
    p.close()
    assert not [t for t in threading.enumerate()
                if t.name.startswith("cntkio-prefetch") and t.is_alive() and t not in before]


def test_interpreter_exits_with_a_source_left_open(tmp_path):
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        from fakes import FakeDeserializer
        from cntkio.source import MinibatchSource
        src = MinibatchSource(FakeDeserializer([[1] * 50] * 20), randomization_window_in_chunks=4)
        src.next_minibatch(3)
        print("ok")
    """ % str(paths.TESTS))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


class SlowDeserializer(FakeDeserializer):
    """Chunk loads that take a while and record how many ran at once (GIL released in sleep,
    as in the C parser)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.running = 0
        self.most = 0
        self.guard = threading.Lock()

    def get_chunk(self, chunk_id):
        import time
        with self.guard:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.03)
        with self.guard:
            self.running -= 1
        return super().get_chunk(chunk_id)


def test_chunks_load_in_background_in_parallel_and_minibatch_is_unchanged():
    from cntkio.source import MinibatchSource
    from fakes import samples_of
    slow = SlowDeserializer([[1] * 4] * 12)
    src = MinibatchSource(slow, randomization_window_in_chunks=4, max_sweeps=1, multithreaded_deserializer=True)
    got = [samples_of(mb[src.streams.x]) for mb in src.iter(minibatch_size=5)]
    plain = MinibatchSource(FakeDeserializer([[1] * 4] * 12), randomization_window_in_chunks=4, max_sweeps=1)
    assert got == [samples_of(mb[plain.streams.x]) for mb in plain.iter(minibatch_size=5)]
    assert slow.most >= 2  # several chunks were being loaded at once
