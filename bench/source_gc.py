#!/usr/bin/env python3
"""Garbage-collector time inside MinibatchSource sweeps, in the state source_throughput.py leaves.

    python bench/source_gc.py bench/data [--dataset seq] [--repeat 5] [--no-dataloader]

First, as ``bench/source_throughput.py`` does for each dataset, it parses the file and runs the
``DataLoader`` over the parsed arrays five times (which leaves many long-lived objects: torch,
scipy); unless ``--no-dataloader``. Then it reads ``--repeat`` pairs of sweeps, not randomized and
randomized (random access), and reports per mode the collections of each generation and their
time (``gc.callbacks``), and the median of the paired source/random time ratios. It shows what a
collection of the oldest generation costs in such a process, and how often a sweep triggers one.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import source_throughput as st  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--dataset", default="seq")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-dataloader", action="store_true")
    args = ap.parse_args()
    name = args.dataset
    path = os.path.join(args.data, name + ".ctf")
    if not args.no_dataloader:
        for _ in range(5):
            _, _, chunks = st.time_parse(path, name)
            st.time_dataloader(chunks, name)
            del chunks
    gc.collect()
    stats: dict = {}
    mode = [None, 0.0]

    def timing(phase, info):
        if phase == "start":
            mode[1] = time.perf_counter()
        else:
            entry = stats.setdefault((mode[0], info["generation"]), [0, 0.0])
            entry[0] += 1
            entry[1] += time.perf_counter() - mode[1]
    gc.callbacks.append(timing)
    pairs = []
    for _ in range(args.repeat):
        mode[0] = "source"
        ts = st.time_source(path, name, False)[0]
        mode[0] = "random"
        tr = st.time_source(path, name, True)[0]
        pairs.append(ts / tr)
    gc.callbacks.remove(timing)
    print(f"{name}: {len(gc.get_objects())} objects tracked by the collector after the sweeps; "
          f"{'no DataLoader phase' if args.no_dataloader else 'after the DataLoader phase'}; "
          f"{args.repeat} sweeps per mode")
    print("| mode | generation | collections | total ms | ms per collection |")
    print("| --- | --- | --- | --- | --- |")
    for (m, g), (n, t) in sorted(stats.items()):
        print(f"| {m} | {g} | {n} | {t * 1e3:.1f} | {t * 1e3 / n:.2f} |")
    print(f"random/source, median of pairs: {statistics.median(pairs):.0%} "
          f"({' '.join(f'{x:.2f}' for x in pairs)})")


if __name__ == "__main__":
    main()
