"""HTKMLFBinaryDeserializer against CNTK 2.7's (tests/data/htk/golden_binary.npz, made by
tests/data/htk/make_golden_binary.py with the shared/cntk27 rig), and its bad inputs."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import htk_corpus
import paths
from cntkio import ConfigError, FormatError, HTKFeatureDeserializer, HTKMLFBinaryDeserializer, MinibatchSource, \
    StreamDef
from cntkio.deserializers.htk.mlfbin import parse_binary_mlf_files, write_binary_mlf

GOLDEN = np.load(paths.DATA / "htk" / "golden_binary.npz")
CASES = {"v1_frame": (["v1"], True, False), "v2_frame": (["v2"], True, False), "v1_seq": (["v1"], False, False),
         "v2_seq": (["v2", "v2b"], False, False), "v2_frame_rand": (["v2"], True, True)}


@pytest.fixture()
def corpus(tmp_path, monkeypatch):
    c = htk_corpus.write_binary(tmp_path)
    monkeypatch.chdir(tmp_path)
    return c


def _read(c, labels, frame_mode, randomize):
    feats = HTKFeatureDeserializer({"features": StreamDef(shape=c["dim"], scp=c["scp"])})
    src = MinibatchSource([feats, labels], frame_mode=frame_mode, randomize=randomize, max_sweeps=1,
                          randomization_seed=1)
    fs, ls = src.streams["features"], src.streams["labels"]
    lab, utt, lengths = [], [], []
    while True:
        mb = src.next_minibatch(8)
        if not mb:
            break
        for x, y in zip(mb[fs].as_sequences(), mb[ls].as_sequences()):
            x = np.asarray(x).reshape(-1, c["dim"])
            lab.extend(np.asarray(y.todense()).argmax(1).tolist())
            utt.extend(x[:, 0].astype(np.int64).tolist())
            lengths.append(len(x))
    return lab, utt, lengths


@pytest.mark.parametrize("name", sorted(CASES))
def test_binary_mlf_equals_cntk(corpus, name):
    files, frame_mode, randomize = CASES[name]
    if len(files) == 1:
        where = {"mlfFile": corpus[files[0]]}
    else:                                   # mlfFileList: a file listing the MLF files, as CNTK read it
        with open("mlfs.list", "w") as f:
            f.write("".join(corpus[k] + "\n" for k in files))
        where = {"mlfFileList": "mlfs.list"}
    labels = {"type": "HTKMLFBinaryDeserializer", "input": {"labels": {"dim": corpus["labels"], **where}}}
    lab, utt, lengths = _read(corpus, labels, frame_mode, randomize)
    assert lab == GOLDEN[f"{name}_labels"].tolist()
    assert utt == GOLDEN[f"{name}_utts"].tolist()
    assert lengths == GOLDEN[f"{name}_lengths"].tolist()


def test_factory_and_text_equivalent(corpus):
    """The cntk.io-style factory reads the same labels; the runs are the small corpus's segments."""
    labels = HTKMLFBinaryDeserializer({"labels": StreamDef(shape=corpus["labels"], mlf=corpus["v2"])})
    lab, utt, _ = _read(corpus, labels, True, False)
    want = np.concatenate([htk_corpus.small_frame_labels(u, n) for u, n in enumerate(htk_corpus.SMALL_LENGTHS)])
    assert lab == want.tolist()


def _bytes(tmp_path, data: bytes) -> str:
    p = tmp_path / "bad.bmlf"
    p.write_bytes(data)
    return str(p)


def test_bad_binary_files_name_what_is_wrong(tmp_path):
    with pytest.raises(FormatError, match="MLF binary file is malformed"):
        parse_binary_mlf_files([_bytes(tmp_path, b"#!MLF!#\n")], 6)
    with pytest.raises(FormatError, match="Not supported MLF model version"):
        parse_binary_mlf_files([_bytes(tmp_path, b"MLF" + struct.pack("<h", 3))], 6)
    rec = b"MLF" + struct.pack("<h", 2) + struct.pack("<H", 2) + b"u0" + struct.pack("<IH", 5, 2)
    with pytest.raises(FormatError, match="cut short: runs of utterance 'u0'"):
        parse_binary_mlf_files([_bytes(tmp_path, rec + struct.pack("<HH", 1, 5))], 6)
    with pytest.raises(FormatError, match="runs do not cover its frames"):
        parse_binary_mlf_files([_bytes(tmp_path, rec + struct.pack("<HHHH", 1, 2, 2, 2))], 6)
    with pytest.raises(FormatError, match="Class id '7' exceeds the model output dimension '6'"):
        parse_binary_mlf_files([_bytes(tmp_path, rec + struct.pack("<HHHH", 1, 2, 7, 3))], 6)
    with pytest.raises(FormatError, match="greater than limit 256"):
        parse_binary_mlf_files([_bytes(tmp_path, b"MLF" + struct.pack("<hH", 2, 300) + b"x" * 300)], 6)


def test_index_of_a_binary_file(tmp_path):
    p = str(tmp_path / "x.bmlf")
    write_binary_mlf(p, [("a", [(1, 2), (3, 1)]), ("b", [(0, 4)]), ("a", [(5, 3)])])
    idx = parse_binary_mlf_files([p], 6)
    assert idx.names == ["a", "b"]                      # the first entry of a key wins
    assert idx.lengths.tolist() == [3, 4]
    assert idx.seg_starts.tolist() == [0, 2, 0] and idx.seg_ends.tolist() == [2, 3, 4]
    assert idx.seg_labels.tolist() == [1, 3, 0]


def test_phone_boundaries_refused(corpus):
    labels = {"type": "HTKMLFBinaryDeserializer",
              "input": {"labels": {"dim": 6, "mlfFile": corpus["v1"], "phoneBoundaries": True}}}
    with pytest.raises(ConfigError, match="phoneBoundaries is not supported with binary MLF"):
        _read(corpus, labels, False, False)
