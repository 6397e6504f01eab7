#!/usr/bin/env python3
"""Reading from an object store: one sweep of each benchmark dataset (CTF and CBF) from a local S3
server (moto's standalone server on 127.0.0.1, started here) against the same sweep of the local
file; the time to the first minibatch of a 1 GB CBF object; and Mosaic Streaming (MDS) and
WebDataset reading the same content from the same server in the same run.

    python bench/peers/gen_data.py bench/data                   # once (git-ignored)
    pip install -r bench/requirements-remote.txt                # the peers (benchmark-only)
    python bench/remote_throughput.py bench/data [--only dense,seq] [--repeat 1] [--json out.json]

Per dataset (``<name>.ctf`` of gen_data.py and ``<name>.cbf`` converted from it with 32 MiB chunks,
as bench/cbf_throughput.py makes it; reused while newer than the CTF), per format:

* ``local``: ``MinibatchSource`` (``randomize=False``, one sweep of 256-sample minibatches, NumPy
  outputs), building the deserializer included (CTF: the index scan);
* ``s3 first``: the same from ``s3://bench/<file>`` with an empty chunk cache (every byte fetched:
  the CTF index scan reads the object once, in 64 MiB ranges, into the chunk cache; a CBF opens with
  its header and one small GET per chunk; chunks are fetched ahead of the window);
* ``s3 second``: a new source over the same URL and cache folder (read from the chunk cache);
* ``store read``: the whole object read into memory by s3fs's own ``cat_file`` (its parallel
  ranged GETs): what the server delivers, the ceiling of a first sweep.

MB/s is the local file's size over wall time; ``/local`` is the local time over the remote time
(1.0: as fast). ``first use``: the back end's first use in the process (importing s3fs and
botocore, making a client, one GET), paid once; ``first minibatch`` (after it): a source over a
1 GB CBF object (``--gb``), cold cache, from construction to the first 256-sample minibatch, in
file order and randomized, with the bytes fetched by then.
``peers``: the dense dataset's samples written once as MDS shards (``streaming.MDSWriter``) and as
WebDataset tar shards (``.npy`` members), uploaded to the same server; one pass over each with its
own reader from S3 (StreamingDataset with a fresh local folder; ``webdataset.WebDataset`` over
fsspec streams), samples per second beside cntkio's sweep of the same samples from ``dense.cbf``.
Timings are best of ``--repeat`` runs. ``--small`` runs on 5 MB files (gen_data.py --small).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))
sys.path.insert(0, os.path.join(ROOT, "tests", "remote"))

from store_servers import MotoS3  # noqa: E402

from cntkio import CBFDeserializer, CTFDeserializer, MinibatchSource  # noqa: E402
from cntkio.deserializers.cbf import ctf2bin  # noqa: E402
from cntkio.deserializers.cbf.writer import CBFWriter  # noqa: E402
from cntkio.deserializers.protocol import ChunkData, DenseStream, SequenceTable  # noqa: E402
from cntkio.remote import open_object, remote_options  # noqa: E402

sys.path.insert(0, HERE)
from cbf_throughput import CHUNK, MB_SIZE, STREAMS  # noqa: E402  (the datasets' streams, as cbf_throughput converts them)

BUCKET = "bench"


def config(fmt: str, name: str, path: str, keys: dict | None = None) -> dict:
    d = CTFDeserializer(path, STREAMS[name]) if fmt == "ctf" else CBFDeserializer(path)
    d.update(keys or {})
    return d


def sweep(cfg: dict, randomize: bool = False) -> int:
    src = MinibatchSource(cfg, randomize=randomize, max_sweeps=1)
    n = 0
    while True:
        mb = src.next_minibatch(MB_SIZE)
        if not mb:
            break
        for d in mb.values():  # materialize the NumPy outputs
            d.asarray() if not d.is_sparse else d.as_csr()
        n += d.num_samples
    src.close()
    return n


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def best(fn, repeat: int, before=None) -> float:
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        times.append(timed(fn))
    return min(times)


def ensure_cbf(data: str, name: str) -> str:
    ctf, cbf = os.path.join(data, f"{name}.ctf"), os.path.join(data, f"{name}.cbf")
    if not os.path.exists(cbf) or os.path.getmtime(cbf) < os.path.getmtime(ctf):
        ctf2bin(ctf, cbf, STREAMS[name], chunk_size=CHUNK, progress=False)
    return cbf


def ensure_big_cbf(data: str, gb: float) -> str:
    """A CBF file of ``gb`` GB: 1 KiB dense samples (256 float32), one per sequence, 32 MiB chunks."""
    path = os.path.join(data, f"big-{gb:g}gb.cbf")
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(0)
    per_chunk = CHUNK // 1028
    chunks = max(1, int(gb * 1e9 / (per_chunk * 1028)))
    with CBFWriter(path, [("x", 256, False)], chunk_size=None) as w:
        for c in range(chunks):
            values = rng.random((per_chunk, 256), dtype=np.float32)
            keys = np.arange(c * per_chunk, (c + 1) * per_chunk, dtype=np.int64)
            ones = np.ones(per_chunk, np.int64)
            offsets = np.arange(per_chunk + 1, dtype=np.int64)
            w.write(ChunkData(SequenceTable(keys, ones), {"x": DenseStream(values, offsets)}))
    return path


def one_format(args, name: str, fmt: str) -> dict:
    """The local sweep, the first sweep from S3 (empty cache) and the second (from the cache)."""
    local = os.path.join(args.data, f"{name}.{fmt}")
    url = f"s3://{BUCKET}/{name}.{fmt}"
    size = os.path.getsize(local)
    t_local = best(lambda: sweep(config(fmt, name, local)), args.repeat)
    cache: dict = {}

    def fresh():
        folder = tempfile.mkdtemp(prefix="cntkio-bench-cache-", dir=args.cache_root)
        cache["keys"] = dict(args.keys, cacheDir=folder)

    t_store = best(lambda: args.fs.cat_file(url), args.repeat)   # the store's own speed: the ceiling
    t_first = best(lambda: sweep(config(fmt, name, url, cache["keys"])), args.repeat, fresh)
    t_second = best(lambda: sweep(config(fmt, name, url, cache["keys"])), args.repeat)
    shutil.rmtree(cache["keys"]["cacheDir"], ignore_errors=True)
    row = {"dataset": name, "format": fmt, "bytes": size, "local_s": t_local, "store_read_s": t_store,
           "s3_first_s": t_first,
           "s3_second_s": t_second, "first_vs_local": t_local / t_first, "second_vs_local": t_local / t_second}
    print(f"{name:7s} {fmt}  local {size / 1e6 / t_local:8.1f} MB/s   s3 first {size / 1e6 / t_first:8.1f} "
          f"MB/s ({row['first_vs_local']:.2f} of local)   s3 second {size / 1e6 / t_second:8.1f} MB/s "
          f"({row['second_vs_local']:.2f} of local)   store read {size / 1e6 / t_store:8.1f} MB/s", flush=True)
    return row


def formats(args) -> list[dict]:
    """The local and remote sweeps of every dataset and format."""
    return [one_format(args, name, fmt) for name in args.only for fmt in ("ctf", "cbf")]


def first_minibatch(args, server) -> list[dict]:
    """From building the source to the first minibatch of the big CBF object, cold cache: in file
    order (only the header, the chunk lengths and the first chunks are needed) and randomized (the
    first randomized chunk draws its sequences from every chunk of its window)."""
    path = ensure_big_cbf(args.data, args.gb)
    url = f"s3://{BUCKET}/{os.path.basename(path)}"
    server.upload(path, url)
    size = os.path.getsize(path)
    rows = []
    for randomize in (False, True):
        folder = tempfile.mkdtemp(prefix="cntkio-bench-cache-", dir=args.cache_root)
        keys = dict(args.keys, cacheDir=folder)
        t0 = time.perf_counter()
        src = MinibatchSource(CBFDeserializer(url) | keys, randomize=randomize, max_sweeps=1)
        built = time.perf_counter() - t0
        mb = src.next_minibatch(MB_SIZE)
        t = time.perf_counter() - t0
        fetched = open_object(url, remote_options(keys)).fetched
        src.close()
        shutil.rmtree(folder, ignore_errors=True)
        rows.append({"bytes": size, "randomize": randomize, "seconds": t, "build_seconds": built,
                     "fetched_bytes": fetched})
        print(f"first minibatch of {size / 1e9:.2f} GB CBF from s3 ({'randomized' if randomize else 'in order'}): "
              f"{t:.3f} s (source built in {built:.3f} s), {fetched / 1e6:.1f} MB fetched by then "
              f"({next(iter(mb.values())).num_samples} samples)", flush=True)
    return rows


def warm_up(args, server) -> float:
    """The back end's first use in this process (importing s3fs and botocore, a client): seconds."""
    server.fs().pipe(f"{BUCKET}/warm-up", b"x")
    folder = tempfile.mkdtemp(prefix="cntkio-bench-cache-", dir=args.cache_root)
    t0 = time.perf_counter()
    open_object(f"s3://{BUCKET}/warm-up", remote_options(dict(args.keys, cacheDir=folder))).read(0, 1)
    t = time.perf_counter() - t0
    shutil.rmtree(folder, ignore_errors=True)
    return t


