"""CBFWriter.encode (what ctf2bin runs on its parse threads) writes the same bytes as write(chunk):
on other threads, out of order, with sequences to drop (the chunk is then kept for the
selection), with encode buffers shared by writers at once, and with staging blocks kept from
one file for the next; ctf2bin's output does not change with the parse-ahead depth or threads."""
import concurrent.futures as cf
import os
import signal

import numpy as np
import pytest

from cntkio.errors import FormatError, MaxErrorsExceeded
from cntkio.deserializers.cbf import CBFWriter, ctf2bin
from cntkio.deserializers.cbf import convert as CV
from cntkio.deserializers.cbf import writer as W
from cntkio.deserializers.protocol import ChunkData, DenseStream, SequenceTable, SparseStream

STREAMS = [("x", 3, False), ("s", 7, True)]


def _chunk(seed, n=40, empty_every=0):
    """n sequences: x dense dim 3 (0..3 samples), s sparse dim 7 (1..3 samples, some empty); every
    empty_every-th sequence has no sample in either stream."""
    rng = np.random.default_rng(seed)
    lx = rng.integers(0, 4, n)
    ls = rng.integers(1, 4, n)
    if empty_every:
        lx[::empty_every] = 0
        ls[::empty_every] = 0
    x = DenseStream(rng.normal(size=(int(lx.sum()), 3)).astype(np.float32),
                    np.concatenate([[0], np.cumsum(lx)]).astype(np.int64))
    nnz = rng.integers(0, 3, int(ls.sum()))
    indptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)
    s = SparseStream(indptr=indptr, indices=rng.integers(0, 7, int(indptr[-1])).astype(np.int32),
                     data=rng.normal(size=int(indptr[-1])).astype(np.float32),
                     offsets=np.concatenate([[0], np.cumsum(ls)]).astype(np.int64), dim=7)
    keys = np.arange(seed * 1000, seed * 1000 + n)
    return ChunkData(SequenceTable(keys, np.maximum(lx, ls)), {"x": x, "s": s})


def _write(path, chunks, encode_on=None, chunk_size=300):
    with CBFWriter(str(path), STREAMS, chunk_size=chunk_size) as w:
        if encode_on is None:
            for c in chunks:
                w.write(c)
        else:  # every chunk encoded on the pool, out of order, then written in order
            futs = [encode_on.submit(w.encode, c) for c in reversed(chunks)][::-1]
            for f in futs:
                w.write(None, encoded=f.result())
    return path.read_bytes()


@pytest.mark.parametrize("empty_every", [0, 3])
@pytest.mark.parametrize("chunk_size", [None, 1, 300, 5000])
def test_encode_on_threads_writes_the_same_bytes(tmp_path, empty_every, chunk_size):
    chunks = [_chunk(k, empty_every=empty_every) for k in range(6)]
    plain = _write(tmp_path / "a.cbf", chunks, chunk_size=chunk_size)
    with cf.ThreadPoolExecutor(2) as pool:
        ahead = _write(tmp_path / "b.cbf", chunks, encode_on=pool, chunk_size=chunk_size)
    assert ahead == plain
    assert len(plain) > 12 + 6 * 40 * 4


def test_encoded_keeps_the_chunk_only_to_drop_sequences(tmp_path):
    with CBFWriter(str(tmp_path / "a.cbf"), STREAMS) as w:
        full = w.encode(_chunk(1))
        holes = w.encode(_chunk(2, empty_every=4))
        assert full.chunk is None and holes.chunk is not None
        assert int((holes.lengths == 0).sum()) == 10
        w.write(None, encoded=full)
        w.write(None, encoded=holes)
    assert w.num_sequences == 40 + 30
    assert (tmp_path / "a.cbf").read_bytes() == _write(tmp_path / "b.cbf", [_chunk(1), _chunk(2, empty_every=4)],
                                                       chunk_size=W.DEFAULT_CHUNK_SIZE)


def test_writers_at_once_share_encode_buffers(tmp_path, monkeypatch):
    monkeypatch.setattr(W, "_encode_spare", [])  # a fresh shared pool, filled by these writers
    chunks = [_chunk(k) for k in range(8)]
    want = _write(tmp_path / "ref.cbf", chunks)

    def one(i):
        return _write(tmp_path / f"w{i}.cbf", chunks)
    with cf.ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(one, range(8)))
    assert all(o == want for o in outs)
    assert 0 < len(W._encode_spare) <= W._SPARE_BUFFERS


