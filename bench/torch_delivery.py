#!/usr/bin/env python3
"""PyTorch delivery against raw iteration: one sweep of each benchmark file, both ways, in one run.

    python bench/peers/gen_data.py bench/data      # once (git-ignored)
    python bench/torch_delivery.py bench/data [--only dense,seq] [--sizes 1024,256] [--repeat 5]
    python bench/torch_delivery.py bench/data --head-mb 2 --repeat 1    # a quick smoke run

For every dataset (CTF file) and minibatch size:

* **raw** — ``MinibatchSource(..., randomize=False, max_sweeps=1)`` and ``next_minibatch(size)``
  until the sweep ends (NumPy outputs, nothing converted);
* **torch** — the documented PyTorch path: ``DataLoader(MinibatchIterableDataset(factory, size),
  batch_size=None)`` over the same source settings, every item's tensors touched (their
  ``shape``; a sparse stream's CSR tensor, a dense stream's padded tensor and every
  ``_lengths`` tensor exist by then: nothing is lazy); the samples are counted from the
  ``_lengths`` tensors once after the loop (as raw counts them from an attribute, no reduction
  per item);
* **torch, ids** (seq only, whose streams are one-hot) — the same with ``ids=("word", "tag")``:
  int64 token ids ``[S, T]`` plus masks instead of CSR tensors.

Each includes building the source (the index) and is timed ``--repeat`` times, raw and torch
interleaved (raw, torch, raw, torch, ...) so that drift on a shared machine hits both alike.
``ratio`` is raw time / torch time of the best runs; ``median of pairs`` the median over repeats
of the ratio of the two runs made back to back. MB/s is file bytes (10^6) over wall time.
``cpu ratio`` is the same over process CPU time (``time.process_time``, every thread: steadier
than wall time on a shared machine, and what wall time becomes when no second core is free);
``main us/mb`` the consumer thread's CPU time per minibatch (``time.thread_time``), raw / torch:
the per-item work the torch path adds (the reading threads' work is the same in both).
``--head-mb N`` runs on the first N MB of every file (whole lines), for smoke runs.
``--randomize`` reads randomized (window of 4 chunks) instead.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs  # noqa: E402

STREAMS = {
    "dense": dict(features=StreamDef(field="features", shape=784), labels=StreamDef(field="labels", shape=10)),
    "sparse": dict(src=StreamDef(field="src", shape=50000, is_sparse=True),
                   tgt=StreamDef(field="tgt", shape=50000, is_sparse=True)),
    "seq": dict(word=StreamDef(field="word", shape=40000, is_sparse=True),
                tag=StreamDef(field="tag", shape=45, is_sparse=True)),
    "float": dict(x=StreamDef(field="x", shape=150), y=StreamDef(field="y", shape=1)),
}
IDS = {"seq": ("word", "tag")}


class Factory:
    """A picklable source factory (what the guide tells PyTorch users to pass)."""

    def __init__(self, path: str, name: str, randomize: bool) -> None:
        self.path, self.name, self.randomize = path, name, randomize

    def __call__(self) -> MinibatchSource:
        kw = dict(randomization_window_in_chunks=4) if self.randomize else dict(randomize=False)
        return MinibatchSource(CTFDeserializer(self.path, StreamDefs(**STREAMS[self.name])), max_sweeps=1, **kw)


def time_raw(factory: Factory, size: int) -> tuple[float, int, int, float, float]:
    t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
    src = factory()
    first = src.stream_infos()[0]
    n = samples = 0
    while True:
        mb = src.next_minibatch(size)
        if not mb:
            break
        samples += mb[first].num_samples
        n += 1
    t, c, m = time.perf_counter() - t0, time.process_time() - c0, time.thread_time() - m0
    src.close()
    return t, n, samples, c, m


def time_torch(factory: Factory, size: int, ids: tuple = ()) -> tuple[float, int, int, float, float]:
    import torch
    from torch.utils.data import DataLoader
    from cntkio.integrations.torch import MinibatchIterableDataset
    first = next(iter(STREAMS[factory.name]))
    t0, c0, m0 = time.perf_counter(), time.process_time(), time.thread_time()
    ds = MinibatchIterableDataset(factory, size, ids=ids)
    n = 0
    lengths = []  # summed once after the loop: a torch reduction per item is not delivery
    for batch in DataLoader(ds, batch_size=None):
        for t in batch.values():
            t.shape  # noqa: B018 (touch every tensor)
        lengths.append(batch[first + "_lengths"])
        n += 1
    samples = int(torch.cat(lengths).sum()) if lengths else 0
    t, c, m = time.perf_counter() - t0, time.process_time() - c0, time.thread_time() - m0
    ds._make_source().close()
    return t, n, samples, c, m


def head_copy(path: str, mb: float, out_dir: str) -> str:
    """The first ``mb`` MB of ``path`` cut after a whole sequence (a line whose id changes)."""
    with open(path, "rb") as f:
        data = f.read(int(mb * 1e6))
        data += f.readline()
    lines = data.splitlines(keepends=True)
    last_id = lines[-1].split(maxsplit=1)[0] if lines and not lines[-1].startswith(b"|") else None
    while last_id is not None and len(lines) > 1 and lines[-2].split(maxsplit=1)[0] == last_id:
        lines.pop()
    if last_id is not None and len(lines) > 1:
        lines.pop()
    out = os.path.join(out_dir, os.path.basename(path))
    with open(out, "wb") as f:
        f.write(b"".join(lines))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", help="folder written by gen_data.py")
    ap.add_argument("--only", default="dense,sparse,seq,float")
    ap.add_argument("--sizes", default="1024,256", help="minibatch sizes in samples")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved repeats of every measurement")
    ap.add_argument("--randomize", action="store_true", help="randomized reading (window of 4 chunks)")
    ap.add_argument("--head-mb", type=float, default=0, help="use only the first N MB of each file")
    ap.add_argument("--json", help="write the numbers here too")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory() if args.head_mb else None
    rows = []
    print("| dataset | MB | minibatch | raw MB/s | torch MB/s | ratio | median of pairs | torch, ids MB/s "
          "| ids ratio | minibatches | cpu ratio (ids) | main us/mb raw / torch (ids) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only.split(","):
        path = os.path.join(args.data, name + ".ctf")
        if tmp is not None:
            path = head_copy(path, args.head_mb, tmp.name)
        mb = os.path.getsize(path) / 1e6
        factory = Factory(path, name, args.randomize)
        ids = IDS.get(name, ())
        for size in (int(s) for s in args.sizes.split(",")):
            best = {"raw": float("inf"), "torch": float("inf"), "ids": float("inf")}
            cpu = {k: float("inf") for k in best}
            main_cpu = {k: float("inf") for k in best}
            pairs, id_pairs = [], []
            for _ in range(args.repeat):
                tr, n, samples, cpu_r, m_r = time_raw(factory, size)
                tt, n_t, samples_t, cpu_t, m_t = time_torch(factory, size)
                cpu["raw"], cpu["torch"] = min(cpu["raw"], cpu_r), min(cpu["torch"], cpu_t)
                main_cpu["raw"], main_cpu["torch"] = min(main_cpu["raw"], m_r), min(main_cpu["torch"], m_t)
                assert (n, samples) == (n_t, samples_t), (name, size, n, samples, n_t, samples_t)
                best["raw"], best["torch"] = min(best["raw"], tr), min(best["torch"], tt)
                pairs.append(tr / tt)
                if ids:
                    ti, n_i, samples_i, cpu_i, m_i = time_torch(factory, size, ids)
                    assert (n, samples) == (n_i, samples_i)
                    cpu["ids"], main_cpu["ids"] = min(cpu["ids"], cpu_i), min(main_cpu["ids"], m_i)
                    best["ids"] = min(best["ids"], ti)
                    id_pairs.append(tr / ti)
            row = dict(dataset=name, mb=mb, minibatch=size, minibatches=n, raw=mb / best["raw"],
                       torch=mb / best["torch"], ratio=best["raw"] / best["torch"],
                       ratio_pairs=float(np.median(pairs)), pairs=pairs, cpu_ratio=cpu["raw"] / cpu["torch"],
                       main_us_raw=main_cpu["raw"] / n * 1e6, main_us_torch=main_cpu["torch"] / n * 1e6)
            ids_cells = "| |"
            if ids:
                row.update(ids=mb / best["ids"], ids_ratio=best["raw"] / best["ids"],
                           ids_pairs=id_pairs, ids_cpu_ratio=cpu["raw"] / cpu["ids"],
                           main_us_ids=main_cpu["ids"] / n * 1e6)
                ids_cells = f"| {row['ids']:.1f} | {row['ids_ratio']:.0%} (pairs {np.median(id_pairs):.0%}) |"
            rows.append(row)
            cpu_cells = f"{row['cpu_ratio']:.0%}" + (f" ({row['ids_cpu_ratio']:.0%})" if ids else "")
            main_cells = f"{row['main_us_raw']:.1f} / {row['main_us_torch']:.1f}" + \
                (f" ({row['main_us_ids']:.1f})" if ids else "")
            print(f"| {name} | {mb:.0f} | {size} | {row['raw']:.1f} | {row['torch']:.1f} | {row['ratio']:.0%} "
                  f"| {row['ratio_pairs']:.0%} {ids_cells} {n} | {cpu_cells} | {main_cells} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
