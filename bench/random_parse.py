#!/usr/bin/env python3
"""The C parser on sequences picked one by one: a randomized sweep's order against file order.

    python bench/random_parse.py bench/data/seq.ctf [--field word:40000:sparse ...] [--repeat 8]
    python bench/random_parse.py bench/data/seq.ctf --prefetch-lines 0 8

Parses every sequence of the file with ``parse_chunk`` and per-sequence ``ends``, in batches of
``--batch`` sequences, in the order of sweep 0 of a randomized ``MinibatchSource`` (window 4
chunks), and in file order; the file's pages are dropped from the process before each pass
(``MADV_DONTNEED``; they stay in the page cache). With ``--prefetch-lines N ...`` it builds the
C parser once per N (``-DCTF_PREFETCH_LINES=N``, the compiler flags of the installed build) into a
temporary folder and alternates the builds pass by pass in one process, so that they share the
machine's slow and fast moments. Prints the best and median seconds of each.
"""
from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import mmap
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(ROOT, "src"))

from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs  # noqa: E402

FIELDS = {"seq.ctf": ["word:40000:sparse", "tag:45:sparse"], "dense.ctf": ["features:784", "labels:10"],
          "float.ctf": ["x:150", "y:1"], "sparse.ctf": ["src:50000:sparse", "tgt:50000:sparse"]}


def build(lines: int, folder: str):
    """The C parser compiled with CTF_PREFETCH_LINES=lines, loaded as a module."""
    import numpy
    src = os.path.join(ROOT, "src", "cntkio", "_native", "ctf.c")
    out = os.path.join(folder, f"_ctf_{lines}.so")
    cmd = [sysconfig.get_config_var("CC") or "gcc", "-shared", "-fPIC", "-std=c11",
           *sysconfig.get_config_var("CFLAGS").split(), f"-DCTF_PREFETCH_LINES={lines}",
           "-DNPY_NO_DEPRECATED_API=NPY_1_7_API_VERSION", f"-I{sysconfig.get_paths()['include']}",
           f"-I{numpy.get_include()}", src, "-o", out]
    subprocess.run(cmd, check=True)
    loader = importlib.machinery.ExtensionFileLoader("_ctf", out)
    spec = importlib.util.spec_from_file_location("_ctf", out, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return f"CTF_PREFETCH_LINES={lines}", module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--field", action="append", help="name:dim[:sparse] (default: the bench file's)")
    ap.add_argument("--batch", type=int, default=3200, help="sequences per parse call")
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--prefetch-lines", type=int, nargs="*", help="compare builds with these values")
    args = ap.parse_args()
    fields = args.field or FIELDS[os.path.basename(args.file)]
    streams = {}
    for f in fields:
        name, dim, *sparse = f.split(":")
        streams[name] = StreamDef(field=name, shape=int(dim), is_sparse=bool(sparse))
    src = MinibatchSource(CTFDeserializer(args.file, StreamDefs(**streams)), max_sweeps=1,
                          randomization_window_in_chunks=4)
    reader = src._reader.policy
    corpus, tl = reader.corpus, reader.walker.timeline(0)
    d = corpus.primary
    g = d._kept_all[d._chunk_base[corpus._chunk_ids[tl.chunk]] + tl.index]
    index, m = d.index, d._mapping()
    orders = {"randomized order": g, "file order": np.sort(g)}
    if args.prefetch_lines:
        tmp = tempfile.mkdtemp(prefix="cntkio-bench-")
        builds = [build(n, tmp) for n in args.prefetch_lines]
    else:
        builds = [("installed build", d.backend)]
    times: dict = {(b, o): [] for b, _ in builds for o in orders}
    B = args.batch
    for _ in range(args.repeat):
        for label, module in builds:
            for oname, order in orders.items():
                starts, ends, fl = index.starts[order], index.starts[order + 1], index.first_lines[order]
                m.madvise(mmap.MADV_DONTNEED)
                t0 = time.perf_counter()
                for a in range(0, len(order), B):
                    module.parse_chunk(m, 0, starts[a:a + B], fl[a:a + B], index.ids_mode, d._stream_args,
                                       False, 1, 0, ends[a:a + B])
                times[(label, oname)].append(time.perf_counter() - t0)
    mb = os.path.getsize(args.file) / 1e6
    print(f"{args.file}: {len(g)} sequences, {mb:.0f} MB, batches of {B}, {args.repeat} passes each")
    print("| build | order | best s | median s | MB/s (best) |")
    print("| --- | --- | --- | --- | --- |")
    for (label, oname), t in times.items():
        print(f"| {label} | {oname} | {min(t):.3f} | {statistics.median(t):.3f} | {mb / min(t):.0f} |")
    src.close()


if __name__ == "__main__":
    main()
