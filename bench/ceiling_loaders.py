"""The loaders of bench/ceiling.py: each writes the workload in its own format once and delivers it as
torch batches of the same content (dense: ``x`` [B, 784] float32 and ``y``; tokens: padded int64
``tokens`` [B, T], ``lengths`` [B], ``y``), each through its documented fast path.

A loader is a class with ``name``, ``available()`` (the import works), ``write(data, folder)`` (once,
kept while the folder has its ``done`` mark) and ``loader(folder, workload, shuffle, workers, seed,
batch)`` returning an iterable of batches; ``state(it)`` / ``resume(folder, ..., state)`` where it can
checkpoint mid-epoch (None: it cannot). Peers are imported only inside their class (benchmark-only,
bench/requirements-peers.txt).
"""
from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

import torch  # noqa: E402
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, SequentialSampler  # noqa: E402

DIM, VOCAB = 784, 50000
ROWS_PER_SHARD = 20000


def pad(seqs: list, dtype=np.int64) -> tuple[np.ndarray, np.ndarray]:
    """A list of 1-D arrays as a padded ``[B, T]`` array and the lengths (one vectorised scatter)."""
    lengths = np.fromiter((len(s) for s in seqs), np.int64, len(seqs))
    out = np.zeros((len(seqs), int(lengths.max()) if len(seqs) else 0), dtype)
    out[np.arange(out.shape[1])[None, :] < lengths[:, None]] = np.concatenate(seqs) if seqs else []
    return out, lengths


def to_batch(workload: str, xs: list, ys) -> dict:
    """The common batch of a list of samples (peers that hand out samples one by one)."""
    y = torch.from_numpy(np.asarray(ys, np.int64))
    if workload == "dense":
        return {"x": torch.from_numpy(np.stack(xs)), "y": y}
    tokens, lengths = pad(xs)
    return {"tokens": torch.from_numpy(tokens), "lengths": torch.from_numpy(lengths), "y": y}


class _Loader:
    name = ""
    stateful = False
    #: the modules a loader imports when it is built (imported before a cell's clock starts)
    modules: tuple = ()

    def available(self) -> bool:
        return True

    def import_modules(self) -> None:
        for m in self.modules:
            __import__(m)

    def state(self, it, loader):
        return None


# --- the ceiling: a hand-written np.memmap loader ---------------------------------------------------

class _MemmapDataset(torch.utils.data.Dataset):
    """A map-style dataset whose index is a whole batch (a BatchSampler as the sampler): one NumPy
    gather per batch from the memmaps (dense: fancy indexing; tokens: one scatter into the padded
    array, no per-sequence Python)."""

    def __init__(self, folder: str, workload: str) -> None:
        self.folder, self.workload = folder, workload
        self._open()

    def _open(self):
        f = self.folder
        self.y = np.load(os.path.join(f, "y.npy"), mmap_mode="r")
        if self.workload == "dense":
            self.x = np.load(os.path.join(f, "x.npy"), mmap_mode="r")
        else:
            self.tokens = np.load(os.path.join(f, "tokens.npy"), mmap_mode="r")
            self.offsets = np.load(os.path.join(f, "offsets.npy"))

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, idx):
        idx = np.asarray(idx, np.int64)
        y = torch.from_numpy(np.asarray(self.y[idx], np.int64))
        if self.workload == "dense":
            return {"x": torch.from_numpy(self.x[idx]), "y": y}
        start, end = self.offsets[idx], self.offsets[idx + 1]
        lengths = end - start
        width = int(lengths.max())
        valid = np.arange(width)[None, :] < lengths[:, None]
        src = (start[:, None] + np.arange(width)[None, :])[valid]
        out = np.zeros((len(idx), width), np.int64)
        out[valid] = self.tokens[src]
        return {"tokens": torch.from_numpy(out), "lengths": torch.from_numpy(lengths), "y": y}


class Memmap(_Loader):
    name = "DIY np.memmap"

    def write(self, data, folder):
        for k, v in data.items():
            np.save(os.path.join(folder, f"{k}.npy"), v)

    def loader(self, folder, workload, shuffle, workers, seed, batch, resume=False, state=None,
               loader_cls=DataLoader):
        ds = _MemmapDataset(folder, workload)
        g = torch.Generator().manual_seed(seed)
        inner = RandomSampler(ds, generator=g) if shuffle else SequentialSampler(ds)
        return loader_cls(ds, sampler=BatchSampler(inner, batch, drop_last=False), batch_size=None,
                          num_workers=workers, persistent_workers=False)


