"""The CTF deserializer object: the cntk.io factory, config options (also as strings from CNTK
config files), the registry, stream infos, memory modes, threads and the chunk cache."""
from __future__ import annotations

import logging
import threading

import numpy as np
import pytest

from cntkio import StreamDef, StreamDefs
from cntkio.deserializers import build_deserializer, registered_deserializers
from cntkio.deserializers.ctf import (CNTKTextFormatDeserializer, CTFDeserializer,
                                      available_backends, parse_options)
from cntkio.errors import ConfigError, MaxErrorsExceeded

BACKENDS = available_backends()



def write(tmp_path, text, name="d.ctf"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# ---------------------------------------------------------------------------------------------
# the factory (cntk-io-semantics 1.6)

def test_factory_returns_the_config_dict():
    cfg = CTFDeserializer("x.ctf", StreamDefs(
        features=StreamDef(field="f", shape=784),
        labels=StreamDef(field="l", shape=10, is_sparse=True, defines_mb_size=True)))
    assert cfg == {"type": "CNTKTextFormatDeserializer", "file": "x.ctf", "input": {
        "features": {"alias": "f", "dim": 784, "format": "dense", "definesMBSize": False},
        "labels": {"alias": "l", "dim": 10, "format": "sparse", "definesMBSize": True}}}
    cfg["cacheIndex"] = True  # options may be added
    assert cfg["cacheIndex"] is True


def test_factory_validation_as_cntk():
    with pytest.raises(ValueError, match="CTFDeserializer: stream name for key x must be specified"):
        CTFDeserializer("x.ctf", StreamDefs(x=StreamDef(shape=3)))
    with pytest.raises(AttributeError):
        CTFDeserializer("x.ctf", StreamDefs(x=StreamDef(field="x")))


def test_map_input_names_streams_as_cntk_2_0_did():
    # the spec's composite example: CTFDeserializer(file) then .map_input(name, dim, format)
    cfg = CTFDeserializer("x.ctf")
    assert cfg.map_input("rois", dim=8, format="dense") is cfg
    cfg.map_input("labels", 5, "sparse", alias="l")
    assert cfg == {"type": "CNTKTextFormatDeserializer", "file": "x.ctf", "input": {
        "rois": {"alias": "rois", "dim": 8, "format": "dense", "definesMBSize": False},
        "labels": {"alias": "l", "dim": 5, "format": "sparse", "definesMBSize": False}}}
    with pytest.raises(ValueError, match="format must be 'dense' or 'sparse'"):
        cfg.map_input("x", 3, "csr")


def test_registered_and_built_from_config(tmp_path, backend):
    assert "CNTKTextFormatDeserializer" in registered_deserializers()
    cfg = CTFDeserializer(write(tmp_path, "|x 1 2\n|x 3 4\n"), StreamDefs(X=StreamDef("x", 2)))
    d = build_deserializer(cfg, trace_level=0)
    assert isinstance(d, CNTKTextFormatDeserializer)
    assert d.get_chunk(0).streams["X"].values.tolist() == [[1, 2], [3, 4]]


def test_stream_infos(tmp_path, backend):
    cfg = CTFDeserializer(write(tmp_path, "|a 1 |b 0:1\n"), StreamDefs(
        A=StreamDef("a", 1), B=StreamDef("b", 4, is_sparse=True, defines_mb_size=True)))
    infos = CNTKTextFormatDeserializer(cfg, backend=backend).stream_infos()
    assert [(i.name, i.m_id, i.is_sparse, i.dtype, i.shape, i.defines_mb_size) for i in infos] == \
        [("A", 0, False, np.float32, (1,), False), ("B", 1, True, np.float32, (4,), True)]
    cfg["precision"] = "double"
    d = CNTKTextFormatDeserializer(cfg, backend=backend)
    assert [i.dtype for i in d.stream_infos()] == [np.float64, np.float64]
    chunk = d.get_chunk(0)
    assert chunk.streams["A"].values.dtype == np.float64 and chunk.streams["B"].data.dtype == np.float64


# ---------------------------------------------------------------------------------------------
# options

def test_options_from_a_cntk_config_file_are_strings():
    opts = parse_options({"File": "a.ctf", "INPUT": {"f": {"Dim": "3", "format": "Sparse",
                                                            "definesMbSize": "true", "alias": "F"}},
                          "skipsequenceids": "true", "maxErrors": "10", "traceLevel": "2",
                          "chunkSizeInBytes": "10000", "keepDataInMemory": "1",
                          "cacheIndex": "false", "precision": "double", "frameMode": "true",
                          "numChunksToCache": "2"})
    assert opts["file"] == "a.ctf"
    (spec,) = opts["streams"]
    assert (spec.name, spec.alias, spec.dim, spec.sparse, spec.defines_mb_size) == \
        ("f", "F", 3, True, True)
    assert (opts["skip_ids"], opts["max_errors"], opts["trace_level"], opts["chunk_size"],
            opts["keep_in_memory"], opts["cache_index"], opts["double"], opts["frame_mode"],
            opts["chunks_to_cache"], opts["defining_stream"]) == \
        (True, 10, 2, 10000, True, False, True, True, 2, 0)


def test_option_defaults():
    opts = parse_options({"file": "a.ctf", "input": {"f": {"dim": 3}}})
    assert (opts["skip_ids"], opts["max_errors"], opts["trace_level"], opts["chunk_size"],
            opts["keep_in_memory"], opts["cache_index"], opts["double"], opts["frame_mode"],
            opts["defining_stream"]) == (False, 0, 1, 32 * 1024 * 1024, False, False, False,
                                         False, -1)
    assert opts["streams"][0].alias == "f"  # no alias: the input name is the tag in the file


@pytest.mark.parametrize("config,path,text", [
    ({"input": {"f": {"dim": 1}}}, "file", "not specified"),
    ({"file": "a", "input": {}}, "input", "no inputs"),
    ({"file": "a", "input": {"f": {"format": "dense"}}}, "input.f.dim", "dim is required"),
    ({"file": "a", "input": {"f": {"dim": "x"}}}, "input.f.dim", "expected an integer, found 'x'"),
    ({"file": "a", "input": {"f": {"dim": 0}}}, "input.f.dim", "expected an integer >= 1"),
    ({"file": "a", "input": {"f": {"dim": 1, "format": "csr"}}}, "input.f.format", "'csr'"),
    ({"file": "a", "input": {"f": {"dim": 1, "alias": "a b"}}}, "input.f.alias", "white space"),
    ({"file": "a", "input": {"f": {"dim": 1, "alias": "#x"}}}, "input.f.alias", "start with '#'"),
    ({"file": "a", "input": {"f": {"dim": 1, "alias": "x"}, "g": {"dim": 1, "alias": "x"}}},
     "input.g.alias", "also used by input 'f'"),
    ({"file": "a", "input": {"f": {"dim": 1, "definesMBSize": True},
                             "g": {"dim": 1, "definesMBSize": "true"}}}, "input",
     "more than one input defines the minibatch size: f, g"),
    ({"file": "a", "input": {"f": {"dim": 1}}, "maxErrors": -1}, "maxErrors", ">= 0"),
    ({"file": "a", "input": {"f": {"dim": 1}}, "cacheIndex": "maybe"}, "cacheIndex",
     "expected a boolean, found 'maybe'"),
    ({"file": "a", "input": {"f": {"dim": 1}}, "precision": "half"}, "precision", "'half'"),
    ({"file": "a", "input": {"f": {"dim": 1}}, "chunkSizeInBytes": 0}, "chunkSizeInBytes", ">= 1"),
])
def test_config_errors_name_the_key(config, path, text):
    with pytest.raises(ConfigError) as info:
        parse_options(config)
    assert info.value.path == path and text in str(info.value)


# ---------------------------------------------------------------------------------------------
# reading

TEXT = "".join(f"{i} |x {i} {i + 0.5}\n{i} |x {-i} 1 |y {i % 7}:{i}\n" for i in range(60))


def _all(d):
    out = []
    for c in d.chunk_infos():
        ch = d.get_chunk(c.id)
        out.append((ch.sequences.keys.tolist(), ch.streams["x"].values.tolist(),
                    ch.streams["x"].offsets.tolist(), ch.streams["y"].indices.tolist(),
                    ch.streams["y"].data.tolist(), ch.streams["y"].offsets.tolist()))
    return out


def test_keep_data_in_memory_reads_the_same(tmp_path, backend):
    path = write(tmp_path, TEXT)
    cfg = {"type": "CNTKTextFormatDeserializer", "file": path, "chunkSizeInBytes": 300,
           "input": {"x": {"dim": 2}, "y": {"dim": 7, "format": "sparse"}}}
    a = CNTKTextFormatDeserializer(cfg, backend=backend)
    b = CNTKTextFormatDeserializer({**cfg, "keepDataInMemory": True}, backend=backend)
    assert len(a.chunk_infos()) > 3
    assert _all(a) == _all(b)
    first = _all(a)[0]
    assert first[0][:2] == [0, 1] and first[1][:4] == [[0, 0.5], [0, 1], [1, 1.5], [-1, 1]]
    assert sum(c.num_sequences for c in a.chunk_infos()) == 60
    assert sum(c.num_samples for c in a.chunk_infos()) == 120


def test_get_chunk_from_threads(tmp_path, backend):
    path = write(tmp_path, TEXT)
    cfg = {"type": "CNTKTextFormatDeserializer", "file": path, "chunkSizeInBytes": 200,
           "input": {"x": {"dim": 2}, "y": {"dim": 7, "format": "sparse"}}}
    d = CNTKTextFormatDeserializer(cfg, backend=backend)
    expected = _all(d)
    n = len(expected)
    results: dict[int, list] = {}

    def worker(t):
        got = []
        for k in range(3 * n):
            cid = (k + t) % n
            ch = d.get_chunk(cid)
            got.append((cid, ch.streams["x"].values.tolist(), ch.streams["y"].indices.tolist()))
        results[t] = got

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got in results.values():
        for cid, xv, yi in got:
            assert xv == expected[cid][1] and yi == expected[cid][3]


def test_num_chunks_to_cache_keeps_recent_chunks(tmp_path, backend):
    path = write(tmp_path, TEXT)
    cfg = {"type": "CNTKTextFormatDeserializer", "file": path, "chunkSizeInBytes": 300,
           "numChunksToCache": 2, "input": {"x": {"dim": 2}, "y": {"dim": 7, "format": "sparse"}}}
    d = CNTKTextFormatDeserializer(cfg, backend=backend)
    c0, c1 = d.get_chunk(0), d.get_chunk(1)
    assert d.get_chunk(0) is c0
    d.get_chunk(2)  # evicts chunk 1, the least recently used
    assert d.get_chunk(0) is c0 and d.get_chunk(1) is not c1
    plain = CNTKTextFormatDeserializer({**cfg, "numChunksToCache": 0}, backend=backend)
    assert plain.get_chunk(0) is not plain.get_chunk(0)


def test_dropped_sequences_are_removed_from_chunk_arrays(tmp_path, backend):
    # sequence 1 has no sample of the defining input: its samples of other inputs go with it
    text = "0 |d 1 |o 1 |s 0:1\n1 |o 2 |s 1:2 2:3\n1 |o 3\n2 |d 4 |s 3:4\n"
    cfg = {"type": "CNTKTextFormatDeserializer", "file": write(tmp_path, text), "input": {
        "d": {"dim": 1, "definesMBSize": True}, "o": {"dim": 1},
        "s": {"dim": 4, "format": "sparse"}}}
    d = CNTKTextFormatDeserializer(cfg, backend=backend)
    ch = d.get_chunk(0)
    assert ch.sequences.keys.tolist() == [0, 2] and ch.sequences.lengths.tolist() == [1, 1]
    assert ch.streams["o"].values.ravel().tolist() == [1] and ch.streams["o"].offsets.tolist() == [0, 1, 1]
    s = ch.streams["s"]
    assert (s.indptr.tolist(), s.indices.tolist(), s.data.tolist(), s.offsets.tolist()) == \
        ([0, 1, 2], [0, 3], [1, 4], [0, 1, 2])
    assert d.chunk_infos()[0].num_sequences == 2 and d.chunk_infos()[0].num_samples == 2


def test_chunk_with_only_dropped_sequences_is_not_delivered(tmp_path, backend):
    text = "|x 1\n|y 1\n|y 2\n|x 2\n"
    cfg = {"type": "CNTKTextFormatDeserializer", "file": write(tmp_path, text),
           "chunkSizeInBytes": 10, "input": {"x": {"dim": 1}}}
    d = CNTKTextFormatDeserializer(cfg, backend=backend)
    assert [c.id for c in d.chunk_infos()] == [0, 1]
    assert [d.get_chunk(c).sequences.keys.tolist() for c in (0, 1)] == [[0], [3]]
    assert d.get_chunk(1).streams["x"].values.ravel().tolist() == [2]


def test_warnings_show_at_every_trace_level_and_once(tmp_path, backend, caplog):
    """Padded and malformed samples are about what the user's file holds: warned about at
    traceLevel 0 too (issue 31; CNTK's ShouldWarn, TextParser.h:182, printed nothing at 0), and a
    chunk read again (a second epoch) does not warn again."""
    cfg = {"type": "CNTKTextFormatDeserializer", "file": write(tmp_path, "|x 1\n|x a\n"),
           "maxErrors": 1, "traceLevel": 0, "input": {"x": {"dim": 2}}}
    with caplog.at_level(logging.DEBUG, logger="cntkio"):
        d = CNTKTextFormatDeserializer(cfg, backend=backend)
        d.get_chunk(0)
        CNTKTextFormatDeserializer(cfg, backend=backend).get_chunk(0)
    texts = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("zero-padded" in m for m in texts) == 1
    assert sum("malformed value" in m for m in texts) == 1
    assert len(texts) == len(set(texts))


@pytest.mark.parametrize("keep", [False, True])
def test_pickle_for_worker_processes(tmp_path, backend, keep):
    import pickle
    cfg = {"type": "CNTKTextFormatDeserializer", "file": write(tmp_path, TEXT),
           "chunkSizeInBytes": 300, "keepDataInMemory": keep,
           "input": {"x": {"dim": 2}, "y": {"dim": 7, "format": "sparse"}}}
    d = CNTKTextFormatDeserializer(cfg, backend=backend)
    d.get_chunk(0)
    clone = pickle.loads(pickle.dumps(d))
    assert clone.backend is backend
    assert _all(clone) == _all(d)


def test_close(tmp_path, backend):
    cfg = {"type": "CNTKTextFormatDeserializer", "file": write(tmp_path, "|x 1\n"),
           "input": {"x": {"dim": 1}}}
    d = CNTKTextFormatDeserializer(cfg, backend=backend)
    d.close()
    d.close()
    with pytest.raises(ValueError, match="closed"):
        d.get_chunk(0)


@pytest.mark.parametrize("text,line", [("|x 1\n|z 1 |\n|x 2\n", 2), ("|\n|x 1\n|x 2\n", 1)])
def test_errors_in_undelivered_chunks_still_count(tmp_path, backend, text, line):
    # each line is a chunk; the one with only a malformed sample is dropped and not delivered,
    # and is parsed with its neighbour so that its error is reported
    cfg = {"type": "CNTKTextFormatDeserializer", "file": write(tmp_path, text),
           "chunkSizeInBytes": 5, "input": {"x": {"dim": 1}}}
    d = CNTKTextFormatDeserializer(cfg, backend=backend)
    assert len(d.index.chunk_starts) == 4 and len(d.chunk_infos()) == 2
    with pytest.raises(MaxErrorsExceeded) as info:
        for c in d.chunk_infos():
            d.get_chunk(c.id)
    assert info.value.line == line
    d = CNTKTextFormatDeserializer({**cfg, "maxErrors": 1}, backend=backend)
    assert [d.get_chunk(c.id).streams["x"].values.ravel().tolist() for c in d.chunk_infos()] == \
        [[1], [2]]
    assert d._errors_total == 1
