"""CNTK text format (CTF) data for a reader's ``input`` streams: dense values, one-hot labels, sparse ids.

What it must never do: write a stream the configuration does not declare, or one of another
dimension than its ``dim``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .sandbox import DataShape, Sandbox

__all__ = ["CtfStream", "ctf_streams", "write_ctf"]


@dataclass(frozen=True)
class CtfStream:
    """One input of a CTF reader: its name, the tag written in the file, dim, dense or sparse."""

    name: str
    alias: str
    dim: int
    sparse: bool

    @property
    def one_hot(self) -> bool:
        """Class labels: one 1 per sample (a dense stream named like labels, or any sparse one)."""
        return self.sparse or "label" in self.name.lower()


def ctf_streams(input_section) -> list[CtfStream]:
    """The streams of a reader's ``input = [name = [dim = ...; format = ...; alias = ...] ...]``."""
    out = []
    for name in input_section.keys():
        s = input_section.section(name)
        dim = int(s.int("dim", None, inherit=False) or s.int("labelDim", 1, inherit=False))
        fmt = str(s.str("format", "dense", inherit=False)).lower()
        alias = str(s.str("alias", name, inherit=False))
        out.append(CtfStream(name, alias, dim, fmt == "sparse"))
    return out


def _sample(stream: CtfStream, rng: np.random.Generator) -> str:
    if stream.sparse:
        return f"{int(rng.integers(stream.dim))}:1"
    if stream.one_hot:
        hot = int(rng.integers(stream.dim))
        return " ".join("1" if i == hot else "0" for i in range(stream.dim))
    return " ".join(f"{v:.3g}" for v in rng.random(stream.dim))


def write_ctf(box: Sandbox, path: str, streams: list[CtfStream], shape: DataShape) -> str:
    """Write ``shape.sequences`` sequences of ``streams``; the streams that ``shape.streams`` does
    not name (or names ``"same"``) have one length per sequence, drawn from ``shape.length``; a
    named one its own. Sequence ids are written when a sequence may have more than one sample."""
    rng = box.rng
    n = shape.sequences
    lengths: dict[str, np.ndarray] = {}
    common = box.lengths(n, shape.length)       # the streams without a length of their own share these
    for s in streams:
        span = shape.stream_length(s.name)
        if span == "same" or span == tuple(shape.length) and s.name.lower() not in {k.lower() for k in shape.streams}:
            lengths[s.name] = common
        else:
            lengths[s.name] = box.lengths(n, span)
    with_ids = any(int(v.max()) > 1 for v in lengths.values()) or len(streams) > 1 and any(
        not np.array_equal(lengths[streams[0].name], v) for v in lengths.values())
    lines = []
    for i in range(n):
        steps = max(int(lengths[s.name][i]) for s in streams)
        for t in range(steps):
            parts = [str(i)] if with_ids else []
            for s in streams:
                if t < lengths[s.name][i]:
                    parts.append(f"|{s.alias} {_sample(s, rng)}")
            lines.append(" ".join(parts))
    return box.write_text(path, "\n".join(lines) + "\n")
