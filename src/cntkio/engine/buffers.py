"""Output buffers reused once no array refers to them any more.

Fresh memory costs a page fault and the kernel zeroing each page on first touch, which costs
more than copying data into it (an 88 MB sweep of the UCIFastReader cache: 10 ms read into fresh
buffers, 7 ms into buffers touched before). The packer takes its large outputs from here:
:func:`empty` returns an array over a pooled buffer whose earlier arrays are all gone, so a
minibatch never shares memory with another live one (a caller changing a minibatch in place, or
keeping it, is safe); only its memory is recycled.

A buffer is free when nothing but the pool refers to it: every NumPy view of it (slices, dtype
views, reshapes, and whatever holds those: torch tensors from ``from_numpy``, memoryviews) keeps
a reference to the buffer array itself, NumPy collapsing a view's base to the array owning the
memory. The pool holds at most :data:`POOL_N` buffers, of at most :data:`POOL_BYTES` together or,
when a request is larger, :data:`POOL_SPAN` times that request (so that minibatches larger than the
limit, 256 images of 224 x 224 x 3 floats are 154 MB, are reused too: the pool then holds about
the minibatches in flight at once, memory the process used at its peak anyway); smaller requests
than :data:`MIN_BYTES` go to the allocator (its free lists reuse them already).
"""
from __future__ import annotations

import sys
import threading

import numpy as np

__all__ = ["empty", "pooled_bytes", "POOL_N", "POOL_BYTES", "POOL_SPAN", "MIN_BYTES"]

POOL_N = 8
POOL_BYTES = 128 << 20
#: a request over POOL_BYTES may be pooled beside others up to this many times its size in all
POOL_SPAN = 4
MIN_BYTES = 1 << 20

_lock = threading.Lock()
_bufs: list[np.ndarray] = []
#: references to a free buffer: the pool's list and getrefcount's argument
_FREE_REFS = 2


def empty(shape: tuple, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array, over a free pooled buffer when one fits (at least
    the size, at most twice it and 1 MiB); requests under :data:`MIN_BYTES` are not pooled."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if n < MIN_BYTES:
        return np.empty(shape, dtype)
    with _lock:
        best = -1
        for i in range(len(_bufs)):      # by index: a loop variable would be one more reference
            cap = _bufs[i].nbytes
            if n <= cap <= 2 * n + MIN_BYTES and sys.getrefcount(_bufs[i]) == _FREE_REFS and \
                    (best < 0 or cap < _bufs[best].nbytes):
                best = i
        if best >= 0:
            raw = _bufs[best]
        else:
            raw = np.empty(n, np.uint8)
            _admit(raw)
    return raw[:n].view(dtype).reshape(shape)


def _admit(raw: np.ndarray) -> None:
    """Keep ``raw`` for reuse, dropping free buffers (smallest first) to stay in the limits
    (:data:`POOL_BYTES`, or :data:`POOL_SPAN` times ``raw`` when that is more); a buffer that does
    not fit beside the ones in use is not kept."""
    limit = max(POOL_BYTES, POOL_SPAN * raw.nbytes)
    free = sorted((i for i in range(len(_bufs)) if sys.getrefcount(_bufs[i]) == _FREE_REFS),
                  key=lambda i: _bufs[i].nbytes)
    drop: set[int] = set()
    total = sum(b.nbytes for b in _bufs)
    count = len(_bufs)
    for i in free:
        if total + raw.nbytes <= limit and count < POOL_N:
            break
        drop.add(i)
        total -= _bufs[i].nbytes
        count -= 1
    if total + raw.nbytes > limit or count >= POOL_N:
        return
    if drop:
        _bufs[:] = [b for i, b in enumerate(_bufs) if i not in drop]
    _bufs.append(raw)


def pooled_bytes() -> int:
    """Bytes the pool holds (in use or free)."""
    with _lock:
        return sum(b.nbytes for b in _bufs)
