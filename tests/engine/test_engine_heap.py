"""Released chunks' memory goes back to the system: the chunk cache drops its references and
trims glibc's heap (engine/heap.py), at most once per GAP times a trim's duration; a no-op
elsewhere."""
import ctypes
import gc
import weakref

import pytest

from cntkio.engine import heap, prefetch
from cntkio.engine.prefetch import ChunkCache
from fakes import FakeDeserializer

glibc = pytest.mark.skipif(not heap.available(), reason="malloc_trim is glibc's")


class _Chunk:
    """A loaded chunk that a weak reference can watch."""

    def __init__(self, c):
        self.c = c


@pytest.fixture
def trims(monkeypatch):
    calls = []
    monkeypatch.setattr(prefetch.heap, "trim", lambda force=False: calls.append(force) or True)
    return calls


def test_release_drops_the_chunks_and_trims_once(trims):
    cache = ChunkCache(FakeDeserializer([[1]] * 4), loader=_Chunk)
    assert trims == [False]                             # built after the index: what it freed
    refs = [weakref.ref(cache.get(c)) for c in range(4)]
    dropped = cache.retain([3], defer=True)
    assert len(dropped) == 3 and len(trims) == 1        # deferred: nothing released yet
    assert all(r() is not None for r in refs)
    cache.release(dropped)
    assert dropped == [] and len(trims) == 2            # the list emptied, one trim for the three
    assert [r() is None for r in refs] == [True, True, True, False]   # freed before the trim
    cache.release([])
    cache.retain([3])                                   # nothing dropped: no trim
    assert len(trims) == 2
    cache.close()                                       # the last chunk released: trimmed again
    assert len(trims) == 3 and refs[3]() is None


def test_a_window_moving_over_a_sweep_trims(trims):
    from cntkio.source import MinibatchSource
    src = MinibatchSource(FakeDeserializer([[1] * 4] * 12), randomization_window_in_chunks=2, max_sweeps=1)
    n = sum(mb[src.streams.x].num_samples for mb in src.iter(minibatch_size=4))
    assert n == 48 and len(trims) >= 6                   # chunks were released along the sweep


def test_trim_is_a_no_op_without_glibc(monkeypatch):
    monkeypatch.setattr(heap, "_malloc_trim", None)
    assert heap.trim(force=True) is False and heap.available() is False


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@glibc
def test_trim_returns_free_pages_inside_the_heap(monkeypatch):
    """Blocks freed between live ones stay resident (glibc trims only its heap's top by
    itself); a trim hands their pages back."""
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    size, n = 100_000, 600                          # under glibc's smallest mmap threshold: heap
    blocks = [libc.malloc(size) for _ in range(n)]
    for b in blocks:
        ctypes.memset(b, 1, size)                   # resident
    gc.collect()
    for i, b in enumerate(blocks):
        if i % 10:                                  # nine in ten freed, every tenth kept
            libc.free(b)
    before = _rss()
    assert heap.trim(force=True) is True
    after = _rss()
    for b in blocks[::10]:
        libc.free(b)
    assert before - after > 0.5 * size * n * 9 / 10  # most of the 54 MB freed left the process


@glibc
def test_trims_are_spaced_by_their_duration(monkeypatch):
    monkeypatch.setattr(heap, "GAP", 1e9)
    runs = heap.runs
    assert heap.trim(force=True) is True
    assert heap.trim() is False                         # within GAP times the last duration
    assert heap.trim(force=True) is True and heap.runs == runs + 2
    monkeypatch.setattr(heap, "GAP", 0.0)
    assert heap.trim(force=True) is True and heap.trim() is True
