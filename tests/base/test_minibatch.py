"""MinibatchData and Value (cntk-io-semantics 1.3): packed reader output, the public constructor
for user sources, the views (asarray, as_sequences, as_csr, to_torch) and the mask rules."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cntkio.minibatch import MinibatchData, Value
from cntkio.streams import StreamInformation

DENSE = StreamInformation("x", 0, "dense", np.float32, (2,))
SPARSE = StreamInformation("y", 1, "sparse", np.float32, (5,))


def dense_mb():
    # two sequences of lengths 3 and 1, samples [0,1],[2,3],[4,5] and [6,7]
    mask = np.array([[2, 1, 1], [2, 0, 0]], np.int8)
    values = np.arange(8, dtype=np.float32).reshape(4, 2)
    return MinibatchData.from_packed(DENSE, mask, values=values, end_of_sweep=True)


def sparse_mb():
    # sequence 0: samples {1:1}, {4:2, 0:3}; sequence 1: sample {} (empty), then {2:5}
    mask = np.array([[2, 1], [2, 1]], np.int8)
    indptr = np.array([0, 1, 3, 3, 4], np.int64)
    indices = np.array([1, 4, 0, 2], np.int32)
    data = np.array([1, 2, 3, 5], np.float32)
    return MinibatchData.from_packed(SPARSE, mask, indptr=indptr, indices=indices, data=data)


def test_packed_dense_counts_and_shape():
    mb = dense_mb()
    assert mb.num_sequences == mb.number_of_sequences == len(mb) == 2
    assert mb.num_samples == mb.number_of_samples == 4
    assert mb.end_of_sweep and mb.sweep_end
    assert mb.shape == mb.data.shape == (2, 3, 2)
    assert not mb.is_sparse and not mb.data.is_sparse
    assert mb.sequence_lengths.tolist() == [3, 1]
    assert mb.sequence_lengths.dtype == np.int64
    assert mb.mask.tolist() == [[2, 1, 1], [2, 0, 0]]
    assert mb.data.masked_count() == 2


def test_packed_dense_asarray_pads_with_zero_and_warns_about_the_mask():
    mb = dense_mb()
    with pytest.warns(UserWarning, match="ignore the mask"):
        arr = mb.asarray()
    assert arr.shape == (2, 3, 2)
    assert arr.tolist() == [[[0, 1], [2, 3], [4, 5]], [[6, 7], [0, 0], [0, 0]]]
    with pytest.warns(UserWarning, match="ignore the mask"):
        assert np.array_equal(mb.data.asarray(), arr)


def test_asarray_without_padding_does_not_warn():
    mask = np.array([[2], [2]], np.int8)
    mb = MinibatchData.from_packed(DENSE, mask, values=np.ones((2, 2), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mb.asarray().shape == (2, 1, 2)
    assert mb.data.masked_count() == 0


def test_packed_dense_as_sequences_drop_padding():
    seqs = dense_mb().as_sequences()
    assert [s.tolist() for s in seqs] == [[[0, 1], [2, 3], [4, 5]], [[6, 7]]]


def test_packed_sparse_views_stay_sparse():
    mb = sparse_mb()
    assert mb.is_sparse and mb.shape == (2, 2, 5) and mb.num_samples == 4
    csr = mb.as_csr()
    assert sp.isspmatrix_csr(csr) and csr.shape == (4, 5)
    assert csr.toarray().tolist() == [[0, 1, 0, 0, 0], [3, 0, 0, 0, 2], [0] * 5, [0, 0, 5, 0, 0]]
    seqs = mb.as_sequences()
    assert [s.shape for s in seqs] == [(2, 5), (2, 5)]
    assert seqs[1].toarray().tolist() == [[0] * 5, [0, 0, 5, 0, 0]]


def test_packed_sparse_asarray_of_rank_3_densifies_with_a_warning():
    with pytest.warns(UserWarning, match="densified"):
        arr = sparse_mb().asarray()
    assert arr.shape == (2, 2, 5)
    assert arr[0, 1].tolist() == [3, 0, 0, 0, 2]


def test_value_data_is_the_natural_storage():
    assert dense_mb().data.data.shape == (2, 3, 2)
    assert sp.isspmatrix_csr(sparse_mb().data.data)


def test_user_constructor_with_dense_array_has_no_sequence_axis():
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    mb = MinibatchData(x, 3, 3, False)
    assert mb.shape == (3, 3) and mb.num_sequences == 3 and mb.num_samples == 3
    assert not mb.end_of_sweep
    assert mb.data.asarray().tolist() == x.tolist()
    assert mb.mask.tolist() == [[2], [2], [2]]
    assert not mb.data.has_sequence_axis


def test_user_constructor_counts_are_the_given_ones():
    # a UserMinibatchSource reports what it wants (cntk.io does not recompute them)
    mb = MinibatchData(np.zeros((2, 4), np.float32), num_sequences=7, num_samples=11, sweep_end=True)
    assert (mb.num_sequences, mb.num_samples, mb.sweep_end) == (7, 11, True)


def test_user_constructor_with_csr_asarray_is_csr():
    y = sp.csr_matrix(np.array([[0, 1], [1, 0], [1, 0]], np.float32))
    mb = MinibatchData(y, 3, 3, False)
    assert mb.is_sparse and mb.shape == (3, 2)
    out = mb.data.asarray()
    assert sp.isspmatrix_csr(out)
    assert out.todense().tolist() == [[0, 1], [1, 0], [1, 0]]


def test_user_constructor_with_list_of_sequences():
    mb = MinibatchData([np.array([[1.], [2.], [3.]], np.float32), np.array([[4.]], np.float32)],
                       2, 4, True)
    assert mb.shape == (2, 3, 1)
    assert mb.mask.tolist() == [[2, 1, 1], [2, 0, 0]]
    assert [s.ravel().tolist() for s in mb.as_sequences()] == [[1, 2, 3], [4]]


def test_value_of_sparse_sequences_and_seq_starts():
    v = Value(batch=[sp.csr_matrix(np.eye(3, dtype=np.float32)[:2]),
                     sp.csr_matrix(np.eye(3, dtype=np.float32)[2:])], seq_starts=[True, False])
    assert v.shape == (2, 2, 3)
    assert v.mask.tolist() == [[2, 1], [1, 0]]
    assert v.as_csr().toarray().tolist() == np.eye(3).tolist()


def test_value_positional_data_and_erase():
    v = Value(np.ones((2, 3), np.float32))
    assert v.shape == (2, 3) and len(v) == 2
    v.erase()
    with pytest.raises(RuntimeError, match="erased"):
        v.asarray()


def test_value_rejects_unknown_batch_types():
    with pytest.raises(TypeError, match="batch must be"):
        Value(batch={"a": 1})
    with pytest.raises(ValueError):
        Value()


def test_one_hot_as_cntk():
    v = Value.one_hot([[1, 5], [4]], 6)
    assert v.is_sparse and v.shape == (2, 2, 6)
    assert v.mask.tolist() == [[2, 1], [2, 0]]
    seqs = v.as_sequences()
    assert seqs[0].toarray().tolist() == [[0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1]]
    assert seqs[1].toarray().tolist() == [[0, 0, 0, 0, 1, 0]]
    # a (2, 6) sample takes two indices, one per row
    v = Value.one_hot([[1, 5, 3, 2], [4, 1]], (2, 6))
    assert v.shape == (2, 2, 2, 6)
    assert np.flatnonzero(v.as_sequences()[0].toarray()[1]).tolist() == [3, 6 + 2]
    with pytest.raises(ValueError, match="integer"):
        Value.one_hot([[1.5]], 3)
    with pytest.raises(ValueError, match="outside"):
        Value.one_hot([[3]], 3)


def test_to_torch_dense_is_padded_float_tensor():
    t = dense_mb().to_torch()
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
    assert t.shape == (2, 3, 2)
    assert t.tolist() == [[[0, 1], [2, 3], [4, 5]], [[6, 7], [0, 0], [0, 0]]]


def test_to_torch_sparse_is_csr_of_valid_samples():
    t = sparse_mb().to_torch()
    assert t.layout == torch.sparse_csr
    assert tuple(t.shape) == (4, 5)
    assert t.crow_indices().tolist() == [0, 1, 3, 3, 4]
    assert t.col_indices().tolist() == [1, 4, 0, 2]
    assert t.to_dense().tolist() == sparse_mb().as_csr().toarray().tolist()


@st.composite
def packed(draw):
    lengths = draw(st.lists(st.integers(1, 5), min_size=1, max_size=6))
    dim = draw(st.integers(1, 4))
    sparse = draw(st.booleans())
    S, T = len(lengths), max(lengths)
    mask = np.zeros((S, T), np.int8)
    for i, n in enumerate(lengths):
        mask[i, :n] = 1
        mask[i, 0] = 2
    n = sum(lengths)
    dense = np.array(draw(st.lists(st.integers(-3, 3), min_size=n * dim, max_size=n * dim)),
                     np.float32).reshape(n, dim)
    if sparse:
        csr = sp.csr_matrix(dense)
        si = StreamInformation("s", 0, "sparse", np.float32, (dim,))
        mb = MinibatchData.from_packed(si, mask, indptr=csr.indptr.astype(np.int64),
                                       indices=csr.indices.astype(np.int32), data=csr.data)
    else:
        si = StreamInformation("s", 0, "dense", np.float32, (dim,))
        mb = MinibatchData.from_packed(si, mask, values=dense)
    return mb, dense, lengths


@settings(max_examples=60, deadline=None)
@given(packed())
def test_views_agree_with_the_compact_values(case):
    mb, dense, lengths = case
    assert mb.sequence_lengths.tolist() == lengths
    assert mb.num_samples == sum(lengths)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        padded = mb.asarray()
    assert np.array_equal(padded[mb.mask != 0], dense)
    assert not padded[mb.mask == 0].any()
    assert np.array_equal(mb.as_csr().toarray(), dense)
    seqs = mb.as_sequences()
    joined = np.concatenate([s.toarray() if sp.issparse(s) else s for s in seqs])
    assert np.array_equal(joined, dense)
    assert [s.shape[0] for s in seqs] == lengths
    t = mb.to_torch()
    if mb.is_sparse:
        assert t.layout == torch.sparse_csr and np.array_equal(t.to_dense().numpy(), dense)
    else:
        assert np.array_equal(t.numpy(), padded)


def test_asarray_warns_for_rows_continuing_a_sequence():
    # truncated BPTT: a row starting with 1 continues a sequence; the mask matters (as in cntk)
    mb = MinibatchData.from_packed(DENSE, np.array([[1, 1], [2, 1]], np.int8),
                                   values=np.zeros((4, 2), np.float32))
    assert mb.data.masked_count() == 0
    with pytest.warns(UserWarning, match="ignore the mask"):
        mb.asarray()


def test_value_from_shape_and_dtype_is_zeros():
    v = Value([2, 3], np.float32)
    assert v.shape == (2, 3) and v.dtype == np.float32 and not v.asarray().any()
