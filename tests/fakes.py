"""A small in-memory Deserializer for engine and source tests.

Sequence ``q`` (its key, unless ``keys`` are given) has ``lengths[q]`` samples. Dense stream
``x`` holds ``q * 1000 + t`` in every column of sample ``t``; sparse stream ``y`` has one
non-zero per sample, at column ``q % dim``, with the same value. So every delivered sample names
its sequence and position, and tests can read the order back with :func:`ids_of`.
"""
from __future__ import annotations

import threading

import numpy as np

from cntkio.deserializers.base import ChunkData, ChunkInfo, DenseStream, Deserializer, SequenceTable, SparseStream
from cntkio.streams import StreamInformation


class FakeDeserializer(Deserializer):
    """Chunks of sequences with given lengths; streams 'x' (dense) and/or 'y' (sparse)."""

    def __init__(self, chunks, *, dense_dim=2, sparse_dim=0, keys=None, names=("x", "y"),
                 defines_mb_size=False, stream_lengths=None, invalid=(), key_kind="numeric", fail_chunk=None):
        self.chunks = [list(map(int, c)) for c in chunks]
        n = sum(len(c) for c in self.chunks)
        self.keys = np.arange(n, dtype=np.int64) if keys is None else np.asarray(keys)
        self.key_kind = key_kind
        self.dense_dim, self.sparse_dim = dense_dim, sparse_dim
        self.names = names
        self.defines = defines_mb_size
        # per-stream lengths override: {name: [len per sequence]} (defaults: the timeline lengths)
        self.stream_lengths = stream_lengths or {}
        self.invalid = set(invalid)
        self.fail_chunk = fail_chunk
        self.first = np.concatenate([[0], np.cumsum([len(c) for c in self.chunks])]).astype(np.int64)
        self.loads = []
        self._lock = threading.Lock()

    def stream_infos(self):
        out = []
        if self.dense_dim:
            out.append(StreamInformation(self.names[0], 0, "dense", np.float32, (self.dense_dim,),
                                         self.defines))
        if self.sparse_dim:
            out.append(StreamInformation(self.names[1], 1, "sparse", np.float32, (self.sparse_dim,)))
        return out

    def chunk_infos(self):
        return [ChunkInfo(i, len(c), sum(c)) for i, c in enumerate(self.chunks)]

    def sequence_infos(self, chunk_id):
        a, b = self.first[chunk_id], self.first[chunk_id + 1]
        return SequenceTable(self.keys[a:b], np.array(self.chunks[chunk_id], np.int64))

    def _lens(self, name, chunk_id):
        a, b = self.first[chunk_id], self.first[chunk_id + 1]
        if name in self.stream_lengths:
            return np.asarray(self.stream_lengths[name][a:b], np.int64)
        return np.array(self.chunks[chunk_id], np.int64)

    def get_chunk(self, chunk_id):
        with self._lock:
            self.loads.append(chunk_id)
        if self.fail_chunk is not None and chunk_id == self.fail_chunk:
            raise OSError(f"cannot read chunk {chunk_id}")
        a = int(self.first[chunk_id])
        streams = {}
        for name, dim, sparse in ((self.names[0], self.dense_dim, False), (self.names[1], self.sparse_dim, True)):
            if not dim:
                continue
            lens = self._lens(name, chunk_id)
            q = np.repeat(np.arange(a, a + len(lens)), lens)
            t = np.arange(len(q)) - np.repeat(np.cumsum(lens) - lens, lens)
            val = (q * 1000 + t).astype(np.float32)
            offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
            if sparse:
                streams[name] = SparseStream(np.arange(len(q) + 1, dtype=np.int64), (q % dim).astype(np.int32),
                                             val, offsets, dim)
            else:
                streams[name] = DenseStream(np.repeat(val[:, None], dim, axis=1), offsets)
        invalid = None
        if self.invalid:
            invalid = np.array([(a + i) in self.invalid for i in range(len(self.chunks[chunk_id]))])
        return ChunkData(self.sequence_infos(chunk_id), streams, invalid)


def ids_of(mbdata):
    """The sequence ids of a dense fake stream's minibatch rows (``q`` of each row's first sample)."""
    seqs = mbdata.as_sequences()
    return [int(s[0, 0] // 1000) if len(s) else None for s in seqs]


def samples_of(mbdata):
    """Every valid sample of a dense fake stream as ``(q, t)`` pairs, rows in order."""
    vals = mbdata.as_sequences()
    out = []
    for s in vals:
        for v in s[:, 0]:
            out.append((int(v // 1000), int(v % 1000)))
    return out


def write_classes_ctf(path, n: int = 40, dim: int = 4, classes: int = 3, seed: int = 0) -> None:
    """A small CTF file of ``n`` samples: ``|features`` (``dim`` normal values shifted by the
    class) and one-hot ``|labels`` of ``classes`` classes, the class of sample i being i % classes."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        for i in range(n):
            y = i % classes
            x = rng.standard_normal(dim) + y
            onehot = " ".join("1" if k == y else "0" for k in range(classes))
            f.write(f"|features {' '.join(f'{v:.3f}' for v in x)} |labels {onehot}\n")
