"""UCIFastReader: reader sections -> minibatches on cntkio's engine, checked against NumPy parsing
of the same text; bad input; the C parser against the pure-Python reference."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from cntkio.errors import ConfigError
from cntkio.readers import build_reader, reader_spec
from cntkio.readers.epochs import EpochReader
from cntkio.readers.legacy import textparse
from cntkio.readers.legacy.ucifast import UCIFastDeserializer, label_values, read_label_mapping


def _mnist_like(path, n=300, dim=12, seed=3):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    feats = rng.integers(0, 256, (n, dim))
    feats[:, 0] = rng.integers(-5, 5, n)          # negative numbers too
    lines = [" ".join([str(lab)] + [str(v) for v in row]) for lab, row in zip(labels, feats)]
    path.write_text("\n".join(lines) + "\n")
    return labels, feats.astype(np.float32)


def _section(path, **extra):
    sec = {"readerType": "UCIFastReader", "file": str(path),
           "features": {"dim": "12", "start": "1"},
           "labels": {"dim": "1", "start": "0", "labelDim": "10"}}
    sec.update(extra)
    return sec


def _read_all(sec, mb=64, epoch_size=0):
    src = build_reader(sec, max_sweeps=1)
    feats, labs = [], []
    try:
        for mb_ in EpochReader(src, minibatch_size=mb, epoch_size=epoch_size).epoch(0):
            by = {s.name: v for s, v in mb_.items()}
            feats.append(by["features"].asarray().reshape(-1, 12))
            labs.append(by["labels"].asarray().reshape(-1, 10))
    finally:
        src.close()
    return np.concatenate(feats), np.concatenate(labs)


def test_sequential_read_equals_numpy_parse(tmp_path):
    labels, feats = _mnist_like(tmp_path / "d.txt")
    f, lab = _read_all(_section(tmp_path / "d.txt", randomize="None"))
    ref = np.loadtxt(tmp_path / "d.txt", dtype=np.float32)
    np.testing.assert_array_equal(f, ref[:, 1:])
    np.testing.assert_array_equal(lab, np.eye(10, dtype=np.float32)[labels])
    assert lab.dtype == np.float32


def test_randomized_read_is_a_permutation_within_blocks(tmp_path):
    labels, feats = _mnist_like(tmp_path / "d.txt", n=300)
    src = build_reader(_section(tmp_path / "d.txt", randomize="100"))
    reader = EpochReader(src, minibatch_size=50, epoch_size=100)
    ref = np.loadtxt(tmp_path / "d.txt", dtype=np.float32)
    blocks = {tuple(sorted(map(tuple, ref[k * 100:(k + 1) * 100, 1:]))) for k in range(3)}
    seen = []
    for e in range(3):
        rows = np.concatenate([{s.name: v for s, v in m.items()}["features"].asarray().reshape(-1, 12)
                               for m in reader.epoch(e)])
        key = tuple(sorted(map(tuple, rows)))
        assert key in blocks            # an epoch is one block of 100 consecutive records, shuffled
        seen.append(key)
        assert not np.array_equal(rows, ref[[0], 1:].repeat(100, 0))
    assert len(set(seen)) == 3          # the 3 epochs of the sweep are the 3 blocks
    src.close()


def test_text_labels_through_mapping_file_and_double_precision(tmp_path):
    (tmp_path / "map.txt").write_text("cat\ndog\nbird\n")
    (tmp_path / "d.txt").write_text("1.5 2 dog\n-3 4e-1 bird\n\n5 6 cat\n")
    sec = {"readerType": "UCIFastReader", "file": str(tmp_path / "d.txt"), "randomize": "None",
           "precision": "double", "labelMappingFile": str(tmp_path / "map.txt"),   # inherited
           "x": {"dim": "2", "start": "0"}, "y": {"dim": "1", "start": "2", "labelDim": "3"}}
    assert reader_spec(sec).stream_names == ["x", "y"]
    src = build_reader(sec, max_sweeps=1)
    mb = {s.name: v for s, v in src.next_minibatch(10).items()}
    np.testing.assert_array_equal(mb["x"].asarray().reshape(-1, 2), [[1.5, 2], [-3, 0.4], [5, 6]])
    np.testing.assert_array_equal(mb["y"].asarray().reshape(-1, 3), [[0, 1, 0], [0, 0, 1], [1, 0, 0]])
    assert mb["x"].asarray().dtype == np.float64
    src.close()


def test_numeric_mapping_compares_by_value(tmp_path):
    (tmp_path / "map.txt").write_text("10\n20\n")
    (tmp_path / "d.txt").write_text("1 20.0\n2 10\n")
    sec = {"readerType": "UCIFastReader", "file": str(tmp_path / "d.txt"), "randomize": "None",
           "f": {"dim": "1", "start": "0"},
           "labels": {"dim": "1", "start": "1", "labelDim": "2", "labelMappingFile": str(tmp_path / "map.txt")}}
    src = build_reader(sec, max_sweeps=1)
    mb = {s.name: v for s, v in src.next_minibatch(10).items()}
    np.testing.assert_array_equal(mb["labels"].asarray().reshape(-1, 2), [[0, 1], [1, 0]])
    src.close()


def test_regression_and_none_labels(tmp_path):
    (tmp_path / "d.txt").write_text("1 2 3 4\n5 6 7 8\n")
    sec = {"readerType": "UCIFastReader", "file": str(tmp_path / "d.txt"), "randomize": "None",
           "f": {"dim": "1", "start": "0"},
           "r": {"dim": "2", "start": "1", "labelType": "Regression"},
           "ignored": {"dim": "1", "start": "3", "labelType": "None"}}
    assert reader_spec(sec).stream_names == ["f", "r"]
    src = build_reader(sec, max_sweeps=1)
    mb = {s.name: v for s, v in src.next_minibatch(10).items()}
    assert sorted(mb) == ["f", "r"]
    np.testing.assert_array_equal(mb["r"].asarray().reshape(-1, 2), [[2, 3], [6, 7]])
    src.close()


@pytest.mark.parametrize("text,message", [
    ("1 2 0\n3\n", "d.txt:2: expected at least 3 space-delimited columns, found 1"),
    ("1 2 0\n3 x4 1\n", "d.txt:2: column 1 ('f'): expected a number"),
    ("1 2 0\n\n3 4 7\n", "d.txt:3: column 2: the label of 'labels' is not an integer in [0, 3)"),
])
def test_bad_records_are_reported_and_counted_against_max_errors(tmp_path, caplog, text, message):
    (tmp_path / "d.txt").write_text(text)
    sec = {"readerType": "UCIFastReader", "file": str(tmp_path / "d.txt"), "randomize": "None",
           "maxErrors": "1", "f": {"dim": "2", "start": "0"},
           "labels": {"dim": "1", "start": "2", "labelDim": "3"}}
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        src = build_reader(sec, max_sweeps=1)
        mb = {s.name: v for s, v in src.next_minibatch(10).items()}
        src.close()
    assert mb["f"].asarray().shape[0] == 1          # the good record only
    assert any(message in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]
    sec["maxErrors"] = "0"
    src = build_reader(sec, max_sweeps=1)
    with pytest.raises(Exception, match="invalid sequences '1' .* exceeded the specified maximum number '0'"):
        src.next_minibatch(10)
    src.close()


def test_label_not_in_mapping_file(tmp_path, caplog):
    (tmp_path / "map.txt").write_text("a\nb\n")
    (tmp_path / "d.txt").write_text("1 a\n2 zz\n3 b\n")
    sec = {"readerType": "UCIFastReader", "file": str(tmp_path / "d.txt"), "randomize": "None",
           "maxErrors": "5", "f": {"dim": "1", "start": "0"},
           "l": {"dim": "1", "start": "1", "labelDim": "2", "labelMappingFile": str(tmp_path / "map.txt")}}
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        src = build_reader(sec, max_sweeps=1)
        mb = {s.name: v for s, v in src.next_minibatch(10).items()}
        src.close()
    np.testing.assert_array_equal(mb["f"].asarray().ravel(), [1, 3])
    assert any("d.txt:2: column 1: the label of 'l' is not in" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("change,key,text", [
    ({"file": None}, "file", "required parameter 'file' is missing"),
    ({"labels": {"dim": "1", "start": "0"}, "features": {"dim": "2", "start": "0"}}, "start",
     "column 0 belongs to both"),
    ({"labels": {"dim": "2", "start": "0", "labelDim": "10"}}, "labels.dim", "one column"),
    ({"labels": {"dim": "1", "start": "0"} | {"labelType": "Category"}}, "labels.labelDim", "labelDim"),
    ({"randomize": "sometimes"}, "randomize", "Auto, None or a number"),
    ({"labels": {"dim": "1", "start": "0", "labelDim": "2", "labelMappingFile": "/nonexistent.map"}},
     "labelMappingFile", "does not exist"),
])
def test_config_errors_name_the_option(tmp_path, change, key, text):
    _mnist_like(tmp_path / "d.txt")
    sec = _section(tmp_path / "d.txt")
    for k, v in change.items():
        if v is None:
            sec.pop(k)
        else:
            sec[k] = v
    with pytest.raises(ConfigError) as info:
        build_reader(sec).close()
    assert text in str(info.value)
    assert key.split(".")[-1] in str(info.value)


def test_label_mapping_file_duplicates_are_errors(tmp_path):
    (tmp_path / "m.txt").write_text("a\nb\na\n")
    with pytest.raises(ConfigError, match=r"m.txt:3: label 'a' repeats line 1"):
        read_label_mapping(str(tmp_path / "m.txt"))


def test_label_values_come_in_order_of_first_appearance(tmp_path, monkeypatch):
    # CNTK's UCIFastReader gave a label its id when it first saw it and wrote the map by id
    # (UCIFastReader.cpp:146-154, 222-233): not sorted, even for numbers
    (tmp_path / "d.txt").write_text("1 10\n2 9\n3 10\n4 2\n")
    from cntkio.readers.legacy import ucifast
    from cntkio.readers.legacy.ucifast import UCIStream
    assert label_values(str(tmp_path / "d.txt"), UCIStream("l", 1, 1, "category", 3)) == ["10", "9", "2"]
    # across chunks of the index: a label first seen in a later chunk comes after the earlier ones
    rows = [f"{i} {lab}" for i, lab in enumerate(["z", "y", "z", "x", "y", "w", "x", "v"] * 50)]
    (tmp_path / "e.txt").write_text("\n".join(rows) + "\n")
    monkeypatch.setattr(ucifast, "DEFAULT_CHUNK_SIZE_IN_BYTES", 37)
    assert label_values(str(tmp_path / "e.txt"), UCIStream("l", 1, 1, "category", 5)) == ["z", "y", "x", "w", "v"]


def test_chunks_and_keys(tmp_path):
    _mnist_like(tmp_path / "d.txt", n=250)
    d = UCIFastDeserializer({"file": str(tmp_path / "d.txt"), "recordsPerChunk": 100,
                             "streams": {"features": {"dim": 12, "start": 1}}})
    assert [(c.num_sequences, c.num_samples) for c in d.chunk_infos()] == [(100, 100), (100, 100), (50, 50)]
    np.testing.assert_array_equal(d.sequence_infos(2).keys, np.arange(200, 250))
    ref = np.loadtxt(tmp_path / "d.txt", dtype=np.float32)
    np.testing.assert_array_equal(d.get_chunk(1).streams["features"].values, ref[100:200, 1:])


@pytest.mark.parametrize("text", [
    b"1 2 a\n\n  3.5\t4 bb \r\n5 x c\n6\n",
    b"+1 -2e3 .5 7. q\n1e 2 3 4 5\n\n\n-0 1E+2 3 4 5\n-12 1234567890 x y 0012\n- 1 2 3 4\n",
    b"",
    b"\n \n",
])
def test_native_parser_equals_python_reference(text):
    if textparse._mod is None:
        pytest.skip("the C core is switched off (CNTKIO_PURE_PYTHON)")
    for per, nbytes in ((0, 1 << 20), (1, 0), (2, 0), (0, 5)):
        a = textparse._mod.index_records(text, per, nbytes)
        b = textparse._py_index(text, per, nbytes)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    begin, end, count, first = textparse._py_index(text, 0, 1 << 20)
    colmap = np.array([0, 1, -2, -1, 1 << 16], np.int32)        # columns 0, 1 -> array 0; 4 -> array 1
    for b0, e0, n, f in zip(begin, end, count, first):
        outs = []
        for fn in (textparse._mod.parse_records, textparse._py_parse):
            v = (np.zeros((n, 2), np.float64), np.zeros((n, 1), np.float64))
            s = np.zeros((n, 1, 2), np.int64)
            bad = np.zeros(n, np.uint8)
            r = fn(text, int(b0), int(e0), int(f), colmap, v, s, bad)
            outs.append((r[0], [tuple(x) for x in r[1]], *v, s, bad))
        assert outs[0][:2] == outs[1][:2]
        for x, y in zip(outs[0][2:], outs[1][2:]):
            np.testing.assert_array_equal(x, y)


def test_create_label_map_action_then_read(tmp_path, monkeypatch):
    from cntkio.cli import main
    (tmp_path / "d.txt").write_text("1 2 cat\n3 4 dog\n5 6 cat\n7 8 bird\n")
    reader = """reader = [
        readerType = UCIFastReader
        file = d.txt
        randomize = None
        features = [ dim = 2; start = 0 ]
        labels = [ dim = 1; start = 2; labelDim = 3 ]
    ]"""
    (tmp_path / "c.cntk").write_text(f"""
