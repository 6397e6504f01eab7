"""The peers of bench/remote_throughput.py: the same samples written as Mosaic Streaming MDS shards
and as WebDataset tar shards, and one pass over each from the S3 server with its own reader.
Benchmark-only (bench/requirements-remote.txt): never imported by cntkio."""
from __future__ import annotations

import os

import numpy as np

SHARD_BYTES = 64 << 20


def write_mds(folder: str, feats: np.ndarray, labels: np.ndarray) -> None:
    from streaming import MDSWriter
    columns = {"features": "ndarray:float32", "labels": "ndarray:float32"}
    with MDSWriter(out=folder, columns=columns, size_limit=SHARD_BYTES) as w:
        for f, lab in zip(feats, labels):
            w.write({"features": f, "labels": lab})


def write_wds(folder: str, feats: np.ndarray, labels: np.ndarray) -> None:
    import webdataset as wds
    os.makedirs(folder, exist_ok=True)
    with wds.ShardWriter(os.path.join(folder, "shard-%06d.tar"), maxsize=SHARD_BYTES, verbose=0) as w:
        for i, (f, lab) in enumerate(zip(feats, labels)):
            w.write({"__key__": f"{i:09d}", "features.npy": f, "labels.npy": lab})


def mds_pass(url: str, local: str, server, expected: int) -> int:
    """One pass of StreamingDataset over the MDS shards at ``url`` (downloaded to ``local``)."""
    from streaming import StreamingDataset
    from streaming.base.util import clean_stale_shared_memory
    clean_stale_shared_memory()
    ds = StreamingDataset(remote=url, local=local, shuffle=False, batch_size=256)
    n = 0
    for sample in ds:
        sample["features"], sample["labels"]
        n += 1
    assert n == expected, (n, expected)
    return n


def wds_pass(url: str, server, expected: int) -> int:
    """One pass of webdataset.WebDataset over the tar shards at ``url``, streamed through fsspec."""
    import fsspec
    import webdataset as wds
    from webdataset import gopen
    options = server.storage_options()
    fs = fsspec.filesystem("s3", **options)

    def open_s3(u, mode="rb", bufsize=8192, **kw):
        return fs.open(u, mode, block_size=8 << 20)
    gopen.gopen_schemes["s3"] = open_s3
    shards = sorted("s3://" + p for p in fs.ls(url.removeprefix("s3://")) if p.endswith(".tar"))
    n = 0
    for sample in wds.WebDataset(shards, shardshuffle=False, empty_check=False).decode():
        sample["features.npy"], sample["labels.npy"]
        n += 1
    assert n == expected, (n, expected)
    return n
