"""MinibatchSource: API, validation, epochs, sweeps, distribution, frame mode, truncated BPTT and
checkpoints, on in-memory deserializers (cntk-io-semantics 1.2, 2.3-2.12, 3)."""
import json
import threading

import pytest

from cntkio import FULL_DATA_SWEEP, TraceLevel
from cntkio.source import MinibatchSource
from fakes import FakeDeserializer, ids_of, samples_of

IDS = [0, 2, 3, 4, 5, 6, 7, 8, 9, 10]
LENS = [7, 3, 4, 1, 2, 2, 1, 2, 2, 1]


def read_all(src, size, limit=100, **kw):
    out = []
    for _ in range(limit):
        mb = src.next_minibatch(size, **kw)
        if not mb:
            return out
        out.append(mb[src.streams.x])
    raise AssertionError("epoch did not end")


# --- construction ---------------------------------------------------------------------------------
def test_max_samples_and_max_sweeps_together_raise():
    with pytest.raises(RuntimeError, match="max_samples and max_sweeps"):
        MinibatchSource(FakeDeserializer([[1]]), max_samples=10, max_sweeps=1)


def test_both_windows_raise_unless_not_randomized():
    with pytest.raises(RuntimeError, match="cannot both be non-zero"):
        MinibatchSource(FakeDeserializer([[1]]), randomization_window_in_chunks=2,
                        randomization_window_in_samples=10)
    src = MinibatchSource(FakeDeserializer([[1]]), randomization_window_in_chunks=2,
                          randomization_window_in_samples=10, randomize=False)
    assert not src.randomize


def test_frame_mode_with_truncation_raises():
    with pytest.raises(RuntimeError, match="frame_mode"):
        MinibatchSource(FakeDeserializer([[1]]), frame_mode=True, truncation_length=2)


def test_user_deserializer_cannot_be_composed():
    class User(FakeDeserializer):
        is_user_deserializer = True
    with pytest.raises(ValueError, match="Currently composition for user defined deserializers is not supported."):
        MinibatchSource([User([[1]]), FakeDeserializer([[1]])])


def test_empty_stream_config_raises_value_error_with_call_stack():
    with pytest.raises(ValueError, match=r"\[CALL STACK\]"):
        MinibatchSource({"type": "CNTKTextFormatDeserializer", "file": "", "input": {}})


def test_unknown_deserializer_type_raises_value_error():
    with pytest.raises(ValueError, match="unknown deserializer type 'NoSuchDeserializer'"):
        MinibatchSource({"type": "NoSuchDeserializer", "file": "x", "input": {"a": {}}})


def test_stream_lookup_and_is_infinite():
    src = MinibatchSource(FakeDeserializer([[1, 2]], sparse_dim=5), trace_level=TraceLevel.Info)
    assert [s.name for s in src.stream_infos()] == ["x", "y"]
    assert src.streams.x is src.stream_info("x") is not None and src["y"].is_sparse
    assert src.streams["y"].m_id == 1
    with pytest.raises(RuntimeError, match="no stream named 'z'"):
        src.stream_info("z")
    assert src.is_infinite()
    assert not MinibatchSource(FakeDeserializer([[1]]), max_sweeps=2).is_infinite()


def test_minibatch_size_zero_raises():
    src = MinibatchSource(FakeDeserializer([[1]]))
    with pytest.raises(ValueError, match="must be > 0"):
        src.next_minibatch(0)
    with pytest.raises(ValueError, match="partition_index"):
        src.next_minibatch(1, num_data_partitions=2, partition_index=2)


