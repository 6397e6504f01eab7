"""BinaryWriter as UCIFastReader's cache and BinaryReader: written on the first run, read after,
same minibatches without the text; stale, foreign and truncated caches; one file or one per
section; the statistics."""
from __future__ import annotations

import os

import numpy as np
import pytest

from cntkio.cli import main
from cntkio.errors import ConfigError
from cntkio.readers import build_reader
from cntkio.readers.epochs import EpochReader
from cntkio.readers.legacy.binary import BinaryFile, CacheError

CONFIG = """
command = T
T = [
  action = dumpReader
  outputFile = out.txt
  minibatchSize = 50
  epochSize = 200
  maxEpochs = 2
  reader = [
    readerType = UCIFastReader
    writerType = BinaryReader
    miniBatchMode = Partial
    randomize = Auto
    windowSize = 10000
    wfile = cache.bin
    wsize = 256
    wrecords = 60000
    features = [ dim = 6; start = 1; file = train.txt; sectionType = data ]
    labels = [
      dim = 1; start = 0; file = train.txt; labelMappingFile = labels.map; labelDim = 4; labelType = Category
      elementSize = 4; wref = features; sectionType = labels
      mapping = [ wrecords = 10; elementSize = 10; sectionType = labelMapping ]
      category = [ dim = 4; sectionType = categoryLabels ]
    ]
  ]
]
"""


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    lab = rng.integers(0, 4, 400)
    feat = rng.integers(-50, 50, (400, 6)) / 4
    (tmp_path / "train.txt").write_text("".join(f"{a} " + " ".join(f"{v:g}" for v in r) + "\n"
                                                for a, r in zip(lab, feat)))
    (tmp_path / "labels.map").write_text("0\n1\n2\n3\n")
    (tmp_path / "c.cntk").write_text(CONFIG)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(*extra):
    assert main(["configFile=c.cntk", *extra]) == 0
    return open("out.txt").read()


def test_first_run_writes_the_cache_second_reads_it_without_the_text(workdir):
    first = _run()
    assert (workdir / "cache.bin").exists()
    assert not [p for p in os.listdir(workdir) if p.endswith(".tmp")]
    stamp = (workdir / "cache.bin").stat().st_mtime_ns
    assert _run() == first
    assert (workdir / "cache.bin").stat().st_mtime_ns == stamp     # read, not rewritten
    os.remove(workdir / "train.txt")
    assert _run() == first
    # the dump's values are the text's: 2 epochs x 4 minibatches x (50 + 50) lines
    assert len(first.splitlines()) == 800


def test_cache_values_and_stats_equal_numpy(workdir):
    _run()
    ref = np.loadtxt(workdir / "train.txt", dtype=np.float32)
    bf = BinaryFile(str(workdir / "cache.bin"))
    try:
        feats = bf.array(bf.sections["features"])
        np.testing.assert_array_equal(feats, ref[:, 1:])
        np.testing.assert_array_equal(bf.array(bf.sections["labels"]), ref[:, 0].astype(np.uint32))
        assert bf.sections["labels"]["mapping"] == ["0", "1", "2", "3"]
        stats = bf.stats(bf.sections["features"])
        assert bf.stats(bf.sections["labels"]) is None and bf.header["version"] == 2
        # version 2: the statistics are a float64 [9, 6] array after the data, not JSON numbers
        assert bf.sections["features"]["stats"]["shape"] == [9, 6]
        x = ref[:, 1:].astype(np.float64)
        np.testing.assert_allclose(stats["mean"], x.mean(0))
        np.testing.assert_allclose(stats["stdDev"], x.std(0), atol=1e-9)
        np.testing.assert_allclose(stats["range"], x.max(0) - x.min(0))
        np.testing.assert_allclose(stats["rootMeanSquare"], np.sqrt((x * x).mean(0)))
        assert stats["count"] == [400.0] * 6
    finally:
        bf.close()


def test_stale_or_foreign_cache_is_rebuilt(workdir, caplog):
    _run()
    stamp = (workdir / "cache.bin").stat().st_mtime_ns
    # the text changed after the cache was written -> rebuilt, values of the new text
    text = (workdir / "train.txt").read_text()
    (workdir / "train.txt").write_text("3 " + " ".join(["7"] * 6) + "\n" + text)
    os.utime(workdir / "train.txt", ns=(stamp + 10**9, stamp + 10**9))
    _run("T=[reader=[randomize=None]]")
    assert any("another version of 'train.txt'" in r.getMessage() for r in caplog.records)
    assert open("out.txt").read().splitlines()[0] == "7 7 7 7 7 7"
    # another config: labelDim differs -> rebuilt
    caplog.clear()
    _run("T=[reader=[labels=[labelDim=5]]]")
    assert any("written by another config" in r.getMessage() for r in caplog.records)


def test_version_1_cache_is_rebuilt(workdir, caplog):
    first = _run()
    data = bytearray((workdir / "cache.bin").read_bytes())
    data[8:12] = (1).to_bytes(4, "little")      # a cache of version 1 (statistics in the header)
    (workdir / "cache.bin").write_bytes(bytes(data))
    assert _run() == first
    assert any("has version 1; this cntkio reads version 2" in r.getMessage() for r in caplog.records)
    bf = BinaryFile(str(workdir / "cache.bin"))
    assert bf.header["version"] == 2
    bf.close()


