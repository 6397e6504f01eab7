"""cntkio's HTK deserializers against CNTK 2.7's (golden outputs from tests/data/htk/make_golden.py,
made with the shared/cntk27 rig on the corpora of htk_corpus.py)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import htk_corpus
import paths
from cntkio import HTKFeatureDeserializer, HTKMLFDeserializer, MinibatchSource, StreamDef

GOLDEN = np.load(paths.DATA / "htk" / "golden.npz")


def _source(c, context=(0, 0), dim=None, pb=False, **kw):
    """The source over corpus c, built with the corpus folder as working directory (the SCP's
    archive paths are relative, as CNTK read them)."""
    cwd = os.getcwd()
    os.chdir(c["dir"])
    try:
        return _build(c, context, dim, pb, **kw)
    finally:
        os.chdir(cwd)


def _build(c, context, dim, pb, **kw):
    feats = HTKFeatureDeserializer({"features": StreamDef(shape=dim or c["dim"], scp=c["scp"], context=context)})
    labels = HTKMLFDeserializer(c["states"], {"labels": StreamDef(shape=c["labels"], mlf=c["mlf"])},
                                phone_boundaries=pb)
    kw.setdefault("max_sweeps", 1)
    kw.setdefault("randomize", False)
    return MinibatchSource([feats, labels], **kw)


def _drain(src, size, limit=None, **kw):
    out = []
    while limit is None or len(out) < limit:
        mb = src.next_minibatch(size, **kw)
        if not mb:
            break
        out.append({s.name: v for s, v in mb.items()})
    return out


def _label_columns(value) -> tuple[list, list]:
    """Per sequence: the label index and value of each frame (from the sparse one-hot)."""
    idx, val = [], []
    for s in value.as_sequences():
        dense = np.asarray(s.todense() if hasattr(s, "todense") else s)
        idx.append(dense.argmax(-1))
        val.append(dense.max(-1))
    return idx, val


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return htk_corpus.write_small(tmp_path_factory.mktemp("small"))


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return htk_corpus.write_big(tmp_path_factory.mktemp("big"))


@pytest.mark.parametrize("name,context,dim", [("c00", (0, 0), None), ("c23", (2, 3), None),
                                              ("c55", (5, 5), None), ("dim6", (0, 0), 6)])
def test_frame_mode_equals_cntk(small, name, context, dim):
    mbs = _drain(_source(small, context, dim, frame_mode=True), 8)
    feats = np.concatenate([m["features"].asarray()[:, 0] for m in mbs])
    labels = np.concatenate([np.concatenate(_label_columns(m["labels"])[0]) for m in mbs])
    np.testing.assert_array_equal(feats, GOLDEN[f"frame_{name}_features"])
    np.testing.assert_array_equal(labels, GOLDEN[f"frame_{name}_labels"])
    assert [m["features"].num_samples for m in mbs] == GOLDEN[f"frame_{name}_sizes"].tolist()


def test_context_edges_repeat_the_utterance_ends(small):
    # utterance 0 (7 frames [0, t]) with context (2, 3): frame 0 sees f0 f0 f0 f1 f2 f3
    mb, = _drain(_source(small, (2, 3), frame_mode=True), 7, 1)
    first = mb["features"].asarray()[0, 0].reshape(6, 2)
    assert first[:, 1].tolist() == [0, 0, 0, 1, 2, 3] and first[:, 0].tolist() == [0] * 6
    last = mb["features"].asarray()[6, 0].reshape(6, 2)
    assert last[:, 1].tolist() == [4, 5, 6, 6, 6, 6]


@pytest.mark.parametrize("name,context", [("c00", (0, 0)), ("c23", (2, 3))])
def test_sequence_mode_equals_cntk(small, name, context):
    mb, = _drain(_source(small, context, frame_mode=False), 1000)
    want_f, want_l = GOLDEN[f"seq_{name}_features"], GOLDEN[f"seq_{name}_labels"]
    seqs = mb["features"].as_sequences()
    idx, _ = _label_columns(mb["labels"])
    assert len(seqs) == len(want_f) == 5
    for i, (s, lab) in enumerate(zip(seqs, idx)):
        n = len(s)
        assert n == htk_corpus.SMALL_LENGTHS[i]
        np.testing.assert_array_equal(np.asarray(s), want_f[i, :n])
        assert not want_f[i, n:].any()
        assert lab.tolist() == want_l[i, :n].tolist() and (want_l[i, n:] == -1).all()


def test_two_mlf_files_first_entry_wins(small):
    mb, = _drain(_source(small, frame_mode=False), 1000)
    idx, _ = _label_columns(mb["labels"])
    assert idx[0].tolist() == htk_corpus.small_frame_labels(0, 7).tolist()   # not b.mlf's all-s5


def test_phone_boundaries_equal_cntk(small):
    mb, = _drain(_source(small, pb=True, frame_mode=False), 1000)
    _, vals = _label_columns(mb["labels"])
    want = GOLDEN["seq_pb_values"]
    for i, v in enumerate(vals):
        assert v.tolist() == want[i, :len(v)].tolist()
    assert 2.0 in vals[0].tolist()


def test_randomized_frame_mode_is_cntks_order(big):
    src = _source(big, frame_mode=True, randomize=True, randomization_seed=1,
                  randomization_window_in_samples=100000, randomization_window_in_chunks=0)
    mbs = _drain(src, 1000, 5)
    ids = np.concatenate([m["features"].asarray().ravel() for m in mbs]).astype(np.int64)
    np.testing.assert_array_equal(ids, GOLDEN["rand_frame_seed1_ids"])
    labels = np.concatenate([np.concatenate(_label_columns(m["labels"])[0]) for m in mbs])
    np.testing.assert_array_equal(labels, GOLDEN["rand_frame_seed1_labels"])


@pytest.mark.parametrize("rank", [0, 1])
def test_randomized_frame_mode_two_workers_is_cntks_order(big, rank):
    src = _source(big, frame_mode=True, randomize=True, randomization_seed=3,
                  randomization_window_in_samples=150000, randomization_window_in_chunks=0)
    mbs = _drain(src, 1000, 4, num_data_partitions=2, partition_index=rank)
    ids = np.concatenate([m["features"].asarray().ravel() for m in mbs]).astype(np.int64)
    np.testing.assert_array_equal(ids, GOLDEN[f"rand_frame_seed3_rank{rank}_ids"])
    assert [m["features"].num_samples for m in mbs] == GOLDEN[f"rand_frame_seed3_rank{rank}_sizes"].tolist()


def test_randomized_sequence_mode_is_cntks_order(big):
    src = _source(big, frame_mode=False, randomize=True, randomization_seed=2,
                  randomization_window_in_samples=100000, randomization_window_in_chunks=0)
    mbs = _drain(src, 20000)
    first = np.concatenate([[s[0, 0] for s in m["features"].as_sequences()] for m in mbs]).astype(np.int64)
    np.testing.assert_array_equal(first, GOLDEN["rand_seq_seed2_first_frames"])
    assert [m["features"].num_samples for m in mbs] == GOLDEN["rand_seq_seed2_sizes"].tolist()