class MemmapStateful(Memmap):
    """The same dataset in torchdata's StatefulDataLoader (``state_dict`` / ``load_state_dict``)."""

    name = "DIY np.memmap, StatefulDataLoader"
    stateful = True
    modules = ("torchdata.stateful_dataloader",)

    def available(self):
        try:
            import torchdata.stateful_dataloader  # noqa: F401
            return True
        except ImportError:
            return False

    def loader(self, folder, workload, shuffle, workers, seed, batch, resume=False, state=None):
        from torchdata.stateful_dataloader import StatefulDataLoader
        dl = super().loader(folder, workload, shuffle, workers, seed, batch, loader_cls=StatefulDataLoader)
        if state is not None:
            dl.load_state_dict(state)
        return dl

    def state(self, it, loader):
        return loader.state_dict()


# --- cntkio -----------------------------------------------------------------------------------------

class _CntkioFactory:
    """A picklable source factory (DataLoader workers build their own source)."""

    def __init__(self, path, fmt, workload, shuffle, seed, global_randomization=False) -> None:
        self.path, self.fmt, self.workload, self.shuffle, self.seed = path, fmt, workload, shuffle, seed
        self.global_randomization = global_randomization

    def __call__(self):
        from cntkio import CBFDeserializer, CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
        if self.fmt == "cbf":
            d = CBFDeserializer(self.path)
        elif self.workload == "dense":
            d = CTFDeserializer(self.path, StreamDefs(x=StreamDef(field="x", shape=DIM), y=StreamDef(field="y", shape=1)))
        else:
            d = CTFDeserializer(self.path, StreamDefs(tokens=StreamDef(field="t", shape=VOCAB, is_sparse=True),
                                                       y=StreamDef(field="y", shape=1)))
        kw = dict(randomization_seed=self.seed) if self.shuffle else dict(randomize=False)
        if self.shuffle and self.global_randomization:
            kw["global_randomization"] = True
        return MinibatchSource(d, **kw)


class Cntkio(_Loader):
    """cntkio's MinibatchIterableDataset in a DataLoader (batch_size=None), tokens as ids."""

    stateful = True
    counts_samples = True
    modules = ("cntkio.integrations.torch", "cntkio.deserializers.cbf", "cntkio.deserializers.ctf",
               "cntkio.source", "torchdata.stateful_dataloader")

    def __init__(self, fmt: str, global_randomization: bool = False) -> None:
        self.fmt = fmt
        self.global_randomization = global_randomization
        self.name = f"cntkio {fmt.upper()}" + (", global randomization" if global_randomization else "")

    def write(self, data, folder):
        from ceiling_data import write_cbf, write_ctf
        (write_cbf if self.fmt == "cbf" else write_ctf)(data, os.path.join(folder, f"data.{self.fmt}"))

    def loader(self, folder, workload, shuffle, workers, seed, batch, resume=False, state=None):
        from cntkio.integrations.torch import MinibatchIterableDataset
        factory = _CntkioFactory(os.path.join(folder, f"data.{self.fmt}"), self.fmt, workload, shuffle, seed,
                                 self.global_randomization)
        ds = MinibatchIterableDataset(factory, batch, ids=("tokens",) if workload == "tokens" else ())
        if not resume:
            return _Renamed(DataLoader(ds, batch_size=None, num_workers=workers), workload)
        from torchdata.stateful_dataloader import StatefulDataLoader
        dl = StatefulDataLoader(ds, batch_size=None, num_workers=workers)
        if state is not None:
            dl.load_state_dict(state)
        return _Renamed(dl, workload)

    def state(self, it, loader):
        return loader.inner.state_dict()


class _Renamed:
    """cntkio's items in the common batch layout (names only: the tensors are the loader's own)."""

    def __init__(self, inner, workload) -> None:
        self.inner, self.workload = inner, workload

    def state_dict(self):
        return self.inner.state_dict()

    def __iter__(self):
        for item in self.inner:
            if self.workload == "dense":
                yield {"x": item["x"], "y": item["y"]}
            else:
                yield {"tokens": item["tokens"], "lengths": item["tokens_lengths"], "y": item["y"]}
