"""Global randomization (engine/index_shuffle.py): the keyed bijection, and through MinibatchSource on
CBF: partitions cover every sequence exactly once per sweep, a restore anywhere continues the
same stream, the order is a pure function of (seed, sweep)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from cntkio import CBFDeserializer, MinibatchSource
from cntkio.deserializers.cbf import ctf2bin
from cntkio.engine.index_shuffle import IndexShuffle
from cntkio.errors import ConfigError
from cntkio.testing import assert_resumes_exactly

from tests.deserializers.cbf.test_cbf_source import CHUNK, DEFS, _write, ctf_cfg


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 3000), seed=st.integers(0, 2**40), sweep=st.integers(0, 1000))
def test_a_sweep_is_a_permutation_of_every_sequence(n, seed, sweep):
    perm = IndexShuffle(n, seed, sweep)(np.arange(n))
    assert perm.dtype == np.int64 and np.array_equal(np.sort(perm), np.arange(n))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 5000), seed=st.integers(0, 99), data=st.data())
def test_any_position_is_computed_alone(n, seed, data):
    whole = IndexShuffle(n, seed, 2)(np.arange(n))
    some = np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=20)), np.int64)
    assert np.array_equal(IndexShuffle(n, seed, 2)(some), whole[some])


def test_the_order_is_a_pure_function_of_seed_and_sweep():
    a = IndexShuffle(10, 0, 0)(np.arange(10))
    assert np.array_equal(a, IndexShuffle(10, 0, 0)(np.arange(10)))
    # pinned: a checkpoint written by this version restores the same order in a later one
    assert a.tolist() == PINNED
    assert not np.array_equal(a, IndexShuffle(10, 0, 1)(np.arange(10)))
    assert not np.array_equal(a, IndexShuffle(10, 1, 0)(np.arange(10)))
    with pytest.raises(IndexError):
        IndexShuffle(10, 0, 0)(np.array([10]))


PINNED = [1, 8, 6, 7, 0, 9, 3, 2, 4, 5]


def test_a_sweep_is_shuffled_over_the_whole_corpus():
    n = 20000
    perm = IndexShuffle(n, 7, 0)(np.arange(n))
    rho = np.corrcoef(np.arange(n), perm)[0, 1]       # ranks are the values: Spearman = Pearson
    assert abs(rho) < 0.03
    moved = np.abs(perm - np.arange(n)).mean() / n     # uniform: n / 3 on average
    assert 0.31 < moved < 0.35


@pytest.fixture(scope="module", params=["sequences", "frames"])
def corpus(tmp_path_factory, request):
    frames = request.param == "frames"
    d = tmp_path_factory.mktemp(request.param)
    ctf, cbf = d / "d.ctf", d / "d.cbf"
    _write(ctf, np.random.default_rng(11), 80, 5, frames=frames)
    ctf2bin(str(ctf), str(cbf), DEFS, chunk_size=None, ctf_chunk_size=CHUNK)
    return str(ctf), str(cbf), frames


def _source(cbf, frames, **kw):
    args = dict(randomize=True, max_sweeps=2, randomization_seed=3, global_randomization=True,
                frame_mode=frames)
    args.update(kw)
    return MinibatchSource(CBFDeserializer(cbf), **args)


def _keys(src, size, W=1, r=0):
    out = []
    while True:
        mb = src.next_minibatch(size, num_data_partitions=W, partition_index=r)
        if not mb:
            return out
        out.append([int(k) for k in mb.sequence_keys])


def test_each_sweep_is_the_bijection_of_its_sweep(corpus):
    _, cbf, frames = corpus
    src = _source(cbf, frames)
    got = [k for mb in _keys(src, 13) for k in mb]
    assert got == IndexShuffle(80, 3, 0)(np.arange(80)).tolist() + IndexShuffle(80, 3, 1)(np.arange(80)).tolist()
    assert src.sweep_order(1).tolist() == got[80:]


@settings(max_examples=12, deadline=None)
@given(W=st.integers(1, 4), size=st.integers(1, 40), seed=st.integers(0, 50))
def test_partitions_cover_every_sequence_once_per_sweep(corpus, W, size, seed):
    _, cbf, frames = corpus
    got = []
    for r in range(W):
        got += [k for mb in _keys(_source(cbf, frames, max_sweeps=1, randomization_seed=seed), size, W, r)
                for k in mb]
    assert sorted(got) == list(range(80))


@settings(max_examples=3, deadline=None)
@given(sizes=st.lists(st.integers(16, 40), min_size=1, max_size=3), W=st.integers(1, 3), data=st.data())
def test_a_restore_anywhere_continues_the_same_stream(corpus, sizes, W, data):
    _, cbf, frames = corpus
    r = data.draw(st.integers(0, W - 1))
    # every cut point: before each minibatch of two sweeps
    assert_resumes_exactly(lambda: _source(cbf, frames), sizes, num_data_partitions=W, partition_index=r)


def test_every_sequence_carries_its_own_data(corpus):
    # read by index out of the file (CBF's read_sequences): each sequence's data is the one an
    # in-order read of the same file gives for its key
    _, cbf, frames = corpus

    def by_key(src):
        out = {}
        while True:
            mb = src.next_minibatch(23)
            if not mb:
                return out
            seqs = {name: mb[name].as_sequences() for name in ("x", "s", "l")}
            for i, key in enumerate(mb.sequence_keys):
                out.setdefault(int(key), []).append(
                    [np.asarray(seqs[n][i].toarray() if hasattr(seqs[n][i], "toarray") else seqs[n][i]).tolist()
                     for n in ("x", "s", "l")])
    plain = by_key(_source(cbf, frames, randomize=False, max_sweeps=1))
    shuffled = by_key(_source(cbf, frames))
    assert sorted(shuffled) == sorted(plain) == list(range(80))
    assert all(v == plain[k] * 2 for k, v in shuffled.items())        # two sweeps


def test_what_cannot_be_globally_randomized_is_an_error_naming_the_option(corpus):
    ctf, cbf, frames = corpus
    if frames:
        return
    with pytest.raises(ConfigError, match="globalRandomization.*truncated BPTT"):
        _source(cbf, False, truncation_length=2)
    with pytest.raises(ConfigError, match="globalRandomization.*random_access=False"):
        _source(cbf, False, random_access=False)
    with pytest.raises(ConfigError, match="globalRandomization.*cannot read single sequences"):
        MinibatchSource(ctf_cfg(ctf), global_randomization=True)    # CTF reads its chunks' text whole
    # not randomized: nothing to randomize, the option is not used
    assert [k for mb in _keys(_source(cbf, False, randomize=False, max_sweeps=1), 100) for k in mb] == list(range(80))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 70000), seed=st.integers(0, 2**63), sweep=st.integers(0, 2**20))
def test_the_c_loop_and_its_numpy_twin_agree(n, seed, sweep):
    import os
    shuffle = IndexShuffle(n, seed, sweep)
    fast = shuffle(np.arange(n))
    os.environ["CNTKIO_PURE_PYTHON"] = "1"
    try:
        slow = shuffle(np.arange(n))
    finally:
        del os.environ["CNTKIO_PURE_PYTHON"]
    assert np.array_equal(fast, slow)
