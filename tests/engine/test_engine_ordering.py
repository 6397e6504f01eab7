"""CNTK's RandomOrdering (UCIFastReader's randomization, cntkio.engine.ordering): Microsoft's C
runtime rand(), the window rule, blocks seeded by their number on the global timeline. CNTK's own
control of this order is checked in tests/conformance (UCIFastReaderSimpleDataLoop)."""
from __future__ import annotations

import numpy as np
import pytest

from cntkio import MinibatchSource
from cntkio.engine.ordering import RandomOrderingRandomizer, msvc_rand, random_ordering
from fakes import FakeDeserializer, ids_of


def test_msvc_rand_is_microsofts_runtime():
    # the documented first values of MSVC's rand() after srand(1) (and srand(0): state 0)
    assert msvc_rand(1, 5) == [41, 18467, 6334, 26500, 19169]
    assert msvc_rand(0, 3) == [38, 7719, 21238]


@pytest.mark.parametrize("n,rng", [(500, 500), (37, 500), (100, 10), (1, 1)])
def test_random_ordering_is_a_permutation_within_the_window(n, rng):
    m = random_ordering(3, n, rng)
    assert sorted(m.tolist()) == list(range(n))
    half = rng // 2
    t = np.arange(n)
    if rng >= 2:                                # RandomOrdering.h: the window condition
        assert ((t <= m + half) & (m < t + half)).all()
    else:
        assert m.tolist() == list(range(n))


def test_random_ordering_depends_on_the_seed_only():
    assert random_ordering(0, 50, 50).tolist() == random_ordering(0, 50, 50).tolist()
    assert random_ordering(0, 50, 50).tolist() != random_ordering(1, 50, 50).tolist()


def test_sweeps_of_whole_blocks_read_each_block_with_its_global_number():
    # 3 chunks of 4 one-sample records, blocks of 4: sweep k reads chunk j by seed 3k + j
    r = RandomOrderingRandomizer([np.ones(4, np.int64)] * 3, 4)
    for k in range(2):
        tl = r.timeline(k)
        assert tl.chunk[:12].tolist() == [0] * 4 + [1] * 4 + [2] * 4
        for j in range(3):
            assert tl.index[4 * j:4 * j + 4].tolist() == random_ordering(3 * k + j, 4, 4).tolist()


def test_a_source_with_random_ordering_delivers_records_in_that_order():
    src = MinibatchSource(FakeDeserializer([[1] * 5, [1] * 5]), random_ordering=5, max_sweeps=1)
    got = ids_of(src.next_minibatch(10)["x"])
    want = random_ordering(0, 5, 5).tolist() + (5 + random_ordering(1, 5, 5)).tolist()
    assert got == want
    src.close()


# --- CNTK's config readers: a distributed call covers a global budget --------------------------------

def _worker(lengths, W, r, size, calls, randomize=False):
    src = MinibatchSource(FakeDeserializer([lengths]), randomize=randomize, max_sweeps=1)
    src.use_global_partition_budget()
    out = []
    for _ in range(calls):
        mb = src.next_minibatch(size, num_data_partitions=W, partition_index=r)
        out.append(ids_of(mb["x"]) if mb else None)
    src.close()
    return out


def test_a_global_budget_covers_the_next_samples_of_the_timeline():
    # BlockRandomizer.cpp:281-320 / NoRandomizer with global = local = the minibatch size (the packer
    # of CNTK's HTKMLFReader, CNTKTextFormatReader, CNTKBinaryReader): each call walks the next 4
    # samples of the global timeline and keeps its own (sequence number % 2), so the two workers'
    # minibatches add up to 4; a minibatch stops at the sweep end
    assert _worker([1] * 10, 2, 0, 4, 4) == [[0, 2], [4, 6], [8], None]
    assert _worker([1] * 10, 2, 1, 4, 4) == [[1, 3], [5, 7], [9], None]


def test_the_first_own_sequence_is_taken_wherever_it_lies():
    # lengths 3, 1, 1, 1, budget 2: worker 1's first call passes sequence 0 (3 samples, over the
    # budget) to take its sequence 1, then stops (4 + 1 > 2); worker 0 takes sequence 0 alone
    assert _worker([3, 1, 1, 1], 2, 1, 2, 3) == [[1], [3], None]
    assert _worker([3, 1, 1, 1], 2, 0, 2, 3) == [[0], [2], None]
