"""CNTK's RandomOrdering, the randomization of its legacy UCIFastReader: records shuffled within
blocks. It computes sweep orders only; it never reads data and never draws from another generator.

CNTK's ``RandomOrdering`` (Source/Common/Include/RandomOrdering.h:53-140 at 86ec025f^, unchanged in
CNTK 2.7) permutes a block of ``R`` records, ``R`` the randomization range (``randomize = N``, or the
epoch size for ``Auto``), seeded with the block's number on the global timeline
(UCIFastReader.cpp:20-24, ``RandomizeSweep``: the minibatch's start sample divided by ``R``):
``srand(seed)``, then for every position ``t`` up to 5 tries of a partner
``trand = tbegin + (rand() * RAND_MAX + rand()) % (tend - tbegin)`` in the window
``[max(t, R/2) - R/2, min(t + R/2, len))``, swapped when both stay within ``R/2`` of their home
(RandomOrdering.h:20-24 and 100-126). Record ``j`` of a block is then the block's ``map[j]``-th
record (UCIFastReader.cpp:915-925).

``rand()`` is the C library's, which differs between CNTK's Windows and Linux builds; the only
control CNTK published (``UCIFastReaderSimpleDataLoop_Control.txt``, written on Windows) is the
order of Microsoft's C runtime: ``state = state * 214013 + 2531011``, ``rand() = (state >> 16) &
0x7FFF`` (``RAND_MAX`` 32767), the left ``rand()`` called first. That is the generator here, so the
order is the control's on every platform.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .randomizer import _Base
from .timeline import Timeline, _make_timeline, _small, _unit

__all__ = ["msvc_rand", "random_ordering", "RandomOrderingRandomizer"]

_RAND_MAX = 32767


def msvc_rand(seed: int, n: int) -> list[int]:
    """The first ``n`` values of Microsoft's C runtime ``rand()`` after ``srand(seed)``."""
    state = seed & 0xFFFFFFFF
    out = []
    for _ in range(n):
        state = (state * 214013 + 2531011) & 0xFFFFFFFF
        out.append((state >> 16) & 0x7FFF)
    return out


def random_ordering(seed: int, n: int, rand_range: int) -> np.ndarray:
    """CNTK's ``RandomOrdering(seed)`` map of ``n`` positions with randomization range
    ``rand_range`` (module docstring): ``map[t]`` is the position whose record is delivered at
    ``t``. A loop per position (up to 5 draws each), run once per block and sweep."""
    half = rand_range // 2
    m = list(range(n))
    state = seed & 0xFFFFFFFF
    for t in range(n):
        tbegin = max(t, half) - half
        tend = min(t + half, n)
        span = tend - tbegin
        if span <= 0:               # a range of 1: nothing to swap with (CNTK divided by zero)
            continue
        mt = m[t]
        for _ in range(5):
            state = (state * 214013 + 2531011) & 0xFFFFFFFF
            a = (state >> 16) & 0x7FFF
            state = (state * 214013 + 2531011) & 0xFFFFFFFF
            b = (state >> 16) & 0x7FFF
            trand = tbegin + (a * _RAND_MAX + b) % span
            mr = m[trand]
            if trand <= mt + half and mt < trand + half and t <= mr + half and mr < t + half:
                m[t], m[trand] = mr, mt
                break
    return np.asarray(m, np.int64)


class RandomOrderingRandomizer(_Base):
    """Sweep timelines of CNTK's RandomOrdering over chunks that are its blocks (the deserializer
    cuts its records into chunks of ``rand_range`` records, UCIFastReader's ``recordsPerChunk``).

    Chunks are read in input order; in sweep ``k`` the records of chunk ``j`` come in the order of
    ``random_ordering(k * C + j, n_j, rand_range)``. When every chunk holds ``rand_range`` records
    (the sweep is a whole number of blocks), ``k * C + j`` is the block's number on the global
    timeline and the order is CNTK's exactly; a shorter last chunk is permuted on its own, seeds
    counting on (CNTK's last block of a sweep ran on into the next sweep's records:
    docs/differences.md).
    """

    randomized = True

    def __init__(self, chunk_lengths: Sequence[np.ndarray], rand_range: int) -> None:
        super().__init__(chunk_lengths)
        if rand_range < 1:
            raise ValueError(f"the randomization range must be >= 1, found {rand_range}")
        self.rand_range = int(rand_range)
        self._rstart = np.zeros(self.num_chunks + 1, np.int64)
        np.cumsum(self.chunk_counts, out=self._rstart[1:])

    def _compute(self, sweep: int) -> Timeline:
        C = self.num_chunks
        index = np.concatenate([random_ordering(sweep * C + j, int(n), self.rand_range)
                                for j, n in enumerate(self.chunk_counts.tolist())]) if C else np.zeros(0, np.int64)
        chunk = _small(np.repeat(np.arange(C, dtype=np.int32), self.chunk_counts), max(C, 1))
        index = _small(index, max(self._max_count, 2**16))
        if self.unit:
            length: np.ndarray = _unit(self.num_sequences)
        else:
            by_chunk = [c[i] for c, i in zip(self.chunk_lengths, np.split(index.astype(np.int64),
                                                                          self._rstart[1:-1]))]
            length = np.concatenate(by_chunk) if by_chunk else np.zeros(0, np.int64)
        return _make_timeline(sweep, np.arange(C, dtype=np.int32), chunk, index, length, C, self._rstart,
                              self._unit_start)
