"""Tensor-ready arrays of a packed batch: what a tensor library needs, built once per batch.

A :class:`~cntkio.engine.packer.PackedBatch` holds up to 256 consecutive minibatches as a few
arrays per stream. The PyTorch integration wants, per minibatch and stream, arrays it can hand to
``torch.from_numpy`` as they are; they are built here for the whole batch at once, with a handful
of vectorised NumPy operations per stream (nothing per sequence or sample in Python), so that
handing out one minibatch is slicing:

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

Every kind also has the int64 ``[S]`` sequence lengths (a slice of the batch's lengths).
"""
from __future__ import annotations

import numpy as np

from .segments import copy_segments


__all__ = ["BatchTensors", "check_one_hot"]


def check_one_hot(name: str, indptr: np.ndarray, data: np.ndarray) -> None:
    """Raise ``ValueError`` unless every sample has exactly one non-zero and it is 1."""
    n = len(indptr) - 1
    p0 = int(indptr[0])
    if int(indptr[-1]) - p0 == n and bool((data[p0:p0 + n] == 1).all()) and \
            (n < 2 or bool((indptr[1:] - indptr[:-1] == 1).all())):
        return
    per_sample = np.diff(indptr)
    bad = np.flatnonzero(per_sample != 1)
    if len(bad):
        raise ValueError(f"stream {name!r}: token ids need one-hot samples (exactly one non-zero "
                         f"each); sample {int(bad[0])} of the minibatch has {int(per_sample[bad[0]])}")
    values = data[int(indptr[0]):int(indptr[-1])]
    bad = np.flatnonzero(values != 1)
    if len(bad):
        raise ValueError(f"stream {name!r}: token ids need one-hot samples of value 1; sample "
                         f"{int(bad[0])} of the minibatch has the value {values[bad[0]]!r}")


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


class BatchTensors:
    """The tensor-ready arrays of one packed batch, for the streams named in ``ids`` as token ids
    and for every other stream in its natural layout (module docstring).

    ``streams`` holds per stream ``(name, kind, lens, bounds, parts)``: ``lens`` the int64 lengths
    of all the batch's rows, ``bounds`` the minibatches' first rows (``nmb + 1``), and ``parts``
    a list of ``(flat array, starts, shapes)``: minibatch ``j``'s array is
    ``flat[starts[j]:starts[j + 1]]`` reshaped to ``shapes[j]`` (None: kept 1-D). ``kind`` is
    ``"dense"`` (parts: the padded values), ``"ids"`` (the token ids, the mask) or ``"csr"``
    (row pointers, column indices, values; ``sizes`` gives the matrices' shapes), or None for a
    stream with no sequences in the batch. :meth:`get` slices minibatch ``j`` out as NumPy
    arrays; the PyTorch integration splits the flat arrays into tensors once per batch.
    ``cache`` is free for such a consumer to keep what it made of the batch.
    """

    __slots__ = ("streams", "nmb", "sizes", "cache")

    def __init__(self, batch, ids: frozenset = frozenset(), pad_id: int = 0, masks: bool = False) -> None:
        bounds = np.asarray(batch.bounds, np.int64)
        self.nmb = nmb = len(bounds) - 1
        self.cache = None
        self.sizes = {}
        self.streams = []
        for info, mask_all, widths, rows, arrays, lens in batch.streams:
            name = info.name
            if mask_all is None:
                self.streams.append((name, None, None, batch.bounds, None))
                continue
            widths_a = np.asarray(widths, np.int64)
            if len(arrays) == 1:
                parts = [self._dense(arrays[0], lens, bounds, widths_a, rows)]
                kind = "dense"
            elif name in ids:
                parts = self._ids(name, arrays, lens, bounds, widths_a, pad_id, masks)
                kind = "ids"
            else:
                parts = self._csr(info, arrays, rows, nmb)
                kind = "csr"
            self.streams.append((name, kind, lens, batch.bounds, parts))

    @staticmethod
    def _dense(values: np.ndarray, lens, bounds, widths, rows) -> tuple:
        shape = values.shape[1:]
        nrows = np.diff(bounds).tolist()
        if len(lens) and int(lens.min()) == int(lens.max()):  # no padding: the packed values
            L = int(lens[0])
            return values, rows, [(n, L) + shape for n in nrows]
        blocks = _Blocks(lens, bounds, widths)
        buf = blocks.fill(np.ascontiguousarray(values), lens, 0)
        return buf, blocks.start, [(n, w) + shape for n, w in zip(nrows, blocks.widths)]

    @staticmethod
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

    def _csr(self, info, arrays, rows, nmb: int) -> list:
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
        self.sizes[info.name] = [(n, dim) for n in counts.tolist()]
        return [(crow, crow_starts, None), (col, nz, None), (data[p0:p1], nz, None)]

    def get(self, j: int) -> list:
        """Minibatch ``j``: ``[(name, kind, arrays, lengths)]``; ``arrays`` is the padded array
        (dense), ``(ids, mask)`` (ids) or ``(crow, col, values, shape)`` (csr); kind None (and
        the rest None) for a stream with no sequences in the batch."""
        out = []
        for name, kind, lens, bounds, parts in self.streams:
            if kind is None:
                out.append((name, None, None, None))
                continue
            got = []
            for flat, starts, shapes in parts:
                a = flat[starts[j]:starts[j + 1]]
                got.append(a if shapes is None else a.reshape(shapes[j]))
            if kind == "dense":
                got = got[0]
            elif kind == "csr":
                got = (*got, self.sizes[name][j])
            else:
                got = tuple(got)
            out.append((name, kind, got, lens[bounds[j]:bounds[j + 1]]))
        return out
