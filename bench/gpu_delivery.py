#!/usr/bin/env python3
"""Minibatches onto a CUDA device: raw reading against ``to_torch(device=...)`` with and without
pinned memory, and DataLoader's ``pin_memory=True`` followed by a ``non_blocking`` copy.

    python bench/gpu_delivery.py [--mb 50] [--size 1024] [--repeat 3]    # needs a CUDA device
    python bench/gpu_delivery.py --mb 1 --repeat 1 --device cpu          # smoke run without one

It writes two CTF files of about ``--mb`` MB each in a temporary folder (dense: 64 values per
sample; sparse: 8 of 10,000 per sample, with a one-hot label stream) and reads each one sweep
(``randomize=False``) per way, the ways interleaved and repeated; the best run of each is kept.

* ``raw`` — ``next_minibatch(size)`` only (NumPy outputs);
* ``to_torch cpu`` — plus ``to_torch(mb)``;
* ``to_torch dev`` — plus ``to_torch(mb, device=DEV)``, then a ``synchronize``;
* ``to_torch dev pinned`` — ``to_torch(mb, device=DEV, pin_memory=True)`` (page-locked staging,
  ``non_blocking`` copies);
* ``DataLoader pinned`` — ``DataLoader(MinibatchIterableDataset(...), batch_size=None,
  pin_memory=True)``, every tensor ``.to(DEV, non_blocking=True)``.

MB/s is file bytes (10^6) over wall time, ``ratio`` the way's MB/s over raw's.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

import torch  # noqa: E402

from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs  # noqa: E402
from cntkio.integrations.torch import MinibatchIterableDataset, to_torch  # noqa: E402


def _write_dense(path: str, mb: float) -> None:
    rng = np.random.default_rng(1)
    with open(path, "w") as f:
        written = 0
        while written < mb * 1e6:
            x = rng.standard_normal((2000, 64)).round(4)
            y = rng.integers(0, 10, 2000)
            text = "".join("|x " + " ".join(map(str, row)) + f"\t|y {c}:1\n" for row, c in zip(x.tolist(), y))
            f.write(text)
            written += len(text)


def _write_sparse(path: str, mb: float) -> None:
    rng = np.random.default_rng(2)
    with open(path, "w") as f:
        written = 0
        while written < mb * 1e6:
            idx = rng.integers(0, 10000, (2000, 8))
            y = rng.integers(0, 10, 2000)
            text = "".join("|x " + " ".join(f"{i}:1" for i in row) + f"\t|y {c}:1\n" for row, c in zip(idx.tolist(), y))
            f.write(text)
            written += len(text)


def _streams(kind: str) -> StreamDefs:
    if kind == "dense":
        return StreamDefs(x=StreamDef(field="x", shape=64), y=StreamDef(field="y", shape=10, is_sparse=True))
    return StreamDefs(x=StreamDef(field="x", shape=10000, is_sparse=True), y=StreamDef(field="y", shape=10, is_sparse=True))


def _source(path: str, kind: str) -> MinibatchSource:
    return MinibatchSource(CTFDeserializer(path, _streams(kind)), randomize=False, max_sweeps=1)


def _sweep(path: str, kind: str, size: int, way: str, dev: torch.device) -> float:
    t = time.perf_counter()
    if way == "DataLoader pinned":
        ds = MinibatchIterableDataset(lambda: _source(path, kind), size)
        loader = torch.utils.data.DataLoader(ds, batch_size=None, pin_memory=dev.type == "cuda")
        for item in loader:
            for v in item.values():
                v.to(dev, non_blocking=True)
    else:
        src = _source(path, kind)
        while True:
            mb = src.next_minibatch(size)
            if not mb:
                break
            if way == "to_torch cpu":
                to_torch(mb)
            elif way == "to_torch dev":
                to_torch(mb, device=dev)
            elif way == "to_torch dev pinned":
                to_torch(mb, device=dev, pin_memory=dev.type == "cuda")
        src.close()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t


WAYS = ("raw", "to_torch cpu", "to_torch dev", "to_torch dev pinned", "DataLoader pinned")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=50.0)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="cuda:0")
    a = ap.parse_args()
    dev = torch.device(a.device)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    print(f"# gpu_delivery: {time.strftime('%Y-%m-%d %H:%M')} device {name}, torch {torch.__version__}, "
          f"{os.cpu_count()} CPUs, --mb {a.mb} --size {a.size} --repeat {a.repeat}")
    with tempfile.TemporaryDirectory() as tmp:
        for kind, writer in (("dense", _write_dense), ("sparse", _write_sparse)):
            path = os.path.join(tmp, kind + ".ctf")
            writer(path, a.mb)
            size_mb = os.path.getsize(path) / 1e6
            _sweep(path, kind, a.size, "to_torch dev pinned", dev)      # warm up CUDA and the page cache
            best = {w: float("inf") for w in WAYS}
            for _ in range(a.repeat):
                for w in WAYS:
                    best[w] = min(best[w], _sweep(path, kind, a.size, w, dev))
            print(f"\n{kind} ({size_mb:.1f} MB), minibatch {a.size}")
            print("| way | s | MB/s | ratio to raw |\n|---|---:|---:|---:|")
            for w in WAYS:
                print(f"| {w} | {best[w]:.3f} | {size_mb / best[w]:.0f} | {best['raw'] / best[w]:.2f} |")


if __name__ == "__main__":
    main()
