"""The C core's one-pass sparse assembly (``_cbf.sparse_fill``) equals the NumPy assembly (its
twin) array for array, and hands every bad count or index to it (which names the error)."""
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cntkio import FormatError
from cntkio._native import native
from cntkio.deserializers.cbf import CNTKBinaryFormatDeserializer
from cntkio.deserializers.cbf.layout import MAGIC, chunk_words, walk_chunk

_cbf = pytest.importorskip("cntkio._native._cbf")  # the C module itself, also under CNTKIO_PURE_PYTHON


def sparse_block(samples, double, rng, dim):
    """Words of one sparse block: samples is a list of per-sample non-zero counts."""
    nnz = sum(samples)
    vals = rng.normal(size=nnz).astype("<f8" if double else "<f4").view("<u4")
    rows = rng.integers(0, dim, nnz).astype(np.uint32)
    return np.concatenate([np.array([len(samples), nnz], np.uint32), vals, rows,
                           np.array(samples, np.uint32)])


def cbf_file(path, streams, chunks):
    """streams: [(name, sparse, double, dim)]; chunks: [(lengths, [per stream: [block words]])]."""
    out = [struct.pack("<QI", MAGIC, 1)]
    pos, table = 12, []
    for lengths, blocks in chunks:
        words = np.concatenate([np.array(lengths, np.uint32)] + [b for s in blocks for b in s])
        out.append(words.tobytes())
        table.append((pos, len(lengths), int(sum(lengths))))
        pos += words.nbytes
    head = [struct.pack("<QII", MAGIC, len(chunks), len(streams))]
    for name, sparse, double, dim in streams:
        raw = name.encode()
        head.append(struct.pack("<BI", int(sparse), len(raw)) + raw + struct.pack("<BI", int(double), dim))
    head += [struct.pack("<qII", *t) for t in table]
    out += head + [struct.pack("<q", pos)]
    path.write_bytes(b"".join(out))
    return str(path)


def load_all(path, fuse):
    d = CNTKBinaryFormatDeserializer({"file": path})
    d.fuse_sparse = fuse
    try:
        return [d.get_chunk(c.id) for c in d.chunk_infos()]
    finally:
        d.close()


def arrays(chunks):
    out = []
    for ch in chunks:
        for name, s in ch.streams.items():
            for f in ("values", "indptr", "indices", "data", "offsets"):
                if hasattr(s, f):
                    a = getattr(s, f)
                    out.append((name, f, a.dtype.str, a.shape, a.tobytes()))
    return out


seq_strategy = st.lists(st.lists(st.integers(0, 4), max_size=5), min_size=1, max_size=12)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seqs=st.lists(seq_strategy, min_size=1, max_size=3), double=st.booleans(),
       dense_too=st.booleans(), seed=st.integers(0, 999),
       corrupt=st.one_of(st.none(), st.tuples(st.integers(0, 10**6), st.sampled_from(
           [0, 1, 2, 3, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]))))
def test_fused_equals_numpy(tmp_path_factory, seqs, double, dense_too, seed, corrupt):
    rng = np.random.default_rng(seed)
    dim = 7
    streams = [("s", True, double, dim)] + ([("d", False, False, 3)] if dense_too else [])
    chunks = []
    for chunk in seqs:
        lengths = [len(x) for x in chunk]
        blocks = [[sparse_block(x, double, rng, dim) for x in chunk]]
        if dense_too:  # every sequence's dense count equals its length (empty sequences stay empty)
            blocks.append([np.concatenate([[k], rng.integers(0, 9, 3 * k)]).astype(np.uint32)
                           for k in lengths])
        chunks.append((lengths, blocks))
    if corrupt is not None:  # one word of a sparse block overwritten
        where, value = corrupt
        lengths, blocks = chunks[where % len(chunks)]
        b = blocks[0][where % len(blocks[0])]
        b[where % len(b)] = value
    path = cbf_file(tmp_path_factory.mktemp("f") / "f.cbf", streams, chunks)
    results = []
    for fuse in (True, False):
        try:
            results.append(("ok", arrays(load_all(path, fuse))))
        except FormatError as e:
            results.append(("error", str(e)))
    assert results[0] == results[1]


