"""Minibatches from UCIFastReader's binary cache: by default every record is read from the file
(pread: nothing mapped, so a cache cut short by another process is an error, never SIGBUS); with
``cacheMaps = true`` a non-randomized run of records is handed out as a writable copy-on-write
mapping of the file (DenseStream.private_map), smaller runs and randomized reads read into buffers
of their own (DenseStream.read_rows); never views of the cache's shared map (unless cacheViews),
so a caller changing a minibatch in place changes nothing read later and never the file."""
from __future__ import annotations

import hashlib
import mmap
import os

import numpy as np
import pytest

from cntkio.legacy import DataReader
from cntkio.readers import build_reader
from cntkio.readers.epochs import EpochReader
from cntkio.readers.legacy import binary
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
    """What finally holds an array's memory (an mmap for a view of a map of the cache)."""
    while True:
        if isinstance(a, np.ndarray) and a.base is not None:
            a = a.base
        elif isinstance(a, memoryview):
            a = a.obj
        else:
            return a


def _digest(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _sweep(sec, mb=300, **kw):
    src = build_reader(dict(sec, **kw), max_sweeps=1)
    out = []
    for m in EpochReader(src, minibatch_size=mb, epoch_size=0).epoch(0):
        by = {s.name: v.asarray().reshape(-1, s.sample_shape[0]) for s, v in m.items()}
        out.append(by)
    src.close()
    return out


def test_cache_runs_are_mapped_copy_on_write(uci, monkeypatch):
    sec, rows = uci
    maps, reads = [], []
    map_rows, read_rows = BinaryFile.map_rows, BinaryFile.read_rows

    def mapping(self, e, a, b):
        got = map_rows(self, e, a, b)
        if got is not None:
            maps.append((e["name"], a, b))
        return got
    monkeypatch.setattr(BinaryFile, "map_rows", mapping)
    monkeypatch.setattr(BinaryFile, "read_rows", lambda self, e, a, b, out: reads.append((e["name"], a, b))
                        or read_rows(self, e, a, b, out))
    mbs = _sweep(sec, cacheMaps="true")
    feats = [m["features"] for m in mbs]
    np.testing.assert_array_equal(np.concatenate(feats), rows[:, 1:].astype(np.float32))
    labels = np.concatenate([m["labels"] for m in mbs])
    np.testing.assert_array_equal(labels, np.eye(10, dtype=np.float32)[rows[:, 0]])
    # features taken by the packer (labels are one-hot from stored ids, read with each chunk);
    # every record mapped or read, per batch and not per record (a batch packed ahead and
    # dropped, when the reader moves, is taken again)
    assert {r[0] for r in maps} == {"features"}
    reads = [r for r in reads if r[0] == "features"]
    covered = np.zeros(RECORDS, bool)
    for _, a, b in maps + reads:
        covered[a:b] = True
    assert covered.all() and len(maps) + len(reads) < 2 * (RECORDS // 300 + 4)
    # the runs of 1 MiB and more (334 records of 3136 bytes) are mappings, one across the chunk
    # boundary at 500 too; the smaller ones are read
    assert all((b - a) * 3136 >= binary.MAP_MIN_BYTES for _, a, b in maps)
    assert all((b - a) * 3136 < binary.MAP_MIN_BYTES for _, a, b in reads)
    assert any(a < 500 < b for _, a, b in maps)
    mapped = [f for f in feats if isinstance(_owner(f), mmap.mmap)]
    assert len(mapped) >= 3 and all(f.flags.writeable for f in mapped)


def test_map_rows_maps_the_rows_it_is_asked_for(uci):
    sec, rows = uci
    bf = BinaryFile(sec["wfile"])
    try:
        entry = bf.sections["features"]
        # 401 records from record 7: the mapping starts on the page before record 7's first byte
        got = bf.map_rows(entry, 7, 408)
        assert got.shape == (401, 784) and got.dtype == np.float32 and got.flags.writeable
        np.testing.assert_array_equal(got, rows[7:408, 1:].astype(np.float32))
        assert isinstance(_owner(got), mmap.mmap) and not np.shares_memory(got, bf.array(entry))
        assert bf.map_rows(entry, 7, 8 + binary.MAP_MIN_BYTES // 3136 - 2) is None   # under 1 MiB: not mapped
    finally:
        bf.close()


def test_changing_a_mapped_minibatch_changes_neither_the_file_nor_a_later_read(uci):
    sec, rows = uci
    before = _digest(sec["wfile"])
    expect = rows[:, 1:].astype(np.float32)
    src = build_reader(dict(sec, cacheMaps="true"))     # sweeps without end
    kept, seen = [], []
    for _ in range(4):                         # 4 x 350 records: one sweep
        m = src.next_minibatch(350)
        x = next(v for s, v in m.items() if s.name == "features").asarray().reshape(-1, 784)
        seen.append(x.copy())
        x /= 255                                # the caller's in-place change
        x[:, 0] = -1
        kept.append(x)                         # kept alive: its mapping's pages stay changed
    state = src.get_checkpoint_state()
    np.testing.assert_array_equal(np.concatenate(seen), expect)
    assert any(isinstance(_owner(x), mmap.mmap) for x in kept)
    again = [next(v for s, v in src.next_minibatch(350).items() if s.name == "features").asarray().reshape(-1, 784)
             for _ in range(4)]                # the next sweep: the records as stored
    np.testing.assert_array_equal(np.concatenate(again), expect)
    for x in again:
        x[:] = 7
    src.restore_from_checkpoint(state)         # back to the start of the second sweep
    restored = [next(v for s, v in src.next_minibatch(350).items() if s.name == "features").asarray()
                .reshape(-1, 784).copy() for _ in range(4)]
    np.testing.assert_array_equal(np.concatenate(restored), expect)
    src.close()
    assert float(kept[0][0, 0]) == -1 and float(kept[0][0, 1]) == np.float32(rows[0, 2]) / np.float32(255)
    assert _digest(sec["wfile"]) == before
    del kept, again
    r = DataReader(dict(sec))                  # a new reader: the stored records
    r.start_minibatch_loop(1400, 0, RECORDS)
    m: dict = {}
    assert r.get_minibatch(m)
    np.testing.assert_array_equal(m["features"].reshape(-1, 784), expect)
    r.destroy()


def test_runs_under_the_mapping_size_are_read_into_buffers(uci, monkeypatch):
    sec, rows = uci
    monkeypatch.setattr(binary, "MAP_MIN_BYTES", 1 << 40)
    mbs = _sweep(sec, mb=300, cacheMaps="true")
    feats = [m["features"] for m in mbs]
    assert not any(isinstance(_owner(f), mmap.mmap) for f in feats) and all(f.flags.writeable for f in feats)
    np.testing.assert_array_equal(np.concatenate(feats), rows[:, 1:].astype(np.float32))


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
        with pytest.raises(CacheError, match=r"m\.bin' is truncated: section 'features' ends before byte"):
            bf.map_rows(entry, 50, 400)
    finally:
        bf.close()


def test_cache_views_opted_in_are_read_only_views_of_the_cache(uci):
    sec, rows = uci
    mbs = _sweep(dict(sec, cacheViews="true"), mb=100)
    feats = [m["features"] for m in mbs]
    np.testing.assert_array_equal(np.concatenate(feats), rows[:, 1:].astype(np.float32))
    # minibatches of 100 in chunks of 500: each within one chunk, a read-only view of the map
    assert all(isinstance(_owner(f), mmap.mmap) and not f.flags.writeable for f in feats)
    assert all(m["features"].flags.writeable for m in _sweep(sec, mb=100))   # the default: writable
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


def test_live_mappings_are_capped_and_released_with_their_minibatches(uci, monkeypatch):
    sec, rows = uci
    start = binary.live_maps()
    monkeypatch.setattr(binary, "MAP_MAX_LIVE", start + 1)
    mbs = _sweep(sec, mb=350, cacheMaps="true")    # all kept: one mapping at most, the rest read
    feats = [m["features"] for m in mbs]
    np.testing.assert_array_equal(np.concatenate(feats), rows[:, 1:].astype(np.float32))
    owners = {id(_owner(f)) for f in feats if isinstance(_owner(f), mmap.mmap)}
    assert len(owners) == 1 and binary.live_maps() == start + 1
    del mbs, feats
    assert binary.live_maps() == start        # the mapping went with its last array
    monkeypatch.setattr(binary, "MAP_MAX_LIVE", start + 100)
    assert all(isinstance(_owner(m["features"]), mmap.mmap) for m in _sweep(sec, mb=350, cacheMaps="true"))


@pytest.mark.parametrize("randomize", ["None", "Auto"])
def test_by_default_nothing_of_the_cache_is_mapped(uci, monkeypatch, randomize):
    sec, rows = uci
    monkeypatch.setattr(mmap, "mmap", None)    # any map of the cache file would fail
    mbs = _sweep(sec, mb=300, randomize=randomize)
    feats = np.concatenate([m["features"] for m in mbs])
    np.testing.assert_array_equal(feats, rows[feats[:, 0].astype(int), 1:].astype(np.float32))
    assert all(m["features"].flags.writeable for m in mbs)
    mbs = _sweep({"readerType": "BinaryReader", "file": sec["wfile"], "randomize": randomize}, mb=300)
    assert len(np.concatenate([m["features"] for m in mbs])) == RECORDS
