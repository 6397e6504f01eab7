"""Two processes on localhost (gloo): MinibatchIterableDataset takes rank and world size from
torch.distributed, and the two ranks' sequences of one sweep are disjoint and cover it."""
import json
import os
import socket
import time
import warnings
from datetime import timedelta

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

NUM_SEQUENCES = 40
LENGTHS = [1 + (7 * i) % 4 for i in range(NUM_SEQUENCES)]


def write_ctf(path):
    # sequence i has LENGTHS[i] lines; stream 'id' carries i on every line, 'x' a sparse one-hot
    with open(path, "w") as f:
        for i, n in enumerate(LENGTHS):
            for t in range(n):
                f.write(f"{i}\t|id {i}\t|x {(i + t) % 7}:1\n")


def make_source(path, randomize):
    from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
    ctf = CTFDeserializer(path, StreamDefs(id=StreamDef(field="id", shape=1),
                                           x=StreamDef(field="x", shape=7, is_sparse=True)))
    ctf["chunkSizeInBytes"] = 120  # several chunks, so both ranks get data when randomized
    return MinibatchSource(ctf, max_sweeps=1, randomize=randomize, randomization_seed=3,
                           randomization_window_in_chunks=2 if randomize else 0)


def read_ids(loader):
    """Per sequence: its id and its length, from the dense id stream and its lengths."""
    seen = []
    for batch in loader:
        ids, lengths = batch["id"], batch["id_lengths"]
        assert ids.dim() == 3 and ids.shape[0] == lengths.shape[0]
        assert batch["x"].layout == torch.sparse_csr
        assert batch["x"].shape[0] == int(batch["x_lengths"].sum())
        for row in range(ids.shape[0]):
            n = int(lengths[row])
            values = ids[row, :n, 0]
            assert bool((values == values[0]).all())
            assert not bool(ids[row, n:].any())  # padding is zero
            seen.append((int(values[0]), n))
    return seen


def worker(rank, world_size, port, path, out_dir):
    from cntkio.integrations.torch import MinibatchIterableDataset
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world_size, timeout=timedelta(seconds=60))
    try:
        for randomize in (False, True):
            ds = MinibatchIterableDataset(lambda randomize=randomize: make_source(path, randomize), minibatch_size=6)
            assert ds.partition() == (world_size, rank)
            loader = torch.utils.data.DataLoader(ds, batch_size=None)
            seen = read_ids(loader)
            with open(os.path.join(out_dir, f"rank{rank}_{randomize}.json"), "w") as f:
                json.dump(seen, f)
        dist.barrier()
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """Both ranks' (sequence id, length) lists, per randomize setting, from one 2-process run."""
    tmp_path = tmp_path_factory.mktemp("dist")
    path = str(tmp_path / "data.ctf")
    write_ctf(path)
    timeout = 120
    ctx = mp.start_processes(worker, args=(2, free_port(), path, str(tmp_path)),
                             nprocs=2, join=False, start_method="spawn")
    deadline = time.monotonic() + timeout
    try:
        while not ctx.join(timeout=max(0.1, deadline - time.monotonic())):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the two ranks did not finish in {timeout} s")
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.terminate()
    return {randomize: [json.load(open(tmp_path / f"rank{r}_{randomize}.json")) for r in range(2)]
            for randomize in (False, True)}


@pytest.mark.parametrize("randomize", [False, True])
def test_two_ranks_cover_one_sweep_disjointly(two_ranks, randomize):
    seen = two_ranks[randomize]
    ids = [[s for s, _ in r] for r in seen]
    assert all(ids), "both ranks get data"
    assert not set(ids[0]) & set(ids[1])
    assert sorted(ids[0] + ids[1]) == list(range(NUM_SEQUENCES))
    for r in seen:  # whole sequences
        assert all(n == LENGTHS[i] for i, n in r)
    if not randomize:  # position-based partition: rank r takes positions p % 2 == r
        assert ids[0] == list(range(0, NUM_SEQUENCES, 2))
        assert ids[1] == list(range(1, NUM_SEQUENCES, 2))


@pytest.mark.filterwarnings("ignore:Sparse")  # torch's own, when workers send CSR tensors
def test_dataloader_workers_split_a_partition_further(tmp_path):
    from cntkio.integrations.torch import MinibatchIterableDataset
    path = str(tmp_path / "data.ctf")
    write_ctf(path)
    ds = MinibatchIterableDataset(_Factory(path), minibatch_size=5, num_data_partitions=1,
                                  partition_index=0)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                         multiprocessing_context="spawn", timeout=120)
    ids = [i for i, _ in read_ids(loader)]
    assert sorted(ids) == list(range(NUM_SEQUENCES))


class _Factory:
    """A picklable source factory (DataLoader workers build their own source)."""

    def __init__(self, path):
        self.path = path

    def __call__(self):
        return make_source(self.path, False)


def test_single_process_reads_the_whole_sweep(tmp_path):
    from cntkio.integrations.torch import MinibatchIterableDataset, distributed_partition
    path = str(tmp_path / "data.ctf")
    write_ctf(path)
    assert distributed_partition() == (1, 0)
    loader = torch.utils.data.DataLoader(MinibatchIterableDataset(make_source(path, False), 8),
                                         batch_size=None)
    seen = read_ids(loader)
    assert [i for i, _ in seen] == list(range(NUM_SEQUENCES))
    assert [n for _, n in seen] == LENGTHS
    with pytest.raises(ValueError, match="minibatch_size"):
        MinibatchIterableDataset(make_source(path, False), 0)
    with pytest.raises(ValueError, match="both"):
        MinibatchIterableDataset(make_source(path, False), 4, num_data_partitions=2)


def test_to_torch_of_a_minibatch_dict(tmp_path):
    from cntkio.integrations.torch import to_torch
    path = str(tmp_path / "data.ctf")
    write_ctf(path)
    src = make_source(path, False)
    mb = src.next_minibatch(4)
    out = to_torch(mb)
    assert set(out) == {"id", "id_lengths", "x", "x_lengths"}
    assert out["id_lengths"].tolist() == LENGTHS[:len(out["id_lengths"])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        padded = mb[src.streams.id].asarray()
    assert np.array_equal(out["id"].numpy(), padded)
    out = to_torch({"features": mb[src.streams.id]}, lengths=False)
    assert list(out) == ["features"]


def test_import_cntkio_does_not_import_torch():
    import subprocess
    import sys
    code = ("import sys, cntkio; cntkio.MinibatchData; cntkio.MinibatchSourceFromData; "
            "cntkio.UserDeserializer; cntkio.MinibatchSource; import cntkio.integrations; "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_dataset_over_a_user_minibatch_source():
    from cntkio import MinibatchSourceFromData
    from cntkio.integrations.torch import MinibatchIterableDataset
    X = np.arange(20, dtype=np.float32).reshape(10, 2)
    ds = MinibatchIterableDataset(MinibatchSourceFromData(dict(x=X), max_samples=10), 4,
                                  lengths=False)
    batches = list(torch.utils.data.DataLoader(ds, batch_size=None))
    assert [list(b) for b in batches] == [["x"]] * 3
    assert torch.cat([b["x"] for b in batches]).tolist() == X.tolist()
