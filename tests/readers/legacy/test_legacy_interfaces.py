"""cntkio.legacy: IDataReader / IDataWriter in Python (spec, programmer reference)."""
from __future__ import annotations

import numpy as np
import pytest

from cntkio import registry
from cntkio.errors import ConfigError
from cntkio.legacy import END_DATASET, END_EPOCH, END_SENTENCE, DataReader, DataWriter
from cntkio.readers.legacy.binary import BinaryFile


@pytest.fixture
def uci(tmp_path):
    rows = [[i % 3, i, -i, i * 0.5] for i in range(10)]
    (tmp_path / "d.txt").write_text("".join(" ".join(f"{v:g}" for v in r) + "\n" for r in rows))
    (tmp_path / "map.txt").write_text("0\n1\n2\n")
    return tmp_path, np.array(rows, np.float32)


def _config(d, **extra):
    sec = {"readerType": "UCIFastReader", "file": str(d / "d.txt"), "randomize": "None",
           "features": {"dim": "3", "start": "1"},
           "labels": {"dim": "1", "start": "0", "labelDim": "3", "labelMappingFile": str(d / "map.txt")}}
    sec.update(extra)
    return sec


def test_minibatch_loop_epochs_and_data_end(uci):
    d, ref = uci
    with DataReader(_config(d)) as r:
        r.start_minibatch_loop(4, epoch=0, requested_epoch_samples=6)
        m: dict = {}
        got, sizes = [], []
        while r.get_minibatch(m):
            got.append(m["features"])
            sizes.append(m["features"].shape[0])
            assert r.data_end(END_SENTENCE)
        assert sizes == [4, 2] and r.data_end(END_EPOCH)
        np.testing.assert_array_equal(np.concatenate(got), ref[:6, 1:])
        np.testing.assert_array_equal(m.get("labels", np.zeros(0)).shape, (2, 3))
        # epoch 1 is the slice [6, 12) of the timeline: the 4 records left of the sweep (UCIFastReader
        # in partial mode stops a minibatch at the end of the data, UCIFastReader.cpp:120-127), then
        # 2 of the next sweep
        r.start_minibatch_loop(6, epoch=1, requested_epoch_samples=6)
        assert r.get_minibatch(m)
        np.testing.assert_array_equal(m["features"], ref[6:, 1:])
        assert r.data_end(END_DATASET)
        assert r.get_minibatch(m)
        np.testing.assert_array_equal(m["features"], ref[:2, 1:])
        assert r.sequence_lengths() == [1] * 2
        ends: list = []
        r.set_sentence_end_in_batch(ends)
        assert ends == [1] * 2
        assert not r.get_minibatch(m) and r.data_end(END_EPOCH)


def test_only_the_requested_matrices_are_filled(uci):
    d, _ = uci
    r = DataReader(_config(d))
    r.start_minibatch_loop(5, 0)
    m = {"labels": None}
    assert r.get_minibatch(m)
    assert list(m) == ["labels"] and m["labels"].shape == (5, 3)
    r.destroy()


def test_label_mapping_get_set_and_save(uci, tmp_path):
    d, ref = uci
    r = DataReader(_config(d))
    assert r.get_label_mapping("labels") == {0: "0", 1: "1", 2: "2"}
    r.set_label_mapping("labels", {0: "2", 1: "1", 2: "0"})          # reversed ids
    r.start_minibatch_loop(10, 0)
    m: dict = {}
    r.get_minibatch(m)
    np.testing.assert_array_equal(m["labels"].argmax(1), 2 - ref[:, 0])
    assert r.get_label_mapping("labels") == {0: "2", 1: "1", 2: "0"}
    r.destroy()
    # save_labels writes a mapping file the config names but that does not exist yet
    out = tmp_path / "written.map"
    cfg = _config(d)
    cfg["labels"] = dict(cfg["labels"], labelMapping=["0", "1", "2"], labelMappingFile=str(out))
    r = DataReader(cfg)
    assert r.save_labels() == [str(out)]
    assert out.read_text() == "0\n1\n2\n"
    out.write_text("keep\n")
    assert r.save_labels() == [] and out.read_text() == "keep\n"      # never overwritten
    r.destroy()


def test_get_data_reads_records_in_data_order(uci):
    d, ref = uci
    r = DataReader(_config(d, randomize="Auto", chunkSizeInBytes="16"))
    np.testing.assert_array_equal(r.get_data("features", 4, record_start=3), ref[3:7, 1:])
    assert r.get_data("features", 2, record_start=10) is None
    r.destroy()


