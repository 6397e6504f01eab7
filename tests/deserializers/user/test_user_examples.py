"""UserDeserializer under MinibatchSource: the examples of spec/custom-deserializer.txt (FromData
and CSVDeserializer, unchanged apart from imports), and the engine contract for user
deserializers: local-timeline orders, sequence mode, checkpoints, distribution, no chunk kept."""
from __future__ import annotations

import csv
import gc
import io
import math
import os
import sys
import weakref

import numpy as np
import pytest
from scipy import sparse as sp

import cntkio as cntk_io
from cntkio import MinibatchSource, StreamInformation, UserDeserializer
from cntkio.testing import assert_resumes_exactly


class _cntk:  # the example writes cntk.io.StreamInformation
    io = cntk_io


cntk = _cntk


# --- In [19]: FromData ----------------------------------------------------------------------
# The spec's text lost one line of this example (the `else:` before `raise TypeError`, without
# which a CSR matrix could never be used, yet the example then passes one); it is restored here.
class FromData(UserDeserializer):
    def __init__(self, data_streams):
        super(FromData, self).__init__()
        if not data_streams:
            raise(ValueError('at least one stream must be specified, in the form name=data'))

        self._data = data_streams   # [name] -> numpy.array or scipy.sparse.csr_matrix or list of those
        self._streams = []          # meta information about exposed stream
        num_sequences = -1          # total number of sequences (can be of length 1 in sample mode)
                                    # must be the same across all streams

        # Infer the meta information about streams
        for name, value in data_streams.items():
            is_sequence = isinstance(value, list) # is list - single elements are considered sequences

            # Infer sparsity
            element = value[0] if is_sequence else value
            if isinstance(element, np.ndarray):
                is_sparse = False
            elif isinstance(element, sp.csr_matrix):
                is_sparse = True
            else:
                raise TypeError('data must be a numpy.array or scipy.sparse.csr_matrix, or a list of those')

            # Infer sample shape
            sample_shape = value[0].shape[1:] if is_sequence else value.shape[1:]

            # Check that the number of sequences across all streams is the same
            stream_num_sequences = len(value) if is_sequence else value.shape[0]
            if num_sequences == -1:
                if stream_num_sequences == 0:
                    raise(ValueError('data is empty'))
                num_sequences = stream_num_sequences
            elif stream_num_sequences != num_sequences:
                raise ValueError('all data items must have the same first dimension')

            self._streams.append(dict(name = name, shape = sample_shape, is_sparse = is_sparse))

    # Return meta information about streams
    def stream_infos(self):
        return [cntk.io.StreamInformation(stream['name'], index, ['dense', 'sparse'][stream['is_sparse']],
                                          np.float32, stream['shape'])
                for index, stream in enumerate(self._streams)]

    # We have a single chunk only
    def num_chunks(self):
        return 1

    # actually return out chunk data as a dictionary name => data
    # where the data is a list of sequences or a csr_matrix/ndarray of samples
    def get_chunk(self, chunk_id):
        if chunk_id != 0:
            raise ValueError("Unexpected chunk id")
        return self._data


N = 5
X = np.arange(3*N).reshape(N,3).astype(np.float32) # 5 rows of 3 values
Y = sp.csr_matrix(np.array([[1, 0, 0],
                            [0, 2, 0],
                            [0, 0, 3],
                            [4, 0, 0],
                            [0, 5, 0]], dtype=np.float32))


@pytest.mark.filterwarnings(r"ignore:asarray\(\) densified")
def test_from_data_example_non_randomized():
    mbs = MinibatchSource([FromData(dict(x=X, y=Y))], randomize=False)
    mb = mbs.next_minibatch(3)
    result = mb[mbs.streams['y']].data.asarray()
    assert (result == np.array([[[ 1, 0, 0]],
                                [[ 0, 2, 0]],
                                [[ 0, 0, 3]]], dtype=np.float32)).all()

    result = mb[mbs.streams['x']].data.asarray()
    assert (result == np.array([[[ 0.,  1.,  2.]],
                                [[ 3.,  4.,  5.]],
                                [[ 6.,  7.,  8.]]],dtype=np.float32)).all()