def dense_samples(data: str):
    """The dense dataset's samples, as cntkio reads them from dense.cbf: (features, labels) arrays."""
    src = MinibatchSource(CBFDeserializer(os.path.join(data, "dense.cbf")), randomize=False, max_sweeps=1)
    feats, labels = [], []
    while True:
        mb = src.next_minibatch(4096)
        if not mb:
            break
        by = {s.name: v.asarray().reshape(v.num_samples, -1) for s, v in mb.items()}
        feats.append(by["features"])
        labels.append(by["labels"])
    return np.concatenate(feats), np.concatenate(labels)


def peers(args, server) -> list[dict]:
    sys.path.insert(0, HERE)
    from remote_peers import import_streaming, mds_pass, wds_pass, write_mds, write_wds
    try:
        streaming = import_streaming()
        import webdataset
    except ImportError as exc:
        print(f"peers skipped: {exc} (pip install -r bench/requirements-remote.txt)")
        return []
    feats, labels = dense_samples(args.data)
    work = tempfile.mkdtemp(prefix="cntkio-bench-peers-", dir=args.cache_root)
    rows = []
    try:
        write_mds(os.path.join(work, "mds"), feats, labels)
        write_wds(os.path.join(work, "wds"), feats, labels)
        server.upload(os.path.join(work, "mds"), f"s3://{BUCKET}/mds/dense")
        server.upload(os.path.join(work, "wds"), f"s3://{BUCKET}/wds/dense")
        n = len(feats)
        cbf_url = f"s3://{BUCKET}/dense.cbf"

        def cold():
            folder = tempfile.mkdtemp(prefix="cache-", dir=work)
            return dict(args.keys, cacheDir=folder)
        t_cntkio = best(lambda: sweep(config("cbf", "dense", cbf_url, cold())), args.repeat)
        t_mds = best(lambda: mds_pass(f"s3://{BUCKET}/mds/dense", tempfile.mkdtemp(dir=work), server, n),
                     args.repeat)
        t_wds = best(lambda: wds_pass(f"s3://{BUCKET}/wds/dense", server, n), args.repeat)
        for who, t in (("cntkio CBF (s3, cold cache)", t_cntkio),
                       (f"Mosaic Streaming MDS {streaming.__version__}", t_mds),
                       (f"WebDataset {getattr(webdataset, '__version__', '')}", t_wds)):
            rows.append({"reader": who, "samples": n, "seconds": t, "samples_per_s": n / t})
            print(f"peers  {who:36s} {n / t:10.0f} samples/s  ({t:.2f} s for {n} samples)", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data")
    ap.add_argument("--only", default="dense,sparse,seq,float")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--gb", type=float, default=1.0, help="size of the CBF of the first-minibatch test")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    args.only = [s for s in args.only.split(",") if s]
    args.cache_root = args.data
    server = MotoS3().start()
    try:
        os.environ.update(AWS_ACCESS_KEY_ID=server.key, AWS_SECRET_ACCESS_KEY=server.secret,
                          AWS_DEFAULT_REGION="us-east-1", S3_ENDPOINT_URL=server.endpoint)
        args.keys = {"storageOptions": server.storage_options()}
        args.fs = server.fs()
        server.make_bucket(BUCKET)
        for name in args.only:
            for path in (os.path.join(args.data, f"{name}.ctf"), ensure_cbf(args.data, name)):
                server.upload(path, f"s3://{BUCKET}/{os.path.basename(path)}")
        load = os.getloadavg()[0]
        print(f"moto S3 server {server.endpoint}; load average {load:.2f} on {os.cpu_count()} cores", flush=True)
        out = {"load_average": load, "warm_up_s": warm_up(args, server)}
        print(f"back end's first use (import s3fs and botocore, a client, one GET): {out['warm_up_s']:.3f} s",
              flush=True)
        out["first_minibatch"] = first_minibatch(args, server)
        out["formats"] = formats(args)
        out["peers"] = [] if args.no_peers or "dense" not in args.only else peers(args, server)
    finally:
        server.stop()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
