"""Frame mode's memory over HTK corpora: the composite keeps no per-frame key, length or join
table (the join is done again when a chunk is read, from the utterance tables), the engine's
timeline keeps no table of the sweep (it is computed a randomized chunk at a time), and the join
per chunk read gives exactly what the kept join gave. The randomizer's side: tests/engine/test_engine_frame_memory.py."""
from __future__ import annotations

import numpy as np
import pytest

import htk_corpus
from cntkio import HTKFeatureDeserializer, HTKMLFDeserializer, MinibatchSource, StreamDef
from cntkio.deserializers.htk import build_features, build_mlf
from cntkio.deserializers.composite import CompositeDeserializer
from cntkio.engine.randomizer import Counting, StreamedTimeline


def _owned(a: np.ndarray) -> int:
    """Bytes an array holds (a view of one value repeated holds none)."""
    return 0 if any(s == 0 for s in a.strides) and a.size > 1 else a.nbytes


@pytest.fixture()
def big(tmp_path, monkeypatch):
    c = htk_corpus.write_big(tmp_path, n_utts=30)
    monkeypatch.chdir(tmp_path)
    return c


def _parts(c):
    feats = HTKFeatureDeserializer({"features": StreamDef(shape=c["dim"], scp=c["scp"], context=(1, 1))})
    labels = HTKMLFDeserializer(c["states"], {"labels": StreamDef(shape=c["labels"], mlf=c["mlf"])})
    return [feats, labels]


def test_frame_mode_keeps_no_table_per_frame(big):
    """Frame mode over a corpus of two 90000-frame chunks: the composite keeps no per-frame key,
    length or join table, and the engine keeps no table of the sweep: the timeline's columns are
    computed a randomized chunk at a time, and what it holds is bounded by the window (the swaps'
    rings, a power of two at least the widest window in positions, 16 bytes an entry, and the
    columns kept around the cursor, 6 bytes a position, at most the rings' length plus four chunks)."""
    src = MinibatchSource(_parts(big), frame_mode=True, randomize=True, randomization_seed=1,
                          randomization_window_in_samples=60000, randomization_window_in_chunks=0)
    assert src.next_minibatch(1000)
    policy = src._reader.policy
    comp = policy.corpus
    frames = policy.walker.N
    assert frames == int(big["lengths"].sum()) and len(comp.chunk_infos()) == 2
    assert comp.lazy and comp._tables == [] and comp._sec_refs == [] and comp._keep == []
    assert sum(_owned(x) for x in comp._lengths) == 0
    tl = policy.walker.timeline(0)
    assert isinstance(tl, StreamedTimeline) and isinstance(tl.start, Counting)
    assert _owned(tl.length) == 0
    cap, chunk = tl.swaps.cap, int(np.diff(tl.rchunk_start).max())
    assert cap == 1 << (int((tl.swaps.ss[tl.swaps.we] - tl.swaps.ss[tl.swaps.wb]).max()) - 1).bit_length()
    assert tl.held_bytes() <= 16 * cap + 8 * 320 + 6 * (cap + 4 * chunk)


class _Eager(CompositeDeserializer):
    lazy_frames = False


def _frame_parts(c):
    feats, labels = _parts(c)
    return [build_features(feats, frame_mode=True), build_mlf(labels, frame_mode=True)]


def test_frame_mode_join_per_chunk_read_equals_the_kept_join(big):
    """Labels shorter than the features for every fourth utterance and one utterance without labels:
    frames are dropped from the corpus, and the join done again per chunk read gives the kept
    join's chunks, keys and data."""
    ents = {}
    for u, n in enumerate(big["lengths"].tolist()):
        if u != 5:
            ents[f"utt{u:03d}"] = [(0, n - 3 if u % 4 == 1 else n, htk_corpus.STATES[u % 6])]
    htk_corpus.write_mlf(big["mlf"][0], ents)
    lazy = CompositeDeserializer(_frame_parts(big))
    eager = _Eager(_frame_parts(big))
    assert lazy.dropped_sequences == eager.dropped_sequences > int(big["lengths"][5])
    assert lazy.lazy and not eager.lazy
    assert [(i.id, i.num_sequences, i.num_samples) for i in lazy.chunk_infos()] == \
        [(i.id, i.num_sequences, i.num_samples) for i in eager.chunk_infos()]
    for c in range(len(lazy.chunk_infos())):
        a, b = lazy.sequence_infos(c), eager.sequence_infos(c)
        assert np.array_equal(a.keys, b.keys) and np.array_equal(a.lengths, b.lengths)
        ca, cb = lazy.get_chunk(c), eager.get_chunk(c)
        for name in ("features", "labels"):
            sa, sb = ca.streams[name], cb.streams[name]
            assert np.array_equal(sa.offsets, sb.offsets)
            if name == "features":
                assert np.array_equal(sa.values, sb.values)
            else:
                assert np.array_equal(sa.indices, sb.indices) and np.array_equal(sa.indptr, sb.indptr)
        idx = np.arange(0, len(a), 977, dtype=np.int64)[::-1]
        ids = np.full(len(idx), c, np.int64)
        ra = lazy.read_sequences({c: lazy.read_bytes(c)}, ids, idx)
        rb = eager.read_sequences({c: eager.read_bytes(c)}, ids, idx)
        assert np.array_equal(ra.streams["features"].values, rb.streams["features"].values)
        assert np.array_equal(ra.streams["labels"].indices, rb.streams["labels"].indices)
        assert np.array_equal(ra.sequences.keys, rb.sequences.keys)