def test_from_data_example_randomized_gives_cntks_printed_order():
    # the spec prints CNTK's output: sequences 4, 0, 3 (one chunk, window shuffle with seed 0)
    mbs1 = MinibatchSource([FromData(dict(x=X, y=Y))], randomize=True)
    mb1 = mbs1.next_minibatch(3)
    with pytest.warns(UserWarning):
        y = mb1[mbs1.streams['y']].data.asarray()
    assert y[:, 0].tolist() == [[0, 5, 0], [1, 0, 0], [4, 0, 0]]
    assert mb1[mbs1.streams['x']].data.asarray()[:, 0].tolist() == \
        [[12, 13, 14], [0, 1, 2], [9, 10, 11]]


# --- In [21]-[24]: CSVDeserializer --------------------------------------------------------------
class _Frame:
    def __init__(self, values):
        self._values = values

    def as_matrix(self):
        return self._values


class pd:  # the example's `import pandas as pd`: read_csv and DataFrame.as_matrix (pandas < 1.0)
    @staticmethod
    def read_csv(buf, engine='c', dtype=np.float32, header=None):
        text = buf.read().decode().replace('"', '')
        return _Frame(np.loadtxt(io.StringIO(text), delimiter=',', dtype=dtype, ndmin=2))


class CSVDeserializer(UserDeserializer):
    def __init__(self, filename, streams, chunksize = 32*1024*1024):
        super(CSVDeserializer, self).__init__()
        self._chunksize = chunksize
        self._filename = filename

        # Create the information about streams
        # based on the user provided data
        self._streams = [cntk.io.StreamInformation(s['name'], i, 'dense', np.float32, s['shape'])
                         for i, s in enumerate(streams)]

        # Define the number of chunks based on the file size
        self._num_chunks = int(math.ceil(os.stat(filename).st_size/chunksize))

        # Based on the information provided by the user decide what column span
        # belongs to which stream
        self._offsets = [0]
        for i, s in enumerate(self._streams):  # noqa: B007 (the spec's example code)
            self._offsets.append(s.sample_shape[0] + self._offsets[-1])

    def stream_infos(self):
        return self._streams

    def num_chunks(self):
        return self._num_chunks

    # Ok, let's actually get the work done
    def get_chunk(self, chunk_id):
        fin = open(self._filename, "rb")

        # Some constants
        endline = '\n' if sys.version_info < (3,) else ord('\n')
        _64KB = 64 * 1024

        # We would like to cut our chunk exactly on the line boundary.
        # So let's make sure if the chunk starts in the middle
        # of a row we move left to the beginning of this row
        offset = chunk_id * self._chunksize
        if offset != 0: # Need to find the beginning of the current row
            while offset > 0:
                offset -= _64KB # move left 64 KB
                buf = fin.read(_64KB) # read the data
                index = buf.rindex(endline) # find the last \n and adapt the chunk offset
                if index != -1: # Found, breaking
                    offset += index
            if offset == 0:
                raise ValueError('A single row does not fit into the chunk, consider increasing the chunk size')

        # Now read the chunk data with adapted offset
        size = (chunk_id + 1) * self._chunksize - offset
        data = fin.read(size)
        last_endline = data.rindex(endline) # Make sure we drop the last partial line
                                            # It will be consumed by the next chunk
        if last_endline == -1:
            raise ValueError('A single row does not fit into the chunk, consider increasing the chunk size')
        data = data[:last_endline + 1]

        # Parse the csv using pandas
        df = pd.read_csv(io.BytesIO(data), engine='c', dtype=np.float32, header=None)

        # Create a dictionary {name => data},
        # where data spans the number of columns specified by the user
        result = {}
        mat = df.as_matrix()
        for i, stream in enumerate(self._streams):
            result[stream.m_name] = np.ascontiguousarray(mat[:, self._offsets[i]:self._offsets[i + 1]])
        return result