# --- epochs and sweeps (2.4) ----------------------------------------------------------------------
@pytest.mark.parametrize("kw,sizes,flags", [
    (dict(max_samples=11), [5, 5, 1], [True, True, False]),
    (dict(max_sweeps=3), [5, 5, 2], [True, True, True]),
    (dict(max_samples=1), [1], [False]),
    (dict(max_samples=FULL_DATA_SWEEP), [4], [True]),
])
@pytest.mark.parametrize("randomize", [False, True])
def test_epoch_limits_on_four_one_sample_sequences(kw, sizes, flags, randomize):
    src = MinibatchSource(FakeDeserializer([[1, 1, 1, 1]]), randomize=randomize, **kw)
    mbs = read_all(src, 5)
    assert [m.num_samples for m in mbs] == sizes
    assert [m.end_of_sweep for m in mbs] == flags
    assert src.next_minibatch(5) == {} and src.next_minibatch(5) == {}


def test_minibatches_cross_sweeps_and_whole_sequences_only():
    src = MinibatchSource(FakeDeserializer([[7] * 142]), randomize=False)
    mb = src.next_minibatch(1000)[src.streams.x]
    assert (mb.num_sequences, mb.num_samples, mb.end_of_sweep) == (142, 994, True)
    mb = src.next_minibatch(10)[src.streams.x]  # the first sequence is always taken
    assert (mb.num_sequences, mb.num_samples) == (1, 7)


def test_delivery_iff_start_before_epoch_end_and_budget_not_clipped():
    # fact 11: max_samples=18 can give a minibatch of 21 samples
    src = MinibatchSource(FakeDeserializer([[7, 7, 7, 7]]), randomize=False, max_samples=18)
    mbs = read_all(src, 100)
    assert [m.num_samples for m in mbs] == [21]


def test_values_masks_and_sparse_layout():
    src = MinibatchSource(FakeDeserializer([[2, 1, 3]], sparse_dim=4), randomize=False)
    mb = src.next_minibatch(6)
    x, y = mb[src.streams.x], mb[src.streams.y]
    assert x.shape == (3, 3, 2) and x.mask.tolist() == [[2, 1, 0], [2, 0, 0], [2, 1, 1]]
    assert samples_of(x) == [(0, 0), (0, 1), (1, 0), (2, 0), (2, 1), (2, 2)]
    assert y.is_sparse and y.num_samples == 6
    dense = y.asarray()
    assert dense.shape == (3, 3, 4) and dense[2, 1, 2] == 2001 and dense[0, 1, 0] == 1
    assert y.as_csr().shape == (6, 4)


def test_input_map_result_is_cleared_in_place_by_next_call():
    src = MinibatchSource(FakeDeserializer([[1, 1]]), randomize=False)
    first = src.next_minibatch(1, input_map={"features": src.streams.x})
    assert list(first) == ["features"] and ids_of(first["features"]) == [0]
    second = src.next_minibatch(1, input_map={"features": src.streams.x})
    assert first == {} and ids_of(second["features"]) == [1]


def test_random_seed_sweep_k_equals_seed_plus_k_sweep_0():
    def data(seed, n):
        src = MinibatchSource(FakeDeserializer([[1] * 6]), randomization_seed=seed, max_sweeps=2)
        return [q for m in read_all(src, 3) for q in ids_of(m)][:n]
    assert data(0, 12)[6:] == data(1, 6)
    assert data(0, 6) != data(1, 6)


# --- distribution (2.6, section 3) ----------------------------------------------------------------
def _worker(randomize, rank, **kw):
    src = MinibatchSource(FakeDeserializer([LENS]), randomize=randomize, **kw)
    return [[IDS[q] for q in ids_of(m)] for m in read_all(src, 10, num_data_partitions=2, partition_index=rank)]


def test_distributed_mb_source_not_randomized():
    assert _worker(False, 0, max_samples=36) == [[0], [3], [5, 7, 9], [0], [3]]
    assert _worker(False, 1, max_samples=36) == [[2, 4], [6, 8, 10], [2]]


def test_distributed_mb_source_randomized():
    w0 = _worker(True, 0, max_sweeps=1)
    assert [sum(LENS[IDS.index(i)] for i in mb) for mb in w0] == [5, 4, 4, 5, 7]
    assert [i for mb in w0 for i in mb] == [5, 8, 4, 10, 2, 3, 9, 7, 6, 0]
    assert _worker(True, 1, max_sweeps=1) == []


