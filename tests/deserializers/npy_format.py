"""A toy format: one ``.npy`` file per sequence, one dense stream (docs/architecture.md, "Adding a format").

It is the worked example of adding a format to cntkio: this one module plus the one registry line
at its end. The input is a directory (its ``*.npy`` files in name order) or a list file (one path
per line, relative to the list file's directory; blank lines and ``#`` comments skipped). File
``i`` holds sequence ``i``: an array ``(T, *shape)`` of ``T >= 1`` samples. Keys are the file's
position (``keys = "index"``, numeric) or its stem (``keys = "stem"``, string keys, which a
composite joins by).

Config (from Python with :func:`NpyDeserializer`, or a reader section's
``deserializers = ([type = "NpySequenceDeserializer"; file = ...; input = [x = [dim = 3]]])``)::

    {"type": "NpySequenceDeserializer", "file": dir_or_list,
     "input": {name: {"dim": 3 | "2:3" | (2, 3)}},  # exactly one stream
     "keys": "index" | "stem", "sequencesPerChunk": 64, "precision": "float" | "double"}
"""
from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np

from cntkio.deserializers.base import DeserializerBase
from cntkio.deserializers.protocol import ChunkData, ChunkInfo, DenseStream, SequenceTable
from cntkio.errors import ConfigError
from cntkio.registry import register_deserializer
from cntkio.streams import StreamInformation
from cntkio.values import to_choice, to_dims, to_int, to_path

TYPE_NAME = "NpySequenceDeserializer"


def NpyDeserializer(file: str, stream: str = "features", shape: Any = 1, keys: str = "index",
                    sequences_per_chunk: int = 64) -> dict:
    """The config of an NpySequenceDeserializer (as ``CTFDeserializer`` returns a CTF config)."""
    return {"type": TYPE_NAME, "file": file, "input": {stream: {"dim": shape}}, "keys": keys,
            "sequencesPerChunk": sequences_per_chunk}


def _files(source: str) -> list[str]:
    if os.path.isdir(source):
        return sorted(os.path.join(source, f) for f in os.listdir(source) if f.endswith(".npy"))
    base = os.path.dirname(os.path.abspath(source))
    with open(source, encoding="utf-8") as f:
        lines = [ln.strip() for ln in f]
    return [os.path.join(base, ln) for ln in lines if ln and not ln.startswith("#")]


class NpySequenceDeserializer(DeserializerBase):
    """Sequences from ``.npy`` files; the class is its own registry factory:
    ``NpySequenceDeserializer(config, **source_options)``."""

    def __init__(self, config: Mapping, trace_level: int = 1, **source_options: Any) -> None:
        inputs = config.get("input") or {}
        if len(inputs) != 1:
            raise ConfigError(f"expected exactly one input stream, found {len(inputs)}", path="input")
        (name, spec), = inputs.items()
        shape = to_dims(spec.get("dim"), f"input.{name}.dim")
        keys = to_choice(config.get("keys", "index"), "keys", ("index", "stem"))
        self.key_kind = "numeric" if keys == "index" else "string"
        per_chunk = to_int(config.get("sequencesPerChunk", 64), "sequencesPerChunk", minimum=1)
        precision = to_choice(config.get("precision", "float"), "precision", ("float", "double"))
        self.dtype = np.dtype(np.float32 if precision == "float" else np.float64)
        self.files = _files(to_path(config.get("file"), "file"))
        if not self.files:
            raise ConfigError(f"{config.get('file')}: no .npy files", path="file")
        lengths = np.empty(len(self.files), np.int64)
        for i, path in enumerate(self.files):       # the index: headers only (memory-mapped)
            arr = np.load(path, mmap_mode="r")
            if arr.ndim != len(shape) + 1 or arr.shape[1:] != shape or arr.shape[0] < 1:
                raise ValueError(f"{path}: an array of shape {arr.shape}; stream '{name}' needs "
                                 f"(T >= 1, {', '.join(map(str, shape))})")
            lengths[i] = arr.shape[0]
            del arr
        self._stream = StreamInformation(name, 0, "dense", self.dtype, shape)
        stems = [os.path.splitext(os.path.basename(p))[0] for p in self.files]
        self._keys = np.array(stems, dtype=object) if self.key_kind == "string" \
            else np.arange(len(self.files), dtype=np.int64)
        self._lengths = lengths
        self._bounds = list(range(0, len(self.files), per_chunk)) + [len(self.files)]

    def stream_infos(self) -> list[StreamInformation]:
        return [self._stream]

    def chunk_infos(self) -> list[ChunkInfo]:
        return [ChunkInfo(c, b - a, int(self._lengths[a:b].sum()))
                for c, (a, b) in enumerate(zip(self._bounds, self._bounds[1:]))]

    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        a, b = self._bounds[chunk_id], self._bounds[chunk_id + 1]
        return SequenceTable(self._keys[a:b], self._lengths[a:b])

    def get_chunk(self, chunk_id: int) -> ChunkData:
        # thread-safe: reads files, touches no shared state
        table = self.sequence_infos(chunk_id)
        a, b = self._bounds[chunk_id], self._bounds[chunk_id + 1]
        values = np.concatenate([np.load(p).astype(self.dtype, copy=False) for p in self.files[a:b]])
        offsets = np.zeros(len(table) + 1, np.int64)
        np.cumsum(table.lengths, out=offsets[1:])
        return ChunkData(table, {self._stream.name: DenseStream(values, offsets)})

    def __repr__(self) -> str:
        return f"NpySequenceDeserializer({len(self.files)} files)"


register_deserializer(TYPE_NAME, NpySequenceDeserializer)
