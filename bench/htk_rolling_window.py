#!/usr/bin/env python3
"""The legacy HTKMLFReader's ``readMethod = rollingWindow`` order (cntkio's rolling window) against
``blockRandomize``'s frame-mode order: CPU seconds to build one sweep's timeline and the peak
memory the build adds (tracemalloc of NumPy's allocations), interleaved, same frames and chunks.

    python bench/htk_rolling_window.py --frames 100000000 --chunks 400 --window 1000000 --repeat 3
    python bench/htk_rolling_window.py --frames 2000000 --chunks 8 --window 100000 --repeat 1   # smoke

Frames are split over ``--chunks`` equal chunks (CNTK's HTK chunks hold ~ 250k frames each).
"""
from __future__ import annotations

import argparse
import json
import time
import tracemalloc

import numpy as np

from cntkio.engine.randomizer import BlockRandomizer, RollingWindowRandomizer


def _one(make, sweep: int) -> tuple[float, int]:
    r = make()
    tracemalloc.start()
    t = time.process_time()
    tl = r.timeline(sweep)
    dt = time.process_time() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert tl.num_sequences == r.num_sequences
    return dt, peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=100_000_000)
    ap.add_argument("--chunks", type=int, default=400)
    ap.add_argument("--window", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    per = a.frames // a.chunks
    lengths = [np.ones(per, np.int64) for _ in range(a.chunks)]
    makers = {"rollingWindow": lambda: RollingWindowRandomizer(lengths, a.window, 0),
              "blockRandomize": lambda: BlockRandomizer(lengths, a.window, True, 0)}
    res: dict[str, list] = {k: [] for k in makers}
    for rep in range(a.repeat):                      # interleaved
        for k, make in makers.items():
            res[k].append(_one(make, rep))
    out = {k: {"cpu_s": min(x[0] for x in v), "peak_bytes": max(x[1] for x in v),
               "bytes_per_frame": max(x[1] for x in v) / (per * a.chunks)} for k, v in res.items()}
    for k, v in out.items():
        print(f"{k:15s} cpu {v['cpu_s']:.3f} s/sweep  peak {v['peak_bytes'] / 2**20:.1f} MiB "
              f"({v['bytes_per_frame']:.2f} B/frame)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "results": out}, f, indent=1)


if __name__ == "__main__":
    main()
