"""CBF layout: writer/reader round trips, CNTK's own CBF test files, every bad input of issue 15
with a corrupted file (a FormatError naming the file, chunk and field), and a fuzz of the header
and chunk table (always a clear error, never a crash or a read past the map)."""
import os
import struct
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cntkio import CBFDeserializer, ConfigError, FormatError, MinibatchSource, StreamDef
from cntkio.deserializers.cbf import CBFWriter, CNTKBinaryFormatDeserializer, bin2ctf, ctf2bin
from cntkio.deserializers.cbf.layout import MAGIC
from cntkio.deserializers.protocol import ChunkData, DenseStream, SequenceTable, SparseStream
import paths

CONFORMANCE = str(paths.CONFORMANCE)


def reader(path, **opts):
    return CNTKBinaryFormatDeserializer({"file": str(path), **opts})


def all_chunks(d):
    return [d.get_chunk(c.id) for c in d.chunk_infos()]


def small_chunk():
    # 3 sequences: x dense dim 2 (lengths 1, 3, 0), s sparse dim 5 (lengths 2, 1, 1; an empty sample)
    x = DenseStream(np.arange(8, dtype=np.float32).reshape(4, 2), np.array([0, 1, 4, 4]))
    s = SparseStream(indptr=np.array([0, 2, 2, 3, 4]), indices=np.array([4, 0, 3, 1], np.int32),
                     data=np.array([1.5, -2, 3, 4], np.float32), offsets=np.array([0, 2, 3, 4]), dim=5)
    return ChunkData(SequenceTable(np.arange(3), np.array([2, 3, 1])), {"x": x, "s": s})


def write_small(path, **kw):
    with CBFWriter(str(path), [("x", 2, False), ("s", 5, True)], **kw) as w:
        w.write(small_chunk())
    return path


@pytest.mark.parametrize("precision", ["float", "double"])
@pytest.mark.parametrize("chunk_size", [None, 1, "two"])
def test_round_trip(tmp_path, precision, chunk_size):
    if chunk_size == "two":  # sequence 0 takes 48 bytes (64 in double), 0 and 1 together 100 (144)
        chunk_size = 60 if precision == "float" else 100
    path = write_small(tmp_path / "a.cbf", precision=precision, chunk_size=chunk_size)
    d = reader(path, precision=precision)
    chunks = all_chunks(d)
    assert [c.num_sequences for c in d.chunk_infos()] == ([3] if chunk_size is None else
                                                         [1, 1, 1] if chunk_size == 1 else [2, 1])
    assert all(c.num_samples == int(d.sequence_infos(c.id).lengths.sum()) for c in d.chunk_infos())
    x = np.concatenate([c.streams["x"].values for c in chunks])
    np.testing.assert_array_equal(x, np.arange(8).reshape(4, 2))
    assert x.dtype == (np.float64 if precision == "double" else np.float32)
    lens = np.concatenate([np.diff(c.streams["s"].offsets) for c in chunks])
    np.testing.assert_array_equal(lens, [2, 1, 1])
    idx = np.concatenate([c.streams["s"].indices for c in chunks])
    np.testing.assert_array_equal(idx, [4, 0, 3, 1])
    nnz = np.concatenate([np.diff(c.streams["s"].indptr) for c in chunks])
    np.testing.assert_array_equal(nnz, [2, 0, 1, 1])
    keys = np.concatenate([c.sequences.keys for c in chunks])
    np.testing.assert_array_equal(keys, [0, 1, 2])


def test_double_file_read_as_float_and_float_as_double(tmp_path):
    path = write_small(tmp_path / "d.cbf", precision="double")
    x = reader(path).get_chunk(0).streams["x"].values
    assert x.dtype == np.float32
    path = write_small(tmp_path / "f.cbf")
    assert reader(path, precision="double").get_chunk(0).streams["s"].data.dtype == np.float64


def test_dense_views_are_zero_copy(tmp_path):
    n = 50
    vals = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    path = tmp_path / "v.cbf"
    with CBFWriter(str(path), [("x", 3, False)], chunk_size=None) as w:
        w.write(ChunkData(SequenceTable(np.arange(n), np.ones(n, np.int64)),
                          {"x": DenseStream(vals, np.arange(n + 1))}))
        w.write(ChunkData(SequenceTable(np.arange(1), np.array([n])),
                          {"x": DenseStream(vals, np.array([0, n]))}))
    d = reader(path)
    for c in range(2):
        v = d.get_chunk(c).streams["x"].values
        np.testing.assert_array_equal(v, vals)
        assert not v.flags.owndata and not v.flags.writeable  # a read-only view of the chunk's bytes
        assert isinstance(v.base, np.ndarray) or v.base is not None


