"""UserMinibatchSource (cntk-io-semantics 1.8) and MinibatchSourceFromData (1.9), with the
examples of spec/user-minibatch-source.txt and cntk.io's MinibatchSourceFromData docstring."""
import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st

import cntkio
from cntkio import MinibatchSourceFromData, StreamInformation, UserMinibatchSource
from cntkio.minibatch import MinibatchData, Value
from cntkio.user_source import Sequence, SparseTensor, Tensor, read_minibatch, tensor

# --- the MyMultiWorkerDataSource example, unchanged apart from imports and C.Value -------------
sample_data = r'''0	|x 560:1	|y 1 0 0 0 0
0	|x 0:1
0	|x 0:1
1	|x 560:1	|y 0 1 0 0 0
1	|x 0:1
1	|x 0:1
1	|x 424:1
2	|x 160:1	|y 0 0 1 0 0
2	|x 5:1
2	|x 6:1
3	|x 460:1	|y 0 0 0 1 0
3	|x 3:1
3	|x 3:1
3	|x 425:1
'''


class MyMultiWorkerDataSource(UserMinibatchSource):
    def __init__(self, f_dim, l_dim):
        self.f_dim, self.l_dim = f_dim, l_dim
        self._prepare_data()
        #setting the state
        self.fsi = StreamInformation("features", 0, 'sparse', np.float32, (self.f_dim,))
        self.lsi = StreamInformation("labels", 1, 'dense', np.float32, (self.l_dim,))
        self.sequences = sorted(self.data)
        self.next_seq_idx = 0
        super(MyMultiWorkerDataSource, self).__init__()

    def _prepare_data(self):
        self.data = {}
        for line in sample_data.split('\n'):
            line = line.strip()
            if not line:
                continue
            seq_id, data = line.split('|', 1)
            data = data.split("|")
            seq_id = int(seq_id.strip())

            if seq_id not in self.data:
                self.data[seq_id] = {'features': []}

            # Processing features - expecting one per line.
            features = data[0].split(" ")
            vocab_idx = int(features[1].split(":")[0])
            self.data[seq_id]['features'].append(vocab_idx)

            # Process label, if exists
            if len(data) == 2:
                labels = np.asarray([data[1].split(" ")[1:]], dtype=np.float32)
                self.data[seq_id]['labels'] = labels

    def _prepare_nextbatch(self, num_samples, number_of_workers, worker_rank):
        features = []
        labels = []
        sweep_end = False
        f_sample_count = l_sample_count = 0

        while max(f_sample_count, l_sample_count) < num_samples:
            if self.next_seq_idx == len(self.sequences):
                sweep_end = True
                self.next_seq_idx = 0

            seq_id = self.sequences[self.sequences[self.next_seq_idx]]
            if (seq_id % number_of_workers) != worker_rank:
                continue
            feature_data = self.data[seq_id]['features']
            label_data = self.data[seq_id]['labels']
            if (features or labels) and \
                max(f_sample_count+len(feature_data), \
                    l_sample_count+len(label_data)) > num_samples:
                break
            f_sample_count += len(feature_data)
            features.append(feature_data)

            l_sample_count += len(label_data)
            labels.append(label_data)

            self.next_seq_idx += 1
        return features, f_sample_count, labels, l_sample_count, sweep_end

    def stream_infos(self):
        return [self.fsi, self.lsi]

    def next_minibatch(self, num_samples, number_of_workers, worker_rank, device):
        features, feature_sample_count, \
        labels, label_sample_count, sweep_end = self._prepare_nextbatch(num_samples,
                                                                        number_of_workers,
                                                                        worker_rank)
        feature_data = Value.one_hot(batch=features, num_classes=self.f_dim, device = device)
        label_data = Value(batch=np.asarray(labels, dtype=np.float32), device = device)
        num_seq = len(features)
        res = {
                self.fsi: MinibatchData(feature_data, num_seq, feature_sample_count, sweep_end),
                self.lsi: MinibatchData(label_data, num_seq, label_sample_count, sweep_end)
                }
        return res

    def get_checkpoint_state(self):
        return {'next_seq_idx': self.next_seq_idx}

    def restore_from_checkpoint(self, state):
        self.next_seq_idx = state['next_seq_idx']


