"""Random access (``MinibatchSource(random_access=True)``, the default for CTF): randomized
batches are parsed sequence by sequence straight out of the file's mapping instead of from whole
parsed chunks. The minibatches must be exactly those of whole-chunk loading
(``random_access=False``) in every case: generated files with malformed lines, dropped sequences,
comments and CRLF, any chunking, window, seed, partition and minibatch size; checkpoints; a
composite joined by key. Issues found by a direct parse send the batch through chunk loading,
which counts and logs them as before."""
from __future__ import annotations

import logging
import os

import numpy as np
import pytest

from cntkio._log import reset_warnings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cntkio import MinibatchSource
from cntkio.deserializers.ctf import available_backends
from cntkio.errors import FormatError, MaxErrorsExceeded
from cntkio.testing import _difference, _snapshot, assert_resumes_exactly
from ctf_cases import DIM_A, DIM_B, ctf_files

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def parse_small_reads_on_threads(monkeypatch):
    """The files here are small: parse every direct read on a native thread (the C parser's
    ``parse_chunk_async``), as the reads of real files are, instead of when it is asked for."""
    monkeypatch.setattr("cntkio.deserializers.ctf.deserializer._ASYNC_MIN_BYTES", 0)


def config(path, chunk_size, max_errors=10**6, defining=None, **extra):
    cfg = {"type": "CNTKTextFormatDeserializer", "file": str(path), "maxErrors": max_errors,
           "traceLevel": 0, "chunkSizeInBytes": chunk_size,
           "input": {"A": {"alias": "a", "dim": DIM_A, "definesMBSize": defining == "a"},
                     "B": {"alias": "b", "dim": DIM_B, "format": "sparse",
                           "definesMBSize": defining == "b"}}}
    cfg.update(extra)
    return cfg


def read_all(src, sizes, W=1, r=0, limit=400):
    """Snapshots of every minibatch until ``{}``, and the exception that ended the run, if any."""
    out = []
    try:
        for i in range(limit):
            mb = src.next_minibatch(sizes[i % len(sizes)], num_data_partitions=W, partition_index=r)
            if not mb:
                return out, None
            out.append(_snapshot(mb))
    except (MaxErrorsExceeded, RuntimeError) as exc:
        return out, exc
    finally:
        src.close()
    raise AssertionError("no epoch end")


def assert_same_runs(a, b):
    (run_a, exc_a), (run_b, exc_b) = a, b
    assert (exc_a is None) == (exc_b is None), (exc_a, exc_b)
    if exc_a is None:
        assert len(run_a) == len(run_b)
    else:  # an error surfaces when the batch holding it is packed: both runs agree up to there
        assert type(exc_a) is type(exc_b)
        run_a, run_b = run_a[:len(run_b)], run_b[:len(run_a)]
    for i, (x, y) in enumerate(zip(run_a, run_b)):
        diff = _difference(x, y)
        assert diff is None, f"minibatch {i}: {diff}"


@pytest.mark.parametrize("backend", available_backends(), ids=lambda b: b.__name__.rsplit(".", 1)[-1])
@SETTINGS
@given(data=ctf_files(), chunk_size=st.integers(1, 300), window=st.integers(1, 4),
       seed=st.integers(0, 3), sizes=st.lists(st.integers(1, 9), min_size=1, max_size=4),
       parts=st.integers(1, 3), errors_allowed=st.booleans(), defining=st.sampled_from([None, "a"]),
       sample_window=st.booleans())
def test_same_minibatches_as_whole_chunks(tmp_path, monkeypatch, backend, data, chunk_size, window,
                                          seed, sizes, parts, errors_allowed, defining, sample_window):
    text, sequences, errors = data
    if defining == "a" and not any(s["a_lines"] for s in sequences):
        return  # nothing to read (tested in test_ctf_properties)
    monkeypatch.setattr("cntkio.deserializers.ctf.deserializer.ctf_backend", lambda: backend)
    path = tmp_path / "gen.ctf"
    path.write_bytes(text)
    cfg = config(path, chunk_size, 10**6 if errors_allowed else 0, defining)
    win = dict(randomization_window_in_chunks=0, randomization_window_in_samples=window * 3) \
        if sample_window else dict(randomization_window_in_chunks=window)
    for r in range(parts):
        runs = [read_all(MinibatchSource(dict(cfg), max_sweeps=2, randomization_seed=seed,
                                         random_access=ra, **win), sizes, parts, r)
                for ra in (True, False)]
        assert_same_runs(*runs)
        if errors_allowed or not errors:
            assert runs[0][1] is None


