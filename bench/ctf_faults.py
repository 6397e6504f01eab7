#!/usr/bin/env python3
"""CPU time and page faults per MB of the CTF reader, at a tenth of a file and at the whole file.

    python bench/ctf_faults.py bench/data [--only seq,float] [--repeat 3]

For each dataset: **parse** = the deserializer built and every chunk loaded then dropped
(``get_chunk``), and **sweep** = one sweep through ``MinibatchSource(randomize=False)`` at 256
samples, each on the first 10 MB of the file (whole sequences) and on the whole file. Per MB
of text: user and system CPU milliseconds and minor page faults (``getrusage`` of the process,
so the loader threads count), and wall milliseconds (best). CPU time and faults are steadier
than wall time on a shared machine: the faults are what grew with the file size (chunk outputs
faulted in page by page for every chunk; see docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, HERE)

from cntkio import CTFDeserializer, MinibatchSource, StreamDefs  # noqa: E402
from cntkio.deserializers.base import build_deserializer  # noqa: E402
from torch_delivery import STREAMS, head_copy  # noqa: E402


def measure(fn, path: str, name: str) -> tuple[float, float, float, float]:
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    fn(path, name)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    mb = os.path.getsize(path) / 1e6
    return ((r1.ru_utime - r0.ru_utime) / mb * 1e3, (r1.ru_stime - r0.ru_stime) / mb * 1e3,
            (r1.ru_minflt - r0.ru_minflt) / mb, wall / mb * 1e3)


def parse(path: str, name: str) -> None:
    d = build_deserializer(CTFDeserializer(path, StreamDefs(**STREAMS[name])))
    for c in d.chunk_infos():
        chunk = d.get_chunk(c.id)
        del chunk
    d.close()


def sweep(path: str, name: str) -> None:
    src = MinibatchSource(CTFDeserializer(path, StreamDefs(**STREAMS[name])), randomize=False, max_sweeps=1)
    while src.next_minibatch(256):
        pass
    src.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--only", default="seq,float")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--head-mb", type=float, default=10)
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    print("| dataset | what | file MB | user ms/MB | sys ms/MB | minor faults/MB | wall ms/MB (best) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only.split(","):
        full = os.path.join(args.data, name + ".ctf")
        small = head_copy(full, args.head_mb, tmp.name)
        for what, fn in (("parse", parse), ("sweep", sweep)):
            fn(small, name)  # warm-up
            for path in (small, full):
                runs = [measure(fn, path, name) for _ in range(args.repeat)]
                u, s, f, w = zip(*runs)
                print(f"| {name} | {what} | {os.path.getsize(path) / 1e6:.0f} | {statistics.median(u):.2f} "
                      f"| {statistics.median(s):.2f} | {statistics.median(f):.0f} | {min(w):.2f} |", flush=True)
    tmp.cleanup()


if __name__ == "__main__":
    main()