def test_a_valid_file_is_assembled_in_the_walk(tmp_path):
    rng = np.random.default_rng(1)
    chunk = [[2, 0], [], [3]]
    path = cbf_file(tmp_path / "f.cbf", [("s", True, False, 7)],
                    [([len(x) for x in chunk], [[sparse_block(x, False, rng, 7) for x in chunk]])])
    d = CNTKBinaryFormatDeserializer({"file": path})
    s = d.get_chunk(0).streams["s"]
    assert s.indptr.tolist() == [0, 2, 2, 5] and s.offsets.tolist() == [0, 2, 3]
    assert s.data.dtype == np.float32 and len(s.indices) == 5
    h = d.header
    words = chunk_words(path_bytes(path), h, 0, path)
    lengths = np.array([2, 0, 1], np.int64)
    built = native("cbf") is not None                                    # off under CNTKIO_PURE_PYTHON
    assert (walk_chunk(words, h, 0, lengths, path).filled[0] is not None) == built  # filled by the C walk
    assert walk_chunk(words, h, 0, lengths, path, fill_sparse=False).filled[0] is None
    d.close()


def path_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def _words(samples, dim=7, double=False):
    return sparse_block(samples, double, np.random.default_rng(0), dim)


def test_sparse_fill_values():
    words = np.concatenate([np.array([9], np.uint32), _words([2, 1]), _words([]), _words([0, 3])])
    lengths = np.array([2, 0, 2], np.int64)
    s, k, z, end, data, idx, indptr = _cbf.sparse_fill(words, 1, lengths, 1, 7)
    assert s.tolist() == [1, 1 + 2 + 6 + 2, 1 + 2 + 6 + 2 + 2] and k.tolist() == [2, 0, 2]
    assert z.tolist() == [3, 0, 3] and end == len(words)
    assert indptr.tolist() == [0, 2, 3, 3, 6] and data.dtype == np.uint32 and len(data) == 6
    want = np.concatenate([words[3:6], words[15:18]])
    assert np.array_equal(data, want)
    assert idx.dtype == np.int32 and np.array_equal(idx, np.concatenate([words[6:9], words[18:21]]))
    # float64: two words per value
    w = _words([1, 1], double=True)
    got = _cbf.sparse_fill(w, 0, np.array([2], np.int64), 2, 7)
    assert len(got[4]) == 4 and np.array_equal(got[4], w[2:6]) and got[6].tolist() == [0, 1, 2]


@pytest.mark.parametrize("edit", ["index == dim", "index < 0", "size < 0", "sizes != nnz",
                                  "count > length", "nnz < 0", "past the end"])
def test_sparse_fill_leaves_every_bad_value_to_python(edit):
    w = _words([2, 1])          # [2, 3, v v v, r r r, 2 1]
    lengths = np.array([2], np.int64)
    if edit == "index == dim":
        w[5] = 7
    elif edit == "index < 0":
        w[6] = 0xFFFFFFFF
    elif edit == "size < 0":
        w[9] = 0xFFFFFFFF
    elif edit == "sizes != nnz":
        w[9] = 0
    elif edit == "count > length":
        lengths = np.array([1], np.int64)
    elif edit == "nnz < 0":
        w[1] = 0x80000000
    else:
        w = w[:-1]
    assert _cbf.sparse_fill(w, 0, lengths, 1, 7) is None
    assert _cbf.sparse_fill(_words([2, 1]), 0, np.array([2], np.int64), 1, 7) is not None


def test_pooled_buffers_are_never_shared_by_live_arrays():
    # buffers of released results are reused: arrays still alive must keep their own memory
    rng = np.random.default_rng(5)
    blocks = [_words([int(v) for v in rng.integers(0, 4, 3)]) for _ in range(50)]
    words = np.concatenate(blocks)
    lengths = np.full(50, 3, np.int64)
    kept = _cbf.sparse_fill(words, 0, lengths, 1, 7)
    want = [a.copy() for a in kept[4:]]
    view = kept[4][5:].view(np.float32)                  # a view keeps the buffer too
    want_view = view.copy()
    del kept
    for _ in range(40):                                  # other results come and go
        other = _cbf.sparse_fill(words[::-1].copy(), 0, lengths, 1, 7)
        del other
        again = _cbf.sparse_fill(words, 0, lengths, 1, 7)
        assert all(np.array_equal(a, b) for a, b in zip(again[4:], want))
        again[4][:] = 0                                   # scribble over a pooled buffer
        again[5][:] = -1
        del again
    assert np.array_equal(view, want_view)
