"""The packer's output buffers (engine/buffers.py): reused only once no array refers to them."""
from __future__ import annotations

import numpy as np
import pytest

from cntkio.engine import buffers


@pytest.fixture
def pool(monkeypatch):
    """A pool of its own for the test (the module's is shared by the process)."""
    monkeypatch.setattr(buffers, "_bufs", [])
    return buffers


def test_a_released_buffer_is_reused_and_a_live_one_never(pool):
    a = pool.empty((1000, 784), np.float32)
    addr = a.__array_interface__["data"][0]
    b = pool.empty((1000, 784), np.float32)
    assert not np.shares_memory(a, b)
    keep = a[10:20].reshape(-1)          # a view keeps the buffer in use
    del a
    c = pool.empty((1000, 784), np.float32)
    assert not np.shares_memory(c, keep) and not np.shares_memory(c, b)
    del keep
    d = pool.empty((900, 784), np.float32)   # smaller, within twice: the released buffer
    assert d.__array_interface__["data"][0] == addr
    assert d.shape == (900, 784) and d.dtype == np.float32 and d.flags.c_contiguous and d.flags.writeable
    assert len(pool._bufs) == 3


def test_arrays_holding_a_buffer_through_other_objects_keep_it(pool):
    a = pool.empty((2 << 20,), np.uint8)
    mv = memoryview(a[5:])
    del a
    b = pool.empty((2 << 20,), np.uint8)
    assert not np.shares_memory(b, np.frombuffer(mv, np.uint8))


def test_small_requests_and_far_larger_buffers_are_not_pooled(pool):
    small = pool.empty((100, 10), np.float64)
    assert small.shape == (100, 10) and pool._bufs == []
    big = pool.empty((4 << 20,), np.uint8)
    del big
    c = pool.empty((1 << 20,), np.uint8)      # 4 MiB > twice 1 MiB plus 1 MiB: a new buffer
    assert len(pool._bufs) == 2 and not np.shares_memory(c, pool._bufs[0])


def test_the_pool_stays_within_its_limits(pool, monkeypatch):
    monkeypatch.setattr(pool, "POOL_BYTES", 8 << 20)
    monkeypatch.setattr(pool, "POOL_N", 3)
    monkeypatch.setattr(pool, "POOL_SPAN", 1)
    live = [pool.empty((2 << 20,), np.uint8) for _ in range(5)]     # 5 x 2 MiB in use
    assert len(pool._bufs) == 3 and pool.pooled_bytes() == 6 << 20  # the rest not kept
    assert all(not np.shares_memory(x, y) for i, x in enumerate(live) for y in live[i + 1:])
    del live
    big = pool.empty((5 << 20,), np.uint8)   # free buffers dropped to make room
    assert pool.pooled_bytes() <= 8 << 20 and any(b is big.base for b in pool._bufs)


def test_requests_over_the_byte_limit_are_pooled_up_to_a_span_of_them(pool, monkeypatch):
    # minibatches larger than POOL_BYTES (256 images of 224 x 224 x 3 floats) are reused too
    monkeypatch.setattr(pool, "POOL_BYTES", 4 << 20)
    monkeypatch.setattr(pool, "POOL_SPAN", 2)
    a = pool.empty((3 << 20,), np.uint8)
    b = pool.empty((3 << 20,), np.uint8)
    c = pool.empty((3 << 20,), np.uint8)      # two of 3 MiB in use: a third is over 2 x 3 MiB, not kept
    assert pool.pooled_bytes() == 6 << 20 and not any(x is c.base for x in pool._bufs)
    addr = a.__array_interface__["data"][0]
    del a
    d = pool.empty((3 << 20,), np.uint8)
    assert d.__array_interface__["data"][0] == addr
    assert not np.shares_memory(d, b) and not np.shares_memory(d, c)