def test_conformance_10x10_sparse_double():
    path = os.path.join(CONFORMANCE, "Data", "CNTKBinaryReader", "10x10_sparse.bin")
    control = os.path.join(CONFORMANCE, "Control", "CNTKTextFormatReader", "10x10_sparse.txt")
    if not os.path.exists(path):
        pytest.skip("the shared conformance data is not here")
    d = reader(path, precision="double")
    assert [(s.name, s.is_sparse, s.shape) for s in d.stream_infos()] == [("features", True, (100,))]
    st_ = d.get_chunk(0).streams["features"]
    dense = np.zeros((100, 100))
    rows = np.repeat(np.arange(100), np.diff(st_.indptr))
    np.add.at(dense, (rows, st_.indices), st_.data)
    want = np.array([[float(v) for v in line.split()] for line in open(control) if line.strip()][:100])
    # the control is one minibatch of 10 parallel sequences, column t * 10 + s: back to sequence order
    want = want.reshape(10, 10, 100).transpose(1, 0, 2).reshape(100, 100)
    np.testing.assert_allclose(dense, want, rtol=1e-5)  # the control prints 6 significant digits


def test_conformance_simple_dense():
    path = os.path.join(CONFORMANCE, "Data", "CNTKBinaryReader", "Simple_dense.bin")
    if not os.path.exists(path):
        pytest.skip("the shared conformance data is not here")
    src = MinibatchSource(CBFDeserializer(path), randomize=False, max_sweeps=1)
    mb = src.next_minibatch(250)
    f = mb[src.streams.features].asarray().reshape(-1, 2)
    np.testing.assert_allclose(f[:2], [[-0.127551, 0.650403], [-0.997014, -0.81842]], rtol=1e-6)
    assert mb[src.streams.labels].num_samples == 250


def test_factory_and_aliases(tmp_path):
    path = write_small(tmp_path / "a.cbf")
    cfg = CBFDeserializer(str(path), {"feat": StreamDef(field="x"), "s": StreamDef()})
    assert cfg == {"type": "CNTKBinaryFormatDeserializer", "file": str(path),
                   "input": {"feat": {"alias": "x"}, "s": {"alias": "s"}}}
    src = MinibatchSource(cfg, randomize=False, max_sweeps=1)
    assert sorted(s.name for s in src.stream_infos()) == ["feat", "s"]
    # an alias naming no stream is ignored; unlisted streams keep their names
    d = reader(path, input={"z": {"alias": "nope"}})
    assert [s.name for s in d.stream_infos()] == ["x", "s"]
    # two names on one alias: the later one
    d = reader(path, input={"a": {"alias": "x"}, "b": {"alias": "x"}})
    assert [s.name for s in d.stream_infos()] == ["b", "s"]
    with pytest.raises(ConfigError, match="No value given for 'alias'"):
        reader(path, input={"a": {"alias": ""}})
    with pytest.raises(ConfigError, match="delivered as 's'"):
        reader(path, input={"s": {"alias": "x"}})


