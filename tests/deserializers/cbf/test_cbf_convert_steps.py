"""ctf2bin's output does not depend on the CTF parse steps; written around the page cache
(O_DIRECT, staged in aligned blocks) or buffered, the bytes are the same, a file system that
refuses O_DIRECT gets buffered writes, and a failed write leaves nothing behind; on the buffered
path each chunk's writeback is started as it is written, and the fsync before the rename still
runs (its seconds are reported)."""
import errno
import os

import pytest

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
    monkeypatch.setattr(W, "_DIRECT_IO", False)  # the buffered path
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


def _direct_supported(folder) -> bool:
    if not hasattr(os, "O_DIRECT"):
        return False
    probe = os.path.join(folder, "probe")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o666))
        return True
    except OSError:
        return False
    finally:
        if os.path.exists(probe):
            os.unlink(probe)


@pytest.mark.parametrize("stage", [4096, 8192, 1 << 20])
def test_direct_writes_equal_buffered(tmp_path, monkeypatch, stage):
    ctf = _ctf(tmp_path / "t.ctf", n=900, seed=5)
    monkeypatch.setattr(W, "_DIRECT_STAGE_BYTES", stage)  # many staging blocks, all in flight
    monkeypatch.setattr(W, "_DIRECT_STAGES", 2)
    outs, infos = [], []
    for direct in (False, True):
        monkeypatch.setattr(W, "_DIRECT_IO", direct)
        out = tmp_path / f"t{direct}.cbf"
        infos.append(ctf2bin(ctf, str(out), STREAMS, chunk_size=3000, progress=False))
        outs.append(out.read_bytes())
    assert len(outs[0]) > 4 * 8192 and len(outs[0]) % 4096 != 0   # blocks and a partial tail
    assert outs[1] == outs[0]
    assert infos[0]["direct_io"] is False
    assert infos[1]["direct_io"] is _direct_supported(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp left


def test_direct_refused_at_open_or_at_a_write(tmp_path, monkeypatch):
    if not hasattr(os, "O_DIRECT"):
        pytest.skip("no O_DIRECT on this platform: the buffered path is the only one")
    ctf = _ctf(tmp_path / "t.ctf", n=600, seed=6)
    monkeypatch.setattr(W, "_DIRECT_STAGE_BYTES", 8192)
    monkeypatch.setattr(W, "_DIRECT_IO", False)
    ref = tmp_path / "ref.cbf"
    ctf2bin(ctf, str(ref), STREAMS, chunk_size=2500, progress=False)
    monkeypatch.setattr(W, "_DIRECT_IO", True)
    real_open, real_pwrite = os.open, os.pwrite

    def open_refusing(path, flags, mode=0o777):   # as tmpfs does: the file made, then EINVAL
        if flags & os.O_DIRECT:
            os.close(real_open(path, flags & ~os.O_DIRECT, mode))
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_open(path, flags, mode)
    monkeypatch.setattr(W.os, "open", open_refusing)
    out = tmp_path / "a.cbf"
    assert ctf2bin(ctf, str(out), STREAMS, chunk_size=2500, progress=False)["direct_io"] is False
    assert out.read_bytes() == ref.read_bytes()
    monkeypatch.setattr(W.os, "open", real_open)

    import fcntl
    refused = []

    def pwrite_refusing(fd, data, offset):           # the open passes, the first write is refused
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT:
            refused.append(offset)
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_pwrite(fd, data, offset)
    monkeypatch.setattr(W.os, "pwrite", pwrite_refusing)
    out = tmp_path / "b.cbf"
    assert ctf2bin(ctf, str(out), STREAMS, chunk_size=2500, progress=False)["direct_io"] is False
    assert out.read_bytes() == ref.read_bytes()
    assert refused == [0] or not _direct_supported(tmp_path)


def test_failed_direct_write_leaves_nothing(tmp_path, monkeypatch):
    if not _direct_supported(tmp_path):
        pytest.skip("no O_DIRECT here: the buffered path's failures are tested with the writer")
    ctf = _ctf(tmp_path / "t.ctf", n=600, seed=7)
    monkeypatch.setattr(W, "_DIRECT_STAGE_BYTES", 8192)
    monkeypatch.setattr(W, "_DIRECT_IO", True)
    real_pwrite, calls = os.pwrite, []

    def pwrite_full(fd, data, offset):
        calls.append(offset)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_pwrite(fd, data, offset)
    monkeypatch.setattr(W.os, "pwrite", pwrite_full)
    out = tmp_path / "t.cbf"
    with pytest.raises(OSError, match="No space left"):
        ctf2bin(ctf, str(out), STREAMS, chunk_size=2500, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.ctf"]


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


def test_failed_rename_reports_its_own_error(tmp_path, monkeypatch):
    # the abort after a failed rename closes the file again: the rename's error is what is raised
    ctf = _ctf(tmp_path / "t.ctf", n=200, seed=9)

    def no_replace(a, b):
        raise PermissionError(13, "Permission denied", b)
    monkeypatch.setattr(W.os, "replace", no_replace)
    for direct in (False, True):
        monkeypatch.setattr(W, "_DIRECT_IO", direct)
        with pytest.raises(PermissionError, match="Permission denied"):
            ctf2bin(ctf, str(tmp_path / "t.cbf"), STREAMS, chunk_size=2500, progress=False)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["t.ctf"]
