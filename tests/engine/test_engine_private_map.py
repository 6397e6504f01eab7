"""The packer hands a non-randomized run of a dense stream's rows out as its copy-on-write mapping
(DenseStream.private_map), runs of consecutive chunks of one mapper as one mapping; a selection
that is not such a run, or a mapper that declines, is gathered into a buffer of its own."""
import numpy as np

from cntkio.deserializers.base import ChunkData, DenseStream, SequenceTable
from cntkio.engine.packer import group_by_chunk, pack_batch
from cntkio.streams import StreamInformation

INFO = StreamInformation("x", 0, "dense", np.float32, (3,))
FILE = np.arange(40 * 3, dtype=np.float32).reshape(40, 3)     # the "file": 40 records


class Mapper:
    def __init__(self, declines=False):
        self.calls, self.declines = [], declines

    def map_rows(self, a, b):
        self.calls.append((a, b))
        return None if self.declines else FILE[a:b].copy()      # stands in for a private map


def chunks(mapper):
    """Two chunks: records 0-19 and 20-39 of FILE."""
    out = {}
    for cid, first in ((0, 0), (1, 20)):
        out[cid] = ChunkData(SequenceTable(np.arange(20), np.ones(20, np.int64)),
                             {"x": DenseStream(FILE[first:first + 20], np.arange(21), private_map=(mapper, first))})
    return out


def pack(mapper, sel_chunk, sel_index, counts):
    sel_chunk, sel_index = np.asarray(sel_chunk, np.int64), np.asarray(sel_index, np.int64)
    batch = pack_batch([INFO], chunks(mapper), sel_chunk, sel_index, group_by_chunk(sel_chunk), counts,
                       [False] * len(counts))
    return [batch.get(j)[INFO].asarray().reshape(-1, 3) for j in range(len(counts))]


def test_a_run_in_one_chunk_is_one_mapping():
    m = Mapper()
    got = pack(m, [0] * 8, range(4, 12), [5, 3])
    assert m.calls == [(4, 12)]
    np.testing.assert_array_equal(np.concatenate(got), FILE[4:12])


def test_a_run_across_chunks_is_one_mapping_of_the_file():
    m = Mapper()
    got = pack(m, [0] * 6 + [1] * 4, list(range(14, 20)) + list(range(4)), [10])
    assert m.calls == [(14, 24)]
    np.testing.assert_array_equal(got[0], FILE[14:24])


def test_a_shuffled_selection_or_a_declining_mapper_is_gathered():
    m = Mapper()
    got = pack(m, [1, 0, 0, 1], [3, 7, 2, 0], [4])
    assert m.calls == []
    np.testing.assert_array_equal(got[0], FILE[[23, 7, 2, 20]])
    m = Mapper(declines=True)
    got = pack(m, [0] * 6 + [1] * 4, list(range(14, 20)) + list(range(4)), [10])
    assert m.calls == [(14, 24)]                              # asked once, then copied per chunk
    np.testing.assert_array_equal(got[0], FILE[14:24])
    got = pack(m, [0] * 3, [5, 6, 7], [3])
    np.testing.assert_array_equal(got[0], FILE[5:8])