command = makeMap:dump
labelMappingFile = labels.map
train = [
    {reader}
]
makeMap = [ action = createLabelMap; section = train ]
dump = [ action = dumpReader; outputFile = out.txt; minibatchSize = 4
    {reader}
]
""")
    monkeypatch.chdir(tmp_path)
    assert main(["configFile=c.cntk"]) == 0
    assert (tmp_path / "labels.map").read_text() == "cat\ndog\nbird\n"      # first appearance
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert lines[4:] == ["1 0 0", "0 1 0", "1 0 0", "0 0 1"]


def test_allow_map_creation_writes_the_missing_map_in_order_of_first_appearance(tmp_path, monkeypatch):
    (tmp_path / "d.txt").write_text("1 2 cat\n3 4 dog\n5 6 cat\n7 8 bird\n")
    sec = {"readerType": "UCIFastReader", "file": "d.txt", "randomize": "None",
           "features": {"dim": "2", "start": "0"},
           "labels": {"dim": "1", "start": "2", "labelDim": "3", "labelMappingFile": "made.map"}}
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="allowMapCreation = true"):
        build_reader(sec)
    sec["labels"]["allowMapCreation"] = "true"
    src = build_reader(sec)
    assert (tmp_path / "made.map").read_text() == "cat\ndog\nbird\n"
    mb = src.next_minibatch(4)
    assert mb["labels"].asarray().reshape(4, 3).argmax(1).tolist() == [0, 1, 0, 2]
    src.close()


@pytest.mark.parametrize("mode,sizes", [("Partial", [64, 64, 64, 64, 44]), ("Full", [64, 64, 64, 64])])
def test_minibatch_mode(tmp_path, mode, sizes):
    _mnist_like(tmp_path / "d.txt", n=300)
    sec = _section(tmp_path / "d.txt", randomize="None", minibatchMode=mode)
    src = build_reader(sec)
    reader = EpochReader(src, minibatch_size=64, epoch_size=300)
    for epoch in (0, 1):          # Full skips the last 44 records of each epoch; epoch 1 starts at 300
        got = [next(iter(m.values())).num_samples for m in reader.epoch(epoch)]
        assert got == sizes
    src.close()


def test_randomize_block_not_a_factor_of_the_epoch_size_warns(tmp_path, caplog):
    _mnist_like(tmp_path / "d.txt", n=100)
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        reader_spec(_section(tmp_path / "d.txt", randomize="30", epochSize="100"))
    assert any("randomize = 30 is not a factor of epochSize = 100" in r.getMessage() for r in caplog.records)
