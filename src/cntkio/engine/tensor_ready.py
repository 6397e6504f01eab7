"""Builds the tensor-ready arrays of a packed batch (the public types: :mod:`cntkio.tensor_ready`).

A :class:`~cntkio.engine.packer.PackedBatch` holds up to 256 consecutive minibatches as a few
arrays per stream; :func:`build_tensor_batch` turns them into a
:class:`~cntkio.tensor_ready.TensorBatch` with a handful of vectorised NumPy operations per stream
(nothing per sequence or sample in Python), so that handing out one minibatch is slicing:

* **dense** — the padded ``[S, T, *shape]`` values (padding zero). When every sequence of the
  batch has the same length (the usual non-sequence data, length 1) the packed values already
  are that layout and are reshaped, not copied; otherwise each minibatch gets its own block of
  ``S * T`` cells in one buffer per batch, filled by one scatter.
* **csr** — the valid samples as CSR: row pointers starting at 0 for every minibatch (one buffer
  of ``num_samples + num_minibatches`` per batch, one native copy), the column indices and the
  values as packed (slices, no copy); the row pointers take the indices' type (int32, or int64
  when a batch holds 2^31 non-zeros or more).
* **ids** — a one-hot sparse stream (every sample exactly one non-zero, of value 1) as padded
  ``[S, T]`` int64 token ids plus a bool ``[S, T]`` mask, in per-minibatch blocks like dense.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..tensor_ready import TensorBatch, TensorLayout, check_one_hot
from .segments import copy_segments

__all__ = ["build_tensor_batch"]


class _Blocks:
    """Per-minibatch padded blocks in one flat buffer: minibatch ``j`` (rows ``s0..s1`` of the
    batch, width ``w``) is ``buf[start[j]:start[j] + (s1 - s0) * w]`` viewed as ``[s1 - s0, w]``;
    ``row_base`` is the flat cell where each row of the batch begins."""

    __slots__ = ("start", "widths", "rows", "row_base", "total")

    def __init__(self, lens: np.ndarray, bounds: np.ndarray, widths: np.ndarray) -> None:
        rows = np.diff(bounds)
        sizes = rows * widths
        start = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=start[1:])
        mb_of_row = np.repeat(np.arange(len(rows), dtype=np.int64), rows)
        row_in_mb = np.arange(len(lens), dtype=np.int64) - bounds[:-1][mb_of_row]
        self.row_base = start[:-1][mb_of_row] + row_in_mb * widths[mb_of_row]
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


def build_tensor_batch(batch, layout: TensorLayout, minibatch: Callable[[int], Any]) -> TensorBatch:
    """The :class:`~cntkio.tensor_ready.TensorBatch` of a packed batch (module docstring):
    the streams named in ``layout.ids`` as token ids, every other one in its natural layout;
    ``minibatch(j)`` makes minibatch ``j`` as ``next_minibatch`` gives it."""
    bounds = np.asarray(batch.bounds, np.int64)
    nmb = len(bounds) - 1
    sizes: dict = {}
    streams = []
    for info, mask_all, widths, rows, arrays, lens in batch.streams:
        name = info.name
        if mask_all is None:
            streams.append((name, None, None, batch.bounds, None))
            continue
        widths_a = np.asarray(widths, np.int64)
        if len(arrays) == 1:
            parts = [_dense(arrays[0], lens, bounds, widths_a, rows)]
            kind = "dense"
        elif name in layout.ids:
            parts = _ids(name, arrays, lens, bounds, widths_a, layout.pad_id, layout.masks)
            kind = "ids"
        else:
            parts = _csr(info, arrays, rows, nmb, sizes)
            kind = "csr"
        streams.append((name, kind, lens, batch.bounds, parts))
    b = batch.bounds
    first = batch.streams[0][3] if batch.streams else None   # the first stream's rows per minibatch
    samples = [0] * nmb if first is None else [first[j + 1] - first[j] for j in range(nmb)]
    return TensorBatch(streams, nmb, sizes, layout, minibatch, [b[j + 1] - b[j] for j in range(nmb)], samples)


def _dense(values: np.ndarray, lens, bounds, widths, rows) -> tuple:
    shape = values.shape[1:]
    nrows = np.diff(bounds).tolist()
    if len(lens) and int(lens.min()) == int(lens.max()):  # no padding: the packed values
        L = int(lens[0])
        return values, rows, [(n, L) + shape for n in nrows]
    blocks = _Blocks(lens, bounds, widths)
    buf = blocks.fill(np.ascontiguousarray(values), lens, 0)
    return buf, blocks.start, [(n, w) + shape for n, w in zip(nrows, blocks.widths)]


def _ids(name, arrays, lens, bounds, widths, pad_id: int, masks: bool) -> list:
    indptr, indices, data = arrays
    check_one_hot(name, indptr, data)
    blocks = _Blocks(lens, bounds, widths)
    ids = blocks.fill(indices[int(indptr[0]):int(indptr[-1])].astype(np.int64), lens, pad_id)
    shapes = list(zip(blocks.rows, blocks.widths))
    parts = [(ids, blocks.start, shapes)]
    if masks:
        parts.append((blocks.mask(lens), blocks.start, shapes))
    return parts


def _csr(info, arrays, rows, nmb: int, sizes: dict) -> list:
    indptr, indices, data = arrays
    dim = int(np.prod(info.sample_shape, dtype=np.int64)) if info.sample_shape else 1
    rows_a = np.asarray(rows, np.int64)
    counts = np.diff(rows_a)
    # minibatch j's row pointers, rebased to 0, at crow[rows[j] + j : rows[j + 1] + j + 1]
    crow = np.empty(int(rows_a[-1]) + nmb, np.int64)
    copy_segments(np.ascontiguousarray(indptr), rows_a[:-1], crow, rows_a[:-1] + np.arange(nmb),
                  counts + 1, shift=-indptr[rows_a[:-1]])
    p0, p1 = int(indptr[0]), int(indptr[-1])
    col = indices[p0:p1]  # as packed (int32): no copy; the row pointers take its type
    if col.dtype != crow.dtype and p1 - p0 <= np.iinfo(col.dtype).max:
        crow = crow.astype(col.dtype)
    elif col.dtype != crow.dtype:
        col = col.astype(crow.dtype)
    nz = (indptr[rows_a] - p0).tolist()
    crow_starts = (rows_a + np.arange(nmb + 1)).tolist()
    sizes[info.name] = [(n, dim) for n in counts.tolist()]
    return [(crow, crow_starts, None), (col, nz, None), (data[p0:p1], nz, None)]
