"""Counting.searchsorted (the frame-mode timeline's starts): the scalar fast path the walker calls
per minibatch gives what numpy.searchsorted gives on the materialised array, type included."""
import numpy as np
import pytest

from cntkio.engine.randomizer import Counting


@pytest.mark.parametrize("lo,n", [(0, 10), (5, 7), (3, 0), (0, 1)])
@pytest.mark.parametrize("side", ["left", "right"])
def test_scalar_matches_numpy(lo, n, side):
    c = Counting(lo, n)
    a = np.arange(lo, lo + n, dtype=np.int64)
    for v in range(lo - 3, lo + n + 4):
        for x in (v, np.int64(v), np.int32(v)):
            got = c.searchsorted(x, side=side)
            assert got == np.searchsorted(a, x, side=side)
            assert isinstance(got, np.intp)


def test_arrays_and_floats_unchanged():
    c = Counting(2, 5)
    a = np.arange(2, 7)
    v = np.array([0, 2, 3.5, 6, 9])
    assert c.searchsorted(v).tolist() == np.searchsorted(a, v).tolist()
    assert c.searchsorted(v, side="right").tolist() == np.searchsorted(a, v, side="right").tolist()
    assert c.searchsorted(3.5) == 2 and c.searchsorted(4.0, side="right") == 3
