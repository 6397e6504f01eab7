"""Minibatches from UCIFastReader's binary cache: the records read from the file straight into
each batch's own buffer (DenseStream.read_rows), never views of the cache, so a caller changing
a minibatch in place changes nothing read later."""
from __future__ import annotations

import mmap
import os

import numpy as np
import pytest

from cntkio.legacy import DataReader
from cntkio.readers import build_reader
from cntkio.readers.epochs import EpochReader
from cntkio.readers.legacy.binary import BinaryFile, CacheError

RECORDS = 1400


@pytest.fixture
def uci(tmp_path):
    rng = np.random.default_rng(7)
    rows = rng.integers(0, 256, (RECORDS, 785))
    rows[:, 0] = rng.integers(0, 10, RECORDS)
    rows[:, 1] = np.arange(RECORDS)
    (tmp_path / "m.txt").write_text("".join(" ".join(map(str, r)) + "\n" for r in rows.tolist()))
    sec = {"readerType": "UCIFastReader", "file": str(tmp_path / "m.txt"), "randomize": "None",
           "writerType": "BinaryReader", "wfile": str(tmp_path / "m.bin"),
           # 3140 bytes a record: chunks of 500, 500, 400 records, so batches span chunks
           "chunkSizeInBytes": str(3140 * 500),
           "features": {"dim": "784", "start": "1"}, "labels": {"dim": "1", "start": "0", "labelDim": "10"}}
    DataReader(dict(sec)).destroy()        # writes the cache
    return sec, rows


def _owner(a):
    """What finally holds an array's memory (an mmap for a view of the cache's map)."""
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a


def _sweep(sec, mb=300, **kw):
    src = build_reader(dict(sec, **kw), max_sweeps=1)
    out = []
    for m in EpochReader(src, minibatch_size=mb, epoch_size=0).epoch(0):
        by = {s.name: v.asarray().reshape(-1, s.sample_shape[0]) for s, v in m.items()}
        out.append(by)
    src.close()
    return out


