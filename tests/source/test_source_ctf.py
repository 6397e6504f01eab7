"""MinibatchSource over CTF files: the spec's examples end to end (cntk-io-semantics 2.4, 2.9, 3;
cntk-ctf-behaviours 10-18)."""
from collections import Counter

import numpy as np
import pytest

from cntkio import FULL_DATA_SWEEP, CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
from cntkio.testing import assert_resumes_exactly

DIST = [(0, 7), (2, 3), (3, 4), (4, 1), (5, 2), (6, 2), (7, 1), (8, 2), (9, 2), (10, 1)]


@pytest.fixture
def dist_file(tmp_path):
    lines, v = [], 1
    for sid, n in DIST:
        for _ in range(n):
            lines.append(f"{sid} |x {v}")
            v += 1
    path = tmp_path / "dist.ctf"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def first_values(mb, src):
    return [int(s[0, 0]) for s in mb[src.streams.x].as_sequences()]


def ctf(path, chunk=None, **defs):
    cfg = CTFDeserializer(path, StreamDefs(**(defs or {"x": StreamDef(field="x", shape=1)})))
    if chunk:
        cfg["chunkSizeInBytes"] = chunk
    return cfg


def worker(path, randomize, rank, **kw):
    src = MinibatchSource(ctf(path), randomize=randomize, **kw)
    out = []
    while True:
        mb = src.next_minibatch(minibatch_size_in_samples=10, num_data_partitions=2, partition_index=rank)
        if not mb:
            return out
        out.append(first_values(mb, src))


def test_distributed_mb_source_ctf_not_randomized(dist_file):
    # ids 0, 3, 5+7+9, then sweep 2: 0, 3 / ids 2+4, 6+8+10, 2 (first values of the sequences)
    assert worker(dist_file, False, 0, max_samples=36) == [[1], [11], [16, 20, 23], [1], [11]]
    assert worker(dist_file, False, 1, max_samples=36) == [[8, 15], [18, 21, 25], [8]]


def test_distributed_mb_source_ctf_randomized(dist_file):
    # ids 5,8,4 | 10,2 | 3 | 9,7,6 | 0 -> sizes 5, 4, 4, 5, 7; worker 1 has no chunk
    assert worker(dist_file, True, 0, max_sweeps=1) == [[16, 21, 15], [25, 8], [11], [23, 20, 18], [1]]
    assert worker(dist_file, True, 1, max_sweeps=1) == []


@pytest.fixture
def four(tmp_path):
    path = tmp_path / "four.ctf"
    path.write_text("|x 1\n|x 2\n|x 3\n|x 4\n")
    return str(path)


@pytest.mark.parametrize("kw,sizes,flags", [
    (dict(max_samples=11), [5, 5, 1], [True, True, False]),
    (dict(max_sweeps=3), [5, 5, 2], [True, True, True]),
    (dict(max_samples=1), [1], [False]),
    (dict(max_samples=FULL_DATA_SWEEP), [4], [True]),
])
def test_epoch_examples_on_ctf(four, kw, sizes, flags):
    src = MinibatchSource(ctf(four), randomize=False, **kw)
    got = []
    while True:
        mb = src.next_minibatch(5)
        if not mb:
            break
        got.append((mb[src.streams.x].num_samples, mb[src.streams.x].end_of_sweep))
    assert got == list(zip(sizes, flags))
    assert src.next_minibatch(5) == {}


def test_frame_mode_on_one_line_sequences_and_multi_line_error(four, dist_file):
    seq = MinibatchSource(ctf(four), randomize=False).next_minibatch(3)
    src = MinibatchSource(ctf(four), randomize=False, frame_mode=True)
    mb = src.next_minibatch(3)
    x = mb[src.streams.x]
    assert x.shape == (3, 1, 1) and x.asarray().ravel().tolist() == [1, 2, 3]
    assert x.asarray().tolist() == seq[src.streams.x].asarray().tolist()
    bad = MinibatchSource(ctf(dist_file), randomize=False, frame_mode=True)
    with pytest.raises(RuntimeError, match="Detected a non-frame sequence of size 7 in frame mode."):
        bad.next_minibatch(3)


@pytest.fixture
def multi_chunk(tmp_path):
    rng = np.random.RandomState(3)
    lines = []
    for sid in range(60):
        for t in range(rng.randint(1, 4)):
            idx = rng.randint(0, 5)
            lines.append(f"{sid} |x {sid * 10 + t} |y {idx}:{sid + 0.5}")
    path = tmp_path / "multi.ctf"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def multi(path, **kw):
    return lambda: MinibatchSource(ctf(path, chunk=200, x=StreamDef(field="x", shape=1),
                                       y=StreamDef(field="y", shape=5, is_sparse=True)), **kw)


def test_multi_chunk_ctf_randomized_covers_each_sweep_and_resumes(multi_chunk):
    src = multi(multi_chunk, randomization_window_in_chunks=3, max_sweeps=2)()
    assert len(src._corpus.chunk_infos()) > 5
    seen = Counter()
    for mb in src.iter(minibatch_size=7):
        seen.update(int(v) for s in mb[src.streams.x].as_sequences() for v in s[:, 0])
        y = mb[src.streams.y]
        assert y.is_sparse and y.num_samples == mb[src.streams.x].num_samples
    assert set(seen.values()) == {2} and len(seen) == sum(1 for _ in open(multi_chunk))
    assert_resumes_exactly(multi(multi_chunk, randomization_window_in_chunks=3, randomization_seed=4),
                           [7, 5, (9, 2, 1), 7, 30, 3], [0, 2, 4, 5], max_minibatches=6)
    assert_resumes_exactly(multi(multi_chunk, randomization_window_in_chunks=0,
                                 randomization_window_in_samples=40, truncation_length=3),
                           [6, 6, 9, 6], [1, 3], max_minibatches=4)
