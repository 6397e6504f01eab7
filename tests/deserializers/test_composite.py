"""Joining deserializers by key (cntk-io-semantics 2.8) and the gather helpers."""
import logging

import numpy as np
import pytest

from cntkio.deserializers.base import DenseStream, SparseStream
from cntkio.deserializers.composite import RECONCILE_ERROR, CompositeDeserializer
from cntkio.deserializers.protocol import gather_stream, ranges
from cntkio.errors import ConfigError, DataError
from cntkio.source import MinibatchSource
from fakes import FakeDeserializer, ids_of


def test_ranges():
    assert ranges(np.array([5, 0, 2]), np.array([2, 0, 3])).tolist() == [5, 6, 2, 3, 4]
    assert ranges(np.array([], np.int64), np.array([], np.int64)).tolist() == []


def test_gather_dense_and_sparse():
    d = DenseStream(np.arange(6, dtype=np.float32)[:, None], np.array([0, 2, 3, 6]))
    g = gather_stream(d, np.array([2, 0]))
    assert g.values[:, 0].tolist() == [3, 4, 5, 0, 1] and g.offsets.tolist() == [0, 3, 5]
    s = SparseStream(np.array([0, 1, 3, 3]), np.array([4, 0, 2], np.int32), np.array([1., 2., 3.], np.float32),
                     np.array([0, 1, 3]), 5)
    g = gather_stream(s, np.array([1, 0]))
    assert g.indptr.tolist() == [0, 2, 2, 3] and g.indices.tolist() == [0, 2, 4]
    assert g.data.tolist() == [2, 3, 1] and g.offsets.tolist() == [0, 2, 3]


def test_join_by_key_drops_missing_and_counts(caplog):
    primary = FakeDeserializer([[1, 2], [3, 1]], keys=[10, 11, 12, 13])
    # secondary knows 13, 10, 12 (in other chunks and order) but not 11
    secondary = FakeDeserializer([[2], [1, 4]], keys=[13, 10, 12], names=("z", "w"))
    with caplog.at_level(logging.WARNING, logger="cntkio.deserializers.composite"):
        comp = CompositeDeserializer([primary, secondary])
    assert comp.dropped_sequences == 1 and "1 sequence(s)" in caplog.text
    assert [s.name for s in comp.stream_infos()] == ["x", "z"]
    assert [s.m_id for s in comp.stream_infos()] == [0, 1]
    assert comp.sequence_infos(0).keys.tolist() == [10]
    # joined length: max over the deserializers (2.2)
    assert comp.sequence_infos(0).lengths.tolist() == [1]       # key 10: 1 vs 1
    assert comp.sequence_infos(1).lengths.tolist() == [4, 2]    # keys 12 (3 vs 4), 13 (1 vs 2)
    chunk = comp.get_chunk(1)
    z = chunk.streams["z"]
    # secondary sequence numbers: key 13 -> q0 (2 samples), key 12 -> q2 (4 samples)
    assert (z.values[:, 0] // 1000).tolist() == [2, 2, 2, 2, 0, 0]
    assert z.offsets.tolist() == [0, 4, 6]


def test_join_through_source_and_defines_mb_size():
    primary = FakeDeserializer([[1, 1, 1]], keys=[0, 1, 2])
    secondary = FakeDeserializer([[3, 2, 5]], keys=[2, 1, 0], names=("z", "w"), defines_mb_size=True)
    src = MinibatchSource([primary, secondary], randomize=False)
    mb = src.next_minibatch(7)
    # lengths come from the defining stream z: key 0 -> 5, key 1 -> 2 (5 + 2 <= 7)
    assert mb[src.streams.z].num_samples == 7 and mb[src.streams.x].num_samples == 2
    assert ids_of(mb[src.streams.x]) == [0, 1] and ids_of(mb[src.streams.z]) == [2, 1]


def test_nothing_in_common_raises_cntks_message_naming_both_sides():
    with pytest.raises(DataError, match=RECONCILE_ERROR) as e:
        CompositeDeserializer([FakeDeserializer([[1]], keys=[1]),
                               FakeDeserializer([[1]], keys=[2], names=("z", "w"))])
    # which deserializer holds which keys: the primary's 1, the other's 2, with their streams
    text = str(e.value)
    assert "deserializer 0 (FakeDeserializer (streams 'x')) has keys 1" in text
    assert "deserializer 1 (FakeDeserializer (streams 'z')) has keys 2" in text
    assert isinstance(e.value, RuntimeError)        # CNTK's class, for code that caught it


def test_empty_primary_is_a_data_error():
    with pytest.raises(DataError, match="The primary deserializer delivered no sequences"):
        CompositeDeserializer([FakeDeserializer([])])


def test_duplicate_stream_names_rejected_naming_both_deserializers():
    with pytest.raises(ConfigError, match="Two streams with the same name 'x' have been found. Please rename "
                                          "the duplicate: deserializer 0 .* and deserializer 1"):
        MinibatchSource([FakeDeserializer([[1]]), FakeDeserializer([[1]])])


def test_duplicate_key_in_a_joined_deserializer_is_an_error():
    with pytest.raises(ValueError, match="duplicate sequence key 0"):
        CompositeDeserializer([FakeDeserializer([[1, 1]]),
                               FakeDeserializer([[1, 1]], keys=[0, 0], names=("z", "w"))])


def test_two_defining_deserializers_rejected():
    with pytest.raises(ConfigError, match="Only a single deserializer is allowed to define minibatch size, but "
                                          "streams of deserializer 0 .* deserializer 1 .* define it"):
        CompositeDeserializer([FakeDeserializer([[1]], defines_mb_size=True),
                               FakeDeserializer([[1]], names=("z", "w"), defines_mb_size=True)])


def test_string_and_numeric_keys_join():
    primary = FakeDeserializer([[1, 1]], keys=np.array(["7", "x"], dtype=object), key_kind="string")
    secondary = FakeDeserializer([[1]], keys=[7], names=("z", "w"))
    comp = CompositeDeserializer([primary, secondary])
    assert comp.key_kind == "string" and comp.sequence_infos(0).keys.tolist() == ["7"]


def test_randomized_composite_keeps_streams_aligned():
    primary = FakeDeserializer([[1] * 4] * 5)
    perm = np.random.RandomState(0).permutation(20)
    secondary = FakeDeserializer([[1] * 10] * 2, keys=perm, names=("z", "w"))
    src = MinibatchSource([primary, secondary], randomization_window_in_chunks=2, max_sweeps=1)
    for mb in src.iter(minibatch_size=3):
        xs = ids_of(mb[src.streams.x])
        zs = ids_of(mb[src.streams.z])
        assert [int(perm[q]) for q in zs] == xs


def test_the_drop_warning_shows_at_trace_level_0_once(caplog):
    """Dropped samples are about what the user's data holds: warned about at every trace level
    (issue 31), once."""
    primary = FakeDeserializer([[1, 1]], keys=[1, 2])
    secondary = FakeDeserializer([[1]], keys=[2], names=("z", "w"))
    with caplog.at_level(logging.DEBUG, logger="cntkio"):
        comp = CompositeDeserializer([primary, secondary], trace_level=0)
        CompositeDeserializer([primary, secondary], trace_level=0)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert comp.dropped_sequences == 1
    assert warnings == ["1 sequence(s) of the primary deserializer have no match by key in another "
                        "deserializer and were dropped from the corpus"]
