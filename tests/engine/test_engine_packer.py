"""Packers: masks, batched packing split into minibatches, truncated-BPTT slots."""
import numpy as np
import pytest

from cntkio.deserializers.base import ChunkData, DenseStream, SequenceTable, SparseStream
from cntkio.engine.packer import (TruncatedSlots, check_frame_mode, copy_segments, group_by_chunk, make_mask,
                                  pack_many)
from cntkio.streams import StreamInformation

X = StreamInformation("x", 0, "dense", np.float32, (1,))
Y = StreamInformation("y", 1, "sparse", np.float32, (4,))


def chunk(lengths, base):
    n = sum(lengths)
    off = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    vals = (base + np.arange(n)).astype(np.float32)
    return ChunkData(SequenceTable(np.arange(len(lengths)), np.array(lengths)),
                     {"x": DenseStream(vals[:, None], off),
                      "y": SparseStream(np.arange(n + 1, dtype=np.int64), (np.arange(n) % 4).astype(np.int32),
                                        vals, off, 4)})


def test_make_mask():
    assert make_mask(np.array([2, 0, 3])).tolist() == [[2, 1, 0], [0, 0, 0], [2, 1, 1]]
    assert make_mask(np.array([], np.int64)).shape == (0, 0)


def test_check_frame_mode():
    check_frame_mode(np.array([1, 1]))
    with pytest.raises(RuntimeError, match="size 3"):
        check_frame_mode(np.array([1, 3]))


@pytest.mark.parametrize("pure", [False, True])
def test_copy_segments_with_and_without_shift(pure, monkeypatch):
    if pure:
        monkeypatch.setattr("cntkio.engine.segments.native", lambda name: None)
    src = np.arange(10, dtype=np.int64) * 10
    dst = np.full(6, -1, np.int64)
    copy_segments(src, np.array([7, 0, 4]), dst, np.array([0, 2, 5]), np.array([2, 3, 0]))
    assert dst.tolist() == [70, 80, 0, 10, 20, -1]
    copy_segments(src, np.array([7, 0]), dst, np.array([0, 2]), np.array([2, 3]), shift=np.array([-70, 5]))
    assert dst.tolist() == [0, 10, 5, 15, 25, -1]


@pytest.mark.parametrize("pure", [False, True])
def test_copy_segments_from_rows_at_a_stride(pure, monkeypatch):
    # a CBF chunk of one-sample sequences: each sample's 3 values follow a 1-word block header
    if pure:
        monkeypatch.setattr("cntkio.engine.segments.native", lambda name: None)
    words = np.arange(40, dtype=np.float32).reshape(10, 4)
    src = words[:, 1:]                       # rows of 3 at a stride of 4 values
    assert not src.flags.c_contiguous
    dst = np.full((5, 3), -1, np.float32)
    copy_segments(src, np.array([8, 0, 3]), dst, np.array([0, 1, 3]), np.array([1, 2, 2]))
    assert dst.tolist() == [[33, 34, 35], [1, 2, 3], [5, 6, 7], [13, 14, 15], [17, 18, 19]]


def test_gather_rows_checks_its_bounds_before_copying():
    from cntkio._native import native
    src = np.arange(40, dtype=np.float32).reshape(10, 4)[:, 1:]
    dst = np.zeros((2, 3), np.float32)
    with pytest.raises(IndexError, match="segment 1 .*outside src"):
        native("gather").gather_rows(src, np.array([0, 9]), dst, np.array([0, 1]), np.array([1, 2]))
    assert not dst.any()
    with pytest.raises(ValueError, match="contiguous"):
        native("gather").gather_rows(np.zeros((4, 6), np.float32)[:, ::2], np.array([0]), dst[:, :3].copy(),
                                     np.array([0]), np.array([1]))


def test_group_by_chunk_keeps_first_appearance_order():
    groups = group_by_chunk(np.array([3, 1, 3, 0, 1]))
    assert [(c, p.tolist()) for c, p in groups] == [(3, [0, 2]), (1, [1, 4]), (0, [3])]


