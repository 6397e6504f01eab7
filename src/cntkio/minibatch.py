"""MinibatchData: what ``next_minibatch`` returns per stream (cntk-io-semantics 1.3).

A minibatch of one stream is a set of rows (sequences, or parallel slots in truncated BPTT) of up
to ``T`` samples each, with a mask: 2 = first sample of a sequence, 1 = continuation, 0 = padding.
Valid cells of a row are a prefix of it. The values are stored compactly: only valid cells, in
row-major order (row 0's samples, then row 1's, ...): dense as ``values[num_valid, *shape]``,
sparse as CSR over the valid cells. Padded views are built only when asked for.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .streams import StreamInformation

__all__ = ["MinibatchData"]


class MinibatchData:
    """One stream's part of a minibatch (cntk.io's ``MinibatchData``).

    Built by the packer with :meth:`from_packed`. ``num_sequences`` counts rows,
    ``num_samples`` the valid samples of this stream, ``end_of_sweep`` tells whether the minibatch
    holds the last sample of a sweep.
    """

    __slots__ = ("stream", "_mask", "_values", "_indptr", "_indices", "_data", "end_of_sweep",
                 "_lengths", "__weakref__")

    @classmethod
    def from_packed(cls, stream: StreamInformation, mask: np.ndarray, *, values: np.ndarray | None = None,
                    indptr: np.ndarray | None = None, indices: np.ndarray | None = None,
                    data: np.ndarray | None = None, end_of_sweep: bool = False) -> "MinibatchData":
        """Wrap packed arrays: ``mask`` int8 ``[S, T]``; dense ``values[num_valid, *shape]`` or
        sparse CSR (``indptr`` int64 ``[num_valid+1]``, ``indices`` int32, ``data``) over the
        valid cells in row-major order."""
        self = cls.__new__(cls)
        self.stream = stream
        self._mask = np.asarray(mask, dtype=np.int8)
        self._values, self._indptr, self._indices, self._data = values, indptr, indices, data
        self.end_of_sweep = bool(end_of_sweep)
        self._lengths = None
        return self

    # --- counts -------------------------------------------------------------------------------
    @property
    def num_sequences(self) -> int:
        return int(self._mask.shape[0])

    number_of_sequences = num_sequences

    @property
    def sequence_lengths(self) -> np.ndarray:
        """Valid samples per row, as int64."""
        if self._lengths is None:
            self._lengths = np.count_nonzero(self._mask, axis=1).astype(np.int64)
        return self._lengths

    @property
    def num_samples(self) -> int:
        return int(self.sequence_lengths.sum())

    number_of_samples = num_samples

    @property
    def sweep_end(self) -> bool:
        return self.end_of_sweep

    @property
    def is_sparse(self) -> bool:
        return self._values is None

    @property
    def mask(self) -> np.ndarray:
        return self._mask

    @property
    def shape(self) -> tuple[int, ...]:
        return (self._mask.shape[0], self._mask.shape[1]) + tuple(self.stream.sample_shape)

    @property
    def dtype(self) -> np.dtype:
        return self._values.dtype if self._values is not None else self._data.dtype

    def __len__(self) -> int:
        return self.num_sequences

    # --- views --------------------------------------------------------------------------------
    def _valid_cells(self) -> np.ndarray:
        return np.flatnonzero(self._mask.reshape(-1))

    def asarray(self) -> np.ndarray:
        """The padded dense array ``[S, T, *shape]`` (padding is zero; sparse is densified)."""
        S, T = self._mask.shape
        dim = int(np.prod(self.stream.sample_shape, dtype=np.int64))
        out = np.zeros((S * T, dim), dtype=self.dtype)
        cells = self._valid_cells()
        if self._values is not None:
            out[cells] = self._values.reshape(len(cells), dim)
        else:
            rows = np.repeat(cells, np.diff(self._indptr))
            out[rows, self._indices] = self._data
            if len(self.stream.sample_shape) > 1:
                warnings.warn("asarray() densified a sparse stream of rank > 1", stacklevel=2)
        return out.reshape(self.shape)

    def as_csr(self):
        """A sparse stream's valid samples as one SciPy CSR matrix (one row per sample, rows in
        sequence order), never densified. Dense streams are converted."""
        import scipy.sparse as sp
        dim = int(np.prod(self.stream.sample_shape, dtype=np.int64))
        if self._values is not None:
            return sp.csr_matrix(self._values.reshape(-1, dim))
        return sp.csr_matrix((self._data, self._indices, self._indptr), shape=(len(self._indptr) - 1, dim))

    def as_sequences(self, variable: Any = None) -> list:
        """One entry per row with padding removed: dense ``(len, *shape)`` arrays, sparse CSR
        matrices ``(len, dim)``."""
        bounds = np.concatenate([[0], np.cumsum(self.sequence_lengths)])
        if self._values is not None:
            return [self._values[bounds[i]:bounds[i + 1]] for i in range(self.num_sequences)]
        csr = self.as_csr()
        return [csr[bounds[i]:bounds[i + 1]] for i in range(self.num_sequences)]

    def __repr__(self) -> str:
        return (f"MinibatchData(stream={self.stream.name!r}, shape={self.shape}, "
                f"num_sequences={self.num_sequences}, num_samples={self.num_samples}, "
                f"is_sparse={self.is_sparse}, end_of_sweep={self.end_of_sweep})")