def test_my_multi_worker_data_source_example():
    mbs = MyMultiWorkerDataSource(1000, 5)
    assert set(mbs.streams) == {"features", "labels"}
    assert mbs.streams.features is mbs.fsi and mbs["labels"] == mbs.lsi
    mb = mbs.next_minibatch(7, 1, 0, None)
    f, l = mb[mbs.fsi], mb[mbs.lsi]
    assert (f.num_sequences, f.num_samples, f.end_of_sweep) == (2, 7, False)
    assert (l.num_sequences, l.num_samples) == (2, 2)
    assert f.is_sparse and f.shape == (2, 4, 1000)
    assert f.mask.tolist() == [[2, 1, 1, 0], [2, 1, 1, 1]]
    assert [np.flatnonzero(r).tolist() for r in f.as_csr().toarray()] == \
        [[560], [0], [0], [560], [0], [0], [424]]
    assert l.shape == (2, 1, 5)
    assert l.data.asarray()[:, 0].tolist() == [[1, 0, 0, 0, 0], [0, 1, 0, 0, 0]]
    assert mbs.get_checkpoint_state() == {"next_seq_idx": 2}

    mb = mbs.next_minibatch(7, 1, 0, None)
    assert mb[mbs.fsi].num_samples == 7 and not mb[mbs.fsi].end_of_sweep
    assert mb[mbs.lsi].data.asarray()[:, 0].tolist() == [[0, 0, 1, 0, 0], [0, 0, 0, 1, 0]]
    # the sweep end is noticed at the start of the next call
    mb = mbs.next_minibatch(7, 1, 0, None)
    assert mb[mbs.fsi].end_of_sweep and mb[mbs.fsi].num_samples == 7

    # restore replays from the saved position
    mbs.restore_from_checkpoint({"next_seq_idx": 2})
    mb = mbs.next_minibatch(4, 1, 0, None)
    assert mb[mbs.fsi].num_sequences == 1 and mb[mbs.fsi].num_samples == 3
    # and it reads through the source-agnostic helper like any source
    mb = read_minibatch(mbs, 4)
    assert mb[mbs.fsi].num_samples == 4


def test_checkpoint_keys_must_be_strings():
    class Bad(MyMultiWorkerDataSource):
        def get_checkpoint_state(self):
            return {1: self.next_seq_idx}

    with pytest.raises(ValueError, match="keys of the checkpoint dictionary must be strings"):
        Bad(10, 5).get_checkpoint_state()


class Minimal(UserMinibatchSource):
    def __init__(self):
        self.si = StreamInformation("x", 0, "dense", np.float32, (1,))
        super().__init__()

    def stream_infos(self):
        return [self.si]

    def next_minibatch(self, num_samples, number_of_workers, worker_rank, device=None):
        return {}


def test_base_defaults():
    src = Minimal()
    assert src.get_checkpoint_state() == {}
    src.restore_from_checkpoint({})  # an empty state is fine
    with pytest.raises(NotImplementedError, match="restore_from_checkpoint"):
        src.restore_from_checkpoint({"a": 1})
    assert src.is_infinite() is False
    assert src.stream_info("x") is src.si and src["x"] is src.si
    with pytest.raises(RuntimeError, match="no stream named 'y'"):
        src.stream_info("y")
    assert list(src.iter(5)) == []
    with src as s:
        assert s is src


def test_state_must_exist_before_super_init():
    class Late(UserMinibatchSource):
        def __init__(self):
            super().__init__()
            self.si = StreamInformation("x", 0, "dense", np.float32, (1,))

        def stream_infos(self):
            return [self.si]

    with pytest.raises(AttributeError):
        Late()


# --- MinibatchSourceFromData -------------------------------------------------------------------
N = 5
X = np.arange(3 * N).reshape(N, 3).astype(np.float32)


def sparse_y():
    Y = np.array([i % 3 == 0 for i in range(N)], np.float32)
    return scipy.sparse.csr_matrix((np.ones(N, np.float32), (range(N), Y)), shape=(N, 2))


def test_from_data_dense_docstring_example():
    s = MinibatchSourceFromData(dict(x=X), max_samples=len(X))
    mb = s.next_minibatch(3)
    d = mb[s.streams['x']]
    assert d.data.asarray().tolist() == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert (d.num_sequences, d.num_samples, d.end_of_sweep) == (3, 3, False)
    mb = s.next_minibatch(3)  # note: only 2 left
    d = mb[s.streams['x']]
    assert d.data.asarray().tolist() == [[9, 10, 11], [12, 13, 14]]
    assert d.end_of_sweep
    assert s.next_minibatch(3) == {}
    assert s.next_minibatch(3) == {}


def test_from_data_sparse_docstring_example_wraps_around():
    s = MinibatchSourceFromData(dict(x=X, y=sparse_y()))  # no max_samples: repeats
    assert s.streams.y.is_sparse and s.streams.y.shape == (2,)
    assert [si.m_id for si in s.stream_infos()] == [0, 1]
    expected = [[[0, 1], [1, 0], [1, 0]], [[0, 1], [1, 0]], [[0, 1], [1, 0], [1, 0]]]
    ends = [False, True, False]
    for exp, end in zip(expected, ends):
        mb = s.next_minibatch(3)
        d = mb[s.streams['y']]
        assert d.data.asarray().todense().tolist() == exp
        assert d.end_of_sweep is end
    assert s.is_infinite()