def test_ctf2bin_bin2ctf_round_trip(tmp_path):
    ctf = tmp_path / "t.ctf"
    ctf.write_text("0 |x 1 2 3 |y 4:1\n0 |x 4 5 6\n1 |x 7 8 9 |y 2:0.5 7:1\n2 |y\n2 |x 1 1 1\n")
    info = ctf2bin(str(ctf), str(tmp_path / "t.cbf"), chunk_size=10)
    assert info["streams"] == [("x", "dense", 3), ("y", "sparse", 8)]  # guessed: sparse dim from the data
    assert info["chunks"] == 3 and info["sequences"] == 3
    bin2ctf(str(tmp_path / "t.cbf"), str(tmp_path / "back.ctf"))
    assert (tmp_path / "back.ctf").read_text() == (
        "0 |x 1 2 3 |y 4:1\n0 |x 4 5 6\n1 |x 7 8 9 |y 2:0.5 7:1\n2 |x 1 1 1 |y\n")
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_ctf2bin_header_file_and_failure_leaves_nothing(tmp_path):
    ctf = tmp_path / "t.ctf"
    ctf.write_text("|a 1 2 |b 3:1\n|a 3 4 |b 0:2\n")
    hdr = tmp_path / "h.txt"
    hdr.write_text("feat a dense 2\nlab b sparse 10\n")
    ctf2bin(str(ctf), str(tmp_path / "o.cbf"), header=str(hdr))
    d = reader(tmp_path / "o.cbf")
    assert [(s.name, s.is_sparse, s.shape) for s in d.stream_infos()] == [("feat", False, (2,)),
                                                                           ("lab", True, (10,))]
    with pytest.raises(FormatError, match="longer than its dim"):
        ctf2bin(str(ctf), str(tmp_path / "bad.cbf"), [("feat", "a", False, 1), ("lab", "b", True, 10)])
    assert sorted(os.listdir(tmp_path)) == ["h.txt", "o.cbf", "t.ctf"]