def test_recurrent_slices(tmp_path):
    (tmp_path / "c.txt").write_text("a b </s>\n")
    r = DataReader({"readerType": "SequenceReader", "file": str(tmp_path / "c.txt"), "randomize": "None",
                    "nbruttsineachrecurrentiter": "4", "labelIn": {"labelDim": "5"}, "groupEqualLengths": "false",
                    "labels": {"labelType": "NextWord", "labelDim": "5"}})
    assert r.number_slices_in_each_recurrent_iter() == 4
    r.set_nbr_slices_each_recurrent_iter(2)
    assert r.number_slices_in_each_recurrent_iter() == 2
    assert r.get_label_mapping("labels")[0] == "</s>"
    r.start_minibatch_loop(10, 0)
    m: dict = {}
    assert r.get_minibatch(m)
    # 2 parallel rows of 10 steps, interleaved (row t * 2 + s); the one sentence </s> a b in row 0
    assert m["labelIn"].shape == (20, 5) and m["labelIn"].format == "csr"
    assert np.flatnonzero(m["labelIn"].getnnz(1)).tolist() == [0, 2, 4]
    r.set_nbr_slices_each_recurrent_iter(0)                        # whole sentences: sparse CSR
    r.start_minibatch_loop(10, 0)
    assert r.get_minibatch(m)
    assert m["labelIn"].shape == (3, 5) and m["labelIn"].nnz == 3
    r.destroy()


def test_data_writer_writes_a_binary_file_the_binary_reader_reads(tmp_path):
    wcfg = {"writerType": "BinaryReader",
            "features": {"dim": "3", "sectionType": "data", "wfile": str(tmp_path / "out.bin")},
            "labels": {"sectionType": "labels", "elementSize": "4", "wfile": str(tmp_path / "out.bin"),
                       "mapping": {"sectionType": "labelMapping"}}}
    w = DataWriter(wcfg)
    assert w.get_sections() == {"features": "data", "labels": "labels"}
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    y = np.array([0, 1, 1, 0, 1], np.uint32)
    w.save_mapping("labels", {0: "no", 1: "yes"})
    assert not w.save_data(3, {"features": x[3:], "labels": y[3:]}, 2, 5)
    assert not (tmp_path / "out.bin").exists()
    assert w.save_data(0, {"features": x[:3], "labels": y[:3]}, 3, 5)
    w.destroy()
    bf = BinaryFile(str(tmp_path / "out.bin"))
    np.testing.assert_array_equal(bf.array(bf.sections["features"]), x)
    assert bf.sections["labels"]["mapping"] == ["no", "yes"]
    bf.close()
    r = DataReader({"readerType": "BinaryReader", "file": str(tmp_path / "out.bin"), "randomize": "None"})
    assert r.get_label_mapping("labels") == {0: "no", 1: "yes"}
    r.start_minibatch_loop(5, 0)
    m: dict = {}
    r.get_minibatch(m)
    np.testing.assert_array_equal(m["features"], x)
    np.testing.assert_array_equal(m["labels"], np.eye(2, dtype=np.float32)[y])
    r.destroy()


def test_writers_and_readers_are_found_by_name(tmp_path):
    with pytest.raises(ConfigError, match="writerType 'HTKWriter' is not implemented in cntkio; implemented "
                                          "writer types: BinaryReader, BinaryWriter"):
        DataWriter({"writerType": "HTKWriter"})

    class Recorder:
        def __init__(self, config):
            self.saved = []

        def get_sections(self):
            return {"x": "data"}

        def save_data(self, *args):
            self.saved.append(args)
            return True

        def save_mapping(self, *args):
            pass

        def destroy(self):
            pass

    registry.register_writer("RecordingWriter", Recorder)
    try:
        w = DataWriter({"writerType": "recordingwriter"})
        assert w.get_sections() == {"x": "data"} and w.save_data(0, {"x": [1]}, 1, 1)
    finally:
        registry._WRITERS.pop("RecordingWriter")
    assert {"UCIFastReader", "BinaryReader", "SequenceReader", "LMSequenceReader",
            "LUSequenceReader"} <= set(registry.implemented_reader_types())


def test_full_minibatch_mode(uci):
    d, ref = uci
    r = DataReader(_config(d, minibatchMode="Full"))
    r.start_minibatch_loop(4, epoch=0, requested_epoch_samples=10)
    m: dict = {}
    sizes = []
    while r.get_minibatch(m):
        sizes.append(m["features"].shape[0])
    assert sizes == [4, 4]
    r.destroy()