def test_staging_blocks_kept_for_the_next_file(tmp_path, monkeypatch):
    monkeypatch.setattr(W, "_DIRECT_STAGE_BYTES", 4096)
    monkeypatch.setattr(W, "_stage_cache", [])
    chunks = [_chunk(k) for k in range(6)]
    first = _write(tmp_path / "a.cbf", chunks)
    kept = list(W._stage_cache)
    if not kept:
        pytest.skip("this file system takes no O_DIRECT writes (no staging blocks)")
    second = _write(tmp_path / "b.cbf", chunks)
    assert second == first
    assert any(b is k for b in W._stage_cache for k in kept)  # reused, not made again
    assert len(W._stage_cache) * 4096 <= W._STAGE_CACHE_BYTES


def _ctf(path, n=300):
    rng = np.random.default_rng(9)
    with open(path, "w") as f:
        for i in range(n):
            for _ in range(int(rng.integers(1, 4))):
                x = " ".join(str(int(v)) for v in rng.integers(0, 9, 3))
                s = " ".join(f"{int(j)}:{int(v)}" for j, v in zip(rng.integers(0, 7, 2), rng.integers(1, 9, 2)))
                f.write(f"{i} |x {x} |s {s}\n")
    return str(path)


@pytest.mark.parametrize("ahead,threads", [(1, 1), (2, 2), (5, 3)])
def test_ctf2bin_bytes_do_not_depend_on_the_parse_ahead(tmp_path, monkeypatch, ahead, threads):
    ctf = _ctf(tmp_path / "t.ctf")
    streams = {"x": {"alias": "x", "dim": 3, "format": "dense"}, "s": {"alias": "s", "dim": 7, "format": "sparse"}}
    ref = tmp_path / "ref.cbf"
    ctf2bin(ctf, str(ref), streams, chunk_size=700, ctf_chunk_size=512, progress=False)
    monkeypatch.setattr(CV, "_PARSE_AHEAD", ahead)
    monkeypatch.setattr(CV, "_PARSE_THREADS", threads)
    out = tmp_path / "out.cbf"
    info = ctf2bin(ctf, str(out), streams, chunk_size=700, ctf_chunk_size=512, progress=False)
    assert info["chunks"] > 5 and info["sequences"] == 300
    assert out.read_bytes() == ref.read_bytes()


def test_sparse_indices_checked_once(tmp_path):
    # ctf2bin: the CTF parser checks each index against the dims the writer gets, and the writer
    # does not check them again; a bad index stops the conversion with the parser's error
    ctf = tmp_path / "bad.ctf"
    ctf.write_text("0 |s 1:1 2:1\n1 |s 7:1\n2 |s 3:1\n")
    out = tmp_path / "bad.cbf"
    with pytest.raises(MaxErrorsExceeded, match=r"bad\.ctf:2:6: sparse index out of range.*found 7"):
        ctf2bin(str(ctf), str(out), [("s", "s", True, 5)], progress=False)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["bad.ctf"]
    # the writer's own check stays for chunks from anywhere else

    def one(index):
        s = SparseStream(indptr=np.array([0, 1]), indices=np.array([index], np.int32),
                         data=np.ones(1, np.float32), offsets=np.array([0, 1]), dim=5)
        return ChunkData(SequenceTable(np.arange(1), np.array([1])), {"s": s})
    with CBFWriter(str(tmp_path / "w.cbf"), [("s", 5, True)]) as w:
        for index in (5, -1):
            with pytest.raises(FormatError, match=f"sparse index out of range.*found {index}"):
                w.encode(one(index))
            with pytest.raises(FormatError, match="sparse index out of range"):
                w.write(one(index))
        w.write(None, encoded=w.encode(one(4)))
    assert w.num_sequences == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_while_a_pool_lock_is_held_leaves_the_child_working(tmp_path):
    chunks = [_chunk(k) for k in range(3)]
    want = _write(tmp_path / "ref.cbf", chunks)
    with W._encode_spare_lock, W._stage_cache_lock:  # as if another thread were in _take
        pid = os.fork()
        if pid == 0:  # child: the pools' locks are new ones (else it would wait forever)
            code = 1
            signal.alarm(30)  # a deadlocked child dies, and the test fails
            try:
                code = 0 if _write(tmp_path / "child.cbf", chunks) == want else 2
            finally:
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
