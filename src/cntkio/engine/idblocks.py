"""Padded per-minibatch blocks, and one-hot sparse streams gathered straight into token-id blocks.

When a consumer asked for a one-hot sparse stream as token ids (``TensorLayout.ids``), the packer
writes its sequences from the chunks' CSR straight into the padded int64 rows of the tensor-ready
batch, one native pass (``_native._gather.gather_ids``, checking every sample is one-hot), instead
of gathering the CSR arrays and converting them afterwards (three gathers, a cast and a scatter).
The CSR of a minibatch is made back from the ids only when someone asks for the minibatch
itself. Never used where a sample is not one-hot: that batch takes the general path, whose
tensor-ready step names the sample.
"""
from __future__ import annotations

import numpy as np

from .._native import native
from ..streams import StreamInformation
from . import buffers
from .segments import copy_segments

__all__ = ["Blocks", "IdBlocks", "gather_ids"]


class Blocks:
    """Per-minibatch padded blocks in one flat buffer: minibatch ``j`` (rows ``s0..s1`` of the
    batch, width ``w``) is ``buf[start[j]:start[j] + (s1 - s0) * w]`` viewed as ``[s1 - s0, w]``;
    ``row_base`` is the flat cell where each row of the batch begins, ``row_width`` its width."""

    __slots__ = ("start", "widths", "rows", "row_base", "row_width", "total")

    def __init__(self, lens: np.ndarray, bounds: np.ndarray, widths: np.ndarray) -> None:
        rows = np.diff(bounds)
        sizes = rows * widths
        start = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=start[1:])
        mb_of_row = np.repeat(np.arange(len(rows), dtype=np.int64), rows)
        row_in_mb = np.arange(len(lens), dtype=np.int64) - bounds[:-1][mb_of_row]
        self.row_width = widths[mb_of_row]
        self.row_base = start[:-1][mb_of_row] + row_in_mb * self.row_width
        self.start, self.widths, self.rows = start.tolist(), widths.tolist(), rows.tolist()
        self.total = int(start[-1])

    def fill(self, src: np.ndarray, lens: np.ndarray, pad) -> np.ndarray:
        """The padded buffer of ``src`` (the rows' samples one after another): one native copy
        per row, no index array per sample."""
        buf = np.full((self.total,) + src.shape[1:], pad, src.dtype)
        row0 = np.zeros(len(lens), np.int64)
        np.cumsum(lens[:-1], out=row0[1:])
        copy_segments(src, row0, buf, self.row_base, lens)
        return buf

    def mask(self, lens: np.ndarray) -> np.ndarray:
        """The bool buffer, True on valid cells."""
        ones = np.ones(int(lens.max()) if len(lens) else 0, np.bool_)
        buf = np.zeros(self.total, np.bool_)
        copy_segments(ones, np.zeros(len(lens), np.int64), buf, self.row_base, lens)
        return buf


class IdBlocks:
    """A one-hot sparse stream of a packed batch held as padded token-id blocks (module
    docstring): ``buf`` (int64, padded with ``pad``), its :class:`Blocks` and the rows' lengths."""

    __slots__ = ("info", "buf", "blocks", "lens", "bounds", "pad")

    def __init__(self, info: StreamInformation, buf: np.ndarray, blocks: Blocks, lens: np.ndarray,
                 bounds: list, pad: int) -> None:
        self.info, self.buf, self.blocks, self.lens, self.bounds, self.pad = info, buf, blocks, lens, bounds, pad

    def parts(self, masks: bool) -> list:
        """The tensor-ready parts ``[(ids, starts, shapes)]`` (and the mask's with ``masks``)."""
        b = self.blocks
        shapes = list(zip(b.rows, b.widths))
        out = [(self.buf, b.start, shapes)]
        if masks:
            out.append((b.mask(self.lens), b.start, shapes))
        return out

    def csr(self, j: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Minibatch ``j``'s CSR ``(indptr, indices, data)`` made back from its ids (the whole
        batch's with None): one non-zero of value 1 per sample."""
        b = self.blocks
        if j is None:
            lo, hi, s0, s1 = 0, b.total, 0, len(self.lens)
        else:
            lo, hi, s0, s1 = b.start[j], b.start[j + 1], self.bounds[j], self.bounds[j + 1]
        lens = self.lens[s0:s1]
        base = b.row_base[s0:s1] - lo
        n = int(lens.sum())
        idx = np.repeat(base - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(n)
        indices = self.buf[lo:hi][idx].astype(np.int32)
        return np.arange(n + 1, dtype=np.int64), indices, np.ones(n, self.info.dtype)


def gather_ids(info: StreamInformation, chunks, sel_chunk: np.ndarray, sel_index: np.ndarray, groups,
               bounds: np.ndarray, widths: np.ndarray, pad: int):
    """The selected sequences of one-hot sparse stream ``info`` as :class:`IdBlocks` (one native
    pass per chunk), with their lengths; None when the native core is not built, a chunk does not
    hold the stream as int32 CSR, or a sample is not one-hot (the caller packs it generally)."""
    mod = native("gather")
    if mod is None:
        return None
    name = info.name
    lens = np.empty(len(sel_chunk), np.int64)
    per = []
    for cid, pos in groups:
        st = chunks[cid].streams[name]
        if not st.is_sparse or st.indices.dtype != np.int32 or st.indptr.dtype != np.int64 or \
                st.data.dtype not in (np.float32, np.float64):
            return None
        idx = sel_index[pos]
        row0 = st.offsets[idx]
        rows = st.offsets[idx + 1] - row0
        lens[pos] = rows
        per.append((st, pos, row0, rows))
    blocks = Blocks(lens, bounds, np.asarray(widths, np.int64))
    buf = buffers.empty((blocks.total,), np.int64)
    for st, pos, row0, rows in per:
        if mod.gather_ids(st.indptr, st.indices, st.data, row0, rows, buf, blocks.row_base[pos],
                          blocks.row_width[pos], int(pad)) >= 0:
            return None
    return lens, IdBlocks(info, buf, blocks, lens, [int(x) for x in bounds], int(pad))