def test_from_data_value_inputs():
    s = MinibatchSourceFromData(dict(x=Value(X), y=Value(sparse_y())))
    mb = s.next_minibatch(3)
    assert mb[s.streams['y']].data.asarray().todense().tolist() == [[0, 1], [1, 0], [1, 0]]
    assert mb[s.streams['x']].data.asarray().tolist() == X[:3].tolist()
    with pytest.raises(ValueError, match="distributed reading from Value objects is not supported"):
        s.next_minibatch(3, 2, 0)


def test_from_data_sequences_docstring_example():
    XX = [np.array([1, 3, 2], np.float32), np.array([4, 1], np.float32)]  # 2 sequences
    YY = [scipy.sparse.csr_matrix(np.array([[0, 1], [1, 0], [1, 0]], np.float32)),
          scipy.sparse.csr_matrix(np.array([[1, 0], [1, 0]], np.float32))]
    s = MinibatchSourceFromData(dict(xx=(XX, Sequence[tensor]), yy=(YY, Sequence[tensor])))
    mb = s.next_minibatch(3)
    assert mb[s.streams['xx']].data.asarray().tolist() == [[1, 3, 2]]
    assert mb[s.streams['yy']].data.shape == (1, 3, 2)
    assert mb[s.streams['xx']].num_samples == 3
    mb = s.next_minibatch(10)  # a minibatch never runs past the end of the data
    assert mb[s.streams['xx']].num_sequences == 1
    assert mb[s.streams['xx']].end_of_sweep


def test_from_data_sequence_counts_the_longest_stream():
    a = [np.zeros((2, 1), np.float32), np.zeros((1, 1), np.float32), np.zeros((4, 1), np.float32)]
    b = [np.zeros((1, 1), np.float32), np.zeros((3, 1), np.float32), np.zeros((1, 1), np.float32)]
    s = MinibatchSourceFromData(dict(a=(a, Sequence[Tensor[1]]), b=(b, Sequence[tensor])),
                                max_samples=9)
    mb = s.next_minibatch(5)  # item0 max(2,1), +item1 -> a 3, b 4; +item2 -> a 7 > 5
    assert (mb[s.streams.a].num_samples, mb[s.streams.b].num_samples) == (3, 4)
    assert mb[s.streams.a].num_sequences == 2
    assert s.get_checkpoint_state() == {"cursor": 2, "total_num_samples": 4}
    mb = s.next_minibatch(5)
    assert mb[s.streams.a].num_samples == 4 and mb[s.streams.a].end_of_sweep
    # 8 delivered: the next item (max 2) would pass max_samples=9... item0 counts 2 -> 10 > 9
    mb = s.next_minibatch(5)
    assert mb[s.streams.a].num_sequences == 0 and mb[s.streams.a].num_samples == 0


def test_from_data_item_longer_than_request_gives_empty_minibatch():
    # cntk.io quirk kept: the "at least one item" test is on a non-empty dict
    s = MinibatchSourceFromData(dict(x=([np.ones((4, 1), np.float32)] * 2, Sequence[tensor])))
    mb = s.next_minibatch(3)
    d = mb[s.streams.x]
    assert d.num_sequences == 0 and d.num_samples == 0 and not d.end_of_sweep
    assert s.get_checkpoint_state() == {"cursor": 0, "total_num_samples": 0}


def test_from_data_max_samples_stops_inside_the_data():
    s = MinibatchSourceFromData(dict(x=X), max_samples=4)
    assert s.next_minibatch(3)[s.streams.x].num_samples == 3
    mb = s.next_minibatch(3)
    assert mb[s.streams.x].num_samples == 1 and mb[s.streams.x].end_of_sweep
    assert s.next_minibatch(3) == {}
    assert not s.is_infinite()


def test_from_data_distributed_slices_rows_with_stride():
    s = MinibatchSourceFromData(dict(x=X))
    mb = s.next_minibatch(4, 2, 1)
    d = mb[s.streams.x]
    # rows begin+rank : end+rank : workers = 1:5:2, num_sequences still end - begin
    assert d.data.asarray().tolist() == [X[1].tolist(), X[3].tolist()]
    assert d.num_sequences == 4 and d.num_samples == 4


def test_from_data_checkpoint_restore():
    s = MinibatchSourceFromData(dict(x=X), max_samples=12)
    s.next_minibatch(2)
    state = s.get_checkpoint_state()
    assert state == {"cursor": 2, "total_num_samples": 2}
    rest = [s.next_minibatch(2)[s.streams.x].data.asarray().tolist() for _ in range(3)]
    t = MinibatchSourceFromData(dict(x=X), max_samples=12)
    t.restore_from_checkpoint(state)
    assert [t.next_minibatch(2)[t.streams.x].data.asarray().tolist() for _ in range(3)] == rest
    with pytest.raises(ValueError, match="Checkpoint misses required field total_num_samples"):
        t.restore_from_checkpoint({"cursor": 0})