def test_randomized_worker_rank_beyond_chunks_gets_nothing_even_without_limit():
    src = MinibatchSource(FakeDeserializer([[1, 1], [1, 1]]))
    assert src.next_minibatch(4, num_data_partitions=3, partition_index=2) == {}


def test_randomized_partition_is_by_source_chunk():
    d = FakeDeserializer([[1] * 3] * 4)
    src = MinibatchSource(d, randomization_window_in_chunks=2, max_sweeps=1)
    tl = src._reader.policy.walker.timeline(0)
    mine = {int(c) * 3 + int(i) for c, i, rc in zip(tl.chunk, tl.index, tl.rchunk) if rc % 2 == 1}
    got = [q for m in read_all(src, 2, num_data_partitions=2, partition_index=1) for q in ids_of(m)]
    assert sorted(got) == sorted(mine) and len(got) == 6


def test_worker_budget_split_and_minimum():
    src = MinibatchSource(FakeDeserializer([[1] * 20]), randomize=False)
    assert src.next_minibatch(5, num_data_partitions=2, partition_index=0)[src.streams.x].num_samples == 3
    src2 = MinibatchSource(FakeDeserializer([[1] * 20]), randomize=False)
    assert src2.next_minibatch(5, num_data_partitions=2, partition_index=1)[src2.streams.x].num_samples == 2
    src3 = MinibatchSource(FakeDeserializer([[1] * 20]), randomize=False)
    assert src3.next_minibatch(1, num_data_partitions=4, partition_index=3)[src3.streams.x].num_samples == 1


def test_randomized_worker_without_fitting_sequence_gets_empty_minibatch_and_goes_on():
    # cntk-ctf-behaviours 20: a worker runs past a sweep end without a local sequence, and the
    # first local sequence of the next sweep does not fit: CNTK raised; cntkio returns an empty
    # minibatch (0 sequences, end_of_sweep) and the next call delivers that sequence.
    from cntkio.engine.randomizer import full_range_shuffle
    seed = next(s for s in range(100) if full_range_shuffle(s, 2).tolist() == [0, 1]
                and full_range_shuffle(s + 1, 2).tolist() == [1, 0])
    src = MinibatchSource(FakeDeserializer([[1], [3]]), randomization_window_in_chunks=1, randomization_seed=seed)
    src.restore_from_checkpoint({"minibatchSourcePosition": 1})  # start of sweep 0's chunk for worker 1
    mb = src.next_minibatch(2, num_data_partitions=2, partition_index=0)[src.streams.x]
    assert (mb.num_sequences, mb.end_of_sweep) == (0, True)
    assert src.get_checkpoint_state() == {"minibatchSourcePosition": 4}
    mb = src.next_minibatch(2, num_data_partitions=2, partition_index=0)[src.streams.x]
    assert ids_of(mb) == [1] and mb.num_samples == 3


# --- frame mode and truncated BPTT ----------------------------------------------------------------
def test_frame_mode_shapes_and_non_frame_error():
    src = MinibatchSource(FakeDeserializer([[1] * 5]), frame_mode=True, randomize=False)
    mb = src.next_minibatch(3)[src.streams.x]
    assert mb.shape == (3, 1, 2) and ids_of(mb) == [0, 1, 2]
    bad = MinibatchSource(FakeDeserializer([[1, 2]]), frame_mode=True, randomize=False)
    with pytest.raises(RuntimeError, match="Detected a non-frame sequence of size 2 in frame mode."):
        bad.next_minibatch(5)


