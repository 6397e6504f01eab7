"""Property tests over random inputs, options and cut points: exact resume in every mode,
partitions of a sweep are disjoint and cover it, resuming on another number of workers continues
the same global timeline."""
from collections import Counter

from hypothesis import HealthCheck, given, settings, strategies as st

from cntkio.testing import assert_resumes_exactly
from cntkio.source import MinibatchSource
from fakes import FakeDeserializer, samples_of

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

chunks_st = st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=5), min_size=1, max_size=6)


@st.composite
def options(draw, chunks):
    mode = draw(st.sampled_from(["seq", "frame", "tbptt"]))
    opts = {}
    if mode == "frame":
        chunks = [[1] * len(c) for c in chunks]
        opts["frame_mode"] = True
    elif mode == "tbptt":
        opts["truncation_length"] = draw(st.integers(1, 3))
    rnd = draw(st.sampled_from(["none", "chunks", "samples"]))
    if rnd == "none":
        opts["randomize"] = False
    elif rnd == "chunks":
        opts["randomization_window_in_chunks"] = draw(st.integers(1, 4))
    else:
        opts["randomization_window_in_chunks"] = 0
        opts["randomization_window_in_samples"] = draw(st.integers(1, 12))
    opts["randomization_seed"] = draw(st.integers(0, 5))
    limit = draw(st.sampled_from(["none", "samples", "sweeps"]))
    if limit == "samples":
        opts["max_samples"] = draw(st.integers(1, 60))
    elif limit == "sweeps":
        opts["max_sweeps"] = draw(st.integers(1, 3))
    return chunks, opts


def make(chunks, opts, sparse=True):
    return lambda: MinibatchSource(FakeDeserializer(chunks, sparse_dim=3 if sparse else 0), **opts)


@SETTINGS
@given(data=st.data(), chunks=chunks_st)
def test_restore_on_fresh_source_gives_the_uninterrupted_minibatches(data, chunks):
    chunks, opts = data.draw(options(chunks))
    W = data.draw(st.integers(1, 3))
    r = data.draw(st.integers(0, W - 1))
    T = opts.get("truncation_length", 1)
    sizes = data.draw(st.lists(st.integers(W * T, W * T + 8), min_size=1, max_size=8))
    calls = [(s, W, r) for s in sizes]
    assert_resumes_exactly(make(chunks, opts), calls, max_minibatches=len(calls))


def _sweep_of(src, W, r, size):
    got = []
    for _ in range(500):
        mb = src.next_minibatch(size, num_data_partitions=W, partition_index=r)
        if not mb:
            return got
        got.extend(samples_of(mb[src.streams.x]))
    raise AssertionError("no epoch end")


@SETTINGS
@given(data=st.data(), chunks=chunks_st)
def test_partitions_of_a_sweep_are_disjoint_and_cover_it(data, chunks):
    chunks, opts = data.draw(options(chunks))
    opts.pop("max_samples", None)
    opts["max_sweeps"] = 1
    W = data.draw(st.integers(1, 4))
    T = opts.get("truncation_length", 1)
    size = data.draw(st.integers(W * T, W * T + 8))
    everything = Counter((q, t) for q, n in enumerate(x for c in chunks for x in c) for t in range(n))
    seen = Counter()
    for r in range(W):
        seen.update(_sweep_of(make(chunks, opts, sparse=False)(), W, r, size))
    assert seen == everything


@SETTINGS
@given(data=st.data(), chunks=chunks_st)
def test_resume_with_another_number_of_workers_continues_the_global_timeline(data, chunks):
    opts = {"max_sweeps": 1, "randomization_seed": data.draw(st.integers(0, 3))}
    if data.draw(st.booleans()):
        opts["randomize"] = False
    else:
        opts["randomization_window_in_chunks"] = data.draw(st.integers(1, 3))
    size = data.draw(st.integers(1, 6))
    first = make(chunks, opts, sparse=False)()
    prefix = []
    for _ in range(data.draw(st.integers(0, 6))):
        mb = first.next_minibatch(size)
        if mb:
            prefix.extend(samples_of(mb[first.streams.x]))
    state = first.get_checkpoint_state()
    W = data.draw(st.integers(2, 4))
    rest = Counter()
    for r in range(W):
        src = make(chunks, opts, sparse=False)()
        src.restore_from_checkpoint(state)
        rest.update(_sweep_of(src, W, r, max(size, W)))
    everything = Counter((q, t) for q, n in enumerate(x for c in chunks for x in c) for t in range(n))
    assert rest + Counter(prefix) == everything


def test_resume_from_two_workers_at_epoch_end_onto_one():
    # both workers of a one-sweep epoch end at the same global position; one worker continues
    chunks = [[1] * 4, [2, 2], [1, 3]]
    everything = Counter((q, t) for q, n in enumerate(x for c in chunks for x in c) for t in range(n))
    states, seen = [], Counter()
    for r in range(2):
        src = make(chunks, dict(randomization_window_in_chunks=2, max_sweeps=1), sparse=False)()
        seen.update(_sweep_of(src, 2, r, 4))
        states.append(src.get_checkpoint_state())
    assert seen == everything
    assert states[0] == states[1] == {"minibatchSourcePosition": 12}
    one = make(chunks, dict(randomization_window_in_chunks=2, max_sweeps=2), sparse=False)()
    one.restore_from_checkpoint(states[0])
    assert Counter(_sweep_of(one, 1, 0, 4)) == everything