def test_pack_many_splits_one_gather_into_minibatches():
    chunks = {0: chunk([2, 1, 3], 0), 1: chunk([1, 2], 100)}
    sel_chunk = np.array([1, 0, 0, 1, 0])
    sel_index = np.array([1, 2, 0, 0, 1])
    mbs = pack_many([X, Y], chunks, sel_chunk, sel_index, group_by_chunk(sel_chunk), [2, 0, 3],
                    [False, False, True])
    x0, x1, x2 = (m[X] for m in mbs)
    assert x0.mask.tolist() == [[2, 1, 0], [2, 1, 1]] and [s[:, 0].tolist() for s in x0.as_sequences()] == \
        [[101, 102], [3, 4, 5]]
    assert x1.num_sequences == 0 and x1.shape == (0, 0, 1)
    assert x2.mask.tolist() == [[2, 1], [2, 0], [2, 0]] and x2.end_of_sweep
    assert [s[:, 0].tolist() for s in x2.as_sequences()] == [[0, 1], [100], [2]]
    y2 = mbs[2][Y]
    assert y2.is_sparse and y2.as_csr().toarray().tolist() == [[0, 0, 0, 0], [0, 1, 0, 0], [100, 0, 0, 0],
                                                                 [0, 0, 2, 0]]



def test_one_sequence_from_each_chunk_is_joined_in_selection_order(monkeypatch):
    # an image per chunk: every chunk gives one sequence, so each stream is joined by one call;
    # the groups come in an order other than the selection's, and a sparse row may be empty
    sp = ChunkData(SequenceTable(np.arange(2), np.array([2, 1])),
                   {"x": DenseStream(np.array([[7.0], [8.0], [9.0]], np.float32), np.array([0, 2, 3])),
                    "y": SparseStream(np.array([0, 2, 2, 3]), np.array([3, 0, 2], np.int32),
                                      np.array([1, 2, 3], np.float32), np.array([0, 2, 3]), 4)})
    chunks = {0: chunk([2, 1], 0), 1: chunk([1, 3], 100), 2: sp}
    sel_chunk, sel_index = np.array([2, 0, 1]), np.array([0, 1, 1])
    groups = [(1, np.array([2])), (2, np.array([0])), (0, np.array([1]))]

    def packed():
        mb = pack_many([X, Y], chunks, sel_chunk, sel_index, groups, [3], [False])[0]
        return [s[:, 0].tolist() for s in mb[X].as_sequences()], mb[Y].as_csr().toarray().tolist()

    xs, ys = packed()
    assert xs == [[7, 8], [2], [101, 102, 103]]
    assert ys == [[2, 0, 0, 1], [0, 0, 0, 0], [0, 0, 2, 0], [0, 101, 0, 0], [0, 0, 102, 0], [0, 0, 0, 103]]
    monkeypatch.setattr("cntkio.engine.packer._one_each", lambda per, n: False)
    assert packed() == (xs, ys)       # the copy-per-chunk path agrees


def test_truncated_slots_state_and_emit():
    slots = TruncatedSlots([X], 2)
    slots.resize(1)
    assert slots.needs(0)
    slots.push(0, 7, 3, {"x": np.array([[1.], [2.], [3.]], np.float32)})
    assert not slots.needs(0)
    mb = slots.emit(False)[X]
    assert mb.mask.tolist() == [[2, 1]]
    assert slots.state() == [[[7], 2, {"x": 2}]]
    slots.push(0, 8, 1, {"x": np.array([[4.]], np.float32)})
    mb = slots.emit(True)[X]
    assert mb.mask.tolist() == [[1, 2]] and mb.as_sequences()[0][:, 0].tolist() == [3, 4]
    assert slots.state() == [[[], 0, {"x": 0}]] and slots.empty()
