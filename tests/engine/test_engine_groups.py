"""Parallel sequences grouped by length (CNTK's LM/LU sentence readers: MinibatchSource(
parallel_sequences=N, parallel_groups=True)) and sparse streams kept sparse in parallel rows
(parallel_sparse=True); the CSR rows a truncated-BPTT slot holds."""
from __future__ import annotations

import numpy as np
import pytest

from cntkio.engine.packer import CsrRows, TruncatedSlots
from cntkio.source import MinibatchSource
from cntkio.streams import StreamInformation
from cntkio.testing import assert_resumes_exactly
from fakes import FakeDeserializer

LENGTHS = [3, 2, 3, 3, 2, 4, 1]


def _source(**kw):
    opts = dict(randomize=False, max_sweeps=1, parallel_sequences=2, parallel_sparse=True, parallel_groups=True)
    opts.update(kw)
    return MinibatchSource(FakeDeserializer([LENGTHS], sparse_dim=4), **opts)


def _read(src, size=2):
    out = []
    while mb := src.next_minibatch(size):
        x, y = mb[src.streams.x], mb[src.streams.y]
        out.append((x.mask.tolist(), [(s[:, 0] // 1000).astype(int).tolist() for s in x.as_sequences()],
                    y.is_sparse, y.as_csr().toarray(), x.end_of_sweep))
    return out


def test_groups_are_equal_lengths_in_timeline_order_up_to_n():
    # sequence q has LENGTHS[q] samples; x names them (q * 1000 + t). Groups: (0, 2) of 3, then
    # (1, 4) of 2, then 3, 5 and 6 alone (no other of their length left); 2 steps a minibatch,
    # the last of a group as wide as its rest
    got = _read(_source())
    assert [g[0] for g in got] == [[[2, 1], [2, 1]], [[1], [1]], [[2, 1], [2, 1]], [[2, 1]], [[1]],
                                   [[2, 1]], [[1, 1]], [[2]]]
    assert [g[1] for g in got] == [[[0, 0], [2, 2]], [[0], [2]], [[1, 1], [4, 4]], [[3, 3]], [[3]],
                                   [[5, 5]], [[5, 5]], [[6]]]
    assert [g[4] for g in got] == [False] * 7 + [True]
    # y: sparse, one non-zero a sample at column q % 4 with x's value, rows in row-major order
    assert all(g[2] for g in got)
    y0 = got[0][3]
    assert y0.tolist() == [[0, 0, 0, 0], [1, 0, 0, 0], [0, 0, 2000, 0], [0, 0, 2001, 0]]


def test_without_groups_rows_fill_one_by_one_and_sparse_stays_sparse():
    got = _read(_source(parallel_groups=False))
    assert got[0][0] == [[2, 1], [2, 1]] and got[0][1] == [[0, 0], [1, 1]]
    assert all(g[2] for g in got)
    dense = _read(_source(parallel_groups=False, parallel_sparse=False))
    assert not any(g[2] for g in dense)                # CNTK 2.7's truncated BPTT: dense
    assert [g[0] for g in dense] == [g[0] for g in got]
    for a, b in zip(dense, got):
        np.testing.assert_array_equal(a[3], b[3])


@pytest.mark.parametrize("randomize", [False, True])
def test_grouped_rows_resume_exactly(randomize):
    def make():
        return _source(randomize=randomize, max_sweeps=2)
    n = assert_resumes_exactly(make, [2, 3, 2])
    assert n >= 8                                   # two sweeps of 18 samples in pairs of rows


def test_csr_rows_slice_and_emit():
    y = StreamInformation("y", 0, "sparse", np.float32, (5,))
    yd = StreamInformation("y", 0, "dense", np.float32, (5,))
    rows = CsrRows(np.array([0, 1, 3, 3, 4], np.int64), np.array([4, 0, 2, 1], np.int32),
                   np.array([1., 2., 3., 4.], np.float32))
    part = rows[1:3]
    assert len(part) == 2 and part.indptr.tolist() == [0, 2, 2] and part.indices.tolist() == [0, 2]
    for info, sparse in ((y, True), (yd, False)):
        slots = TruncatedSlots([info], 3)
        slots.resize(2)
        slots.push(0, 0, 4, {"y": rows})
        slots.push(1, 1, 2, {"y": rows[2:4]})
        mb = slots.emit(False)[info]
        assert mb.is_sparse == sparse and mb.mask.tolist() == [[2, 1, 1], [2, 1, 0]]
        want = [[0, 0, 0, 0, 1], [2, 0, 3, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 4, 0, 0, 0]]
        got = mb.as_csr().toarray() if sparse else np.asarray(mb.asarray())[np.asarray(mb.mask) != 0]
        assert np.asarray(got).reshape(5, 5).tolist() == want
