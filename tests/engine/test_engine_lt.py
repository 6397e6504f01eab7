"""Local-timeline randomizers for user deserializers (cntk-io-semantics 2.4, 2.6, 2.7)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cntkio.engine.randomizer import full_range_shuffle, window_shuffle
from cntkio.testing import assert_resumes_exactly
from cntkio.source import MinibatchSource
from fakes import FakeDeserializer, ids_of


class UserLike(FakeDeserializer):
    """A FakeDeserializer marked as a user deserializer (read with the LT randomizers)."""

    is_user_deserializer = True

    def num_chunks(self):
        return len(self.chunks)


def calls(src, size, n, **kw):
    out = []
    for _ in range(n):
        mb = src.next_minibatch(size, **kw)
        out.append(None if not mb else (ids_of(mb[src.streams.x]), mb[src.streams.x].end_of_sweep))
    return out


def test_lt_no_randomizer_order_and_marker_subtlety():
    src = MinibatchSource(UserLike([[1, 1], [1, 1, 1]]), randomize=False, max_sweeps=2)
    assert calls(src, 2, 7) == [
        ([0, 1], False), ([2, 3], False),
        ([4, 0], True),           # the marker is passed inside this call
        ([1, 2], False),
        ([3, 4], False),          # full exactly at the sweep end: the marker is left to the next call
        None, None]               # ... which passes it, reaching max_sweeps


def test_lt_no_randomizer_round_robin_resets_each_sweep():
    def worker(r):
        src = MinibatchSource(UserLike([[1, 1], [1, 1, 1]]), randomize=False, max_sweeps=2)
        return [q for c in calls(src, 10, 5, num_data_partitions=2, partition_index=r) if c for q in c[0]]
    assert worker(0) == [0, 2, 4, 0, 2, 4]
    assert worker(1) == [1, 3, 1, 3]


def test_lt_worker_without_any_sequence_ends_instead_of_looping():
    # one sequence, dealt round-robin: worker 1 never gets one, even with endless sweeps
    src = MinibatchSource(UserLike([[1]]), randomize=False)
    assert src.next_minibatch(2, num_data_partitions=2, partition_index=1) == {}
    assert ids_of(MinibatchSource(UserLike([[1]]), randomize=False).next_minibatch(
        2, num_data_partitions=2, partition_index=0)[src.streams.x]) == [0]


def test_lt_max_samples_is_a_per_worker_budget():
    def worker(r):
        src = MinibatchSource(UserLike([[1] * 10]), randomize=False, max_samples=5)
        return [q for c in calls(src, 2, 6, num_data_partitions=2, partition_index=r) if c for q in c[0]]
    assert worker(0) == [0, 2, 4]   # budget 5 // 2 + 1
    assert worker(1) == [1, 3]      # budget 5 // 2


def test_lt_full_data_sweep_is_one_sweep():
    from cntkio import FULL_DATA_SWEEP
    src = MinibatchSource(UserLike([[1, 1], [1]]), randomize=False, max_samples=FULL_DATA_SWEEP)
    assert calls(src, 10, 2) == [([0, 1, 2], True), None]


def _expected_tumbling(C, per_chunk, window, seed, sweeps):
    """The order the rules of 2.7 give for chunks of ``per_chunk`` one-sample sequences."""
    out = []
    s, cp = 0, 0
    while s < sweeps:
        order = full_range_shuffle(seed + s, C).tolist()
        first = list(range(cp, min(C, cp + window)))
        seqs = [order[q] * per_chunk + i for q in first for i in range(per_chunk)]
        out += [seqs[p] for p in window_shuffle(cp + s + seed, len(seqs)).tolist()]
        if len(first) < window:
            out.append("|")
            s += 1
            if s >= sweeps:
                break
            order = full_range_shuffle(seed + s, C).tolist()
            second = list(range(0, window - len(first)))
            seqs = [order[q] * per_chunk + i for q in second for i in range(per_chunk)]
            out += [seqs[p] for p in window_shuffle(0 + s + seed, len(seqs)).tolist()]
            cp = second[-1] + 1 if second else 0
        else:
            cp = first[-1] + 1
    return out


@pytest.mark.parametrize("C,window,seed", [(3, 2, 0), (5, 2, 3), (4, 3, 1), (2, 1, 7)])
def test_lt_tumbling_window_order(C, window, seed):
    per = 2
    src = MinibatchSource(UserLike([[1] * per] * C), randomization_window_in_chunks=window,
                          randomization_seed=seed, max_sweeps=2)
    got = []
    while True:
        mb = src.next_minibatch(1)
        if not mb:
            break
        # with size 1 a call that passes a marker does so before its one sequence (the marker
        # after a full minibatch is left to the next call)
        if mb[src.streams.x].end_of_sweep:
            got.append("|")
        got += ids_of(mb[src.streams.x])
    expected = _expected_tumbling(C, per, window, seed, 2)
    assert expected[-1] == "|" and got == expected[:-1]  # the last marker ends the epoch: {}


def test_lt_tumbling_workers_take_chunks_by_shuffled_position():
    C = 5
    order = full_range_shuffle(0, C).tolist()
    src = MinibatchSource(UserLike([[1, 1]] * C), randomization_window_in_chunks=1, max_sweeps=1)
    got = [q for c in calls(src, 100, 4, num_data_partitions=2, partition_index=1) if c for q in c[0]]
    assert sorted(got) == sorted(order[q] * 2 + i for q in (1, 3) for i in range(2))
    # a worker with no chunk gets nothing
    src = MinibatchSource(UserLike([[1, 1]] * 2), randomization_window_in_chunks=1)
    assert src.next_minibatch(4, num_data_partitions=3, partition_index=2) == {}


def test_lt_checkpoint_keys():
    src = MinibatchSource(UserLike([[1, 1], [1]]), randomize=False)
    assert set(src.get_checkpoint_state()) == {"baseSweepCount", "baseSampleCount",
                                               "baseCurrentSequencePositionInWindow",
                                               "currentChunkPosition", "currentSequencePosition"}
    src = MinibatchSource(UserLike([[1, 1], [1]]))
    state = src.get_checkpoint_state()
    assert set(state) == {"baseSweepCount", "baseSampleCount", "baseCurrentSequencePositionInWindow",
                          "chunkPosition", "sweepIndex"}
    with pytest.raises(ValueError, match="Checkpoint misses required field sweepIndex"):
        src.restore_from_checkpoint({k: v for k, v in state.items() if k != "sweepIndex"})


def test_lt_releases_chunks_at_epoch_end():
    d = UserLike([[1, 1]] * 3)
    src = MinibatchSource(d, randomize=False, max_sweeps=1)
    while src.next_minibatch(3):
        assert len(src._reader.policy.cache.held()) <= 2
    assert src._reader.policy.cache.held() == []


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), chunks=st.lists(st.lists(st.integers(1, 3), min_size=1, max_size=4), min_size=1, max_size=5))
def test_lt_restore_gives_the_uninterrupted_minibatches(data, chunks):
    opts = {}
    if data.draw(st.booleans()):
        opts["randomize"] = False
    else:
        opts["randomization_window_in_chunks"] = data.draw(st.integers(1, 3))
        opts["randomization_seed"] = data.draw(st.integers(0, 4))
    if data.draw(st.booleans()):
        opts["truncation_length"] = data.draw(st.integers(1, 3))
    limit = data.draw(st.sampled_from(["none", "sweeps", "samples"]))
    if limit == "sweeps":
        opts["max_sweeps"] = data.draw(st.integers(1, 3))
    elif limit == "samples":
        opts["max_samples"] = data.draw(st.integers(1, 40))
    W = data.draw(st.integers(1, 2))
    r = data.draw(st.integers(0, W - 1))
    T = opts.get("truncation_length", 1)
    sizes = data.draw(st.lists(st.integers(W * T, W * T + 6), min_size=1, max_size=7))
    assert_resumes_exactly(lambda: MinibatchSource(UserLike(chunks, sparse_dim=2), **opts),
                           [(s, W, r) for s in sizes], max_minibatches=len(sizes))


def test_custom_deserializer_fromdata_example_randomized_and_not():
    """spec/custom-deserializer.txt, section 1: the FromData outputs with and without randomization."""
    import scipy.sparse as sp
    from cntkio import StreamInformation
    from cntkio.deserializers.user import UserDeserializer

    class FromData(UserDeserializer):
        def __init__(self, data_streams):
            super().__init__()
            self._data = data_streams
            self._streams = [dict(name=k, shape=v.shape[1:], is_sparse=isinstance(v, sp.csr_matrix))
                             for k, v in data_streams.items()]

        def stream_infos(self):
            return [StreamInformation(s["name"], i, ["dense", "sparse"][s["is_sparse"]], np.float32, s["shape"])
                    for i, s in enumerate(self._streams)]

        def num_chunks(self):
            return 1

        def get_chunk(self, chunk_id):
            return self._data

    X = np.arange(15).reshape(5, 3).astype(np.float32)
    Y = sp.csr_matrix(np.array([[1, 0, 0], [0, 2, 0], [0, 0, 3], [4, 0, 0], [0, 5, 0]], dtype=np.float32))
    mbs = MinibatchSource([FromData(dict(x=X, y=Y))], randomize=False)
    mb = mbs.next_minibatch(3)
    assert mb[mbs.streams["y"]].as_csr().toarray().tolist() == [[1, 0, 0], [0, 2, 0], [0, 0, 3]]
    assert mb[mbs.streams["x"]].as_sequences()[2].tolist() == [[6, 7, 8]]
    mbs1 = MinibatchSource([FromData(dict(x=X, y=Y))], randomize=True)
    mb1 = mbs1.next_minibatch(3)
    assert mb1[mbs1.streams["y"]].as_csr().toarray().tolist() == [[0, 5, 0], [1, 0, 0], [4, 0, 0]]
    assert np.concatenate(mb1[mbs1.streams["x"]].as_sequences()).tolist() == [[12, 13, 14], [0, 1, 2], [9, 10, 11]]


def test_lt_sample_window_takes_chunks_until_the_window_is_full():
    # chunks of 2 samples: a window of 4 samples is a window of 2 chunks
    def read(**kw):
        src = MinibatchSource(UserLike([[1, 1]] * 5), max_sweeps=2, randomization_seed=2, **kw)
        return [(ids_of(mb[src.streams.x]), mb[src.streams.x].end_of_sweep) for mb in src.iter(minibatch_size=3)]
    by_samples = read(randomization_window_in_chunks=0, randomization_window_in_samples=4)
    assert by_samples == read(randomization_window_in_chunks=2)
    assert sorted(q for ids, _ in by_samples for q in ids) == sorted(list(range(10)) * 2)


def test_lt_frame_mode_rejects_multi_sample_sequences():
    src = MinibatchSource(UserLike([[1, 2]]), randomize=False, frame_mode=True)
    with pytest.raises(RuntimeError, match="Detected a non-frame sequence of size 2 in frame mode."):
        src.next_minibatch(4)
