"""cntkio.testing.assert_resumes_exactly: passes on sources that resume exactly, and names the
cut point and the first difference on sources that do not."""
import numpy as np
import pytest
import scipy.sparse as sp

from cntkio import MinibatchSourceFromData
from cntkio.testing import assert_resumes_exactly
from cntkio.user_source import Sequence, tensor

X = np.arange(30, dtype=np.float32).reshape(10, 3)
SEQS = [np.full((n, 2), i, np.float32) for i, n in enumerate([1, 3, 2, 2, 1, 4, 1])]
Y = sp.csr_matrix(np.eye(10, 4, dtype=np.float32))


def make():
    return MinibatchSourceFromData(dict(x=X, y=Y), max_samples=27)


def test_exact_resume_of_from_data_at_every_cut():
    n = assert_resumes_exactly(make, [4, 3, 5], range(0, 9))
    assert n == 8  # 4, 3, 3 (end of the data), 4, 3, 3, 4, 3 (= 27 = max_samples)


def test_exact_resume_of_sequences_and_partitions():
    def make_seq():
        return MinibatchSourceFromData(dict(s=(SEQS, Sequence[tensor])), max_samples=40)
    n = assert_resumes_exactly(make_seq, 4, [0, 1, 3, 5])
    assert n > 5
    assert assert_resumes_exactly(make, 4, [0, 2], num_data_partitions=2, partition_index=1) > 2


class ForgetsTotal(MinibatchSourceFromData):
    def restore_from_checkpoint(self, checkpoint):
        self._cursor = checkpoint["cursor"]


def test_a_source_that_forgets_part_of_its_state_fails():
    # the total is lost: the end of the epoch (max_samples) is not seen on minibatch 7
    with pytest.raises(AssertionError, match=r"resumed at minibatch 3 .*minibatch 7 differs .*"
                                             r"end_of_sweep is False, expected True"):
        assert_resumes_exactly(lambda: ForgetsTotal(dict(x=X, y=Y), max_samples=27), [4, 3, 5], [3])


class OffByOne(MinibatchSourceFromData):
    def restore_from_checkpoint(self, checkpoint):
        super().restore_from_checkpoint(checkpoint)
        self._cursor = (self._cursor + 1) % 10


def test_a_source_that_resumes_elsewhere_fails_with_the_difference():
    with pytest.raises(AssertionError, match=r"resumed at minibatch 1 .*minibatch 1 differs .*"
                                             r"stream 'x': the values differ"):
        assert_resumes_exactly(lambda: OffByOne(dict(x=X)), 2, [1], max_minibatches=4)


class NotJson(MinibatchSourceFromData):
    def get_checkpoint_state(self):
        return {"cursor": np.int64(self._cursor), "total_num_samples": self._total_num_samples}


def test_states_must_survive_json():
    with pytest.raises(AssertionError, match="not JSON-serialisable"):
        assert_resumes_exactly(lambda: NotJson(dict(x=X)), 2, [1], max_minibatches=3)
    assert assert_resumes_exactly(lambda: NotJson(dict(x=X)), 2, [1], max_minibatches=3,
                                  json_roundtrip=False) == 3


def test_bad_arguments():
    with pytest.raises(ValueError, match="cut point 9"):
        assert_resumes_exactly(make, 4, [9])
    with pytest.raises(ValueError, match="minibatch_sizes"):
        assert_resumes_exactly(make, [0], [0])


def test_calls_may_change_the_partitioning():
    # a from-data source slices rows by (workers, rank) per call; the run mixes three layouts
    n = assert_resumes_exactly(make, [(4, 1, 0), (4, 2, 1), 3], range(0, 9), num_data_partitions=2,
                               partition_index=0)
    assert n == 8  # 4, 4, 2 (end of the data), 4, 4, 2, 4, 3 (= 27 = max_samples)
    with pytest.raises(ValueError, match="minibatch_sizes"):
        assert_resumes_exactly(make, [(0, 1, 0)], [0])


def test_with_a_minibatch_source_over_ctf(tmp_path):
    from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
    path = tmp_path / "d.ctf"
    path.write_text("".join(f"{i} |a {i} {i + 1}\n" * (1 + i % 3) for i in range(30)))

    def make_ctf():
        ctf = CTFDeserializer(str(path), StreamDefs(a=StreamDef(field="a", shape=2)))
        ctf["chunkSizeInBytes"] = 64
        return MinibatchSource(ctf, randomization_window_in_chunks=3, max_sweeps=2,
                               randomization_seed=11)

    assert assert_resumes_exactly(make_ctf, [7, (5, 2, 0), (6, 3, 2)], range(0, 12, 3)) > 10