@SETTINGS
@given(data=ctf_files(), chunk_size=st.integers(1, 300), window=st.integers(1, 4),
       sizes=st.lists(st.integers(1, 9), min_size=1, max_size=4), parts=st.integers(1, 3),
       seed=st.integers(0, 1000))
def test_resumes_exactly(tmp_path, data, chunk_size, window, sizes, parts, seed):
    text, _, _ = data
    path = tmp_path / "gen.ctf"
    path.write_bytes(text)
    cfg = config(path, chunk_size)
    rank = seed % parts
    assert_resumes_exactly(lambda: MinibatchSource(dict(cfg), max_sweeps=2,
                                                   randomization_window_in_chunks=window),
                           [(max(s, parts), parts, rank) for s in sizes], max_minibatches=40)


def _write(path, n, bad_line=None, start=0):
    lines = []
    for i in range(n):
        a = "1 2 3" if i != bad_line else "1 x 3"
        lines.append(f"{start + i} |a {a} |b {i % DIM_B}:{i}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_clean_file_parses_no_whole_chunk(tmp_path):
    path = _write(tmp_path / "clean.ctf", 300)
    src = MinibatchSource(config(path, 200), max_sweeps=1, randomization_window_in_chunks=3)
    reader = src._reader.policy
    assert reader.direct and reader.window.raw is not None
    seen = []
    while (mb := src.next_minibatch(16)):
        seen.extend(int(v) for v in mb[src.streams.B].as_csr().data)
        assert len(reader.window.raw.held()) <= 3 + 3 * 1  # the window ahead, in bytes ranges only
    src.close()
    assert sorted(seen) == list(range(300))
    assert reader.window.cache.loads == 0 and reader.window.raw.loads > 0


def test_a_malformed_line_goes_through_chunk_loading_and_counts_once(tmp_path, caplog):
    path = _write(tmp_path / "bad.ctf", 300, bad_line=123)
    kw = dict(max_sweeps=2, randomization_window_in_chunks=2)
    runs = {}
    for ra in (True, False):
        cfg = config(path, 200, max_errors=1, traceLevel=1)
        caplog.clear()
        reset_warnings()             # a warning's text shows once per run: each source run anew
        with caplog.at_level(logging.WARNING, logger="cntkio"):
            src = MinibatchSource(cfg, random_access=ra, **kw)
            reader = src._reader.policy
            runs[ra] = read_all(src, [16])
        assert runs[ra][1] is None
        if ra:
            assert reader.window.dirty and reader.window.cache.loads >= 1  # the bad chunk was parsed whole
        logged = [r.getMessage() for r in caplog.records if "bad.ctf:124:" in r.getMessage()]
        assert len(logged) == 1, logged  # logged once: its chunk is counted once
    assert_same_runs(runs[True], runs[False])
    # the malformed A sample's sequence is dropped whole (its streams would be misaligned), in
    # both sweeps, without counting against the source's max_errors (the deserializer counted it)
    assert sum(s["B"]["num_samples"] for s in runs[True][0]) == 598
    assert sum(s["A"]["num_samples"] for s in runs[True][0]) == 598
    _, exc = read_all(MinibatchSource(config(path, 200, max_errors=0), **kw), [16])
    assert isinstance(exc, MaxErrorsExceeded)


def test_max_errors_exceeded_surfaces_from_next_minibatch(tmp_path):
    path = _write(tmp_path / "bad.ctf", 300, bad_line=5)
    src = MinibatchSource(config(path, 200, max_errors=0), max_sweeps=1, randomization_window_in_chunks=2)
    with pytest.raises(MaxErrorsExceeded, match="bad.ctf"):
        for _ in range(1000):
            if not src.next_minibatch(16):
                break
    src.close()


@pytest.mark.parametrize("random_access", [True, False])
@pytest.mark.parametrize("randomize", [True, False])
def test_file_cut_short_after_indexing(tmp_path, random_access, randomize):
    path = _write(tmp_path / "cut.ctf", 300)
    src = MinibatchSource(config(path, 200), max_sweeps=1, randomization_window_in_chunks=2,
                          randomize=randomize, random_access=random_access)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    with pytest.raises(FormatError, match="changed after it was indexed"):
        for _ in range(1000):
            if not src.next_minibatch(16):
                break
    src.close()


def test_composite_joined_by_key(tmp_path):
    left = _write(tmp_path / "left.ctf", 200)
    right = tmp_path / "right.ctf"
    # the secondary holds the keys in another order, one key missing, other chunking
    keys = [k for k in range(200) if k != 17][::-1]
    right.write_text("".join(f"{k} |c {k * 10}\n" for k in keys))
    sec = {"type": "CNTKTextFormatDeserializer", "file": str(right), "traceLevel": 0,
           "chunkSizeInBytes": 333, "input": {"C": {"alias": "c", "dim": 1}}}
    runs = []
    for ra in (True, False):
        src = MinibatchSource([config(left, 250), dict(sec)], max_sweeps=1, random_access=ra,
                              randomization_window_in_chunks=2, trace_level=0)
        assert src._reader.policy.direct is ra
        runs.append(read_all(src, [7, 12]))
    assert_same_runs(*runs)
    got = [(int(b), int(c)) for s in runs[0][0]
           for b, c in zip(s["B"]["values"][2], s["C"]["values"][0].ravel())]
    assert sorted(got) == [(k, k * 10) for k in range(200) if k != 17]


def test_off_when_not_randomized_or_truncated_or_chunks_cached(tmp_path):
    path = _write(tmp_path / "f.ctf", 50)
    cases = [(dict(randomize=False), {}), (dict(truncation_length=2), {}),
             (dict(random_access=False), {}), ({}, {"numChunksToCache": 2})]
    for kw, extra in cases:
        src = MinibatchSource(config(path, 100, **extra), **kw)
        assert not src._reader.policy.direct and src._reader.policy.window.raw is None, (kw, extra)
        src.close()
    src = MinibatchSource(config(path, 100, keepDataInMemory=True), max_sweeps=1)
    assert src._reader.policy.direct  # the bytes are in memory: sequences are cut out of them
    assert sum(mb[src.streams.A].num_samples for mb in src.iter(minibatch_size=8)) == 50
    src.close()


@pytest.mark.parametrize("backend", available_backends(), ids=lambda b: b.__name__.rsplit(".", 1)[-1])
@SETTINGS
@given(data=ctf_files(), seed=st.integers(0, 1000))
def test_parse_chunk_with_ends_equals_the_sequences_parsed_alone(data, backend, seed):
    text, _, _ = data
    aliases = [b"a", b"b"]
    _, ids_mode, _, starts, first_lines, _, _ = backend.scan_index(text, aliases, False, -1, 1 << 20)
    n = len(first_lines)
    order = np.random.default_rng(seed).permutation(n)
    streams = [(b"a", DIM_A, False), (b"b", DIM_B, True)]
    got = backend.parse_chunk(text, 0, starts[order], first_lines[order], ids_mode, streams, False,
                              -1, 100, starts[order + 1])
    alone = [backend.parse_chunk(text, 0, starts[i:i + 2], first_lines[i:i + 1], ids_mode, streams,
                                 False, -1, 100) for i in order]
    assert got[1] == [issue for a in alone for issue in a[1]]
    assert got[2] == sum(a[2] for a in alone) and got[3] == any(a[3] for a in alone)
    (a_vals, a_off), (b_ptr, b_idx, b_dat, b_off) = got[0]
    assert np.diff(a_off).tolist() == [int(a[0][0][1][-1]) for a in alone]
    assert np.diff(b_off).tolist() == [int(a[0][1][3][-1]) for a in alone]
    assert np.asarray(a_vals).tobytes() == b"".join(np.asarray(a[0][0][0]).tobytes() for a in alone)
    assert np.asarray(b_idx).tolist() == [int(x) for a in alone for x in a[0][1][1]]
    assert np.asarray(b_dat).tobytes() == b"".join(np.asarray(a[0][1][2]).tobytes() for a in alone)
    assert np.diff(b_ptr).tolist() == [int(x) for a in alone for x in np.diff(a[0][1][0])]


@pytest.mark.parametrize("backend", available_backends(), ids=lambda b: b.__name__.rsplit(".", 1)[-1])
def test_parse_chunk_ends_are_checked(backend):
    text = b"1 |a 1\n2 |a 2\n"
    streams = [(b"a", 1, False)]
    with pytest.raises(ValueError, match="ends"):
        backend.parse_chunk(text, 0, [0, 7], [1, 2], True, streams, False, -1, 10, [7])
    if backend.__name__.endswith("_ctf"):  # the reference does not police offsets
        with pytest.raises(ValueError, match="outside the buffer"):
            backend.parse_chunk(text, 0, [7], [2], True, streams, False, -1, 10, [99])
    out = backend.parse_chunk(text, 0, [7, 0], [2, 1], True, streams, False, -1, 10, [14, 7])
    assert np.asarray(out[0][0][0]).tolist() == [2.0, 1.0]


@SETTINGS
@given(data=ctf_files(), chunk_size=st.integers(1, 300), window=st.integers(1, 4),
       sizes=st.lists(st.integers(1, 9), min_size=1, max_size=3), seed=st.integers(0, 3),
       cuts=st.tuples(st.integers(0, 40), st.integers(0, 40)))
def test_restore_on_the_same_source_while_a_batch_is_parsed_ahead(tmp_path, data, chunk_size, window,
                                                                   sizes, seed, cuts):
    text, _, _ = data
    path = tmp_path / "gen.ctf"
    path.write_bytes(text)

    def make():
        return MinibatchSource(config(path, chunk_size), max_sweeps=2, randomization_seed=seed,
                               randomization_window_in_chunks=window)
    src = make()
    states, run = [], []
    while True:
        states.append(src.get_checkpoint_state())
        mb = src.next_minibatch(sizes[len(run) % len(sizes)])
        if not mb:
            break
        run.append(_snapshot(mb))
    src.close()
    back, ahead = min(cuts[0], len(run)), min(max(cuts), len(run))
    src = make()
    for i in range(ahead):  # reading on: the batches after the cursor are parsed ahead
        src.next_minibatch(sizes[i % len(sizes)])
    src.restore_from_checkpoint(states[back])
    for i in range(back, len(run)):
        diff = _difference(run[i], _snapshot(src.next_minibatch(sizes[i % len(sizes)])))
        assert diff is None, f"minibatch {i} after a restore from {ahead} to {back}: {diff}"
    assert not src.next_minibatch(sizes[0])
    src.close()


@pytest.mark.parametrize("backend", available_backends(), ids=lambda b: b.__name__.rsplit(".", 1)[-1])
def test_reads_begun_together_equal_reads_one_at_a_time(tmp_path, monkeypatch, backend):
    monkeypatch.setattr("cntkio.deserializers.ctf.deserializer.ctf_backend", lambda: backend)
    path = _write(tmp_path / "f.ctf", 300)
    src = MinibatchSource(config(path, 400), max_sweeps=1, randomization_window_in_chunks=2)
    corpus = src._reader.policy.corpus
    raw = {c.id: corpus.read_bytes(c.id) for c in corpus.chunk_infos()}
    rng = np.random.default_rng(0)
    sels = []
    for _ in range(6):
        chunk_ids = rng.integers(0, len(raw), 40)
        sels.append((chunk_ids, np.array([rng.integers(0, len(corpus.sequence_infos(int(c))))
                                          for c in chunk_ids])))
    pending = [corpus.begin_read_sequences(raw, c, i) for c, i in sels]  # all parsing at once
    together = [p() for p in reversed(pending)][::-1]  # waited for in another order
    for (c, i), got in zip(sels, together):
        alone = corpus.read_sequences(raw, c, i)
        assert got.sequences.keys.tolist() == alone.sequences.keys.tolist()
        for name, st_alone in alone.streams.items():
            st_got = got.streams[name]
            for field in ("values", "indptr", "indices", "data", "offsets"):
                if hasattr(st_alone, field):
                    assert np.array_equal(getattr(st_got, field), getattr(st_alone, field)), (name, field)
        assert [int(k) for k in got.sequences.keys] == [int(corpus.sequence_infos(int(a)).keys[b])
                                                    for a, b in zip(c, i)]
    src.close()


@pytest.mark.parametrize("window", [1, 2, 3, 4])
def test_bytes_held_stay_within_what_whole_chunk_loading_holds(tmp_path, window):
    # the batches parsed ahead stay within the chunks the window holds: never more chunks at
    # once than whole-chunk loading holds
    path = _write(tmp_path / "f.ctf", 3000)  # 360 chunks of 200 bytes
    peaks = {}
    for ra in (True, False):
        src = MinibatchSource(config(path, 200), max_sweeps=2, randomization_window_in_chunks=window,
                              random_access=ra)
        reader = src._reader.policy
        assert reader.direct is ra
        while src.next_minibatch(16):
            pass
        peaks[ra] = (reader.window.raw if ra else reader.window.cache).peak_held
        src.close()
    assert peaks[True] <= peaks[False], peaks


@pytest.mark.parametrize("window", [1, 2, 4])
@pytest.mark.parametrize("size", [4, 16])
def test_batches_parsed_ahead_read_only_chunks_the_window_holds(tmp_path, monkeypatch, window, size):
    # when a minibatch fits in a randomized chunk (40 sequences of 1 sample per 1000-byte chunk),
    # every parse begun, the batches ahead included, reads chunks whose bytes the window already
    # holds: nothing is loaded on demand behind the window's back
    from cntkio.engine.schedule import BatchScheduler
    outside = []
    begin = BatchScheduler.begin

    def checked(self, prep):
        _, _, sel_chunk, _ = prep
        if len(sel_chunk):
            outside.extend(set(np.unique(sel_chunk).tolist()) - set(self.window.raw.held()))
        return begin(self, prep)
    monkeypatch.setattr(BatchScheduler, "begin", checked)
    path = _write(tmp_path / "f.ctf", 3000)
    src = MinibatchSource(config(path, 1000), max_sweeps=2, randomization_window_in_chunks=window)
    n = 0
    while src.next_minibatch(size):
        n += 1
    src.close()
    assert n >= 2 * 3000 // size and outside == []


def test_small_reads_are_parsed_when_asked_for_not_on_a_thread(tmp_path, monkeypatch):
    # a thread costs more than a few KiB of text: reads under _ASYNC_MIN_BYTES parse in the
    # caller when their result is asked for, larger ones start on a native thread
    from cntkio._native import _ctf  # the C module itself, also under CNTKIO_PURE_PYTHON
    from cntkio.deserializers.ctf import deserializer as ctf_module
    path = _write(tmp_path / "f.ctf", 300)  # about 8 KiB
    src = MinibatchSource(config(path, 400), max_sweeps=1, randomization_window_in_chunks=2)
    corpus = src._reader.policy.corpus
    raw = {c.id: corpus.read_bytes(c.id) for c in corpus.chunk_infos()}
    started = []
    backend = _ctf

    class Counting:
        def __getattr__(self, name):
            return getattr(backend, name)

        def parse_chunk_async(self, *args):
            started.append(len(args[2]))
            return backend.parse_chunk_async(*args)
    corpus.primary.backend = Counting()
    ids = np.zeros(10, np.int64)
    idx = np.arange(10)
    for limit, threads in ((1 << 16, 0), (0, 1)):
        monkeypatch.setattr(ctf_module, "_ASYNC_MIN_BYTES", limit)
        started.clear()
        got = corpus.begin_read_sequences(raw, ids, idx)()
        assert len(started) == threads and len(got.sequences) == 10
    src.close()


def test_settings_changing_every_call_begin_one_small_batch_ahead(tmp_path, monkeypatch):
    # alternating minibatch sizes drop what was begun ahead at every call: the first call with
    # new settings begins one batch of at most FIRST_AHEAD minibatches, not two full ones
    from cntkio.engine import schedule
    begun = []
    start = schedule.BatchScheduler.start

    def counting(self, plans, key=None):
        batch = start(self, plans, key)
        begun.append(len(batch.entries))
        return batch
    monkeypatch.setattr(schedule.BatchScheduler, "start", counting)
    path = _write(tmp_path / "f.ctf", 3000)
    src = MinibatchSource(config(path, 20000), max_sweeps=1, randomization_window_in_chunks=2)
    for i in range(40):
        assert src.next_minibatch((7, 12)[i % 2])
    assert len(begun) <= 2 * 40 and max(begun) <= schedule.FIRST_AHEAD
    begun.clear()
    for _ in range(300):  # the same settings from call to call: full batches, two ahead
        assert src.next_minibatch(3)
    assert max(begun) > schedule.FIRST_AHEAD
    src.close()


@pytest.mark.parametrize("randomize", [True, False])
def test_minibatch_objects_are_made_when_handed_out(tmp_path, randomize):
    # the queue of packed minibatches holds arrays and numbers, not Minibatch/MinibatchData
    # objects: those are made by next_minibatch, so they die young when the caller drops them
    # (hundreds waiting in a queue would reach the garbage collector's oldest generation, whose
    # full collections are slow in a process with many long-lived objects)
    import gc

    from cntkio.minibatch import MinibatchData

    def alive():  # made here: an earlier failed test's traceback may keep its own alive
        return [o for o in gc.get_objects() if type(o) is MinibatchData and id(o) not in before]
    gc.collect()
    before = {id(o) for o in gc.get_objects() if type(o) is MinibatchData}
    path = _write(tmp_path / "f.ctf", 3000)
    src = MinibatchSource(config(path, 20000), max_sweeps=1, randomize=randomize)
    for _ in range(3):
        assert src.next_minibatch(4)
    assert len(src._reader.policy.handoff.queue) > 10  # many minibatches packed ahead
    gc.collect()
    assert alive() == []
    mb = src.next_minibatch(4)
    assert len(alive()) == len(mb)
    src.close()
