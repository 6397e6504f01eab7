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
from .idblocks import Blocks, IdBlocks
from .segments import copy_segments

__all__ = ["build_tensor_batch"]


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
        if isinstance(arrays, IdBlocks):  # gathered as token ids by the packer
            if name in layout.ids and layout.pad_id == arrays.pad:
                streams.append((name, "ids", lens, batch.bounds, arrays.parts(layout.masks)))
                continue
            arrays = arrays.csr()
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
    blocks = Blocks(lens, bounds, widths)
    buf = blocks.fill(np.ascontiguousarray(values), lens, 0)
    return buf, blocks.start, [(n, w) + shape for n, w in zip(nrows, blocks.widths)]


def _ids(name, arrays, lens, bounds, widths, pad_id: int, masks: bool) -> list:
    indptr, indices, data = arrays
    check_one_hot(name, indptr, data)
    blocks = Blocks(lens, bounds, widths)
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
