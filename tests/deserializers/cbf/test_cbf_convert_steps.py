"""ctf2bin's output does not depend on the CTF parse steps; each chunk's writeback is started as
it is written, and the fsync before the rename still runs (its seconds are reported)."""
import os

import numpy as np

from cntkio.deserializers.cbf import ctf2bin
from cntkio.deserializers.cbf import writer as W


def _ctf(path, n=400, seed=3):
    rng = np.random.default_rng(seed)
    lines = []
    for i in range(n):
        for _ in range(int(rng.integers(1, 4))):
            x = " ".join(str(int(v)) for v in rng.integers(0, 9, 5))
            y = " ".join(f"{int(j)}:{int(v)}" for j, v in zip(rng.integers(0, 30, 3), rng.integers(1, 9, 3)))
            lines.append(f"{i} |x {x} |y {y}\n")
    path.write_text("".join(lines))
    return str(path)


STREAMS = {"x": {"alias": "x", "dim": 5, "format": "dense"}, "y": {"alias": "y", "dim": 30, "format": "sparse"}}


def test_output_is_the_same_for_any_parse_step(tmp_path):
    ctf = _ctf(tmp_path / "t.ctf")
    outs = []
    for step in (None, 97, 1000, 1 << 20):
        out = tmp_path / f"t{step}.cbf"
        info = ctf2bin(ctf, str(out), STREAMS, chunk_size=2000, ctf_chunk_size=step, progress=False)
        assert info["chunks"] > 3 and info["sequences"] == 400
        outs.append(out.read_bytes())
    assert all(o == outs[0] for o in outs[1:])


def test_writeback_started_per_chunk_and_fsync_kept(tmp_path, monkeypatch):
    ctf = _ctf(tmp_path / "t.ctf")
    calls, synced = [], []
    monkeypatch.setattr(W, "_start_writeback", lambda fd, off, n, flags: calls.append((off, n, flags)) or 0)
    real = os.fsync
    monkeypatch.setattr(W.os, "fsync", lambda fd: synced.append(fd) or real(fd))
    out = tmp_path / "t.cbf"
    info = ctf2bin(ctf, str(out), STREAMS, chunk_size=2000, progress=False)
    # one hint per chunk, covering the chunk's bytes exactly, in file order from offset 12
    assert len(calls) == info["chunks"] and calls[0][0] == 12
    assert all(a[0] + a[1] == b[0] for a, b in zip(calls, calls[1:]))
    assert {c[2] for c in calls} == {2}                      # SYNC_FILE_RANGE_WRITE
    assert len(synced) == 1 and info["fsync_seconds"] >= 0
    assert calls[-1][0] + calls[-1][1] < os.path.getsize(out)  # the header follows the last chunk


def test_native_sparse_emit_equals_numpy(tmp_path, monkeypatch):
    import pytest
    pytest.importorskip("cntkio._native._cbf")
    ctf = _ctf(tmp_path / "t.ctf", n=300, seed=8)
    with open(ctf, "a") as f:   # empty sparse samples and sequences with no y at all
        f.write("300 |x 1 2 3 4 5 |y\n300 |x 1 1 1 1 1\n301 |x 0 0 0 0 0\n")
    outs = []
    for native_emit in (True, False):
        monkeypatch.setattr(W.CBFWriter, "emit_native", native_emit)
        for precision in ("float", "double"):
            out = tmp_path / f"t{native_emit}{precision}.cbf"
            ctf2bin(ctf, str(out), STREAMS, chunk_size=1500, precision=precision, progress=False)
            outs.append(out.read_bytes())
    assert outs[0] == outs[2] and outs[1] == outs[3] and outs[0] != outs[1]


def test_sparse_emit_checks_every_range():
    import pytest
    _cbf = pytest.importorskip("cntkio._native._cbf")
    out = np.zeros(20, np.uint32)
    vals = np.arange(4, dtype=np.uint32)
    rows = np.arange(4, dtype=np.uint32)
    indptr = np.array([0, 1, 3, 4], np.int64)
    off = np.array([0, 2, 3], np.int64)
    starts = np.array([0, 10], np.int64)
    _cbf.sparse_emit(out, starts, vals, rows, indptr, off, 1)
    assert out.tolist() == [2, 3, 0, 1, 2, 0, 1, 2, 1, 2, 1, 1, 3, 3, 1] + [0] * 5
    #                      n  nnz values  rows     sizes | n nnz v  r  size
    with pytest.raises(ValueError, match="block outside out"):
        _cbf.sparse_emit(out, np.array([0, 16], np.int64), vals, rows, indptr, off, 1)
    with pytest.raises(ValueError, match="indptr outside the values"):
        _cbf.sparse_emit(out, starts, vals[:3], rows, indptr, off, 1)
    with pytest.raises(ValueError, match="offsets outside indptr"):
        _cbf.sparse_emit(out, starts, vals, rows, indptr, np.array([0, 2, 4], np.int64), 1)
    with pytest.raises(ValueError, match="bad arguments"):
        _cbf.sparse_emit(out, starts, vals, rows, indptr, off[:2], 1)
