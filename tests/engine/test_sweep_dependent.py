"""A deserializer whose chunk data depends on the sweep (random image transforms) is told the sweep
of every load, and no load of one sweep serves another."""
import numpy as np
import pytest
from fakes import FakeDeserializer

from cntkio.deserializers.protocol import ChunkData, DenseStream, depends_on_sweep
from cntkio.source import MinibatchSource
from cntkio.testing import assert_resumes_exactly


class SweepFake(FakeDeserializer):
    """FakeDeserializer whose dense column 1 holds the sweep the chunk was loaded for."""

    def __init__(self, *args, by_sweep=True, **kwargs):
        super().__init__(*args, **kwargs)
        self.by_sweep = by_sweep
        self.sweep_loads = []

    def depends_on_sweep(self):
        return self.by_sweep

    def get_chunk(self, chunk_id, sweep=0):
        with self._lock:
            self.sweep_loads.append((chunk_id, sweep))
        data = super().get_chunk(chunk_id)
        x = data.streams["x"]
        values = x.values.copy()
        values[:, 1] = sweep
        return ChunkData(data.sequences, {"x": DenseStream(values, x.offsets)}, data.invalid)


def _deliveries(src, size, W=1, r=0):
    """``[(sequence, sweep stamp)]`` in delivery order (each sequence's first sample)."""
    out = []
    for mb in src.iter(minibatch_size=size, num_data_partitions=W, partition_index=r):
        x = mb[src.streams.x]
        for s in x.as_sequences():
            out.append((int(s[0, 0] // 1000), int(s[0, 1])))
    return out


CHUNKS = [[1, 2, 3], [2, 2], [1, 1, 1, 1], [3], [2, 1]]  # 13 sequences, 5 chunks


def test_the_declaration():
    assert depends_on_sweep(SweepFake(CHUNKS))
    assert not depends_on_sweep(SweepFake(CHUNKS, by_sweep=False))
    assert not depends_on_sweep(FakeDeserializer(CHUNKS))  # no declaration at all


@pytest.mark.parametrize("window", [1, 2, 5])
@pytest.mark.parametrize("size", [1, 4, 9])
@pytest.mark.parametrize("randomize", [True, False])
@pytest.mark.parametrize("workers", [1, 2])
def test_every_sequence_is_loaded_for_the_sweep_that_delivers_it(window, size, randomize, workers):
    n = sum(len(c) for c in CHUNKS)
    stamps = {q: [] for q in range(n)}
    for r in range(workers):
        src = MinibatchSource(SweepFake(CHUNKS), max_sweeps=3, randomize=randomize,
                              randomization_window_in_chunks=window if randomize else 0)
        got = _deliveries(src, size, workers, r)
        src.close()
        # a worker reads the sweeps in order: the loads it is handed never go back a sweep
        assert [k for _, k in got] == sorted(k for _, k in got), got
        for q, sweep in got:
            stamps[q].append(sweep)
    # each sequence once per sweep, each time with the data loaded for that sweep (a load of one
    # sweep reused in another would stamp a sequence twice with the same sweep)
    assert all(sorted(v) == [0, 1, 2] for v in stamps.values()), stamps


def test_without_the_declaration_nothing_changes():
    a = _deliveries(MinibatchSource(SweepFake(CHUNKS, by_sweep=False), max_sweeps=2,
                                    randomization_window_in_chunks=2), 4)
    b = _deliveries(MinibatchSource(SweepFake(CHUNKS), max_sweeps=2, randomization_window_in_chunks=2), 4)
    assert [q for q, _ in a] == [q for q, _ in b]          # the same order
    assert {s for _, s in a} == {0}                          # loaded as sweep 0, as before
    assert [s for _, s in b] == sorted(s for _, s in b)      # sweep 0 then sweep 1


def test_the_loads_name_their_sweep():
    d = SweepFake(CHUNKS)
    src = MinibatchSource(d, max_sweeps=2, randomization_window_in_chunks=5)
    while src.next_minibatch(5):
        pass
    src.close()
    assert sorted(set(d.sweep_loads)) == [(c, k) for c in range(5) for k in range(2)]


def test_truncated_bptt_reads_each_sweeps_load():
    d = SweepFake([[4, 5], [3], [6, 2]])
    src = MinibatchSource(d, max_sweeps=2, truncation_length=2, randomization_window_in_chunks=2)
    seen = []
    while True:
        mb = src.next_minibatch(4)
        if not mb:
            break
        x = mb[src.streams.x]
        vals = x.asarray()
        mask = np.asarray(x.mask)
        seen.extend((int(v[0] // 1000), int(v[1])) for row, m in zip(vals, mask) for v, k in zip(row, m) if k)
    src.close()
    per_seq = {}
    for q, k in seen:
        per_seq.setdefault(q, set()).add(k)
    assert all(v == {0, 1} for v in per_seq.values()) and len(per_seq) == 5


@pytest.mark.parametrize("workers", [1, 2])
def test_resume_is_exact_across_sweep_ends(workers):
    for r in range(workers):
        assert_resumes_exactly(
            lambda: MinibatchSource(SweepFake(CHUNKS), max_sweeps=3, randomization_window_in_chunks=2),
            [3, 5], num_data_partitions=workers, partition_index=r)
