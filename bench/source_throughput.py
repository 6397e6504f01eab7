#!/usr/bin/env python3
"""MinibatchSource throughput: one sweep of each benchmark file, beside the deserializer alone,
torch's DataLoader over the same parsed arrays, and CNTK 2.7's measured reader figures.

    python bench/peers/gen_data.py bench/data      # once (git-ignored)
    python bench/source_throughput.py bench/data [--only dense,seq] [--rss] [--repeat N]

For each dataset (CTF file): ``parse`` = index + ``get_chunk`` of every chunk on one thread
(the deserializer's own speed); ``source`` = index + one sweep through ``MinibatchSource``
(``randomize=False``), minibatches of 256 samples, NumPy outputs; ``random`` = the same with
``randomization_window_in_chunks=4`` (random access, the default: each batch's sequences
parsed out of the mapped file); ``random, whole chunks`` = the same with ``random_access=False``
(the window's chunks parsed whole, as CNTK did); ``DataLoader`` = ``torch.utils.data.DataLoader``
(batch 256, no workers) over the arrays already parsed (so it excludes parsing). MB/s is file
bytes (10^6) over wall time; every column is the best of ``--repeat`` runs, and ``random/source``
is the ratio of those bests. ``random/source, median of pairs`` is the median over the repeats of
source time / random time of the two runs made back to back in that repeat: on a shared machine
whose speed drifts, a ratio of two bests taken minutes apart moves more than one of paired runs.
``--rss`` also reads a 1 GB dense file (dense.ctf repeated) with a 4-chunk window of 32 MB chunks
in a subprocess and reports its peak RSS.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs  # noqa: E402
from cntkio.deserializers.base import build_deserializer  # noqa: E402

#: CNTK 2.7's reader alone on these files, MB/s (measured by the project, see the task brief)
CNTK27 = {"dense": 158.0, "sparse": 116.0, "seq": 32.0, "float": 189.0}

STREAMS = {
    "dense": dict(features=StreamDef(field="features", shape=784), labels=StreamDef(field="labels", shape=10)),
    "sparse": dict(src=StreamDef(field="src", shape=50000, is_sparse=True),
                   tgt=StreamDef(field="tgt", shape=50000, is_sparse=True)),
    "seq": dict(word=StreamDef(field="word", shape=40000, is_sparse=True),
                tag=StreamDef(field="tag", shape=45, is_sparse=True)),
    "float": dict(x=StreamDef(field="x", shape=150), y=StreamDef(field="y", shape=1)),
}
MB_SIZE = 256


def config(path: str, name: str) -> dict:
    return CTFDeserializer(path, StreamDefs(**STREAMS[name]))


def time_parse(path: str, name: str):
    t0 = time.perf_counter()
    d = build_deserializer(config(path, name))
    t_index = time.perf_counter() - t0
    chunks = []
    for c in d.chunk_infos():
        chunks.append(d.get_chunk(c.id))
    total = time.perf_counter() - t0
    d.close()
    return total, t_index, chunks


def time_source(path: str, name: str, randomize: bool, random_access: bool = True):
    t0 = time.perf_counter()
    kw = dict(randomization_window_in_chunks=4, random_access=random_access) if randomize \
        else dict(randomize=False)
    src = MinibatchSource(config(path, name), max_sweeps=1, **kw)
    samples = 0
    n = 0
    first = src.stream_infos()[0]
    t_first = None
    while True:
        mb = src.next_minibatch(MB_SIZE)
        if t_first is None:
            t_first = time.perf_counter() - t0
        if not mb:
            break
        samples += mb[first].num_samples
        n += 1
    total = time.perf_counter() - t0
    src.close()
    time_source.first = t_first  # seconds from construction to the first minibatch
    return total, n, samples


def time_dataloader(chunks, name: str):
    import scipy.sparse as sp
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    first = next(iter(chunks[0].streams))
    st0 = chunks[0].streams[first]
    if not st0.is_sparse:
        arrays = {k: torch.from_numpy(np.concatenate([c.streams[k].values for c in chunks])) for k in chunks[0].streams}
        ds = TensorDataset(*arrays.values())
        t0 = time.perf_counter()
        n = sum(1 for _ in DataLoader(ds, batch_size=MB_SIZE))
        return time.perf_counter() - t0, n
    # sparse: one CSR matrix per stream over all samples; a batch is a set of sequences, collated
    # into the CSR rows of their samples (what a CSR-aware pipeline on DataLoader would do)
    mats, offsets = {}, None
    for k in chunks[0].streams:
        parts = []
        for c in chunks:
            s = c.streams[k]
            parts.append(sp.csr_matrix((s.data, s.indices, s.indptr), shape=(len(s.indptr) - 1, s.dim)))
        mats[k] = sp.vstack(parts, format="csr")
    lens = np.concatenate([np.diff(c.streams[first].offsets) for c in chunks])
    offsets = np.concatenate([[0], np.cumsum(lens)])

    def collate(idx):
        idx = np.asarray(idx)
        rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in idx])
        return {k: m[rows] for k, m in mats.items()}
    seq_per_batch = max(1, int(MB_SIZE // max(1, lens.mean())))
    t0 = time.perf_counter()
    n = sum(1 for _ in DataLoader(range(len(lens)), batch_size=seq_per_batch, collate_fn=collate))
    return time.perf_counter() - t0, n


def rss_run(data_dir: str, random_access: bool = True) -> float:
    """Peak RSS (MB) of one randomized sweep of a 1 GB dense file in a fresh process."""
    big = os.path.join(data_dir, "dense1g.ctf")
    if not os.path.exists(big) or os.path.getsize(big) < 10**9:
        with open(os.path.join(data_dir, "dense.ctf"), "rb") as f:
            block = f.read()
        with open(big, "wb") as f:
            for _ in range(5):
                f.write(block)
    code = f"""