def test_csv_deserializer_example(tmp_path):
    filename = str(tmp_path / 'big_file.tmp')
    rows = 3000  # the example writes 200000; the reading is the same
    with open(filename, 'w') as data:
        w = csv.writer(data, quoting=csv.QUOTE_ALL)
        for i in range(rows):
            w.writerow([float(i) for j in range(151)])

    d = CSVDeserializer(filename=filename, streams=[dict(name='x', shape=(150,)), dict(name='y', shape=(1,))])
    mbs = MinibatchSource([d], randomize=False, max_sweeps=1)

    total_num_samples = 0
    seen = []
    while True:
        mb = mbs.next_minibatch(128)
        if not mb:
            break
        total_num_samples += mb[mbs.streams.x].number_of_samples
        x = mb[mbs.streams.x].data.asarray()[:, 0]
        assert (x == x[:, :1]).all()
        assert np.array_equal(mb[mbs.streams.y].data.asarray()[:, 0, 0], x[:, 0])
        seen.append(x[:, 0])
    assert total_num_samples == rows
    assert np.array_equal(np.concatenate(seen), np.arange(rows, dtype=np.float32))
    assert [len(s) for s in seen[:-1]] == [128] * (len(seen) - 1)


# --- the engine contract for user deserializers -------------------------------------------------
class Chunked(UserDeserializer):
    """``num_chunks`` chunks of ``per_chunk`` sequences; sequence k has length 1 + k % 3 and
    values k (dense 'x') and a one-hot k % 4 per sample (sparse 'y'), in sequence mode."""

    def __init__(self, num_chunks=5, per_chunk=4):
        super().__init__()
        self._c, self._n = num_chunks, per_chunk
        self.served = []

    def stream_infos(self):
        return [StreamInformation('x', 0, 'dense', np.float32, (1,)),
                StreamInformation('y', 1, 'sparse', np.float32, (4,))]

    def num_chunks(self):
        return self._c

    def get_chunk(self, chunk_id):
        ks = range(chunk_id * self._n, (chunk_id + 1) * self._n)
        chunk = {'x': [np.full((1 + k % 3, 1), k, np.float32) for k in ks],
                 'y': [sp.csr_matrix((np.ones(1 + k % 3, np.float32),
                                      (np.arange(1 + k % 3), np.full(1 + k % 3, k % 4))),
                                     shape=(1 + k % 3, 4)) for k in ks]}
        self.served.append(weakref.ref(chunk['x'][0]))
        return chunk


def ids(mb, src):
    return [int(s[0, 0]) for s in mb[src.streams.x].as_sequences()]


def read_all(src, size, **kw):
    out = []
    while True:
        mb = src.next_minibatch(size, **kw)
        if not mb:
            return out
        out.append(ids(mb, src))


def test_sequence_mode_non_randomized_reads_in_order():
    src = MinibatchSource(Chunked(), randomize=False, max_sweeps=1)
    mbs = read_all(src, 6)
    assert sum(mbs, []) == list(range(20))
    lengths = [1 + k % 3 for k in range(20)]
    for mb_ids in mbs[1:]:
        assert sum(lengths[k] for k in mb_ids) <= 6


def test_randomized_sweeps_are_permutations():
    src = MinibatchSource(Chunked(), randomization_window_in_chunks=2, max_sweeps=2,
                          randomization_seed=5)
    order = sum(read_all(src, 7), [])
    assert sorted(order[:20]) == list(range(20)) and sorted(order[20:]) == list(range(20))
    assert order[:20] != list(range(20))


def test_two_workers_are_disjoint_and_cover_a_sweep():
    for kw in (dict(randomize=False), dict(randomization_window_in_chunks=2)):
        seen = []
        for rank in range(2):
            src = MinibatchSource(Chunked(), max_sweeps=1, **kw)
            seen.append(sum(read_all(src, 6, num_data_partitions=2, partition_index=rank), []))
        assert seen[0] and seen[1]
        assert not set(seen[0]) & set(seen[1])
        assert sorted(seen[0] + seen[1]) == list(range(20))


@pytest.mark.parametrize("make, partition", [
    (lambda: MinibatchSource(Chunked(), randomize=False, max_sweeps=3), (1, 0)),
    (lambda: MinibatchSource(Chunked(), randomization_window_in_chunks=2, max_sweeps=3,
                             randomization_seed=1), (1, 0)),
    (lambda: MinibatchSource(Chunked(), randomization_window_in_chunks=0,
                             randomization_window_in_samples=9, max_samples=70), (1, 0)),
    (lambda: MinibatchSource(Chunked(), randomization_window_in_chunks=2, max_sweeps=2), (2, 1)),
    (lambda: MinibatchSource(Chunked(), randomize=False, max_sweeps=2), (3, 2)),
    (lambda: MinibatchSource(Chunked(), randomize=False, truncation_length=2, max_sweeps=2), (1, 0)),
    (lambda: MinibatchSource(SampleChunks(8), randomization_window_in_chunks=2, frame_mode=True,
                             max_sweeps=2), (1, 0)),
])
def test_user_deserializer_sources_resume_exactly(make, partition):
    n = assert_resumes_exactly(make, [5, 8, 3], range(0, 8), num_data_partitions=partition[0],
                               partition_index=partition[1])
    assert n >= 4


