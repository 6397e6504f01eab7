"""MinibatchIterableDataset's state (torchdata's Stateful protocol: ``state_dict`` / ``load_state_dict``,
what ``StatefulDataLoader`` calls in each worker): a sweep resumes exactly mid-way, a state taken
between sweeps resumes on any partitioning, a mid-sweep state on another partitioning is refused."""
import json

import numpy as np
import pytest
import torch

from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
from cntkio.integrations.torch import MinibatchIterableDataset


def _write(path, n=120, seed=5):
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for s in range(n):
            for t in range(int(rng.integers(1, 5))):
                f.write(f"{s}\t|w {int(rng.integers(10))}:1\t|x {s * 10 + t}\n")
    return path


class Factory:
    def __init__(self, path, randomize=True):
        self.path, self.randomize = str(path), randomize

    def __call__(self):
        kw = dict(randomization_window_in_chunks=2, randomization_seed=3) if self.randomize else dict(randomize=False)
        return MinibatchSource(CTFDeserializer(self.path, StreamDefs(
            w=StreamDef(field="w", shape=10, is_sparse=True), x=StreamDef(field="x", shape=1))), **kw)


def _key(item):
    w = item["w"] if item["w"].layout == torch.strided else item["w"].to_dense().argmax(1)
    return (w.tolist(), item["x"][:, :, 0].tolist(), item["w_lengths"].tolist())


def _items(ds, **kw):
    return [_key(item) for item in ds]


@pytest.mark.parametrize("cut", [0, 1, 7, 17])
def test_a_sweep_resumes_exactly_from_a_state_taken_mid_way(tmp_path, cut):
    path = _write(tmp_path / "a.ctf")
    ds = MinibatchIterableDataset(Factory(path), 16, ids=("w",))
    it = iter(ds)
    head = [_key(next(it)) for _ in range(cut)]
    state = json.loads(json.dumps(ds.state_dict()))  # what a checkpoint file holds
    if cut:
        assert state["epoch"] == 0 and state["partition"] == [1, 0] and state["source"] is not None
    else:  # the iteration has not begun: sweep 0 from its start
        assert state == {"epoch": 0, "partition": None, "source": None}
    rest = [_key(item) for item in it]
    assert len(head) + len(rest) == 19
    fresh = MinibatchIterableDataset(Factory(path), 16, ids=("w",))
    fresh.load_state_dict(state)
    assert _items(fresh) == rest
    assert fresh.epoch == 1 and ds.epoch == 1
    assert _items(fresh) == _items(ds)  # both go on with sweep 1


def test_a_state_between_sweeps_names_the_next_sweep_and_fits_any_partitioning(tmp_path):
    path = _write(tmp_path / "a.ctf")
    ds = MinibatchIterableDataset(Factory(path), 8)
    first = _items(ds)
    state = ds.state_dict()
    assert state == {"epoch": 1, "partition": None, "source": None}
    whole = _items(MinibatchIterableDataset(Factory(path), 8, epoch=1))
    halves = []
    for r in range(2):
        part = MinibatchIterableDataset(Factory(path), 8, num_data_partitions=2, partition_index=r)
        part.load_state_dict(state)
        halves += [row[0] for item in _items(part) for row in item[1]]  # each sequence's first sample
    assert sorted(halves) == sorted(row[0] for item in whole for row in item[1])
    assert whole != first


def test_a_mid_sweep_state_on_another_partitioning_is_refused(tmp_path):
    path = _write(tmp_path / "a.ctf")
    ds = MinibatchIterableDataset(Factory(path, False), 8, num_data_partitions=2, partition_index=1)
    it = iter(ds)
    next(it)
    state = ds.state_dict()
    other = MinibatchIterableDataset(Factory(path, False), 8)
    other.load_state_dict(state)
    with pytest.raises(ValueError, match=r"partition \(2, 1\).*reads \(1, 0\)"):
        next(iter(other))


def test_the_resumed_items_are_made_through_a_dataloader_too(tmp_path):
    path = _write(tmp_path / "a.ctf")
    ds = MinibatchIterableDataset(Factory(path), 16)
    it = iter(ds)
    next(it)
    next(it)
    state = ds.state_dict()
    rest = [_key(item) for item in it]
    fresh = MinibatchIterableDataset(Factory(path), 16)
    fresh.load_state_dict(state)
    got = [_key(item) for item in torch.utils.data.DataLoader(fresh, batch_size=None)]
    assert got == rest
