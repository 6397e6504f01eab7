"""The legacy options that cntkio's engine makes unnecessary or reads differently: readMethod,
readAhead, windowSize, wsize, wrecords. Each does what CNTK did, or is said (once) in the log."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from cntkio.errors import ConfigError
from cntkio.legacy import DataWriter
from cntkio.readers import build_reader, reader_spec
from cntkio.readers.legacy import sections


@pytest.fixture(autouse=True)
def fresh_once(monkeypatch):
    monkeypatch.setattr(sections, "_INFO_ONCE", set())


@pytest.fixture
def uci(tmp_path):
    rng = np.random.default_rng(3)
    lab = rng.integers(0, 3, 30)
    feat = rng.integers(0, 9, (30, 4))
    (tmp_path / "d.txt").write_text("".join(f"{a} " + " ".join(map(str, r)) + "\n" for a, r in zip(lab, feat)))
    return tmp_path, lab, feat


def _sec(d, **extra):
    sec = {"readerType": "UCIFastReader", "file": str(d / "d.txt"), "randomize": "None",
           "features": {"dim": "4", "start": "1"}, "labels": {"dim": "1", "start": "0", "labelDim": "3"}}
    sec.update(extra)
    return sec


def _features(src) -> np.ndarray:
    mb = src.next_minibatch(1000)
    return next(v for s, v in mb.items() if s.name == "features").asarray().reshape(-1, 4)


def test_read_ahead_is_said_once_and_reads_the_same(uci, caplog):
    d, _, feat = uci
    with caplog.at_level(logging.INFO, logger="cntkio"):
        a = _features(build_reader(_sec(d, readAhead="true"), max_sweeps=1))
        b = _features(build_reader(_sec(d, readAhead="false"), max_sweeps=1))
    assert np.array_equal(a, feat) and np.array_equal(b, feat)
    lines = [r.getMessage() for r in caplog.records if "readAhead" in r.getMessage()]
    assert len(lines) == 1 and "always loads and packs ahead" in lines[0]


def test_read_method_none_turns_randomization_off(uci):
    d, _, feat = uci
    spec = reader_spec(_sec(d, randomize="Auto", readMethod="none"))
    assert spec.source_kwargs["randomize"] is False
    assert np.array_equal(_features(build_reader(_sec(d, randomize="Auto", readMethod="none"), max_sweeps=1)), feat)
    assert reader_spec(_sec(d, randomize="Auto", readMethod="blockRandomize")).source_kwargs["randomize"] is True


def test_rolling_window_is_warned(uci, caplog):
    d, _, _ = uci
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        spec = reader_spec(_sec(d, randomize="Auto", readMethod="rollingWindow"))
    assert spec.source_kwargs["randomize"] is True
    assert "reader.readMethod = rollingWindow" in caplog.text and "order differs" in caplog.text


def test_bad_read_method_names_the_key(uci):
    d, _, _ = uci
    with pytest.raises(ConfigError, match="readMethod"):
        reader_spec(_sec(d, readMethod="fastest"))


def test_cache_size_options_are_said_and_small_wrecords_warned(uci, caplog):
    d, _, feat = uci
    sec = _sec(d, writerType="BinaryReader", wfile=str(d / "c.bin"), wsize="1", wrecords="10", windowSize="100")
    with caplog.at_level(logging.INFO, logger="cntkio"):
        got = _features(build_reader(sec, max_sweeps=1))
    assert np.array_equal(got, feat)
    text = caplog.text
    assert "reader.wsize = 1: the cache file is sized from the data" in text
    assert "reader.windowSize = 100" in text and "memory-mapped whole" in text
    assert "30 records, more than wrecords = 10" in text


def test_data_writer_size_options(tmp_path, caplog):
    conf = {"writerType": "BinaryWriter", "wrecords": "2", "wsize": "1",
            "features": {"dim": "2", "sectionType": "data", "wfile": str(tmp_path / "f.bin")}}
    with caplog.at_level(logging.INFO, logger="cntkio"):
        w = DataWriter(conf)
        w.save_data(0, {"features": np.arange(6, dtype=np.float32).reshape(3, 2)}, 3, 3)
    assert "writer.wsize = 1" in caplog.text
    assert "3 records, more than wrecords = 2" in caplog.text
    assert (tmp_path / "f.bin").exists()
