#!/usr/bin/env python3
"""One sweep through ``DataLoader(MinibatchIterableDataset(...), batch_size=None, num_workers=k)``
for k = 0 and the given worker counts, interleaved (0, 2, 0, 2, ...) so that drift on a shared
machine hits both alike; wall time per sweep, worker start-up included (that is what a training
epoch pays).

    python bench/dataloader_workers.py [--copies 20] [--minibatch 64] [--workers 2] [--repeat 3]

Data: the shipped ``examples/digits/digits_train.ctf`` (1437 one-line sequences, 64 dense
features, 10 one-hot labels) written ``--copies`` times into a temporary file, randomized reading.
docs/from-pytorch.md quotes a run.
"""
import argparse
import os
import tempfile
import time
import warnings
from pathlib import Path

import torch

import cntkio as io
from cntkio.integrations.torch import MinibatchIterableDataset

ROOT = Path(__file__).resolve().parents[1]


class _Factory:
    """A picklable zero-argument source factory (each DataLoader worker builds its own source)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self) -> io.MinibatchSource:
        return io.MinibatchSource(io.CTFDeserializer(self.path, io.StreamDefs(
            features=io.StreamDef(field="features", shape=64), labels=io.StreamDef(field="labels", shape=10))),
            randomization_seed=1)


def sweep(path: str, minibatch: int, workers: int) -> tuple[float, int]:
    ds = MinibatchIterableDataset(_Factory(path), minibatch_size=minibatch)
    t = time.perf_counter()
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers)
    samples = sum(int(b["features_lengths"].sum()) for b in loader)
    return time.perf_counter() - t, samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=20)
    ap.add_argument("--minibatch", type=int, default=64)
    ap.add_argument("--workers", type=int, nargs="+", default=[2])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    warnings.simplefilter("ignore")          # the dataset's own warning about worker processes
    text = (ROOT / "examples" / "digits" / "digits_train.ctf").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "digits.ctf")
        with open(path, "w") as f:
            f.write(text * a.copies)
        counts = [0, *a.workers]
        times: dict[int, list[float]] = {k: [] for k in counts}
        samples = None
        for _ in range(a.repeat):
            for k in counts:
                t, n = sweep(path, a.minibatch, k)
                assert samples in (None, n), "every run reads the whole sweep"
                samples = n
                times[k].append(t)
    print(f"{samples} samples per sweep, minibatches of {a.minibatch}, {a.repeat} interleaved runs")
    for k in counts:
        best = min(times[k])
        print(f"num_workers={k}: best {best:.2f} s, all " + ", ".join(f"{t:.2f}" for t in times[k])
              + ("" if k == 0 else f"  ({best / min(times[0]):.0f}x num_workers=0)"))


if __name__ == "__main__":
    main()
