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
  of ``num_samples + num_minibatches`` int64 per batch), column indices as int64 (one conversion
  per batch) and the values as packed (a slice, no copy).
* **ids** — a one-hot sparse stream (every sample exactly one non-zero, of value 1) as padded
  ``[S, T]`` int64 token ids plus a bool ``[S, T]`` mask, in per-minibatch blocks like dense.

Every kind also has the int64 ``[S]`` sequence lengths (a slice of the batch's lengths).
"""
from __future__ import annotations

import numpy as np

from .composite import ranges

__all__ = ["BatchTensors", "check_one_hot"]


def check_one_hot(name: str, indptr: np.ndarray, data: np.ndarray) -> None:
    """Raise ``ValueError`` unless every sample has exactly one non-zero and it is 1."""
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
    batch, width ``w``) is ``buf[start[j]:start[j] + (s1 - s0) * w]`` viewed as ``[s1 - s0, w]``,
    and ``dest`` is the flat cell of every valid sample in packed (row-major) order."""

    __slots__ = ("start", "widths", "rows", "dest", "total")

    def __init__(self, lens: np.ndarray, bounds: np.ndarray, widths: np.ndarray) -> None:
        rows = np.diff(bounds)
        sizes = rows * widths
        start = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=start[1:])
        mb_of_row = np.repeat(np.arange(len(rows), dtype=np.int64), rows)
        row_in_mb = np.arange(len(lens), dtype=np.int64) - bounds[:-1][mb_of_row]
        row_base = start[:-1][mb_of_row] + row_in_mb * widths[mb_of_row]
        self.dest = ranges(row_base, lens)
        self.start, self.widths, self.rows = start.tolist(), widths.tolist(), rows.tolist()
        self.total = int(start[-1])

    def view(self, buf: np.ndarray, j: int) -> np.ndarray:
        a = self.start[j]
        return buf[a:a + self.rows[j] * self.widths[j]].reshape((self.rows[j], self.widths[j]) + buf.shape[1:])


class BatchTensors:
    """The tensor-ready arrays of one packed batch, for the streams named in ``ids`` as token ids
    and for every other stream in its natural layout (module docstring). :meth:`get` hands out
    minibatch ``j``: ``[(name, kind, arrays, lengths)]`` with ``kind`` ``"dense"`` (arrays: the
    padded array itself), ``"csr"`` (``(crow, col, values, (rows, dim))``) or ``"ids"``
    (``(ids, mask)``)."""

    __slots__ = ("streams", "bounds")

    def __init__(self, batch, ids: frozenset = frozenset(), pad_id: int = 0) -> None:
        bounds = np.asarray(batch.bounds, np.int64)
        self.bounds = batch.bounds
        nmb = len(bounds) - 1
        self.streams = []
        for info, mask_all, widths, rows, arrays, lens in batch.streams:
            name = info.name
            if mask_all is None:
                self.streams.append((name, None, None))
                continue
            widths_a = np.asarray(widths, np.int64)
            lens_per_mb = [lens[bounds[j]:bounds[j + 1]] for j in range(nmb)]
            if len(arrays) == 1:
                self.streams.append((name, "dense", self._dense(arrays[0], lens, bounds, widths_a, rows),
                                     lens_per_mb))
            elif name in ids:
                self.streams.append((name, "ids", self._ids(name, arrays, lens, bounds, widths_a, pad_id),
                                     lens_per_mb))
            else:
                self.streams.append((name, "csr", self._csr(info, arrays, rows), lens_per_mb))

    @staticmethod
    def _dense(values: np.ndarray, lens, bounds, widths, rows) -> list:
        nmb = len(bounds) - 1
        shape = values.shape[1:]
        if len(lens) and int(lens.min()) == int(lens.max()):  # no padding: the packed values
            L = int(lens[0])
            return [values[rows[j]:rows[j + 1]].reshape((int(bounds[j + 1] - bounds[j]), L) + shape)
                    for j in range(nmb)]
        blocks = _Blocks(lens, bounds, widths)
        buf = np.zeros((blocks.total,) + shape, values.dtype)
        buf[blocks.dest] = values[:len(blocks.dest)]
        return [blocks.view(buf, j) for j in range(nmb)]

    @staticmethod
    def _ids(name, arrays, lens, bounds, widths, pad_id: int) -> list:
        indptr, indices, data = arrays
        check_one_hot(name, indptr, data)
        blocks = _Blocks(lens, bounds, widths)
        ids = np.full(blocks.total, pad_id, np.int64)
        ids[blocks.dest] = indices[int(indptr[0]):int(indptr[-1])]
        mask = np.zeros(blocks.total, np.bool_)
        mask[blocks.dest] = True
        return [(blocks.view(ids, j), blocks.view(mask, j)) for j in range(len(bounds) - 1)]

    @staticmethod
    def _csr(info, arrays, rows) -> list:
        indptr, indices, data = arrays
        dim = int(np.prod(info.sample_shape, dtype=np.int64)) if info.sample_shape else 1
        rows_a = np.asarray(rows, np.int64)
        counts = np.diff(rows_a)
        nmb = len(counts)
        # minibatch j's row pointers, rebased to 0, at crow[rows[j] + j : rows[j + 1] + j + 1]
        first = indptr[rows_a[:-1]]
        crow = indptr[ranges(rows_a[:-1], counts + 1)] - np.repeat(first, counts + 1)
        p0 = int(indptr[0])
        col = indices[p0:int(indptr[-1])].astype(np.int64)
        nz = (indptr[rows_a] - p0).tolist()
        return [(crow[rows[j] + j:rows[j + 1] + j + 1], col[nz[j]:nz[j + 1]],
                 data[p0 + nz[j]:p0 + nz[j + 1]], (rows[j + 1] - rows[j], dim)) for j in range(nmb)]

    def get(self, j: int) -> list:
        """Minibatch ``j``: ``[(name, kind, arrays, lengths)]`` (class docstring); kind None for a
        stream with no sequences in the batch."""
        out = []
        for name, kind, per_mb, *lens in self.streams:
            if kind is None:
                out.append((name, None, None, None))
            else:
                out.append((name, kind, per_mb[j], lens[0][j]))
        return out
