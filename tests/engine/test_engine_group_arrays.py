"""The grouped sentences' bulk steps give the same arrays as the one-sequence-at-a-time ones:
``sequences_arrays`` (several sequences of a chunk) against ``sequence_arrays``, and
``_join_rows`` (a group minibatch's sparse pieces) against ``_join_pieces`` of the sliced pieces."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from cntkio.deserializers.protocol import DenseStream, SparseStream
from cntkio.engine.packer import CsrRows, _join_pieces, _join_rows, sequence_arrays, sequences_arrays
from cntkio.streams import StreamInformation

SP = StreamInformation("s", 0, "sparse", np.float32, (50,))
DN = StreamInformation("d", 1, "dense", np.float32, (3,))


def _chunk(seed: int = 0):
    rng = np.random.default_rng(seed)
    lengths = np.array([3, 0, 1, 5, 2, 4, 1, 6])           # an empty sequence too
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    rows = int(offsets[-1])
    nnz = rng.integers(0, 4, rows)                            # rows without non-zeros too
    indptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)
    sparse = SparseStream(indptr, rng.integers(0, 50, int(indptr[-1])).astype(np.int32),
                          rng.random(int(indptr[-1])).astype(np.float32), offsets, 50)
    dense = DenseStream(rng.random((rows, 3)).astype(np.float32), offsets)
    return SimpleNamespace(streams={"s": sparse, "d": dense})


def _same(a, b) -> None:
    if isinstance(a, CsrRows):
        assert isinstance(b, CsrRows)
        for f in ("indptr", "indices", "data"):
            x, y = getattr(a, f), getattr(b, f)
            assert x.dtype == y.dtype and np.array_equal(x, y)
    else:
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.parametrize("indices", [[0, 1, 2, 3, 4, 5, 6, 7], [2, 3, 4], [5], [6, 0, 3, 1], [7, 2], [1, 2]])
def test_sequences_arrays_equal_one_at_a_time(indices):
    chunk = _chunk()
    for info in (SP, DN):
        got = sequences_arrays(info, chunk, indices)
        assert len(got) == len(indices)
        for g, i in zip(got, indices):
            _same(g, sequence_arrays(info, chunk, i))


@pytest.mark.parametrize("off,w", [(0, 4), (1, 2), (2, 2), (0, 1), (3, 1)])
@pytest.mark.parametrize("ptr_dtype", [np.int64, np.int32])
def test_join_rows_equals_join_pieces(off, w, ptr_dtype):
    rng = np.random.default_rng(3)
    seqs = []
    for _ in range(5):
        nnz = rng.integers(0, 3, 4)
        ip = np.concatenate([[0], np.cumsum(nnz)]).astype(ptr_dtype)
        seqs.append(CsrRows(ip, rng.integers(0, 50, int(ip[-1])).astype(np.int32),
                            rng.random(int(ip[-1])).astype(np.float32)))
    got = _join_rows(SP, seqs, off, w)
    want = _join_pieces(SP, [s[off:off + w] for s in seqs])
    assert set(got) == set(want)
    for k in want:
        assert got[k].dtype == want[k].dtype and np.array_equal(got[k], want[k]), k