def test_cli_convert(tmp_path):
    ctf = tmp_path / "t.ctf"
    ctf.write_text("|x 1 2\n|x 3 4\n")
    run = [sys.executable, "-m", "cntkio", "convert"]
    r = subprocess.run(run + ["ctf2bin", str(ctf), str(tmp_path / "t.cbf"), "--chunk-size", "8"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "2 sequences, 2 samples in 2 chunks" in r.stdout
    r = subprocess.run(run + ["bin2ctf", str(tmp_path / "t.cbf"), str(tmp_path / "b.ctf")],
                       capture_output=True, text=True)
    assert r.returncode == 0 and (tmp_path / "b.ctf").read_text() == "0 |x 1 2\n1 |x 3 4\n"
    r = subprocess.run(run + ["bin2ctf", str(ctf), str(tmp_path / "c.ctf")], capture_output=True, text=True)
    assert r.returncode == 1 and "not a valid CNTK binary format file" in r.stderr


# -- bad input ------------------------------------------------------------------------------------

def _header_offset(raw):
    return struct.unpack_from("<q", raw, len(raw) - 8)[0]


def _table_at(raw):
    # stream x: 1+4+1+1+4 bytes, stream s: same; the table follows
    return _header_offset(raw) + 16 + 2 * 11


def corrupt(tmp_path, edit):
    raw = bytearray((write_small(tmp_path / "ok.cbf", chunk_size=60)).read_bytes())
    raw = edit(raw)
    path = tmp_path / "bad.cbf"
    path.write_bytes(bytes(raw))
    return path


def _set(raw, fmt, pos, value):
    struct.pack_into(fmt, raw, pos, value)
    return raw


BAD = {
    "magic": (lambda r: _set(r, "<Q", 0, 0x1234), "not a valid CNTK binary format file.*start"),
    "header magic": (lambda r: _set(r, "<Q", _header_offset(r), 7), "not a valid CNTK binary format file.*header"),
    "version": (lambda r: _set(r, "<I", 8, 2), "reader version is 1, but the data file was created for version 2"),
    "truncated": (lambda r: r[:len(r) - 20], "header offset|truncated|chunk table"),
    "truncated to 10": (lambda r: r[:10], "truncated"),
    "empty": (lambda r: r[:0], "not a valid CNTK binary format file"),
    "chunk past end": (lambda r: _set(r, "<q", _table_at(r) + 16, 10 ** 9), "chunk 1: the chunk table's offset"),
    "chunk order": (lambda r: _set(r, "<q", _table_at(r), 200), "chunk 0: .*not in file order|chunk 0:"),
    "nsamples": (lambda r: _set(r, "<I", _table_at(r) + 12, 99), "chunk 0: the counts do not add up"),
    "nseq": (lambda r: _set(r, "<I", _table_at(r) + 8, 1), "chunk 0: .*counts do not add up"),
    "element type": (lambda r: _set(r, "<B", _header_offset(r) + 16 + 6, 5), "unsupported element type"),
    "storage": (lambda r: _set(r, "<B", _header_offset(r) + 16, 9), "unknown storage format"),
    "dim 0": (lambda r: _set(r, "<I", _header_offset(r) + 16 + 7, 0), "invalid sample dimension"),
    "nchunks": (lambda r: _set(r, "<I", _header_offset(r) + 8, 1000), "chunk or stream count|chunk table"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_header_and_table(tmp_path, case):
    edit, match = BAD[case]
    path = corrupt(tmp_path, edit)
    with pytest.raises(FormatError, match=match) as e:
        all_chunks(reader(path))
    assert str(path) in str(e.value)


def test_sparse_index_out_of_range(tmp_path):
    def edit(raw):
        # chunk 0 holds sequences 0 and 1; find s's rows of sequence 0 (nnz 2: rows 4, 0)
        i = bytes(raw).index(struct.pack("<ii", 4, 0))
        return _set(raw, "<i", i, 5)
    with pytest.raises(FormatError, match=r"chunk 0, stream 's', sequence 0, sample 0: sparse index out "
                                          r"of range.*\[0, 5\).*found 5"):
        all_chunks(reader(corrupt(tmp_path, edit)))


def test_sparse_counts_do_not_add_up(tmp_path):
    def edit(raw):
        # sequence 0 of s: u32 n=2, i32 nnz=2, values, rows (4, 0), sizes (2, 0) -> (1, 0)
        i = bytes(raw).index(struct.pack("<ii", 4, 0)) + 8
        return _set(raw, "<i", i, 1)
    with pytest.raises(FormatError, match="chunk 0, stream 's', sequence 0: the counts do not add up"):
        all_chunks(reader(corrupt(tmp_path, edit)))


def test_sequence_count_not_the_longest_stream(tmp_path):
    with pytest.raises(FormatError, match="chunk 0: .*counts do not add up"):
        # sequence 0's length 2 -> 3, the table's nsamples 5 -> 6 to match
        all_chunks(reader(corrupt(tmp_path, lambda r: _set(_set(r, "<I", 12, 3), "<I", _table_at(r) + 12, 6))))


def test_dense_count_past_chunk(tmp_path):
    # x's count of sequence 0 in chunk 0 (right after the 2 per-sequence lengths) -> huge
    with pytest.raises(FormatError, match="chunk 0, stream 'x': sequence 0: .*past the chunk's end"):
        all_chunks(reader(corrupt(tmp_path, lambda r: _set(r, "<I", 20, 10 ** 6))))


def test_file_shrunk_after_open(tmp_path):
    path = write_small(tmp_path / "a.cbf")
    d = reader(path)
    with open(path, "r+b") as f:
        f.truncate(30)
    with pytest.raises(FormatError, match="shorter now"):
        d.get_chunk(0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_header_and_chunk_table(tmp_path, data):
    raw = bytearray(write_small(tmp_path / "ok.cbf", chunk_size=60).read_bytes())
    h = _header_offset(raw)
    region = data.draw(st.sampled_from(["start", "header", "table", "tail", "chunks"]))
    lo, hi = {"start": (0, 12), "header": (h, _table_at(raw)), "table": (_table_at(raw), len(raw) - 8),
              "tail": (len(raw) - 8, len(raw)), "chunks": (12, h)}[region]
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(lo, hi - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, len(raw)))]
    path = tmp_path / "fuzz.cbf"
    path.write_bytes(bytes(raw))
    try:
        d = reader(path)
        for c in all_chunks(d):
            for s in c.streams.values():
                if isinstance(s, SparseStream):
                    assert len(s.indices) == 0 or (s.indices.min() >= 0 and s.indices.max() < s.dim)
                    assert s.indptr[-1] == len(s.indices) == len(s.data)
                else:
                    assert s.values.shape[0] == s.offsets[-1]
    except FormatError as e:
        assert str(path) in str(e)


def test_magic_constant():
    assert struct.pack("<Q", MAGIC) == b"nib_ktnc"


def test_a_bad_sparse_block_read_by_global_randomization_is_named_as_get_chunk_names_it(tmp_path):
    # read by index (read_sequences) the block fails its check; the batch then goes through
    # get_chunk, whose error names the chunk, stream, sequence and sample
    def edit(raw):
        i = bytes(raw).index(struct.pack("<ii", 4, 0))
        return _set(raw, "<i", i, 5)
    src = MinibatchSource(CBFDeserializer(str(corrupt(tmp_path, edit))), global_randomization=True, max_sweeps=1)
    with pytest.raises(FormatError, match=r"chunk 0, stream 's', sequence 0, sample 0: sparse index out of range"):
        while src.next_minibatch(100):
            pass
