"""The HTK deserializers on the engine: checkpoints in frame mode with partitions, utterance
broadcast (expandToUtterance), precision, frame mode covering every frame once per sweep."""
from __future__ import annotations

import numpy as np
import pytest

import htk_corpus
from cntkio import HTKFeatureDeserializer, HTKMLFDeserializer, MinibatchSource, StreamDef
from cntkio.testing import assert_resumes_exactly


@pytest.fixture()
def big(tmp_path, monkeypatch):
    c = htk_corpus.write_big(tmp_path, n_utts=30)
    monkeypatch.chdir(tmp_path)
    return c


def _source(c, **kw):
    feats = HTKFeatureDeserializer({"features": StreamDef(shape=c["dim"], scp=c["scp"], context=(1, 1))})
    labels = HTKMLFDeserializer(c["states"], {"labels": StreamDef(shape=c["labels"], mlf=c["mlf"])})
    return MinibatchSource([feats, labels], **kw)


@pytest.mark.parametrize("rank", [0, 1])
def test_frame_mode_checkpoints_resume_exactly_with_two_partitions(big, rank):
    make = lambda: _source(big, frame_mode=True, randomize=True, randomization_seed=5, max_sweeps=2,  # noqa: E731
                           randomization_window_in_samples=60000, randomization_window_in_chunks=0)
    n = assert_resumes_exactly(make, [4000, 9000], cut_points=[0, 1, 7, 20], num_data_partitions=2,
                               partition_index=rank, max_minibatches=40)
    assert n == 40


@pytest.mark.parametrize("randomize", [False, True])
@pytest.mark.parametrize("rank", [0, 1])
def test_sequence_mode_read_from_files_resumes_exactly_with_two_partitions(big, rank, randomize):
    """Sequence mode without context reads each minibatch's utterances from the files (in input
    order too): checkpoints resume exactly, with two partitions, in order and randomized."""
    def make():
        feats = HTKFeatureDeserializer({"features": StreamDef(shape=big["dim"], scp=big["scp"])})
        labels = HTKMLFDeserializer(big["states"], {"labels": StreamDef(shape=big["labels"], mlf=big["mlf"])})
        return MinibatchSource([feats, labels], randomize=randomize, randomization_seed=3, max_sweeps=2,
                               randomization_window_in_chunks=2)
    n = assert_resumes_exactly(make, [9000, 25000], cut_points=[0, 1, 5, 11], num_data_partitions=2,
                               partition_index=rank, max_minibatches=30)
    assert n >= 12


def test_sequence_mode_in_order_delivers_the_files_frames(big):
    """In order, the utterances arrive whole and in SCP order, frame t of the corpus being t."""
    feats = HTKFeatureDeserializer({"features": StreamDef(shape=big["dim"], scp=big["scp"])})
    labels = HTKMLFDeserializer(big["states"], {"labels": StreamDef(shape=big["labels"], mlf=big["mlf"])})
    src = MinibatchSource([feats, labels], randomize=False, max_sweeps=1)
    got = []
    while True:
        mb = src.next_minibatch(30000)
        if not mb:
            break
        got.extend(seq[:, 0] for seq in mb[src.streams["features"]].as_sequences())
    assert [len(g) for g in got] == big["lengths"].tolist()
    np.testing.assert_array_equal(np.concatenate(got), np.arange(int(big["lengths"].sum())))


def test_frame_mode_sweep_delivers_every_frame_once(big):
    src = _source(big, frame_mode=True, randomize=True, randomization_seed=9, max_sweeps=1,
                  randomization_window_in_samples=50000, randomization_window_in_chunks=0)
    got = []
    while True:
        mb = src.next_minibatch(20000)
        if not mb:
            break
        x = mb[src.streams["features"]].asarray()[:, 0]          # [t-1, t, t+1]
        got.append(x[:, 1])
        lab = np.asarray(mb[src.streams["labels"]].as_csr().todense()).argmax(-1).ravel()
        utt = np.searchsorted(np.cumsum(big["lengths"]), x[:, 1].astype(np.int64), side="right")
        assert (lab == utt % len(htk_corpus.STATES)).all()
    ids = np.sort(np.concatenate(got).astype(np.int64))
    np.testing.assert_array_equal(ids, np.arange(int(big["lengths"].sum())))


