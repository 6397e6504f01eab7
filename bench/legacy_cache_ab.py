#!/usr/bin/env python3
"""UCIFastReader's binary cache against ``read()`` of the same file: interleaved A/B runs.

    python bench/legacy_cache_ab.py bench/data/legacy [--uci-mb 200] [--repeat 9]
    python bench/legacy_cache_ab.py /tmp/legacy --small        # smoke run on tiny data

Issue 16's target: a sweep from the cache at >= 50% of the speed of ``read()``ing the cache file.
On a loaded machine single timings swing by 3x, so every variant runs once per round, rounds
interleaved, the variants' order turned each round, and the medians (and bests) are compared
with the ``read()`` runs of the same rounds.

Untouched rows (the sweep makes the minibatches and calls ``asarray`` of every stream, as
``bench/legacy_throughput.py``; the target row is ``default``):

* ``read()``: the cache file's bytes read in 16 MiB blocks into one buffer, touched before and
  reused (page cache warm: ``read()`` at its best, no fresh memory faulted in);
* ``default``: a sweep (256-record minibatches) with the cache's default chunks (the engine's
  32 MiB), as cntkio reads it since issue 30: every chunk's rows read with ``pread`` into arrays of
  its own, the minibatches copied out of them (nothing mapped: a cache cut short under the reader
  is an error, never SIGBUS);
* ``cacheMaps``: the reader option ``cacheMaps = true`` (the default before issue 30): each
  batch's run of consecutive records (a run of 1 MiB or more) handed out as a writable
  copy-on-write mapping of the file (``DenseStream.private_map``: a private map, nothing read
  until touched, a change copies its page privately), smaller runs read into pooled buffers;
* ``pread copies``: ``cacheMaps`` before the mappings: every run read from the file into the
  minibatches' own buffer (``DenseStream.read_rows``, one ``preadv`` per run) from the pool of
  ``cntkio.engine.buffers``;
* ``4MiB chunks``: ``default`` with the cache cut in chunks of 4 MiB (the text's chunk size);
* ``cacheViews``: the reader option ``cacheViews = true``: read-only views of the cache's shared
  map (an in-place change raises).

Touched rows (the honest pair when the minibatches are mappings the sweep does not read): every
minibatch's arrays summed (``ndarray.sum``), against ``read()`` with each block summed the same
way (the bytes as float32):

* ``read()+sum``; ``default+sum``; ``cacheMaps+sum``; ``pread copies+sum``.

``uci.txt`` is made as in ``bench/legacy_throughput.py`` (same folder layout, reused).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))
sys.path.insert(0, HERE)

import legacy_throughput as lt  # noqa: E402
import numpy as np  # noqa: E402
from cntkio.readers import build_reader  # noqa: E402
from cntkio.readers.epochs import EpochReader  # noqa: E402
from cntkio.readers.legacy.binary import BinaryFile  # noqa: E402

_MAP_ROWS = BinaryFile.map_rows


def _no_map(self, entry, a, b):
    """``pread copies``: no run is mapped; every one is read into the pool's buffers."""
    return None


def _patch(variant: str) -> None:
    BinaryFile.map_rows = _no_map if variant == "pread" else _MAP_ROWS