def test_from_data_errors():
    with pytest.raises(ValueError, match="at least one stream must be specified"):
        MinibatchSourceFromData({})
    with pytest.raises(TypeError, match="data must be a numpy.array or scipy.sparse.csr_matrix"):
        MinibatchSourceFromData(dict(x=[[1, 2]]))
    with pytest.raises(TypeError, match="data must be a numpy.array"):
        MinibatchSourceFromData(dict(x="abc"))
    with pytest.raises(ValueError, match="data is empty"):
        MinibatchSourceFromData(dict(x=np.zeros((0, 3), np.float32)))
    with pytest.raises(ValueError, match="data is empty"):
        MinibatchSourceFromData(dict(x=([], Sequence[tensor])))
    with pytest.raises(TypeError, match="all data items must have the same first dimension"):
        MinibatchSourceFromData(dict(x=X, y=X[:3]))
    with pytest.raises(ValueError, match="does not match the data's shape"):
        MinibatchSourceFromData(dict(x=(X, Tensor[4])))
    with pytest.raises(ValueError, match="type must be a variable type"):
        MinibatchSourceFromData(dict(x=(X, 3)))
    with pytest.raises(ValueError, match="the type is sparse"):
        MinibatchSourceFromData(dict(x=(X, SparseTensor[3])))


def test_from_data_list_without_type_is_one_sample_per_item():
    items = [np.array([1, 2], np.float32), np.array([3, 4], np.float32), np.array([5, 6], np.float32)]
    s = MinibatchSourceFromData(dict(x=items))
    assert s.streams.x.shape == (2,)
    mb = s.next_minibatch(2)
    assert mb[s.streams.x].data.asarray().tolist() == [[1, 2], [3, 4]]


def test_public_names():
    assert cntkio.MinibatchSourceFromData is MinibatchSourceFromData
    assert cntkio.UserMinibatchSource is UserMinibatchSource
    assert cntkio.MinibatchData is MinibatchData


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=12), st.integers(1, 6),
       st.integers(1, 40))
def test_from_data_takes_the_longest_prefix_that_fits(lengths, size, max_samples):
    seqs = [np.full((n, 1), i, np.float32) for i, n in enumerate(lengths)]
    s = MinibatchSourceFromData(dict(x=(seqs, Sequence[tensor])), max_samples=max_samples)
    cursor, total = 0, 0
    for _ in range(30):
        mb = s.next_minibatch(size)
        if total >= max_samples:
            assert mb == {}
            break
        # reference: the cntk.io loop, item by item
        end, acc = cursor, 0
        while end < len(lengths) and acc + lengths[end] <= size and total + acc + lengths[end] <= max_samples:
            acc += lengths[end]
            end += 1
        d = mb[s.streams.x]
        assert (d.num_sequences, d.num_samples) == (end - cursor, acc)
        total += acc
        assert d.end_of_sweep == (end == len(lengths) or total >= max_samples)
        cursor = 0 if end == len(lengths) else end
        assert s.get_checkpoint_state() == {"cursor": cursor, "total_num_samples": total}
        if d.num_sequences == 0 and total < max_samples and cursor != 0:
            break  # stuck on an item longer than the request (the kept quirk)


def test_iteration_and_context_manager():
    with MinibatchSourceFromData(dict(x=X), max_samples=7) as s:
        assert [mb[s.streams.x].num_samples for mb in s.iter(3)] == [3, 2, 2]
    s = MinibatchSourceFromData(dict(x=X), max_samples=5)
    assert [mb[s.streams.x].num_sequences for mb in s] == [5]  # default size 256
    s = MinibatchSourceFromData(dict(x=X), max_samples=4)
    got = [mb[s.streams.x].data.asarray().tolist() for mb in s.iter(4, 2, 1)]
    assert got == [[X[1].tolist(), X[3].tolist()]]


def test_from_data_dense_array_with_a_sequence_type_is_n_sequences_of_t_samples():
    A = np.arange(24, dtype=np.float32).reshape(4, 3, 2)  # 4 sequences of 3 samples of shape (2,)
    s = MinibatchSourceFromData(dict(a=(A, Sequence[tensor])))
    assert s.streams.a.shape == (2,)
    d = s.next_minibatch(7)[s.streams.a]
    assert (d.num_sequences, d.num_samples, d.shape) == (2, 6, (2, 3, 2))
    assert d.mask.tolist() == [[2, 1, 1], [2, 1, 1]]
    assert np.array_equal(d.as_sequences()[1], A[1])
    with pytest.raises(ValueError, match="a sequence type needs a list of sequences"):
        MinibatchSourceFromData(dict(a=(sparse_y(), Sequence[tensor])))
