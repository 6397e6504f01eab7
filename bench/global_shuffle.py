#!/usr/bin/env python3
"""Global randomization against CNTK's block randomizer (window shuffle): CPU per sample of one
shuffled sweep of CBF, and the shuffle quality of each, in one run.

    nice -n 10 python bench/global_shuffle.py --quick        # 50k dense rows, 20k token sequences
    nice -n 10 python bench/global_shuffle.py                # issue 33's sizes: 500k rows, 200k sequences

The data are bench/ceiling.py's workloads (``ceiling_data.make``, written once under
``bench/data/global-shuffle``). Per workload and repeat, the two modes alternate, each a fresh
``MinibatchSource(CBFDeserializer(file), max_sweeps=1)`` read to the end with
``next_tensor_ready`` (the torch dataset's path; token ids as ``ids``), 256 samples a minibatch for
rows and 256 x the mean length for sequences: ``block`` is the default window of 128 chunks,
``block, 2 chunks`` a window of 2 chunks (the quick files have 5 and 4 chunks of 32 MB, so the
default window holds them all), ``global`` adds ``global_randomization=True``. Figures: process CPU
microseconds per sample (a row or a sequence; every thread; steadier than wall time on a shared
machine) and wall samples/s, best of ``--repeat``;
shuffle quality of sweep 0 (rank correlation between storage and delivery order, mean distance
moved as a fraction of the sweep: ``cntkio bench --randomize``'s figures).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "src"))

import ceiling_data  # noqa: E402
from cntkio import CBFDeserializer, MinibatchSource  # noqa: E402
from cntkio.tensor_ready import TensorLayout  # noqa: E402
from cntkio.tools.bench import shuffle_quality  # noqa: E402


def _file(root: str, workload: str, n: int) -> tuple[str, float]:
    path = os.path.join(root, f"{workload}-{n}.cbf")
    data = ceiling_data.make(workload, n)
    mean = 1.0 if workload == "dense" else float(data["offsets"][-1]) / n
    if not os.path.exists(path):
        os.makedirs(root, exist_ok=True)
        ceiling_data.write_cbf(data, path + ".tmp")
        os.replace(path + ".tmp", path)
    return path, mean


MODES = {"block": {}, "block, 2 chunks": {"randomization_window_in_chunks": 2},
         "global": {"global_randomization": True}}


def _sweep(path: str, size: int, ids, mode: str) -> tuple[float, float]:
    kw = MODES[mode]
    layout = TensorLayout(frozenset(ids))
    c0, t0 = time.process_time(), time.perf_counter()
    src = MinibatchSource(CBFDeserializer(path), max_sweeps=1, randomization_seed=0, **kw)
    while src.next_tensor_ready(size, layout=layout) is not None:
        pass
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    src.close()
    return cpu, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--data", default=os.path.join(HERE, "data", "global-shuffle"))
    args = ap.parse_args()
    sizes = {"dense": 50_000, "tokens": 20_000} if args.quick else {"dense": 500_000, "tokens": 200_000}
    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    print("| workload | mode | CPU us/sample | samples/s | rank correlation | distance moved |")
    print("|---|---|---|---|---|---|")
    for workload, n in sizes.items():
        path, mean = _file(args.data, workload, n)
        size = 256 if workload == "dense" else int(round(256 * mean))
        ids = ("tokens",) if workload == "tokens" else ()
        best: dict = {}
        for _ in range(args.repeat):
            for mode in MODES:
                cpu, wall = _sweep(path, size, ids, mode)
                old = best.get(mode, (cpu, wall))
                best[mode] = (min(cpu, old[0]), min(wall, old[1]))
        for mode in MODES:
            cpu, wall = best[mode]
            with MinibatchSource(CBFDeserializer(path), max_sweeps=1, randomization_seed=0, **MODES[mode]) as src:
                q = shuffle_quality(src.sweep_order(0))
            print(f"| {workload} ({n:,}) | {mode} | {1e6 * cpu / n:.2f} | {n / wall:,.0f} | "
                  f"{q['rank_correlation']:.3f} | {q['mean_distance']:.3f} |", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