def test_expand_to_utterance_broadcasts_one_frame_per_utterance(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    c = htk_corpus.write_small(tmp_path)
    ivec = np.arange(5 * 3, dtype=np.float32).reshape(5, 3)
    htk_corpus.write_htk(tmp_path / "ivec.htk", ivec)
    (tmp_path / "ivec.scp").write_text("".join(f"{k}.ivec=ivec.htk[{u},{u}]\n" for u, k in enumerate(htk_corpus.SMALL_KEYS)))
    feats = HTKFeatureDeserializer({"features": StreamDef(shape=2, scp=c["scp"])})
    iv = HTKFeatureDeserializer({"ivector": StreamDef(shape=3, scp="ivec.scp", broadcast=True)})
    labels = HTKMLFDeserializer(c["states"], {"labels": StreamDef(shape=6, mlf=c["mlf"])})
    src = MinibatchSource([feats, iv, labels], frame_mode=True, randomize=False, max_sweeps=1)
    mb = src.next_minibatch(100)
    x = mb[src.streams["features"]].asarray()[:, 0]
    v = mb[src.streams["ivector"]].asarray()[:, 0]
    assert len(x) == sum(htk_corpus.SMALL_LENGTHS)
    np.testing.assert_array_equal(v, ivec[x[:, 0].astype(int)])


def test_double_precision(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    c = htk_corpus.write_small(tmp_path)
    f = HTKFeatureDeserializer({"features": StreamDef(shape=2, scp=c["scp"], context=(1, 0))})
    f["precision"] = "double"
    src = MinibatchSource(f, frame_mode=True, randomize=False, max_sweeps=1)
    x = src.next_minibatch(3)[src.streams["features"]].asarray()
    assert x.dtype == np.float64 and x[:, 0].tolist() == [[0, 0, 0, 0], [0, 0, 0, 1], [0, 1, 0, 2]]


def test_api_argument_checks():
    with pytest.raises(ValueError, match="No scp files specified"):
        HTKFeatureDeserializer({"f": StreamDef(shape=2)})
    with pytest.raises(ValueError, match="does not support stream names"):
        HTKFeatureDeserializer({"f": StreamDef(field="x", shape=2, scp="a.scp")})
    with pytest.raises(ValueError, match="only accepts a single stream"):
        HTKMLFDeserializer("s.list", {"a": StreamDef(shape=2, mlf="a"), "b": StreamDef(shape=2, mlf="b")})
    with pytest.raises(ValueError, match="No master label files"):
        HTKMLFDeserializer("s.list", {"a": StreamDef(shape=2)})
    cfg = HTKMLFDeserializer("s.list", {"labels": StreamDef(shape=6, mlf="a.mlf")}, phone_boundaries=True)
    assert cfg == {"type": "HTKMLFDeserializer", "input": {"labels": {
        "dim": 6, "mlfFileList": ["a.mlf"], "labelMappingFile": "s.list", "phoneBoundaries": True}}}
    # cntk.io's own keyword (HTKMLFDeserializer(label_mapping_file, streams, phoneBoundaries=False)),
    # by name and by position, as public CNTK scripts call it
    assert HTKMLFDeserializer("s.list", {"labels": StreamDef(shape=6, mlf="a.mlf")}, phoneBoundaries=True) == cfg
    assert HTKMLFDeserializer("s.list", {"labels": StreamDef(shape=6, mlf="a.mlf")}, True) == cfg
    with pytest.raises(ValueError, match="phoneBoundaries and phone_boundaries disagree"):
        HTKMLFDeserializer("s.list", {"labels": StreamDef(shape=6, mlf="a.mlf")}, phoneBoundaries=True,
                           phone_boundaries=False)
