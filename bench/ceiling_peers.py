"""The packaged peers of bench/ceiling.py, each reading its own format through its documented path:
Mosaic Streaming (MDS, StreamingDataset + StreamingDataLoader), WebDataset (tar shards, a shuffle
buffer), Grain (ArrayRecord, MapDataset or its DataLoader with worker processes) and Hugging Face
datasets (Arrow, ``with_format("numpy")`` batches through a DataLoader). Benchmark-only: imported
here, installed from bench/requirements-peers.txt, never dependencies of cntkio.
"""
from __future__ import annotations

import glob
import io
import os
import shutil
import tarfile

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler

from ceiling_loaders import ROWS_PER_SHARD, _Loader, to_batch


def _has(module: str) -> bool:
    try:
        __import__(module)
        return True
    except Exception:  # a peer that does not import here is reported as not installed
        return False


def _records(data: dict):
    """``(x, y)`` per sample: a dense row or a sequence's token ids, and the label."""
    y = data["y"]
    if "x" in data:
        for i in range(len(y)):
            yield data["x"][i], int(y[i])
    else:
        off, tok = data["offsets"], data["tokens"]
        for i in range(len(y)):
            yield tok[off[i]:off[i + 1]], int(y[i])


def _decode(workload: str, raw: bytes) -> tuple[np.ndarray, int]:
    """A record written by :func:`_encode`: the label (8 bytes) then the values."""
    y = int.from_bytes(raw[:8], "little")
    return np.frombuffer(raw, np.float32 if workload == "dense" else np.int32, offset=8), y


def _encode(x: np.ndarray, y: int) -> bytes:
    return int(y).to_bytes(8, "little") + x.tobytes()


class _Collate:
    def __init__(self, workload: str) -> None:
        self.workload = workload

    def __call__(self, samples):
        return to_batch(self.workload, [s[0] for s in samples], [s[1] for s in samples])


# --- Mosaic Streaming (MDS) --------------------------------------------------------------------------

class Mosaic(_Loader):
    name = "Mosaic MDS"
    stateful = True
    modules = ("streaming",)

    def available(self):
        return _has("streaming")

    def write(self, data, folder):
        from streaming import MDSWriter
        col = {"x": "ndarray:float32:784" if "x" in data else "ndarray:int32", "y": "int"}
        with MDSWriter(out=os.path.join(folder, "mds"), columns=col, size_limit=1 << 26) as w:
            for x, y in _records(data):
                w.write({"x": x, "y": y})

    def loader(self, folder, workload, shuffle, workers, seed, batch, resume=False, state=None):
        from streaming import StreamingDataLoader, StreamingDataset
        from streaming.base.util import clean_stale_shared_memory
        clean_stale_shared_memory()
        ds = StreamingDataset(local=os.path.join(folder, "mds"), shuffle=shuffle, shuffle_seed=seed,
                              batch_size=batch)
        dl = StreamingDataLoader(ds, batch_size=batch, num_workers=workers, collate_fn=_MosaicCollate(workload))
        if state is not None:
            dl.load_state_dict(state)
        return dl

    def state(self, it, loader):
        return loader.state_dict()


class _MosaicCollate(_Collate):
    def __call__(self, samples):
        return to_batch(self.workload, [s["x"] for s in samples], [s["y"] for s in samples])


# --- WebDataset (tar shards) ---------------------------------------------------------------------------

class WebDataset(_Loader):
    name = "WebDataset tar"
    modules = ("webdataset",)

    def available(self):
        return _has("webdataset")

    def write(self, data, folder):
        out = os.path.join(folder, "wds")
        os.makedirs(out, exist_ok=True)
        tar = None
        for i, (x, y) in enumerate(_records(data)):
            if i % ROWS_PER_SHARD == 0:
                if tar is not None:
                    tar.close()
                tar = tarfile.open(os.path.join(out, f"shard-{i // ROWS_PER_SHARD:05d}.tar"), "w")
            payload = _encode(x, y)
            info = tarfile.TarInfo(f"{i:09d}.rec")
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
        if tar is not None:
            tar.close()

    def loader(self, folder, workload, shuffle, workers, seed, batch, resume=False, state=None):
        import webdataset as wds
        shards = sorted(glob.glob(os.path.join(folder, "wds", "*.tar")))
        ds = wds.WebDataset(shards, shardshuffle=len(shards) if shuffle else False, seed=seed,
                            workersplitter=wds.split_by_worker, nodesplitter=None, empty_check=False)
        if shuffle:
            ds = ds.shuffle(5000, seed=seed)
        ds = ds.map(_WdsDecode(workload)).batched(batch, collation_fn=_Collate(workload), partial=True)
        return DataLoader(ds, batch_size=None, num_workers=workers)