def test_truncated_or_foreign_cache_without_its_source_is_an_error(workdir, capsys):
    _run()
    os.remove(workdir / "train.txt")
    data = (workdir / "cache.bin").read_bytes()
    (workdir / "cache.bin").write_bytes(data[:len(data) // 2])
    assert main(["configFile=c.cntk"]) == 1
    err = capsys.readouterr().err
    assert "cache.bin' is truncated" in err and "does not exist to rebuild it" in err


def test_foreign_cache_without_source_is_an_error(workdir, capsys):
    _run()
    os.remove(workdir / "train.txt")
    assert main(["configFile=c.cntk", "T=[reader=[features=[dim=5]]]"]) == 1
    assert "written by another config" in capsys.readouterr().err


def test_one_file_per_section_and_category_labels(workdir):
    cfg = CONFIG.replace("    wfile = cache.bin\n", "").replace(
        "sectionType = data ]", "sectionType = data; wfile = f.bin ]").replace(
        "sectionType = labels\n", "sectionType = categoryLabels; wfile = l.bin\n")
    (workdir / "c.cntk").write_text(cfg)
    first = _run()
    assert (workdir / "f.bin").exists() and (workdir / "l.bin").exists()
    bf = BinaryFile(str(workdir / "l.bin"))
    try:
        assert list(bf.sections) == ["labels"]
        onehot = bf.array(bf.sections["labels"])
        ref = np.loadtxt(workdir / "train.txt")[:, 0].astype(int)
        np.testing.assert_array_equal(onehot, np.eye(4, dtype=np.float32)[ref])
    finally:
        bf.close()
    os.remove(workdir / "train.txt")
    assert _run() == first


def test_binary_reader_reads_the_files_with_their_names(workdir):
    _run()
    src = build_reader({"readerType": "BinaryReader", "file": "(cache.bin)", "randomize": "None"}, max_sweeps=1)
    ref = np.loadtxt(workdir / "train.txt", dtype=np.float32)
    mbs = list(EpochReader(src, minibatch_size=400, epoch_size=400).epoch(0))
    by = {s.name: v for s, v in mbs[0].items()}
    np.testing.assert_array_equal(by["features"].asarray().reshape(-1, 6), ref[:, 1:])
    np.testing.assert_array_equal(by["labels"].asarray().reshape(-1, 4), np.eye(4, dtype=np.float32)[ref[:, 0].astype(int)])
    src.close()


def test_binary_reader_refuses_files_of_different_configs(workdir):
    cfg = CONFIG.replace("    wfile = cache.bin\n", "").replace(
        "sectionType = data ]", "sectionType = data; wfile = f.bin ]").replace(
        "sectionType = labels\n", "sectionType = labels; wfile = l.bin\n")
    (workdir / "c.cntk").write_text(cfg)
    _run()
    os.rename(workdir / "l.bin", workdir / "l_old.bin")
    _run("T=[reader=[features=[dim=5]]]")
    with pytest.raises(ConfigError, match="written by different configs"):
        build_reader({"readerType": "BinaryReader", "file": "(f.bin:l_old.bin)"})


def test_not_a_binary_file(workdir):
    with pytest.raises(CacheError, match="is not a cntkio binary file"):
        BinaryFile(str(workdir / "train.txt"))


def test_files_per_section_are_written_in_one_pass_over_the_text(workdir, monkeypatch):
    from cntkio.readers.legacy.ucifast import UCIFastDeserializer
    calls = []
    original = UCIFastDeserializer.parse_chunk
    monkeypatch.setattr(UCIFastDeserializer, "parse_chunk",
                        lambda self, c, buf=None: calls.append(c) or original(self, c, buf))
    cfg = CONFIG.replace("    wfile = cache.bin\n", "").replace(
        "sectionType = data ]", "sectionType = data; wfile = f.bin ]").replace(
        "sectionType = labels\n", "sectionType = labels; wfile = l.bin\n")
    (workdir / "c.cntk").write_text(cfg)
    _run()
    assert calls == [0]               # the 400-record text is one chunk, parsed once for both files


def test_cache_chunks_are_the_engines_32mib_unless_chunk_size_is_given(tmp_path):
    # 1400 records of 784 floats + a uint32 label: 3140 bytes a record, 4.4 MB in all. The text's
    # 4 MiB chunks would cut it at 1335 records; the cache's chunks are views of its map, so they
    # take the engine's 32 MiB (one chunk here), or chunkSizeInBytes where the config gives it
    rows = np.zeros((1400, 785), np.int64)
    rows[:, 0] = np.arange(1400) % 10
    rows[:, 1] = np.arange(1400)
    (tmp_path / "m.txt").write_text("".join(" ".join(map(str, r)) + "\n" for r in rows.tolist()))
    sec = {"readerType": "UCIFastReader", "file": str(tmp_path / "m.txt"), "randomize": "None",
           "writerType": "BinaryReader", "wfile": str(tmp_path / "m.bin"),
           "features": {"dim": "784", "start": "1"}, "labels": {"dim": "1", "start": "0", "labelDim": "10"}}
    from cntkio.legacy import DataReader
    for extra, want in (({}, [1400]), ({"chunkSizeInBytes": str(3140 * 500)}, [500, 500, 400])):
        r = DataReader(dict(sec, **extra))
        assert [c.num_sequences for c in r.deserializer().chunk_infos()] == want
        r.start_minibatch_loop(600, 0)
        m: dict = {}
        firsts = []
        while r.get_minibatch(m):
            firsts.extend(m["features"][:, 0].astype(int).tolist())
        assert firsts == list(range(1400))
        r.destroy()
