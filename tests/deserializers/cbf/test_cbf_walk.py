"""The C walk over a CBF chunk's blocks equals the Python walk, and hands every bad count to it."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cntkio.deserializers.cbf import layout

_cbf = pytest.importorskip("cntkio._native._cbf")  # the C module itself, also under CNTKIO_PURE_PYTHON


def _blocks(draw_counts, sparse, w, rng):
    """Words of one stream's blocks: dense (count, count*w values) or sparse (count, nnz, ...)."""
    out = []
    for k, z in draw_counts:
        if sparse:
            out += [k, z] + list(rng.integers(0, 9, z * (w + 1) + k))
        else:
            out += [k] + list(rng.integers(0, 9, k * w))
    return np.array(out, np.uint32)


@settings(max_examples=150, deadline=None)
@given(counts=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 6)), max_size=30),
       sparse=st.booleans(), w=st.integers(1, 4), lead=st.integers(0, 3), seed=st.integers(0, 99))
def test_c_walk_equals_python_walk(counts, sparse, w, lead, seed):
    rng = np.random.default_rng(seed)
    words = np.concatenate([np.zeros(lead, np.uint32), _blocks(counts, sparse, w, rng)])
    got = _cbf.walk(words, lead, len(counts), sparse, w)
    if sparse:
        want = layout._walk_sparse(words, lead, len(counts), w, "f.cbf", 0, None, 0)
        s, k, z, end = got
        assert np.array_equal(z, want[2]) and z.tolist() == [c[1] for c in counts]
    else:
        want = layout._walk_dense(words, lead, len(counts), w, "f.cbf", 0, None, 0)
        s, k, z, end = got
        assert z is None
        want = (want[0], want[1], None, want[2])
    assert np.array_equal(s, want[0]) and np.array_equal(k, want[1]) and end == want[3] == len(words)
    assert k.tolist() == [c[0] for c in counts]


@pytest.mark.parametrize("sparse", [False, True])
def test_a_count_past_the_end_is_left_to_the_python_walk(sparse):
    rng = np.random.default_rng(0)
    words = _blocks([(2, 1), (3, 2)], sparse, 2, rng)
    assert _cbf.walk(words[:-1], 0, 2, sparse, 2) is None      # the last block is cut short
    assert _cbf.walk(words, 0, 3, sparse, 2) is None           # one sequence more than there is
    if sparse:
        bad = words.copy()
        bad[1] = 0xFFFFFFFF                                    # nnz -1
        assert _cbf.walk(bad, 0, 2, sparse, 2) is None
