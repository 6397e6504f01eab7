#!/usr/bin/env python3
"""Legacy readers' throughput (issue 16's targets).

    pip install pandas                                     # the UCIFastReader baseline
    python bench/legacy_throughput.py bench/data/legacy [--uci-mb 200] [--corpus-mb 100] [--repeat 3]
    python bench/legacy_throughput.py /tmp/legacy --small  # smoke run on tiny data

Data (generated once into the folder, git-ignored under bench/data; reused while the size fits):

* ``uci.txt``: a dense MNIST-shaped UCI file (label 0-9, then 784 integers 0-255, space-delimited)
  of about ``--uci-mb`` MB;
* ``lm.txt``: a language-model corpus (sentences of 5-30 words from a 10k-word Zipf vocabulary,
  ending ``</s>``) of about ``--corpus-mb`` MB, and ``lu.txt`` (``word label`` lines, BOS ... EOS
  sentences) with its token files.

Figures (best of ``--repeat``, page cache warm):

* ``pandas``: ``pandas.read_csv(sep=" ", header=None, engine="c")`` of ``uci.txt`` (dtype float32);
* ``uci source``: one sweep of a ``readerType = UCIFastReader`` section (features 784, labels
  one-hot 10, ``randomize = None``) through MinibatchSource, 256-record minibatches, NumPy outputs;
  target: >= 2x pandas;
* ``read()``: reading ``uci.txt``'s binary cache file's bytes (16 MiB blocks into one reused,
  touched buffer: ``read()`` at its best); ``uci cache``: the same sweep from
  the BinaryWriter cache (built once, before timing); target: >= 50% of ``read()``'s speed; and
  with ``cacheViews = true`` (minibatches as read-only views of the cache, opted in);
* ``lm tokens/s`` and ``lu tokens/s``: building the SequenceReader / LUSequenceReader (the corpus
  tokenized and mapped) plus one sweep; target: >= 1M tokens/s; the same with
  ``nbrUttsInEachRecurrentIter = 10`` (sentences of one length grouped side by side, sparse
  inputs, 20 steps a row) for information.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))

from cntkio.readers import build_reader  # noqa: E402
from cntkio.readers.epochs import EpochReader  # noqa: E402


def _write_uci(path: str, mb: float) -> None:
    rng = np.random.default_rng(0)
    target = int(mb * 1e6)
    with open(path + ".tmp", "w") as fh:
        written = 0
        while written < target:
            lab = rng.integers(0, 10, 1000)
            pix = rng.integers(0, 256, (1000, 784))
            pix[pix < 150] = 0                          # MNIST-like: mostly zeros
            text = "".join(f"{a} " + " ".join(map(str, r)) + "\n" for a, r in zip(lab.tolist(), pix.tolist()))
            fh.write(text)
            written += len(text)
    os.replace(path + ".tmp", path)


def _write_corpora(folder: str, mb: float) -> None:
    rng = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(10000)]
    p = 1.0 / np.arange(1, 10001)
    p /= p.sum()
    target = int(mb * 1e6)
    with open(os.path.join(folder, "lm.txt.tmp"), "w") as lm, open(os.path.join(folder, "lu.txt.tmp"), "w") as lu:
        written = 0
        while written < target:
            lens = rng.integers(5, 31, 1000)
            words = rng.choice(10000, int(lens.sum()), p=p)
            pos = 0
            chunk_lm, chunk_lu = [], []
            for n in lens.tolist():
                sent = [vocab[w] for w in words[pos:pos + n]]
                pos += n
                chunk_lm.append("</s> " + " ".join(sent) + " </s>\n")
                chunk_lu.append("BOS O\n" + "".join(f"{w} {'B-x' if w.endswith('7') else 'O'}\n" for w in sent)
                                + "EOS O\n")
            t = "".join(chunk_lm)
            lm.write(t)
            lu.write("".join(chunk_lu))
            written += len(t)
    os.replace(os.path.join(folder, "lm.txt.tmp"), os.path.join(folder, "lm.txt"))
    os.replace(os.path.join(folder, "lu.txt.tmp"), os.path.join(folder, "lu.txt"))
    with open(os.path.join(folder, "lu_in.txt"), "w") as fh:
        fh.write("BOS\nEOS\n<unk>\n" + "".join(f"{w}\n" for w in vocab))
    with open(os.path.join(folder, "lu_out.txt"), "w") as fh:
        fh.write("O\nB-x\n")


def _ensure(folder: str, uci_mb: float, corpus_mb: float) -> None:
    os.makedirs(folder, exist_ok=True)
    uci = os.path.join(folder, "uci.txt")
    if not os.path.exists(uci) or abs(os.path.getsize(uci) - uci_mb * 1e6) > 0.1 * uci_mb * 1e6 + 1e5:
        _write_uci(uci, uci_mb)
    lm = os.path.join(folder, "lm.txt")
    if not os.path.exists(lm) or abs(os.path.getsize(lm) - corpus_mb * 1e6) > 0.1 * corpus_mb * 1e6 + 1e5:
        _write_corpora(folder, corpus_mb)


def _sweep(section: dict, minibatch_size: int = 256) -> tuple[float, int]:
    t0 = time.perf_counter()
    src = build_reader(section, max_sweeps=1)
    n = 0
    for mb in EpochReader(src, minibatch_size=minibatch_size, epoch_size=0).epoch(0):
        for _, v in mb.items():
            if not v.is_sparse:          # sparse values stay packed as the engine made them
                v.asarray()
        n += next(iter(mb.values())).num_samples
    src.close()
    return time.perf_counter() - t0, n


def _uci_section(folder: str, cache: bool) -> dict:
    sec = {"readerType": "UCIFastReader", "file": os.path.join(folder, "uci.txt"), "randomize": "None",
           "features": {"dim": "784", "start": "1"}, "labels": {"dim": "1", "start": "0", "labelDim": "10"}}
    if cache:
        sec.update(writerType="BinaryReader", wfile=os.path.join(folder, "uci.bin"))
    return sec


def _best(fn, repeat: int):
    return min((fn() for _ in range(repeat)), key=lambda r: r[0] if isinstance(r, tuple) else r)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--uci-mb", type=float, default=200)
    ap.add_argument("--corpus-mb", type=float, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--small", action="store_true", help="tiny data, one repeat (a smoke run)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.small:
        args.uci_mb, args.corpus_mb, args.repeat = 2, 1, 1
    _ensure(args.folder, args.uci_mb, args.corpus_mb)
    uci = os.path.join(args.folder, "uci.txt")
    size = os.path.getsize(uci) / 1e6
    res: dict = {"uci_mb": size}

    try:
        import pandas as pd
    except ImportError:
        pd = None
        print("pandas is not installed (pip install pandas): no pandas baseline")
    if pd is not None:
        def pandas_run():
            t0 = time.perf_counter()
            pd.read_csv(uci, sep=" ", header=None, engine="c", dtype=np.float32)
            return time.perf_counter() - t0
        res["pandas_s"] = _best(pandas_run, args.repeat)
    res["uci_source_s"], res["records"] = _best(lambda: _sweep(_uci_section(args.folder, False)), args.repeat)

    cache = os.path.join(args.folder, "uci.bin")
    if os.path.exists(cache):
        os.remove(cache)
    t0 = time.perf_counter()
    _sweep(_uci_section(args.folder, True))            # builds the cache, then reads it
    res["cache_build_and_sweep_s"] = time.perf_counter() - t0

    block = np.ones(1 << 24, np.uint8)             # one buffer, touched before: read() at its best

    def read_run():
        t0 = time.perf_counter()
        with open(cache, "rb", buffering=0) as fh:
            while fh.readinto(block):
                pass
        return time.perf_counter() - t0
    res["cache_mb"] = os.path.getsize(cache) / 1e6
    res["read_s"] = _best(read_run, args.repeat)
    res["uci_cache_s"], _ = _best(lambda: _sweep(_uci_section(args.folder, True)), args.repeat)
    views = dict(_uci_section(args.folder, True), cacheViews="true")
    res["uci_cache_views_s"], _ = _best(lambda: _sweep(views), args.repeat)

    lm = {"readerType": "SequenceReader", "file": os.path.join(args.folder, "lm.txt"), "randomize": "None",
          "labelIn": {"labelDim": "10002"}, "labels": {"labelType": "NextWord", "labelDim": "10002"}}
    res["lm_s"], res["lm_tokens"] = _best(lambda: _sweep(lm), args.repeat)
    lu = {"readerType": "LUSequenceReader", "file": os.path.join(args.folder, "lu.txt"), "randomize": "None",
          "unk": "<unk>", "labelIn": {"token": os.path.join(args.folder, "lu_in.txt")},
          "labels": {"token": os.path.join(args.folder, "lu_out.txt")}}
    res["lu_s"], res["lu_tokens"] = _best(lambda: _sweep(lu), args.repeat)
    # parallel sentences (nbrUttsInEachRecurrentIter = 10, 20 steps a row): CNTK's grouping of
    # sentences of one length, sparse inputs
    lm_par = dict(lm, nbrUttsInEachRecurrentIter="10")
    res["lm_parallel_s"], res["lm_parallel_tokens"] = _best(lambda: _sweep(lm_par, 20), args.repeat)
    lu_par = dict(lu, nbrUttsInEachRecurrentIter="10")
    res["lu_parallel_s"], res["lu_parallel_tokens"] = _best(lambda: _sweep(lu_par, 20), args.repeat)

    print(f"uci.txt {size:.1f} MB, {res['records']} records")
    if "pandas_s" in res:
        print(f"  pandas read_csv (C engine)  {res['pandas_s']:.3f} s  {size / res['pandas_s']:.1f} MB/s")
    print(f"  cntkio UCIFastReader sweep  {res['uci_source_s']:.3f} s  {size / res['uci_source_s']:.1f} MB/s"
          + (f"  = {res['pandas_s'] / res['uci_source_s']:.2f}x pandas (target >= 2x)" if "pandas_s" in res else ""))
    print(f"  cache build + first sweep   {res['cache_build_and_sweep_s']:.3f} s")
    print(f"  read() of the cache         {res['read_s']:.3f} s  {res['cache_mb'] / res['read_s']:.1f} MB/s")
    print(f"  sweep from the cache        {res['uci_cache_s']:.3f} s  {res['cache_mb'] / res['uci_cache_s']:.1f} MB/s"
          f"  = {res['read_s'] / res['uci_cache_s']:.0%} of read() (target >= 50%)")
    print(f"  the same, cacheViews = true {res['uci_cache_views_s']:.3f} s  "
          f"{res['cache_mb'] / res['uci_cache_views_s']:.1f} MB/s  = {res['read_s'] / res['uci_cache_views_s']:.0%} "
          "of read() (read-only views of the cache, opted in)")
    print(f"SequenceReader   {res['lm_tokens'] / res['lm_s'] / 1e6:.2f} M tokens/s (build + sweep; target >= 1)")
    print(f"LUSequenceReader {res['lu_tokens'] / res['lu_s'] / 1e6:.2f} M tokens/s (build + sweep; target >= 1)")
    print(f"SequenceReader,   10 parallel sentences grouped by length: "
          f"{res['lm_parallel_tokens'] / res['lm_parallel_s'] / 1e6:.2f} M tokens/s (build + sweep)")
    print(f"LUSequenceReader, 10 parallel sentences grouped by length: "
          f"{res['lu_parallel_tokens'] / res['lu_parallel_s'] / 1e6:.2f} M tokens/s (build + sweep)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
