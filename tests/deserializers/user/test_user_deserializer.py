"""UserDeserializer (cntk-io-semantics 1.10): chunk rules, errors and conversion to the columnar
containers, and the adapter to the Deserializer protocol (no references kept to user chunks)."""
import gc
import weakref

import numpy as np
import pytest
import scipy.sparse as sp

from cntkio import StreamInformation, UserDeserializer
from cntkio.deserializers.base import DenseStream, SparseStream
from cntkio.deserializers.user import UserDeserializerAdapter, as_deserializer, convert_chunk

X = StreamInformation("x", 0, "dense", np.float32, (3,))
Y = StreamInformation("y", 1, "sparse", np.float32, (4,))


class Chunks(UserDeserializer):
    """Returns the given chunk dicts (or the result of calling them)."""

    def __init__(self, streams, chunks):
        super().__init__()
        self._streams, self._chunks = streams, chunks

    def stream_infos(self):
        return self._streams

    def num_chunks(self):
        return len(self._chunks)

    def get_chunk(self, chunk_id):
        c = self._chunks[chunk_id]
        return c() if callable(c) else c


def test_sample_mode_dense_and_sparse():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = sp.csr_matrix(np.array([[0, 1, 0, 0], [2, 0, 0, 3]], np.float32))
    cd = convert_chunk(5, [X, Y], {"x": x, "y": y})
    assert cd.sequences.lengths.tolist() == [1, 1]
    assert cd.sequences.keys.tolist() == [(5 << 32), (5 << 32) + 1]
    xs, ys = cd.streams["x"], cd.streams["y"]
    assert isinstance(xs, DenseStream) and xs.values is x  # no copy when none is needed
    assert xs.offsets.tolist() == [0, 1, 2]
    assert isinstance(ys, SparseStream) and ys.dim == 4
    assert ys.indptr.tolist() == [0, 1, 3] and ys.indices.tolist() == [1, 0, 3]
    assert ys.data.tolist() == [1, 2, 3] and ys.offsets.tolist() == [0, 1, 2]


def test_sequence_mode_lengths_are_the_longest_stream_at_least_one():
    x = [np.zeros((2, 3), np.float32), np.zeros((0, 3), np.float32), np.ones(3, np.float32)]
    y = [sp.csr_matrix((3, 4), dtype=np.float32), sp.csr_matrix((0, 4), dtype=np.float32),
         sp.csr_matrix(np.eye(4, dtype=np.float32)[:1])]
    cd = convert_chunk(0, [X, Y], {"x": x, "y": y})
    # per stream: x 2,0,1 (a rank-1 item is one sample); y 3,0,1 -> max, at least 1
    assert cd.streams["x"].offsets.tolist() == [0, 2, 2, 3]
    assert cd.streams["y"].offsets.tolist() == [0, 3, 3, 4]
    assert cd.sequences.lengths.tolist() == [3, 1, 1]
    assert cd.streams["x"].values[2].tolist() == [1, 1, 1]
    assert cd.streams["y"].indices.tolist() == [0]


def test_sequence_mode_mixed_with_sample_arrays_and_defines_mb_size():
    xd = StreamInformation("x", 0, "dense", np.float32, (3,), defines_mb_size=True)
    x = [np.zeros((1, 3), np.float32), np.zeros((2, 3), np.float32)]
    y = sp.csr_matrix(np.eye(4, dtype=np.float32)[:2])  # one sample per sequence
    cd = convert_chunk(0, [xd, Y], {"x": x, "y": y})
    assert cd.sequences.lengths.tolist() == [1, 2]
    y2 = [sp.csr_matrix((5, 4), dtype=np.float32), sp.csr_matrix((0, 4), dtype=np.float32)]
    cd = convert_chunk(0, [xd, Y], {"x": x, "y": y2})
    assert cd.sequences.lengths.tolist() == [1, 2]  # x defines, y's 5 does not count


