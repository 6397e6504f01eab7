"""Epochs with CNTK's config-reader semantics (cntkio.readers.epochs), and readers built from
config reading real data: the arithmetic the conformance README (section 3) derives from the
controls of the tests whose data is not stored, on small files of the same shape."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cntkio.config import parse_config
from cntkio.readers import EpochReader, build_reader


def ctf_file(tmp_path, name, lengths, streams=("F",), dims=None, ids=True):
    """Sequence i has lengths[i] rows; every value of sequence i, row t is 100*i + t."""
    dims = dims or {s: 1 for s in streams}
    lines = []
    for i, n in enumerate(lengths):
        for t in range(n):
            prefix = f"{i} " if ids else ""
            lines.append(prefix + " ".join(f"|{s} " + " ".join([str(100 * i + t)] * dims[s]) for s in streams))
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def reader(path, streams=("F",), dims=None, randomize=False, extra=""):
    dims = dims or {s: 1 for s in streams}
    inputs = "; ".join(f"{s.lower()} = [ alias = {s}; dim = {dims[s]}; format = dense ]" for s in streams)
    cfg = parse_config(textwrap.dedent(f"""
        reader = [
            readerType = CNTKTextFormatReader
            file = "{path}"
            randomize = {str(randomize).lower()}
            {extra}
            input = [ {inputs} ]
        ]"""))
    return build_reader(cfg("reader"))


def seq_values(mb, stream="f"):
    """The first value of each sequence of a minibatch (its sequence id * 100 + first row)."""
    data = {k.name: v for k, v in mb.items()}[stream]
    return [int(s[0, 0]) for s in data.as_sequences()]


def samples(mb, stream="f"):
    data = {k.name: v for k, v in mb.items()}[stream]
    return int(data.num_samples)


def epoch_values(er, e):
    return [seq_values(mb) for mb in er.epoch(e)]


def test_10x1_MI_2_epochs_of_7_in_minibatches_of_3(tmp_path):
    # README 3: 10 one-sample sequences, epochSize 7, mb 3, 3 epochs -> 3+3+1 samples per epoch
    src = reader(ctf_file(tmp_path, "d.txt", [1] * 10, ids=False))
    er = EpochReader(src, minibatch_size=3, epoch_size=7)
    got = [epoch_values(er, e) for e in range(3)]
    assert got == [[[0, 100, 200], [300, 400, 500], [600]],
                   [[700, 800, 900], [0, 100, 200], [300]],          # continues into sweep 2
                   [[400, 500, 600], [700, 800, 900], [0]]]


def test_1x1_2_six_copies_of_a_one_sample_file(tmp_path):
    src = reader(ctf_file(tmp_path, "d.txt", [1], ids=False), randomize=True)
    er = EpochReader(src, minibatch_size=1, epoch_size=2)
    assert sum(samples(mb) for e in range(3) for mb in er.epoch(e)) == 6


@pytest.mark.parametrize("epoch_size,mb,epochs,total", [(5, 3, 4, 20), (10, 1, 10, 100)])
def test_100x1_sample_counts(tmp_path, epoch_size, mb, epochs, total):
    # 100x1_2 (5/3/4) reads 20 samples, 100x1_1 (10/1/10) 100 samples (README 3)
    src = reader(ctf_file(tmp_path, "d.txt", [1] * 100, streams=("F", "L"), dims={"F": 3, "L": 2}),
                 streams=("F", "L"), dims={"F": 3, "L": 2}, randomize=True,
                 extra="chunkSizeInBytes = 400")
    er = EpochReader(src, minibatch_size=mb, epoch_size=epoch_size)
    sizes = [samples(m) for e in range(epochs) for m in er.epoch(e)]
    assert sum(sizes) == total and max(sizes) <= mb


def test_last_minibatch_is_cut_to_the_epochs_remaining_budget(tmp_path):
    # sequences of 2: epoch of 5 read with minibatches of 10 -> [s0 s1] (4 samples), then a
    # minibatch cut to 1 sample still takes one whole sequence (the first is always taken)
    src = reader(ctf_file(tmp_path, "d.txt", [2, 2, 2, 2]))
    er = EpochReader(src, minibatch_size=10, epoch_size=5)
    assert epoch_values(er, 0) == [[0, 100], [200]]
    # epoch 1 = [5, 10): the first sequence starting at or after 5 is s3 at 6; s0 (sweep 2) at 8
    # comes in a minibatch of its own (a minibatch stops at the sweep end)
    assert epoch_values(er, 1) == [[300], [0]]


def test_epochs_are_slices_of_one_timeline_readable_in_any_order(tmp_path):
    path = ctf_file(tmp_path, "d.txt", [3, 1, 4, 1, 5, 9, 2, 6])
    seq = EpochReader(reader(path), minibatch_size=4, epoch_size=6)
    in_order = [epoch_values(seq, e) for e in range(5)]
    jump = EpochReader(reader(path), minibatch_size=4, epoch_size=6)
    assert epoch_values(jump, 3) == in_order[3]
    assert epoch_values(jump, 1) == in_order[1]
    # every sequence start lies in its epoch's slice [6e, 6e+6)
    starts = np.cumsum([0, 3, 1, 4, 1, 5, 9, 2, 6] * 2)[:-1]
    first_values = [100 * (i % 8) for i in range(16)]
    for e, mbs in enumerate(in_order):
        for v in [v for mb in mbs for v in mb]:
            assert any(6 * e <= s < 6 * e + 6 for s, fv in zip(starts, first_values) if fv == v)


def test_a_sequence_longer_than_an_epoch_can_leave_the_next_epoch_empty(tmp_path):
    src = reader(ctf_file(tmp_path, "d.txt", [5, 5]))
    er = EpochReader(src, minibatch_size=1, epoch_size=2)
    assert [epoch_values(er, e) for e in range(4)] == [[[0]], [], [[100]], []]


def test_epoch_size_zero_is_one_sweep(tmp_path):
    src = reader(ctf_file(tmp_path, "d.txt", [1] * 10, ids=False))
    er = EpochReader(src, minibatch_size=3, epoch_size=0)
    assert er.epoch_size == 10
    assert [samples(mb) for mb in er.epoch(0)] == [3, 3, 3, 1]
    assert epoch_values(er, 1)[0] == [0, 100, 200]


def test_a_minibatch_stops_at_the_sweep_end(tmp_path):
    # CNTK's config readers never let a minibatch cross a sweep end (ReaderShim leaves
    # m_allowMinibatchesToCrossSweepBoundaries false, Reader.h:42; NoRandomizer.cpp:174-180): a
    # 3-sequence file read in minibatches of 2 gives 2, 1 | 2, 1 ... where cntk.io's source gives 2, 2
    path = ctf_file(tmp_path, "d.txt", [1, 1, 1], ids=False)
    er = EpochReader(reader(path), minibatch_size=2, epoch_size=9)
    assert epoch_values(er, 0) == [[0, 100], [200], [0, 100], [200], [0, 100], [200]]
    src = reader(path)                         # the source itself (cntk.io) crosses it
    assert [seq_values(src.next_minibatch(2)) for _ in range(2)] == [[0, 100], [200, 0]]
    src.close()


def test_distributed_subsets_split_an_epoch(tmp_path):
    # not randomized: sequence position p goes to worker p % 2 (cntk-io-semantics 2.6)
    path = ctf_file(tmp_path, "d.txt", [1] * 10, ids=False)
    w0 = EpochReader(reader(path), minibatch_size=4, epoch_size=10, num_subsets=2, subset_num=0)
    w1 = EpochReader(reader(path), minibatch_size=4, epoch_size=10, num_subsets=2, subset_num=1)
    v0 = [v for mb in w0.epoch(0) for v in seq_values(mb)]
    v1 = [v for mb in w1.epoch(0) for v in seq_values(mb)]
    assert v0 == [0, 200, 400, 600, 800] and v1 == [100, 300, 500, 700, 900]


def test_argument_checks(tmp_path):
    src = reader(ctf_file(tmp_path, "d.txt", [1]))
    with pytest.raises(ValueError):
        EpochReader(src, minibatch_size=0)
    with pytest.raises(ValueError):
        EpochReader(src, minibatch_size=1, epoch_size=-1)
    with pytest.raises(ValueError):
        EpochReader(src, minibatch_size=1, num_subsets=2, subset_num=2)


@pytest.mark.parametrize("epoch_size,mb", [(15, 4), (7, 6), (40, 10)])
def test_workers_together_read_exactly_each_epochs_slice(tmp_path, epoch_size, mb):
    # randomized, 5 chunks of 4 one-sample sequences: a worker owns whole chunks, so its sequences
    # are spread unevenly over the global timeline; still every sequence of epoch e (global start
    # in [e*E, (e+1)*E)) is read by exactly one worker in epoch e
    path = ctf_file(tmp_path, "d.txt", [1] * 20, ids=False)
    chunk = len(path.read_bytes()) // 5 + 1

    def make():
        return reader(path, randomize=True, extra=f"chunkSizeInBytes = {chunk}; randomizationWindow = 2")
    whole = EpochReader(make(), minibatch_size=mb, epoch_size=epoch_size)
    workers = [EpochReader(make(), minibatch_size=mb, epoch_size=epoch_size, num_subsets=2, subset_num=r)
               for r in range(2)]
    assert len(make()._deserializers[0].chunk_infos()) >= 4
    for e in range(4):
        expected = sorted(v for m in whole.epoch(e) for v in seq_values(m))
        got = sorted(v for w in workers for m in w.epoch(e) for v in seq_values(m))
        assert got == expected, f"epoch {e}"
        assert len(expected) == epoch_size


def test_truncated_bptt_epochs_drain_their_slots(tmp_path):
    path = ctf_file(tmp_path, "d.txt", [5, 3])
    src = reader(path, extra="truncated = true; truncationLength = 2")
    er = EpochReader(src, minibatch_size=4, epoch_size=4)

    def rows(mb):
        data = {k.name: v for k, v in mb.items()}["f"]
        return [[int(x) for x in s[:, 0]] for s in data.as_sequences()]
    # 2 slots of 2 steps; epoch 0 = [0, 4): only s0 starts there, slot 1 stays empty;
    # epoch 1 = [4, 8): s1 (starts at 5)
    assert [rows(mb) for mb in er.epoch(0)] == [[[0, 1], []], [[2, 3], []], [[4], []]]
    assert [rows(mb) for mb in er.epoch(1)] == [[[100, 101], []], [[102], []]]


def test_sources_without_a_global_timeline_are_refused():
    class LocalTimeline:
        def get_checkpoint_state(self):
            return {"baseSweepCount": 0, "currentChunkPosition": 0}

    with pytest.raises(TypeError, match="no global timeline position"):
        list(EpochReader(LocalTimeline(), minibatch_size=1, epoch_size=1).epoch(0))


def _model_epochs(lengths, mb, epoch_size, epochs):
    """CNTK's config-reader epochs over an endless file-order timeline, stated directly: epoch e
    holds the sequences starting in [e*E, (e+1)*E); each minibatch takes whole sequences while
    they fit in min(mb, epoch end - position, sweep end - position), at least one (a config
    reader's minibatch never crosses a sweep end: NoRandomizer.cpp:174-180)."""
    sweep = sum(lengths)
    starts, ids, pos = [], [], 0
    while pos < epochs * epoch_size + max(lengths):
        for i, n in enumerate(lengths):
            starts.append(pos)
            ids.append(i)
            pos += n
    out = []
    for e in range(epochs):
        lo, hi = e * epoch_size, (e + 1) * epoch_size
        seqs = [k for k, s in enumerate(starts) if lo <= s < hi]
        mbs, j = [], 0
        while j < len(seqs):
            budget = min(mb, hi - starts[seqs[j]], sweep - starts[seqs[j]] % sweep)
            batch, used = [seqs[j]], lengths[ids[seqs[j]]]
            j += 1
            while j < len(seqs) and used + lengths[ids[seqs[j]]] <= budget:
                used += lengths[ids[seqs[j]]]
                batch.append(seqs[j])
                j += 1
            mbs.append([100 * ids[k] for k in batch])
        out.append(mbs)
    return out


@given(lengths=st.lists(st.integers(1, 6), min_size=1, max_size=8), mb=st.integers(1, 12),
       epoch_size=st.integers(1, 20))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_epochs_match_the_timeline_model(tmp_path, lengths, mb, epoch_size):
    src = reader(ctf_file(tmp_path, "p.txt", lengths))
    er = EpochReader(src, minibatch_size=mb, epoch_size=epoch_size)
    got = [epoch_values(er, e) for e in range(3)]
    src.close()
    assert got == _model_epochs(lengths, mb, epoch_size, 3)