def test_composition_is_rejected():
    from cntkio import CTFDeserializer, StreamDef, StreamDefs
    ctf = CTFDeserializer("unused.ctf", StreamDefs(a=StreamDef(field='a', shape=1)))
    with pytest.raises(ValueError, match="Currently composition for user defined deserializers "
                                         "is not supported."):
        MinibatchSource([Chunked(), ctf])


class SampleChunks(UserDeserializer):
    """Sample mode: chunk c is a float32 array of 3 one-sample sequences with values 3c..3c+2
    (passed to the engine without a copy, so only the engine can keep it alive)."""

    def __init__(self, num_chunks):
        super().__init__()
        self._c = num_chunks
        self.served = {}

    def stream_infos(self):
        return [StreamInformation('x', 0, 'dense', np.float32, (1,))]

    def num_chunks(self):
        return self._c

    def get_chunk(self, chunk_id):
        arr = np.arange(3 * chunk_id, 3 * chunk_id + 3, dtype=np.float32).reshape(3, 1)
        self.served.setdefault(chunk_id, []).append(weakref.ref(arr))
        return {'x': arr}


def test_no_reference_is_kept_to_consumed_chunks():
    d = SampleChunks(8)
    src = MinibatchSource(d, randomize=False, max_sweeps=1)
    for k in range(8):
        mb = src.next_minibatch(3)
        assert ids(mb, src) == [3 * k, 3 * k + 1, 3 * k + 2]
        del mb
        gc.collect()
        # this sweep's loads of the chunks before the one just read are released (the current
        # and the next may be held; the next may be the next sweep's chunk 0, a new load)
        alive = sorted(c for c, refs in d.served.items() if refs[0]() is not None)
        assert all(c >= k for c in alive), (k, alive)
    assert src.next_minibatch(3) == {}
    src.close()
    gc.collect()
    assert all(r() is None for refs in d.served.values() for r in refs)


class SameArrays(UserDeserializer):
    """Returns the same preallocated arrays on every call (sample mode, no copy needed)."""

    def __init__(self):
        super().__init__()
        self.arrays = [np.full((4, 2), c, np.float32) for c in range(3)]

    def stream_infos(self):
        return [StreamInformation('x', 0, 'dense', np.float32, (2,))]

    def num_chunks(self):
        return 3

    def get_chunk(self, chunk_id):
        return {'x': self.arrays[chunk_id]}


def test_reference_counts_return_to_their_values_after_reading():
    # test_user_deserializer_memory_leak of cntk: reading must not leave references behind
    d = SameArrays()
    before = [sys.getrefcount(a) for a in d.arrays]
    with MinibatchSource(d, randomization_window_in_chunks=1, max_sweeps=2) as src:
        assert sum(mb[src.streams.x].num_samples for mb in src.iter(5)) == 24
    gc.collect()
    assert [sys.getrefcount(a) for a in d.arrays] == before


class BadSecondChunk(SampleChunks):
    def get_chunk(self, chunk_id):
        if chunk_id == 1:
            return {'x': np.zeros((3, 1), np.float64)}
        return super().get_chunk(chunk_id)


def test_a_bad_chunk_raises_in_next_minibatch_with_cntks_message():
    with MinibatchSource(BadSecondChunk(3), randomize=False) as src:
        with pytest.raises(RuntimeError, match="Only float numbers are currently supported "
                                               r"\(stream 'x' has float64\)"):
            for _ in range(4):
                src.next_minibatch(3)


def test_stream_errors_surface_at_construction():
    class NoStreams(SampleChunks):
        def stream_infos(self):
            return []

    with pytest.raises(ValueError, match="Deserializer must provide at least one stream"):
        MinibatchSource(NoStreams(2))
    with pytest.raises(ValueError, match="Deserializer must provide at least one chunk"):
        MinibatchSource(SampleChunks(0))