@pytest.mark.parametrize("chunk, message", [
    ({"x": np.zeros((2, 3), np.float32), "z": 1}, "Stream with name 'z' does not exist"),
    ({"x": np.zeros((2, 3), np.float32)}, "no data for stream"),
    ({"x": np.zeros((2, 3), np.float32), "y": sp.csr_matrix((3, 4), dtype=np.float32)},
     "Please provide an equal number of sequences across all streams in the chunk, currently "
     "stream 'x' has 2 sequences, whereas 'y'- 3"),
    ({"x": np.zeros((2, 3), np.float64), "y": sp.csr_matrix((2, 4), dtype=np.float32)},
     "Only float numbers are currently supported"),
    ({"x": np.zeros((2, 3), np.float32), "y": sp.csr_matrix((2, 4), dtype=np.float64)},
     "Only float numbers are currently supported"),
    ({"x": np.zeros((2, 1, 3), np.float32), "y": sp.csr_matrix((2, 4), dtype=np.float32)},
     "Dense data supported only as single sample per row"),
    ({"x": np.zeros((2, 4), np.float32), "y": sp.csr_matrix((2, 4), dtype=np.float32)},
     r"sample shape \(4,\), but the stream declares \(3,\)"),
    ({"x": np.zeros((2, 3), np.float32), "y": np.zeros((2, 4), np.float32)},
     "Unexpected data type 'ndarray' for the sparse stream 'y'"),
    ({"x": "abc", "y": sp.csr_matrix((2, 4), dtype=np.float32)},
     "Unexpected type str, only list, numpy or csr_matrix are expected"),
    ({"x": [np.zeros((1, 3), np.float64)], "y": sp.csr_matrix((1, 4), dtype=np.float32)},
     "Only array of type float is currently supported"),
    ({"x": [[1, 2, 3]], "y": sp.csr_matrix((1, 4), dtype=np.float32)},
     "Expecting dense data to be represented as a numpy array"),
    ({"x": np.zeros((1, 3), np.float32), "y": [np.zeros((1, 4), np.float32)]},
     "Expecting sparse data to be represented as a csr_matrix"),
    ({"x": np.zeros((1, 3), np.float32), "y": [sp.csr_matrix((1, 4), dtype=np.float64)]},
     "Only csr_matrix of float is currently supported"),
    ([1, 2], "The chunk should be a dictionary"),
])
def test_chunk_errors(chunk, message):
    with pytest.raises(RuntimeError, match=message):
        convert_chunk(0, [X, Y], chunk)


def test_two_streams_defining_the_minibatch_size():
    a = StreamInformation("a", 0, "dense", np.float32, (1,), defines_mb_size=True)
    b = StreamInformation("b", 1, "dense", np.float32, (1,), defines_mb_size=True)
    chunk = {"a": [np.zeros((1, 1), np.float32)], "b": [np.zeros((1, 1), np.float32)]}
    msg = "Only a single stream is allowed to define minibatch size, but at least two are found."
    with pytest.raises(RuntimeError, match=msg):
        convert_chunk(0, [a, b], chunk)
    with pytest.raises(RuntimeError, match=msg):
        UserDeserializerAdapter(Chunks([a, b], [chunk]))


def test_adapter_validates_streams_and_chunks():
    with pytest.raises(ValueError, match="Deserializer must provide at least one stream"):
        UserDeserializerAdapter(Chunks([], [{}]))
    with pytest.raises(ValueError, match="Deserializer must provide at least one chunk"):
        UserDeserializerAdapter(Chunks([X], []))
    with pytest.raises(RuntimeError, match="Two streams with the same name 'x'"):
        UserDeserializerAdapter(Chunks([X, X.with_id(1)], [{}]))


def test_adapter_protocol():
    d = Chunks([X], [{"x": np.zeros((2, 3), np.float32)}, {"x": np.ones((3, 3), np.float32)}])
    a = as_deserializer(d)
    assert isinstance(a, UserDeserializerAdapter) and a.is_user_deserializer
    assert d.is_user_deserializer
    assert a.stream_infos() == [X] and d.streams.x is X
    assert [(c.id, c.num_sequences) for c in a.chunk_infos()] == [(0, -1), (1, -1)]
    assert a.sequence_infos(1).lengths.tolist() == [1, 1, 1]
    assert a.get_chunk(1).streams["x"].values.sum() == 9
    with pytest.raises(IndexError):
        a.get_chunk(2)
    with pytest.raises(ValueError, match="composition for user defined deserializers"):
        a.lookup(np.array([0]))
    assert as_deserializer(a) is a


def test_base_class_methods_must_be_implemented():
    u = UserDeserializer()
    for call in (u.stream_infos, u.num_chunks, lambda: u.get_chunk(0)):
        with pytest.raises(NotImplementedError):
            call()


def test_adapter_keeps_no_reference_to_the_user_chunk():
    made = []

    def make():
        chunk = {"x": [np.zeros((2, 3), np.float32)], "y": sp.csr_matrix((1, 4), dtype=np.float32)}
        made.append((weakref.ref(chunk["x"][0]), weakref.ref(chunk["y"].data)))
        return chunk

    a = UserDeserializerAdapter(Chunks([X, Y], [make]))
    cd = a.get_chunk(0)
    del cd
    gc.collect()
    (xref, yref), = made
    assert xref() is None and yref() is None
