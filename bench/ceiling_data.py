"""The workloads of bench/ceiling.py and cntkio's writers for them (CBF from the arrays, CTF as text).

* ``dense``: ``n`` rows of 784 float32 (whole numbers 0..255, as MNIST pixels) and an int label
  0..9;
* ``tokens``: ``n`` sequences of 5..200 token ids below 50,000 (int32, concatenated, with int64
  offsets) and an int label 0..1.

Seeded: the same ``(workload, n, seed)`` gives the same content in every format.
"""
from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

DIM, VOCAB = 784, 50000
CHUNK_BYTES = 32 << 20


def make(workload: str, n: int, seed: int = 0) -> dict:
    """The workload's arrays: dense ``x``, ``y``; tokens ``tokens``, ``offsets``, ``y``."""
    rng = np.random.default_rng(seed)
    if workload == "dense":
        x = rng.integers(0, 256, size=(n, DIM), dtype=np.uint8).astype(np.float32)
        return {"x": x, "y": rng.integers(0, 10, size=n).astype(np.int64)}
    lengths = rng.integers(5, 201, size=n).astype(np.int64)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    tokens = rng.integers(0, VOCAB, size=int(offsets[-1])).astype(np.int32)
    return {"tokens": tokens, "offsets": offsets, "y": rng.integers(0, 2, size=n).astype(np.int64)}


def _pieces(data: dict, rows_per_piece: int):
    n = len(data["y"])
    for a in range(0, n, rows_per_piece):
        yield a, min(n, a + rows_per_piece)


def write_cbf(data: dict, path: str) -> None:
    """A CBF file (cntkio's CBFWriter): dense ``x`` (784) and ``y`` (1), or sparse one-hot
    ``tokens`` (50,000) and dense ``y`` (1, one sample per sequence)."""
    from cntkio.deserializers.cbf import CBFWriter
    from cntkio.deserializers.protocol import ChunkData, DenseStream, SequenceTable, SparseStream
    n = len(data["y"])
    if "x" in data:
        streams = [("x", DIM, False), ("y", 1, False)]
        rows = max(1, CHUNK_BYTES // (4 * (DIM + 3)))
    else:
        streams = [("tokens", VOCAB, True), ("y", 1, False)]
        rows = max(1, CHUNK_BYTES // (12 * 100 + 16))
    with CBFWriter(path, streams, chunk_size=None) as w:
        for a, b in _pieces(data, rows):
            keys = np.arange(a, b, dtype=np.int64)
            ones = np.arange(b - a + 1, dtype=np.int64)
            y = DenseStream(data["y"][a:b, None].astype(np.float32), ones)
            if "x" in data:
                w.write(ChunkData(SequenceTable(keys, np.ones(b - a, np.int64)),
                                  {"x": DenseStream(data["x"][a:b], ones), "y": y}))
                continue
            off = data["offsets"][a:b + 1] - data["offsets"][a]
            ids = data["tokens"][data["offsets"][a]:data["offsets"][b]]
            tok = SparseStream(np.arange(len(ids) + 1, dtype=np.int64), ids.astype(np.int32),
                               np.ones(len(ids), np.float32), off, VOCAB)
            w.write(ChunkData(SequenceTable(keys, np.diff(off)), {"tokens": tok, "y": y}))
    assert n


_NUM = np.array([f"{i}" for i in range(256)], dtype=object)


def write_ctf(data: dict, path: str) -> None:
    """A CTF file: ``|x <784 numbers> |y <label>`` per row, or per sequence ``i |t id:1`` lines
    (the label on the first one)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        if "x" in data:
            x = data["x"].astype(np.int64)
            for a, b in _pieces(data, 5000):
                lines = [f"|x {' '.join(_NUM[row])} |y {y}\n" for row, y in zip(x[a:b], data["y"][a:b])]
                f.writelines(lines)
        else:
            off, tok, ys = data["offsets"], data["tokens"], data["y"]
            for a, b in _pieces(data, 2000):
                out = []
                for i in range(a, b):
                    ids = tok[off[i]:off[i + 1]]
                    out.append(f"{i} |t {ids[0]}:1 |y {ys[i]}\n")
                    out.extend(f"{i} |t {t}:1\n" for t in ids[1:].tolist())
                f.writelines(out)
    os.replace(tmp, path)
