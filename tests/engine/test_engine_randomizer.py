"""BlockRandomizer / NoRandomizer orders: the spec's reference values (cntk-io-semantics 2.5),
C == pure Python == the spec's executable model."""
import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cntkio.engine import randomizer as R
import paths

EVERYTHING = 2**64 - 1
SPEC = paths.SPEC / "cntk_randomizer_reference.py"


def _reference():
    spec = importlib.util.spec_from_file_location("cntk_randomizer_reference", SPEC)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(params=["c", "python"])
def impl(request, monkeypatch):
    if request.param == "python":
        monkeypatch.setenv("CNTKIO_PURE_PYTHON", "1")
    else:
        monkeypatch.delenv("CNTKIO_PURE_PYTHON", raising=False)
    return request.param


def values(rand, per_chunk, sweep=0):
    tl = rand.timeline(sweep)
    return (tl.chunk.astype(np.int64) * per_chunk + tl.index).tolist()


def test_mt19937_64_matches_the_standard(impl):
    # std::mt19937_64 default seed 5489: the 10000th output is 9981545732273789042 (C++11 standard)
    assert int(R.draws(5489, 10000)[-1]) == 9981545732273789042
    rng = R.MT19937_64(5489)
    assert [rng() for _ in range(3)] == R.draws(5489, 3).tolist()


@pytest.mark.parametrize("window,sample_based,seed,chunks,expected", [
    (EVERYTHING, True, 0, 5, [6, 3, 1, 5, 9, 0, 4, 2, 7, 8]),
    (EVERYTHING, True, 1, 5, [3, 0, 8, 4, 7, 5, 2, 9, 1, 6]),
    (4, True, 0, 5, [8, 9, 1, 0, 6, 7, 2, 3, 4, 5]),
    (18, True, 0, 10, [18, 19, 7, 14, 6, 9, 8, 15, 5, 2, 10, 13, 16, 17, 1, 4, 3, 12, 11, 0]),
])
def test_reference_orders_two_sequence_chunks(impl, window, sample_based, seed, chunks, expected):
    rand = R.BlockRandomizer([np.ones(2)] * chunks, window, sample_based, seed)
    assert values(rand, 2) == expected


def test_sample_window_4_chunk_order_and_windows(impl):
    assert R.full_range_shuffle(0, 5).tolist() == [4, 0, 3, 1, 2]
    b, e = R.chunk_windows([2] * 5, 4, True)
    assert list(zip(b.tolist(), e.tolist())) == [(0, 1), (0, 2), (1, 3), (2, 4), (3, 5)]


@pytest.mark.parametrize("seed,expected", [(0, [2, 0, 1, 3]), (1, [0, 2, 3, 1]), (2, [0, 2, 1, 3]),
                                           (3, [3, 2, 1, 0])])
def test_single_chunk_of_four(impl, seed, expected):
    assert values(R.BlockRandomizer([np.ones(4)], 128, False, seed), 4) == expected


def test_single_chunk_of_ten(impl):
    assert values(R.BlockRandomizer([np.ones(10)], 128, False, 0), 10) == [4, 7, 3, 9, 1, 2, 8, 6, 5, 0]
    assert values(R.BlockRandomizer([np.ones(10)], 128, False, 1), 10) == [1, 2, 8, 6, 5, 7, 0, 9, 3, 4]


def test_distributed_example_order(impl):
    ids = [0, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    rand = R.BlockRandomizer([np.array([7, 3, 4, 1, 2, 2, 1, 2, 2, 1])], 128, False, 0)
    tl = rand.timeline(0)
    assert [ids[i] for i in tl.index] == [5, 8, 4, 10, 2, 3, 9, 7, 6, 0]
    assert tl.length.tolist() == [2, 2, 1, 1, 3, 4, 2, 1, 2, 7]
    assert tl.start.tolist() == [0, 2, 4, 5, 6, 9, 13, 15, 16, 18, 25]


def test_sweep_k_uses_seed_plus_k(impl):
    # test_random_seed: seed s in sweep k is seed s + k in sweep 0
    a = R.BlockRandomizer([np.ones(3)] * 4, 2, False, 5)
    b = R.BlockRandomizer([np.ones(3)] * 4, 2, False, 8)
    assert values(a, 3, sweep=3) == values(b, 3, sweep=0)
    assert values(a, 3, sweep=0) != values(a, 3, sweep=1)


def test_no_randomizer_is_input_order():
    rand = R.NoRandomizer([np.array([1, 2]), np.array([3])])
    tl = rand.timeline(7)
    assert tl.chunk.tolist() == [0, 0, 1] and tl.index.tolist() == [0, 1, 0]
    assert tl.start.tolist() == [0, 1, 3, 6]
    assert tl.first_use.tolist() == [0, 2] and tl.last_use.tolist() == [1, 2]


def test_window_shuffle_rule(impl):
    rng = R.MT19937_64(42)
    order = list(range(7))
    for i in range(7):
        j = i + rng() % (7 - i)
        order[i], order[j] = order[j], order[i]
    assert R.window_shuffle(42, 7).tolist() == order


@paths.needs_shared
@settings(max_examples=40, deadline=None)
@given(chunks=st.lists(st.lists(st.integers(1, 5), min_size=1, max_size=6), min_size=1, max_size=7),
       window=st.integers(0, 40), sample_based=st.booleans(), seed=st.integers(0, 2**64 - 1),
       sweep=st.integers(0, 3))
def test_c_python_and_spec_model_agree(chunks, window, sample_based, seed, sweep):
    ref = _reference()
    import os
    model = ref.randomize_sweep(chunks, window, sample_based, (seed + sweep) & (2**64 - 1))
    expected = [(c, i, l, k) for (c, i, l, k) in model]
    results = []
    for pure in ("0", "1"):
        os.environ["CNTKIO_PURE_PYTHON"] = pure
        try:
            tl = R.BlockRandomizer(chunks, window, sample_based, seed).timeline(sweep)
        finally:
            os.environ.pop("CNTKIO_PURE_PYTHON", None)
        results.append(list(zip(tl.chunk.tolist(), tl.index.tolist(), tl.length.tolist(), tl.rchunk.tolist())))
    assert results[0] == results[1] == expected


def test_c_module_releases_gil_and_validates():
    from cntkio._native import native
    mod = native("rand")
    with pytest.raises(ValueError, match="window of chunk 0"):
        mod.swap_sequences(0, np.zeros(2, np.int32), np.array([1], np.int32), np.array([1], np.int32),
                           np.array([0, 2], np.int64))
    with pytest.raises(ValueError, match="owner"):
        mod.swap_sequences(0, np.array([0, 3], np.int32), np.array([0], np.int32), np.array([1], np.int32),
                           np.array([0, 2], np.int64))
