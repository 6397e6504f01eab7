"""One-hot sparse streams packed straight into token-id blocks (engine/idblocks.py): the same
minibatches and tensor-ready arrays as the general path, which a stream that is not one-hot takes."""
import numpy as np
import pytest

from cntkio.deserializers.protocol import ChunkData, DenseStream, SequenceTable, SparseStream
from cntkio.engine.idblocks import IdBlocks
from cntkio.engine.packer import group_by_chunk, pack_batch
from cntkio.streams import StreamInformation
from cntkio.tensor_ready import TensorLayout

W = StreamInformation("w", 0, "sparse", np.float32, (50,))
X = StreamInformation("x", 1, "dense", np.float32, (1,))


def chunk(lengths, base, value=1.0):
    n = sum(lengths)
    off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = ((base + np.arange(n)) % 50).astype(np.int32)
    data = np.full(n, value, np.float32)
    return ChunkData(SequenceTable(np.arange(len(lengths)), np.array(lengths)),
                     {"w": SparseStream(np.arange(n + 1, dtype=np.int64), ids, data, off, 50),
                      "x": DenseStream((base + np.arange(n, dtype=np.float32))[:, None], off)})


def _pack(chunks, sel_chunk, sel_index, counts, **kw):
    sel_chunk, sel_index = np.array(sel_chunk), np.array(sel_index)
    return pack_batch([W, X], chunks, sel_chunk, sel_index, group_by_chunk(sel_chunk), counts,
                      [False] * len(counts), **kw)


def test_ids_blocks_give_the_same_minibatches_and_tensors():
    chunks = {0: chunk([2, 1, 3], 0), 1: chunk([4, 2], 20)}
    sel = ([1, 0, 0, 1, 0], [1, 2, 0, 0, 1])
    fused = _pack(chunks, *sel, [2, 0, 3], ids=frozenset({"w"}), pad_id=-1)
    plain = _pack(chunks, *sel, [2, 0, 3])
    assert isinstance(fused.streams[0][4], IdBlocks) and not isinstance(plain.streams[0][4], IdBlocks)
    for j in range(3):
        a, b = fused.get(j)[W], plain.get(j)[W]
        assert a.mask.tolist() == b.mask.tolist()
        assert (a.as_csr() != b.as_csr()).nnz == 0 and a.num_samples == b.num_samples
    layout = TensorLayout(frozenset({"w"}), -1, True)
    for j in range(3):
        for (n1, k1, a1, l1), (n2, k2, a2, l2) in zip(fused.tensor_ready(layout).get(j),
                                                        plain.tensor_ready(layout).get(j)):
            assert (n1, k1) == (n2, k2) and l1.tolist() == l2.tolist()
            for x, y in zip(a1 if isinstance(a1, tuple) else (a1,), a2 if isinstance(a2, tuple) else (a2,)):
                assert x.dtype == y.dtype and x.tolist() == y.tolist()
    # concrete: minibatch 2 is chunk 0's sequence 0 (ids 0, 1), chunk 1's 0 (20..23) and chunk 0's 1 (2)
    (_, kind, (ids, mask), lens), _ = fused.tensor_ready(layout).get(2)
    assert kind == "ids" and lens.tolist() == [2, 4, 1]
    assert ids.tolist() == [[0, 1, -1, -1], [20, 21, 22, 23], [2, -1, -1, -1]]
    assert mask.sum() == 7
    # another layout (CSR, or another pad) is served from the same blocks
    csr = fused.tensor_ready(TensorLayout()).get(2)[0]
    assert csr[1] == "csr" and csr[2][1].tolist() == [0, 1, 20, 21, 22, 23, 2]


@pytest.mark.parametrize("value", [2.0, 0.5])
def test_a_stream_that_is_not_one_hot_takes_the_general_path(value):
    chunks = {0: chunk([2, 2], 0), 1: chunk([3], 10, value=value)}
    packed = _pack(chunks, [0, 1], [1, 0], [2], ids=frozenset({"w"}))
    assert not isinstance(packed.streams[0][4], IdBlocks)
    with pytest.raises(ValueError, match="one-hot samples of value 1"):
        packed.tensor_ready(TensorLayout(frozenset({"w"})))


def test_gather_ids_checks_its_bounds_before_writing():
    from cntkio._native import native
    out = np.zeros(4, np.int64)
    indptr, idx, data = np.arange(4, dtype=np.int64), np.arange(3, dtype=np.int32), np.ones(3, np.float32)
    with pytest.raises(IndexError, match="sequence 0 .* outside"):
        native("gather").gather_ids(indptr, idx, data, np.array([2]), np.array([2]), out, np.array([0]),
                                    np.array([2]), 0)
    with pytest.raises(IndexError, match="outside"):
        native("gather").gather_ids(indptr, idx, data, np.array([0]), np.array([2]), out, np.array([3]),
                                    np.array([2]), 0)
    assert not out.any()
    assert native("gather").gather_ids(indptr, idx, data, np.array([1]), np.array([2]), out, np.array([1]),
                                       np.array([3]), 9) == -1
    assert out.tolist() == [0, 1, 2, 9]