def test_truncated_bptt_layout_and_masks():
    src = MinibatchSource(FakeDeserializer([[5, 3, 4]], sparse_dim=3), truncation_length=2, randomize=False,
                          max_sweeps=1)
    assert not src.streams.y.is_sparse  # sparse inputs come out dense
    # end_of_sweep comes with the last sample of the sweep's last sequence, as in CNTK 2.7 (not
    # when that sequence is fetched into its slot: tests/data/partitions/make_golden.py)
    expect = [
        ([[2, 1], [2, 1]], [(0, 0), (0, 1), (1, 0), (1, 1)], False),
        ([[1, 1], [1, 2]], [(0, 2), (0, 3), (1, 2), (2, 0)], False),
        ([[1, 0], [1, 1]], [(0, 4), (2, 1), (2, 2)], False),
        ([[0, 0], [1, 0]], [(2, 3)], True),
    ]
    for mask, samples, eos in expect:
        mb = src.next_minibatch(4)
        x, y = mb[src.streams.x], mb[src.streams.y]
        assert x.mask.tolist() == mask and samples_of(x) == samples and x.end_of_sweep == eos
        assert y.mask.tolist() == mask and not y.is_sparse and y.asarray().shape == (2, 2, 3)
    assert src.next_minibatch(4) == {}


def test_truncated_bptt_too_many_workers():
    src = MinibatchSource(FakeDeserializer([[5]]), truncation_length=4)
    with pytest.raises(ValueError, match="Too many workers"):
        src.next_minibatch(8, num_data_partitions=3, partition_index=0)


# --- checkpoints (2.11) ---------------------------------------------------------------------------
def test_checkpoint_is_position_after_last_minibatch_and_restores_exactly():
    def make():
        return MinibatchSource(FakeDeserializer([[1, 2, 3]] * 3), randomization_window_in_chunks=2,
                               randomization_seed=7)
    a = make()
    ref = [samples_of(a.next_minibatch(4)[a.streams.x]) for _ in range(8)]
    b = make()
    for _ in range(3):
        b.next_minibatch(4)
    state = json.loads(json.dumps(b.get_checkpoint_state()))
    assert set(state) == {"minibatchSourcePosition"}
    c = make()
    c.restore_from_checkpoint(state)
    assert [samples_of(c.next_minibatch(4)[c.streams.x]) for _ in range(5)] == ref[3:]


def test_restore_rounds_up_to_next_sequence_start_and_restarts_ended_epoch():
    src = MinibatchSource(FakeDeserializer([[2, 2, 2]]), randomize=False, max_sweeps=1)
    src.restore_from_checkpoint({"minibatchSourcePosition": 3})
    assert src.get_checkpoint_state() == {"minibatchSourcePosition": 4}
    assert ids_of(src.next_minibatch(2)[src.streams.x]) == [2]
    assert src.next_minibatch(2) == {}
    src.current_position = {"minibatchSourcePosition": 0}
    assert ids_of(src.next_minibatch(2)[src.streams.x]) == [0]
    assert src.current_position == {"minibatchSourcePosition": 2}


def test_restore_missing_key_raises():
    src = MinibatchSource(FakeDeserializer([[1]]))
    with pytest.raises(ValueError, match="Checkpoint misses required field minibatchSourcePosition"):
        src.restore_from_checkpoint({})


def test_state_then_restore_on_fresh_source_is_harmless():
    a = MinibatchSource(FakeDeserializer([[1] * 5]), randomize=False)
    a.restore_from_checkpoint(a.get_checkpoint_state())
    assert ids_of(a.next_minibatch(2)[a.streams.x]) == [0, 1]


# --- invalid sequences (2.12) ---------------------------------------------------------------------
def test_invalid_sequences_dropped_and_counted_against_max_errors():
    src = MinibatchSource(FakeDeserializer([[1] * 6], invalid={1, 4}), randomize=False, max_errors=1)
    assert ids_of(src.next_minibatch(3)[src.streams.x]) == [0, 2]
    with pytest.raises(RuntimeError, match="Number of invalid sequences '2' in the input exceeded the "
                                           "specified maximum number '1'"):
        src.next_minibatch(3)


# a minibatch whose sequences are all invalid: tests/engine/test_invalid_sequences.py