def _sweep_sum(section: dict, minibatch_size: int = 256) -> float:
    """``lt._sweep`` with every minibatch's dense arrays summed."""
    t0 = time.perf_counter()
    src = build_reader(section, max_sweeps=1)
    total = 0.0
    for mb in EpochReader(src, minibatch_size=minibatch_size, epoch_size=0).epoch(0):
        for _, v in mb.items():
            if not v.is_sparse:
                total += float(v.asarray().sum())
    src.close()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--uci-mb", type=float, default=200)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--small", action="store_true", help="tiny data, 2 rounds (a smoke run)")
    args = ap.parse_args()
    if args.small:
        args.uci_mb, args.repeat = 2, 2
    os.makedirs(args.folder, exist_ok=True)
    uci = os.path.join(args.folder, "uci.txt")
    if not os.path.exists(uci) or abs(os.path.getsize(uci) - args.uci_mb * 1e6) > 0.1 * args.uci_mb * 1e6 + 1e5:
        lt._write_uci(uci, args.uci_mb)
    cache = os.path.join(args.folder, "uci.bin")
    if os.path.exists(cache):
        os.remove(cache)
    lt._sweep(lt._uci_section(args.folder, True))          # builds the cache

    block = np.ones(1 << 24, np.uint8)             # one buffer, touched before: read() at its best

    def read_run(summed: bool = False) -> float:
        t0 = time.perf_counter()
        total = 0.0
        with open(cache, "rb", buffering=0) as fh:
            while True:
                n = fh.readinto(block)
                if not n:
                    break
                if summed:
                    with np.errstate(over="ignore", invalid="ignore"):   # header bytes as floats
                        total += float(block[:n - n % 4].view(np.float32).sum())
        return time.perf_counter() - t0

    def sweep(chunk_bytes: int | None, variant: str, summed: bool = False) -> float:
        sec = lt._uci_section(args.folder, True)
        if chunk_bytes:
            sec["chunkSizeInBytes"] = str(chunk_bytes)
        if variant == "views":
            sec["cacheViews"] = "true"
        elif variant in ("maps", "pread"):
            sec["cacheMaps"] = "true"
        _patch(variant)
        try:
            return _sweep_sum(sec) if summed else lt._sweep(sec)[0]
        finally:
            _patch("default")

    variants = {"default": (None, "default"), "cacheMaps": (None, "maps"), "pread copies": (None, "pread"),
                "4MiB chunks": (4 << 20, "default"), "cacheViews": (None, "views")}
    summed = {"default+sum": (None, "default"), "cacheMaps+sum": (None, "maps"), "pread copies+sum": (None, "pread")}
    names = ["read()"] + list(variants) + ["read()+sum"] + list(summed)
    times: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}

    def timed(name: str, fn) -> None:
        c0 = time.process_time()               # every thread of the process: the prefetch's too
        fn()
        cpu[name].append(time.process_time() - c0)

    def record(name: str, fn) -> None:
        timed(name, lambda: times[name].append(fn()))

    def rotated(d: dict, r: int) -> list:
        # the variants' order turns each round: the run right after read() waits longer for its
        # threads on a loaded machine (5-10 ms seen), so no variant keeps that place
        items = list(d.items())
        return items[r % len(items):] + items[:r % len(items)]

    for r in range(args.repeat):
        record("read()", read_run)
        for k, (cb, variant) in rotated(variants, r):
            record(k, lambda cb=cb, variant=variant: sweep(cb, variant))
        record("read()", read_run)
        record("read()+sum", lambda: read_run(True))
        for k, (cb, variant) in rotated(summed, r):
            record(k, lambda cb=cb, variant=variant: sweep(cb, variant, True))
        record("read()+sum", lambda: read_run(True))
    mb = os.path.getsize(cache) / 1e6
    print(f"cache {mb:.1f} MB, {args.repeat} interleaved rounds; target: default >= 50% of read() "
          f"(wall median; CPU: the process's CPU time per run, median, steadier on a loaded machine)")
    for base_name, rows in (("read()", variants), ("read()+sum", summed)):
        base = times[base_name]
        rmed, rbest, rcpu = statistics.median(base), min(base), statistics.median(cpu[base_name])
        print(f"  {base_name:24s} median {rmed:.4f} s  best {rbest:.4f} s  CPU {rcpu:.4f} s  "
              f"({mb / rmed:.0f} MB/s median)")
        for k in rows:
            v = times[k]
            med, best, c = statistics.median(v), min(v), statistics.median(cpu[k])
            print(f"  {k:24s} median {med:.4f} s  best {best:.4f} s  CPU {c:.4f} s  = {rmed / med:.0%} of "
                  f"{base_name} (median), {rbest / best:.0%} (best), {rcpu / c:.0%} (CPU)")


if __name__ == "__main__":
    main()
