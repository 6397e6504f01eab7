#!/usr/bin/env python3
"""UCIFastReader's binary cache against ``read()`` of the same file: interleaved A/B runs.

    python bench/legacy_cache_ab.py bench/data/legacy [--uci-mb 200] [--repeat 9]
    python bench/legacy_cache_ab.py /tmp/legacy --small        # smoke run on tiny data

Issue 16's target: a sweep from the cache at >= 50% of the speed of ``read()``ing the cache file.
On a loaded machine single timings swing by 3x, so every variant runs once per round, rounds
interleaved, and the medians (and bests) are compared with the ``read()`` runs of the same rounds:

* ``read()``: the cache file's bytes read in 16 MiB blocks (page cache warm);
* ``now``: a sweep (256-record minibatches, ``asarray`` of every stream) with the cache's default
  chunks (the engine's 32 MiB), as cntkio reads it: each batch's run of records read from the file
  straight into the minibatches' buffer (``DenseStream.read_rows``, one ``preadv`` per run), the
  buffer taken from ``cntkio.engine.buffers``' pool of buffers no array refers to any more;
* ``fresh buffers``: the same, each buffer new memory (``np.empty``): the pool's share;
* ``copy from the map``: the packer copying each run out of the memory map into new memory, as
  before (``read_rows`` ignored, no pool);
* ``4MiB chunks``: ``now`` with the cache cut in chunks of 4 MiB (the text's chunk size);
* ``cacheViews``: the reader option ``cacheViews = true``: a minibatch whose records are
  consecutive in one chunk is a read-only view of the map (nothing copied; the data is not even
  touched by the sweep; an in-place change raises), the others read as ``now``.

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
from cntkio.engine import buffers, packer  # noqa: E402

_TAKE = packer._take_rows


class _NoPool:
    empty = staticmethod(np.empty)


def _copy_from_map(st, a, b, out=None):
    """The packer before: a copy of the map's rows into new memory."""
    if out is None:
        return st.values[a:b].copy()
    np.copyto(out, st.values[a:b])
    return out


def _patch(variant: str) -> None:
    packer._take_rows = _copy_from_map if variant == "map" else _TAKE
    packer.buffers = _NoPool if variant in ("map", "fresh") else buffers


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

    def read_run() -> float:
        t0 = time.perf_counter()
        with open(cache, "rb") as fh:
            while fh.read(1 << 24):
                pass
        return time.perf_counter() - t0

    def sweep(chunk_bytes: int | None, variant: str) -> float:
        sec = lt._uci_section(args.folder, True)
        if chunk_bytes:
            sec["chunkSizeInBytes"] = str(chunk_bytes)
        if variant == "views":
            sec["cacheViews"] = "true"
        _patch(variant)
        try:
            return lt._sweep(sec)[0]
        finally:
            _patch("now")

    variants = {"now": (None, "now"), "fresh buffers": (None, "fresh"), "copy from the map": (None, "map"),
                "4MiB chunks": (4 << 20, "now"), "cacheViews": (None, "views")}
    times: dict[str, list[float]] = {k: [] for k in variants}
    reads: list[float] = []
    for _ in range(args.repeat):
        reads.append(read_run())
        for k, (cb, variant) in variants.items():
            times[k].append(sweep(cb, variant))
        reads.append(read_run())
    mb = os.path.getsize(cache) / 1e6
    rmed, rbest = statistics.median(reads), min(reads)
    print(f"cache {mb:.1f} MB, {args.repeat} interleaved rounds")
    print(f"  {'read()':24s} median {rmed:.4f} s  best {rbest:.4f} s  ({mb / rmed:.0f} MB/s median)")
    for k, v in times.items():
        med, best = statistics.median(v), min(v)
        print(f"  {k:24s} median {med:.4f} s  best {best:.4f} s  = {rmed / med:.0%} of read() "
              f"(median), {rbest / best:.0%} (best)  target >= 50%")


if __name__ == "__main__":
    main()