import resource, sys, time
sys.path.insert(0, {os.path.join(HERE, '..', 'src')!r})
from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs
cfg = CTFDeserializer({big!r}, StreamDefs(features=StreamDef(field='features', shape=784),
                                           labels=StreamDef(field='labels', shape=10)))
cfg['chunkSizeInBytes'] = 32 * 1024 * 1024
def rss():
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20
def hwm():
    # VmHWM, this process image's peak RSS (ru_maxrss would also count the forking parent's peak,
    # which Linux carries over exec)
    with open('/proc/self/status') as f:
        return next(int(l.split()[1]) for l in f if l.startswith('VmHWM:')) / 1024
t0 = time.perf_counter()
src = MinibatchSource(cfg, randomization_window_in_chunks=4, max_sweeps=1, random_access={random_access!r})
after_index = hwm()
n = 0
reading = 0.0
while src.next_minibatch(256):
    n += 1
    reading = max(reading, rss())
print(n, time.perf_counter() - t0, hwm(), after_index, reading)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[2]), float(out[1]), os.path.getsize(big), float(out[3]), float(out[4])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", help="folder written by gen_data.py")
    ap.add_argument("--only", default="dense,sparse,seq,float")
    ap.add_argument("--rss", action="store_true", help="also measure peak RSS on a 1 GB dense file")
    ap.add_argument("--json", help="write the numbers here too")
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs of every measurement")
    args = ap.parse_args()
    rows = []
    print("| dataset | MB | parse MB/s | source MB/s | source/parse | x CNTK 2.7 | random MB/s | random/source "
          "| random/source, median of pairs | random, whole chunks MB/s | whole chunks/source "
          "| DataLoader MB/s (parsed arrays) | minibatches |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only.split(","):
        path = os.path.join(args.data, name + ".ctf")
        mb = os.path.getsize(path) / 1e6
        t_parse = t_dl = t_src = t_rnd = t_win = float("inf")
        f_src = f_rnd = f_win = float("inf")
        for _ in range(args.repeat):
            tp, t_index, chunks = time_parse(path, name)
            t_parse = min(t_parse, tp)
            t_dl = min(t_dl, time_dataloader(chunks, name)[0])
            del chunks
        pairs = []  # per repeat: source time / random time, the two run back to back
        for _ in range(args.repeat):
            ts, n_src, samples = time_source(path, name, False)
            f_src = min(f_src, time_source.first)
            tr, n_rnd, samples_r = time_source(path, name, True)
            f_rnd = min(f_rnd, time_source.first)
            tw, n_win, samples_w = time_source(path, name, True, random_access=False)
            f_win = min(f_win, time_source.first)
            t_src, t_rnd, t_win = min(t_src, ts), min(t_rnd, tr), min(t_win, tw)
            pairs.append(ts / tr)
        assert samples == samples_r == samples_w, (samples, samples_r, samples_w)
        row = dict(dataset=name, mb=mb, parse=mb / t_parse, source=mb / t_src, random=mb / t_rnd,
                   random_whole_chunks=mb / t_win, first_source_s=f_src, first_random_s=f_rnd,
                   first_whole_chunks_s=f_win,
                   dataloader=mb / t_dl, cntk=CNTK27[name], minibatches=n_src, index_s=t_index,
                   random_source_paired=float(np.median(pairs)), random_source_pairs=pairs)
        rows.append(row)
        print(f"| {name} | {mb:.0f} | {row['parse']:.1f} | {row['source']:.1f} | {row['source'] / row['parse']:.0%} "
              f"| {row['source'] / CNTK27[name]:.1f}x | {row['random']:.1f} | {row['random'] / row['source']:.0%} "
              f"| {row['random_source_paired']:.0%} "
              f"| {row['random_whole_chunks']:.1f} | {row['random_whole_chunks'] / row['source']:.0%} "
              f"| {row['dataloader']:.1f} | {n_src} |", flush=True)
    print("\nSeconds from construction to the first minibatch (best of the same runs):\n")
    print("| dataset | source | random | random, whole chunks |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        print(f"| {row['dataset']} | {row['first_source_s']:.3f} | {row['first_random_s']:.3f} "
              f"| {row['first_whole_chunks_s']:.3f} |")
    for random_access in ((True, False) if args.rss else ()):
        rss, secs, size, after_index, reading = rss_run(args.data, random_access)
        print(f"\n1 GB dense file ({size / 1e6:.0f} MB), window 4 chunks of 32 MB, one randomized sweep, "
              f"{'random access' if random_access else 'whole chunks'} "
              f"({size / 1e6 / secs:.1f} MB/s): peak RSS {rss:.0f} MiB; peak RSS once the source is built "
              f"(indexing done) {after_index:.0f} MiB; largest RSS sampled while reading {reading:.0f} MiB")
        rows.append(dict(random_access=random_access, rss_mb=rss, rss_seconds=secs, rss_file_mb=size / 1e6,
                         rss_after_index_mb=after_index, rss_reading_mb=reading))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