# --- iteration, threads, close --------------------------------------------------------------------
def test_iter_and_context_manager_close_threads():
    before = {t.ident for t in threading.enumerate()}
    with MinibatchSource(FakeDeserializer([[1] * 10] * 3), max_sweeps=1) as src:
        got = [q for mb in src.iter(minibatch_size=4) for q in ids_of(mb[src.streams.x])]
        assert sorted(got) == list(range(30))
        assert len(list(src)) == 0  # the epoch ended
    # the closer thread (engine/closer.py) lives as long as the process, started by the first source
    assert {t.ident for t in threading.enumerate()
            if t.name.startswith("cntkio") and t.name != "cntkio-closer"} - before == set()
    with pytest.raises(RuntimeError, match="closed"):
        src.next_minibatch(1)


def test_worker_exception_surfaces_in_next_minibatch():
    src = MinibatchSource(FakeDeserializer([[1, 1], [1, 1], [1, 1]], fail_chunk=1), randomize=False)
    src.next_minibatch(2)
    with pytest.raises(OSError, match="cannot read chunk 1"):
        src.next_minibatch(2)
    src.close()


def test_memory_bounded_by_window():
    d = FakeDeserializer([[1] * 5] * 40)
    src = MinibatchSource(d, randomization_window_in_chunks=4, max_sweeps=1)
    peak = 0
    for _ in src.iter(minibatch_size=7):
        peak = max(peak, len(src._reader.policy.window.cache.held()))
    assert peak <= 8
    assert len(d.loads) == 40  # every chunk parsed once per sweep
    assert src._reader.policy.window.cache.held() == []
    nr = FakeDeserializer([[1] * 5] * 40)
    src = MinibatchSource(nr, randomize=False, max_sweeps=1)
    for _ in src.iter(minibatch_size=7):
        # the chunk under the cursor, the next one, and the one a packed-ahead batch reaches into
        assert len(src._reader.policy.window.cache.held()) <= 4
    assert sorted(nr.loads) == list(range(40))


def test_trace_level_info_describes_the_reader(caplog):
    import logging
    with caplog.at_level(logging.INFO, logger="cntkio"):
        MinibatchSource(FakeDeserializer([[1, 2], [3]]), trace_level=TraceLevel.Info, randomization_seed=3,
                        max_sweeps=2)
    assert ("3 sequences (6 samples per sweep) in 2 chunks; block randomizer, window 128 chunks, seed 3; "
            "epoch end at sample 12; sequence packing") in caplog.text


# --- beyond cntk.io: name access, a movable epoch end --------------------------------------------
def test_minibatch_is_indexed_by_stream_information_and_by_name():
    src = MinibatchSource(FakeDeserializer([LENS], sparse_dim=3), randomize=False)
    mb = src.next_minibatch(10)
    assert mb["x"] is mb[src.streams.x] and mb["y"] is mb[src.streams.y]
    with pytest.raises(KeyError):
        mb["nope"]


def test_set_epoch_end_stops_at_the_first_sequence_starting_there_and_keeps_the_position():
    # one sweep of LENS = 25 samples (fake ids 0..9); sequence starts 0,7,10,14,15,17,19,20,22,24
    src = MinibatchSource(FakeDeserializer([LENS]), randomize=False)
    assert src.epoch_end is None
    src.set_epoch_end(14)
    got = [ids_of(mb) for mb in (m["x"] for m in src.iter(minibatch_size=4))]
    assert got == [[0], [1], [2]] and src.get_checkpoint_state() == {"minibatchSourcePosition": 14}
    src.set_epoch_end(20)                      # moving it on continues from where reading stopped
    assert [ids_of(m["x"]) for m in src.iter(minibatch_size=4)] == [[3, 4], [5, 6]]
    src.set_epoch_end(None)
    assert ids_of(src.next_minibatch(3)["x"]) == [7]
    with pytest.raises(ValueError):
        src.set_epoch_end(-1)