class _WdsDecode:
    def __init__(self, workload: str) -> None:
        self.workload = workload

    def __call__(self, sample):
        return _decode(self.workload, sample["rec"])


# --- Grain (ArrayRecord) -------------------------------------------------------------------------------

class Grain(_Loader):
    name = "Grain ArrayRecord"
    stateful = True
    modules = ("grain", "array_record.python.array_record_module")

    def available(self):
        return _has("grain") and _has("array_record.python.array_record_module")

    def write(self, data, folder):
        from array_record.python.array_record_module import ArrayRecordWriter
        w = ArrayRecordWriter(os.path.join(folder, "data.array_record"), "group_size:1")
        for x, y in _records(data):
            w.write(_encode(x, y))
        w.close()

    def loader(self, folder, workload, shuffle, workers, seed, batch, resume=False, state=None):
        import grain
        source = grain.sources.ArrayRecordDataSource([os.path.join(folder, "data.array_record")])
        if workers == 0:
            ds = grain.MapDataset.source(source)
            if shuffle:
                ds = ds.shuffle(seed=seed)
            ds = ds.map(_GrainDecode(workload)).batch(batch, batch_fn=_Collate(workload))
            it = iter(ds.to_iter_dataset())
            if state is not None:
                it.set_state(state)
            return it
        sampler = grain.samplers.IndexSampler(len(source), shuffle=shuffle, seed=seed, num_epochs=1,
                                              shard_options=grain.sharding.NoSharding())
        dl = grain.DataLoader(data_source=source, sampler=sampler, worker_count=workers,
                              operations=[_GrainMap(workload), grain.transforms.Batch(batch, batch_fn=_Collate(workload))])
        it = iter(dl)
        if state is not None:
            it.set_state(state)
        return it

    def state(self, it, loader):
        return it.get_state()


class _GrainDecode:
    def __init__(self, workload: str) -> None:
        self.workload = workload

    def __call__(self, raw):
        return _decode(self.workload, raw)


def _grain_map_class():
    import grain

    class GrainMap(grain.transforms.Map):
        def __init__(self, workload: str) -> None:
            self.workload = workload

        def map(self, raw):
            return _decode(self.workload, raw)
    return GrainMap


def _GrainMap(workload: str):
    return _grain_map_class()(workload)


# --- Hugging Face datasets (Arrow) ---------------------------------------------------------------------

class HFArrow(_Loader):
    name = "HF datasets Arrow"
    modules = ("datasets",)

    def available(self):
        return _has("datasets")

    def write(self, data, folder):
        import datasets
        datasets.disable_progress_bars()
        feats = datasets.Features({"x": datasets.Sequence(datasets.Value("float32" if "x" in data else "int32")),
                                   "y": datasets.Value("int64")})

        def gen():
            for x, y in _records(data):
                yield {"x": x, "y": y}
        ds = datasets.Dataset.from_generator(gen, features=feats, cache_dir=os.path.join(folder, "cache"))
        ds.save_to_disk(os.path.join(folder, "arrow"))
        shutil.rmtree(os.path.join(folder, "cache"), ignore_errors=True)

    def loader(self, folder, workload, shuffle, workers, seed, batch, resume=False, state=None):
        import datasets
        ds = datasets.load_from_disk(os.path.join(folder, "arrow")).with_format("numpy")
        g = torch.Generator().manual_seed(seed)
        inner = RandomSampler(range(len(ds)), generator=g) if shuffle else SequentialSampler(range(len(ds)))
        return DataLoader(_HFBatches(ds, workload), sampler=BatchSampler(inner, batch, drop_last=False),
                          batch_size=None, num_workers=workers)


class _HFBatches(torch.utils.data.Dataset):
    """``ds[indices]`` (Arrow's batched take, NumPy format) per batch of indices."""

    def __init__(self, ds, workload: str) -> None:
        self.ds, self.workload = ds, workload

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, idx):
        got = self.ds[list(idx)]
        x = got["x"]
        xs = list(x) if isinstance(x, np.ndarray) and x.dtype != object else list(x)
        return to_batch(self.workload, xs, got["y"])


PEERS = [Mosaic(), WebDataset(), Grain(), HFArrow()]