def test_cache_rows_are_read_into_the_minibatches(uci, monkeypatch):
    sec, rows = uci
    runs = []
    original = BinaryFile.read_rows
    monkeypatch.setattr(BinaryFile, "read_rows", lambda self, e, a, b, out: runs.append((e["name"], a, b))
                        or original(self, e, a, b, out))
    mbs = _sweep(sec)
    feats = np.concatenate([m["features"] for m in mbs])
    np.testing.assert_array_equal(feats, rows[:, 1:].astype(np.float32))
    labels = np.concatenate([m["labels"] for m in mbs])
    np.testing.assert_array_equal(labels, np.eye(10, dtype=np.float32)[rows[:, 0]])
    # features only (labels are one-hot from stored ids), one read per run of records in a
    # chunk: the runs cover every record, none crosses a chunk boundary (a batch packed ahead
    # and dropped, when the reader moves, is read again: a run may repeat)
    assert {r[0] for r in runs} == {"features"}
    covered = np.zeros(RECORDS, bool)
    for _, a, b in runs:
        covered[a:b] = True
        assert a // 500 == (b - 1) // 500
    assert covered.all()
    assert len(runs) < 2 * (RECORDS // 300 + 4)     # per batch and chunk, not per record


def test_minibatches_share_no_memory_with_the_cache_or_each_other(uci):
    sec, rows = uci
    mbs = _sweep(sec, mb=100)
    bf = BinaryFile(sec["wfile"])
    try:
        stored = bf.array(bf.sections["features"])
        feats = [m["features"] for m in mbs]
        assert all(f.flags.writeable and not np.shares_memory(f, stored) for f in feats)
        assert not any(np.shares_memory(x, y) for i, x in enumerate(feats) for y in feats[i + 1:])
    finally:
        bf.close()


def test_changing_a_minibatch_in_place_changes_nothing_read_later(uci):
    sec, rows = uci
    r = DataReader(dict(sec))
    expect = rows[:, 1:].astype(np.float32)
    for epoch in range(3):                     # every epoch a full sweep, the window kept between
        r.start_minibatch_loop(256, epoch, RECORDS)
        m: dict = {}
        seen = []
        while r.get_minibatch(m):
            x = m["features"]
            seen.append(x.copy())
            x /= 255                           # the caller's in-place change
            x[:] = -1
        np.testing.assert_array_equal(np.concatenate(seen), expect)
    r.destroy()


def test_randomized_reads_from_the_cache_are_the_records(uci):
    sec, rows = uci
    mbs = _sweep(sec, randomize="Auto")
    feats = np.concatenate([m["features"] for m in mbs])
    order = feats[:, 0].astype(int)
    assert sorted(order.tolist()) == list(range(RECORDS)) and order.tolist() != list(range(RECORDS))
    np.testing.assert_array_equal(feats, rows[order, 1:].astype(np.float32))


def test_a_cache_cut_short_while_open_is_an_error_naming_it(uci):
    sec, _ = uci
    bf = BinaryFile(sec["wfile"])
    try:
        entry = bf.sections["features"]
        out = np.empty((RECORDS, 784), np.float32)
        bf.read_rows(entry, 0, 10, out[:10])
        os.truncate(sec["wfile"], int(entry["offset"]) + 3136 * 100)
        with pytest.raises(CacheError, match=r"m\.bin' is truncated: section 'features'"):
            bf.read_rows(entry, 50, 400, out[50:400])
    finally:
        bf.close()


def test_cache_views_opted_in_are_read_only_views_of_the_cache(uci):
    sec, rows = uci
    mbs = _sweep(dict(sec, cacheViews="true"), mb=100)
    feats = [m["features"] for m in mbs]
    np.testing.assert_array_equal(np.concatenate(feats), rows[:, 1:].astype(np.float32))
    # minibatches of 100 in chunks of 500: each within one chunk, a read-only view of the map
    assert all(isinstance(_owner(f), mmap.mmap) and not f.flags.writeable for f in feats)
    assert not any(isinstance(_owner(m["features"]), mmap.mmap) for m in _sweep(sec, mb=100))
    with pytest.raises(ValueError, match="read-only"):
        feats[0] /= 255
    labels = np.concatenate([m["labels"] for m in mbs])   # one-hot from the stored ids: arrays of their own
    np.testing.assert_array_equal(labels, np.eye(10, dtype=np.float32)[rows[:, 0]])
    # a minibatch across a chunk boundary (records 300-599 of chunks of 500) is a view too: the
    # chunks are slices of one array over the map, the records follow each other there
    mbs = _sweep(dict(sec, cacheViews="true"), mb=300)
    assert all(isinstance(_owner(m["features"]), mmap.mmap) for m in mbs) and len(mbs) == 5
    np.testing.assert_array_equal(np.concatenate([m["features"] for m in mbs]), rows[:, 1:].astype(np.float32))
    # randomized: records gathered into a buffer of their own
    mbs = _sweep(dict(sec, cacheViews="true", randomize="Auto"), mb=300)
    assert not any(isinstance(_owner(m["features"]), mmap.mmap) for m in mbs)
    feats = np.concatenate([m["features"] for m in mbs])
    np.testing.assert_array_equal(feats, rows[feats[:, 0].astype(int), 1:].astype(np.float32))


def test_binary_reader_cache_views(uci):
    sec, rows = uci
    mbs = _sweep({"readerType": "BinaryReader", "file": sec["wfile"], "randomize": "None", "cacheViews": "true"})
    assert not mbs[0]["features"].flags.writeable
    np.testing.assert_array_equal(np.concatenate([m["features"] for m in mbs]), rows[:, 1:].astype(np.float32))
    mbs = _sweep({"readerType": "BinaryReader", "file": sec["wfile"], "randomize": "None"})
    assert all(m["features"].flags.writeable for m in mbs)
