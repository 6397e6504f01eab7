"""The peers of bench/remote_throughput.py: the same samples written as Mosaic Streaming MDS shards
and as WebDataset tar shards, and one pass over each from the S3 server with its own reader.
Benchmark-only (bench/requirements-remote.txt): never imported by cntkio."""
from __future__ import annotations

import os

import numpy as np

SHARD_BYTES = 64 << 20


def import_streaming():
    """``import streaming``: its package imports its torchvision helpers (``streaming.vision``) at
    import time, though reading MDS uses none of them. Where torchvision is not installed (there is
    no CPU build of it on PyPI for this torch), two stand-ins that nothing here calls take its place."""
    import sys
    import types
    try:
        import torchvision  # noqa: F401
        usable = True
    except (ImportError, RuntimeError):
        usable = False
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
    if not usable:
        try:                 # it looks for torchvision itself: let it see none
            import transformers.feature_extraction_utils  # noqa: F401
        except ImportError:
            pass
        tv = types.ModuleType("torchvision")
        datasets = types.ModuleType("torchvision.datasets")
        transforms = types.ModuleType("torchvision.transforms")
        functional = types.ModuleType("torchvision.transforms.functional")
        datasets.VisionDataset = type("VisionDataset", (), {})
        functional.to_tensor = None
        tv.datasets, tv.transforms, transforms.functional = datasets, transforms, functional
        sys.modules.update({"torchvision": tv, "torchvision.datasets": datasets,
                            "torchvision.transforms": transforms, "torchvision.transforms.functional": functional})
    import streaming
    return streaming


def write_mds(folder: str, feats: np.ndarray, labels: np.ndarray) -> None:
    MDSWriter = import_streaming().MDSWriter
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
    StreamingDataset = import_streaming().StreamingDataset
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
    options = server.storage_options()
    fs = fsspec.filesystem("s3", **options)

    def open_s3(u, mode="rb", bufsize=8192, **kw):
        return fs.open(u, mode, block_size=8 << 20)
    wds.gopen_schemes["s3"] = open_s3
    shards = sorted("s3://" + p for p in fs.ls(url.removeprefix("s3://")) if p.endswith(".tar"))
    n = 0
    for sample in wds.WebDataset(shards, shardshuffle=False, empty_check=False).decode():
        sample["features.npy"], sample["labels.npy"]
        n += 1
    assert n == expected, (n, expected)
    return n
