"""MinibatchData and Value: what ``next_minibatch`` returns per stream (cntk-io-semantics 1.3).

A minibatch of one stream is a set of rows (sequences, or parallel slots in truncated BPTT) of up
to ``T`` samples each, with a mask: 2 = first sample of a sequence, 1 = continuation, 0 = padding.
Valid cells of a row are a prefix of it. The values are stored compactly: only valid cells, in
row-major order (row 0's samples, then row 1's, ...): dense as ``values[num_valid, *shape]``,
sparse as CSR over the valid cells. Padded views are built only when asked for.

``Value`` is cntkio's counterpart of ``cntk.Value`` (a masked tensor): ``MinibatchData.data``
returns one, and user sources (``UserMinibatchSource``) build ``MinibatchData`` from one, from a
NumPy array, a SciPy CSR matrix or a list of per-sequence arrays.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from .streams import StreamInformation

if TYPE_CHECKING:  # scipy loads on first use of a CSR view
    from scipy.sparse import csr_matrix

__all__ = ["Minibatch", "MinibatchData", "Value", "check_one_hot"]

_MASK_WARNING = ("asarray() will ignore the mask information. "
                 "Please use as_sequences() to do the proper conversion.")


def _is_csr(obj: Any) -> bool:
    if not hasattr(obj, "indptr") or not hasattr(obj, "format"):
        return False
    return getattr(obj, "format", None) == "csr"


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


def _flat_dim(shape: tuple[int, ...]) -> int:
    # math.prod: a sample shape is a few ints; np.prod costs microseconds per minibatch and stream
    return int(math.prod(shape))


class Value:
    """A masked batch of samples, cntkio's ``cntk.Value``.

    ``Value(batch=...)`` accepts:

    * a NumPy array ``(N, *sample_shape)``: a batch of N samples **without** a sequence axis
      (``shape`` is the array's shape, as CNTK's ``Value(ndarray)``);
    * a SciPy CSR matrix ``(N, dim)``: N sparse samples without a sequence axis;
    * a list of NumPy arrays ``(len_i, *sample_shape)`` or of CSR matrices ``(len_i, dim)``: one
      item per sequence (``shape`` is ``(N, max_len, *sample_shape)``, padded cells masked 0);
    * another ``Value`` (returned as is by :meth:`MinibatchData`).

    The data may also be given as the first positional argument (``Value(X)``);
    ``Value(shape, dtype)`` is a zero-filled plain batch of that shape.
    ``seq_starts`` (list of bool, sequences only) marks rows that continue a sequence of the
    previous minibatch (``False``: the row's mask starts with 1 instead of 2). ``device`` is
    accepted for compatibility and ignored (values live in host memory).
    """

    __slots__ = ("_mask", "_values", "_indptr", "_indices", "_data", "_sample_shape", "_dtype",
                 "_seq_axis", "_erased", "__weakref__")

    def __init__(self, shape: Any = None, dtype: Any = None, batch: Any = None,
                 seq_starts: Any = None, device: Any = None) -> None:
        if batch is None and dtype is None and (isinstance(shape, (np.ndarray, list, Value))
                                                or _is_csr(shape)):
            batch, shape = shape, None  # Value(array): the data given positionally
        if batch is None and shape is not None and dtype is not None:
            batch = np.zeros(tuple(shape), dtype=dtype)
        if batch is None:
            raise ValueError("either shape and dtype or batch must be provided")
        if isinstance(batch, Value):
            self._copy_from(batch)
            return
        if isinstance(batch, np.ndarray):
            if batch.dtype == object:
                raise ValueError("dtype object is not supported. If this is a batch of "
                                 "sequences, pass them as a Python list of NumPy arrays")
            if batch.ndim == 0:
                raise ValueError("a batch needs at least one axis (the batch axis), "
                                 "got a 0-d array")
            n = batch.shape[0]
            self._init(np.full((n, 1), 2, np.int8), values=np.ascontiguousarray(batch),
                       sample_shape=batch.shape[1:], dtype=batch.dtype, seq_axis=False)
        elif _is_csr(batch):
            n, dim = batch.shape
            self._init(np.full((n, 1), 2, np.int8), indptr=np.asarray(batch.indptr, np.int64),
                       indices=np.asarray(batch.indices, np.int32), data=np.asarray(batch.data),
                       sample_shape=(int(dim),), dtype=batch.data.dtype, seq_axis=False)
        elif isinstance(batch, (list, tuple)):
            self._init_sequences(list(batch), seq_starts)
        else:
            raise TypeError(f"batch must be a NumPy array, a scipy.sparse.csr_matrix, a list of "
                            f"those (one per sequence) or a Value, not {type(batch).__name__}")

    # --- construction -------------------------------------------------------------------------
    def _init(self, mask, *, values=None, indptr=None, indices=None, data=None, sample_shape=(),
              dtype=None, seq_axis=True) -> None:
        self._mask = mask
        self._values, self._indptr, self._indices, self._data = values, indptr, indices, data
        self._sample_shape = tuple(int(s) for s in sample_shape)
        self._dtype = np.dtype(dtype) if dtype is not None else (
            values.dtype if values is not None else data.dtype)
        self._seq_axis = bool(seq_axis)
        self._erased = False

    def _copy_from(self, other: "Value") -> None:
        other._check()
        self._init(other._mask, values=other._values, indptr=other._indptr,
                   indices=other._indices, data=other._data, sample_shape=other._sample_shape,
                   dtype=other._dtype, seq_axis=other._seq_axis)

    @classmethod
    def _from_packed(cls, mask, sample_shape, *, values=None, indptr=None, indices=None, data=None,
                     dtype=None, seq_axis=True) -> "Value":
        self = cls.__new__(cls)
        self._init(mask, values=values, indptr=indptr, indices=indices, data=data,
                   sample_shape=sample_shape, dtype=dtype, seq_axis=seq_axis)
        return self

    def _init_sequences(self, items: list, seq_starts) -> None:
        if not items:
            raise ValueError("a batch of sequences needs at least one sequence")
        first = items[0]
        if seq_starts is not None and len(seq_starts) != len(items):
            raise ValueError(f"seq_starts has {len(seq_starts)} entries but the batch has "
                             f"{len(items)} sequences")
        if _is_csr(first):
            for i, it in enumerate(items):
                if not _is_csr(it):
                    raise TypeError(f"sequence {i}: expected a scipy.sparse.csr_matrix like "
                                    f"sequence 0, found {type(it).__name__}")
                if it.shape[1] != first.shape[1]:
                    raise ValueError(f"sequence {i}: sparse dimension {it.shape[1]} differs from "
                                     f"sequence 0's {first.shape[1]}")
            lengths = np.fromiter((it.shape[0] for it in items), np.int64, len(items))
            nnz = np.fromiter((it.indptr[-1] for it in items), np.int64, len(items))
            dtype = np.result_type(*[it.data.dtype for it in items])
            indptr = np.zeros(int(lengths.sum()) + 1, np.int64)
            if len(indptr) > 1:
                row_nnz = np.concatenate([np.diff(it.indptr) for it in items])
                np.cumsum(row_nnz, out=indptr[1:])
            indices = np.concatenate([np.asarray(it.indices, np.int32)[:it.indptr[-1]]
                                      for it in items]) if nnz.sum() else np.zeros(0, np.int32)
            data = np.concatenate([np.asarray(it.data, dtype)[:it.indptr[-1]] for it in items]) \
                if nnz.sum() else np.zeros(0, dtype)
            mask = _mask_from_lengths(lengths, seq_starts)
            self._init(mask, indptr=indptr, indices=indices, data=data,
                       sample_shape=(int(first.shape[1]),), dtype=dtype, seq_axis=True)
            return
        arrays = []
        for i, it in enumerate(items):
            if not isinstance(it, np.ndarray):
                if isinstance(it, (list, tuple)) or isinstance(it, numbers.Number):
                    it = np.asarray(it)
                else:
                    raise TypeError(f"sequence {i}: expected a NumPy array, found {type(it).__name__}")
            if it.ndim == 0:
                raise ValueError(f"sequence {i}: a sequence needs a sequence axis, got a 0-d array")
            arrays.append(it)
        sample_shape = arrays[0].shape[1:]
        for i, a in enumerate(arrays):
            if a.shape[1:] != sample_shape:
                raise ValueError(f"sequence {i}: sample shape {a.shape[1:]} differs from sequence "
                                 f"0's {sample_shape}")
        lengths = np.fromiter((a.shape[0] for a in arrays), np.int64, len(arrays))
        dtype = np.result_type(*[a.dtype for a in arrays])
        values = np.concatenate(arrays).astype(dtype, copy=False) if arrays else None
        self._init(_mask_from_lengths(lengths, seq_starts), values=np.ascontiguousarray(values),
                   sample_shape=sample_shape, dtype=dtype, seq_axis=True)

    @staticmethod
    def one_hot(batch: Any, num_classes: Any, dtype: Any = None, device: Any = None) -> "Value":
        """A sparse sequence Value of one-hot samples, as ``cntk.Value.one_hot``.

        ``batch`` is a list of sequences of integer class indices. With an integer
        ``num_classes`` each index is one sample of shape ``(num_classes,)``; with a tuple
        ``sample_shape`` the trailing axis is one-hot and each sample takes
        ``prod(sample_shape[:-1])`` consecutive indices.
        """
        sample_shape = (int(num_classes),) if isinstance(num_classes, numbers.Integral) \
            else tuple(int(s) for s in num_classes)
        if isinstance(batch, np.ndarray):
            batch = batch.tolist()
        try:
            first = batch[0][0]
        except (TypeError, IndexError) as e:
            raise ValueError("input must be a list of list of integers") from e
        if not isinstance(first, numbers.Integral):
            raise ValueError("supplied data to one_hot() must be of type integer and not "
                             f"\"{type(first)}\" since it is index data.")
        dtype = np.dtype(np.float32 if dtype is None else dtype)
        per_sample = _flat_dim(sample_shape[:-1])
        classes = sample_shape[-1]
        counts = np.fromiter((len(s) for s in batch), np.int64, len(batch))
        if np.any(counts % per_sample):
            bad = int(np.flatnonzero(counts % per_sample)[0])
            raise ValueError(f"sequence {bad} has {counts[bad]} indices, not a multiple of "
                             f"{per_sample} (indices per sample of shape {sample_shape})")
        idx = np.fromiter((i for s in batch for i in s), np.int64, int(counts.sum()))
        if len(idx) and (idx.min() < 0 or idx.max() >= classes):
            bad = int(idx[(idx < 0) | (idx >= classes)][0])
            raise ValueError(f"one_hot index {bad} is outside 0..{classes - 1}")
        # index j of a sample picks column (j % per_sample) * classes + idx in the flat sample
        pos = np.arange(len(idx), dtype=np.int64)
        seq_start = np.repeat(np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
        col = ((pos - seq_start) % per_sample) * classes + idx
        lengths = counts // per_sample
        indptr = np.arange(0, len(idx) + 1, per_sample, dtype=np.int64)
        return Value._from_packed(_mask_from_lengths(lengths, None), sample_shape,
                                  indptr=indptr, indices=col.astype(np.int32),
                                  data=np.ones(len(idx), dtype), dtype=dtype)

    # --- properties ---------------------------------------------------------------------------
    def _check(self) -> None:
        if self._erased:
            raise RuntimeError("this Value was erased; its data is no longer available")

    @property
    def is_sparse(self) -> bool:
        """Whether the samples are stored sparse (CSR over samples)."""
        return self._values is None

    @property
    def dtype(self) -> np.dtype:
        """Element type of the samples."""
        return self._dtype

    @property
    def sample_shape(self) -> tuple[int, ...]:
        """Shape of one sample."""
        return self._sample_shape

    @property
    def has_sequence_axis(self) -> bool:
        """False for a plain batch (a NumPy array or CSR matrix given without sequences)."""
        return self._seq_axis

    @property
    def shape(self) -> tuple[int, ...]:
        """``(S, T, *sample_shape)`` for sequences (T = longest row), ``(N, *sample_shape)`` for a
        plain batch."""
        if self._seq_axis:
            return (self._mask.shape[0], self._mask.shape[1]) + self._sample_shape
        return (self._mask.shape[0],) + self._sample_shape

    @property
    def mask(self) -> np.ndarray:
        """int8 ``[S, T]``: 2 first sample of a sequence, 1 continuation, 0 padding.

        CNTK raises AttributeError when nothing is masked; cntkio returns the all-valid mask (a
        plain batch has ``T = 1``)."""
        return self._mask

    def masked_count(self) -> int:
        """Number of padded (masked-out) cells."""
        return int(self._mask.size - np.count_nonzero(self._mask))

    @property
    def sequence_lengths(self) -> np.ndarray:
        """Valid samples per row, as int64."""
        return np.count_nonzero(self._mask, axis=1).astype(np.int64)

    def _has_mask_info(self) -> bool:
        """Whether the mask says more than the shape: padding, or a row continuing a sequence of
        the previous minibatch (CNTK keeps a mask exactly then)."""
        m = self._mask
        n = m.size
        if not n:
            return False
        # called for every minibatch and stream by asarray(): two C calls, no reduction wrappers
        return np.count_nonzero(m) != n or np.count_nonzero(m[:, 0] == 2) != m.shape[0]

    def __len__(self) -> int:
        return int(self._mask.shape[0])

    def _slice_rows(self, begin: int, end: int) -> "Value":
        """Rows ``begin..end-1`` as a new Value sharing this one's arrays."""
        self._check()
        bounds = np.concatenate([[0], np.cumsum(self.sequence_lengths)])
        lo, hi = int(bounds[begin]), int(bounds[end])
        mask = self._mask[begin:end]
        if self._seq_axis:
            t = int(np.count_nonzero(mask, axis=1).max()) if len(mask) else 0
            mask = mask[:, :t]
        if self._values is not None:
            return Value._from_packed(mask, self._sample_shape, values=self._values[lo:hi],
                                      dtype=self._dtype, seq_axis=self._seq_axis)
        indptr = self._indptr[lo:hi + 1]
        return Value._from_packed(mask, self._sample_shape, indptr=indptr - indptr[0],
                                  indices=self._indices[indptr[0]:indptr[-1]],
                                  data=self._data[indptr[0]:indptr[-1]], dtype=self._dtype,
                                  seq_axis=self._seq_axis)

    # --- views --------------------------------------------------------------------------------
    def _padded(self) -> np.ndarray:
        """The padded dense array of :attr:`shape` (padding is zero; sparse is densified)."""
        self._check()
        if not self._seq_axis and self._values is not None:
            return self._values
        S, T = self._mask.shape
        if self._values is not None and len(self._values) == S * T:   # no padding: the rows as they are
            return self._values.reshape((S, T) + self._sample_shape)
        dim = _flat_dim(self._sample_shape)
        out = np.zeros((S * T, dim), dtype=self._dtype)
        cells = np.flatnonzero(self._mask.reshape(-1))
        if self._values is not None:
            out[cells] = self._values.reshape(len(cells), dim)
        else:
            rows = np.repeat(cells, np.diff(self._indptr))
            nnz = int(self._indptr[-1]) - int(self._indptr[0])
            # duplicate indices within a sample add up, as in scipy's CSR -> dense
            np.add.at(out, (rows, self._indices[self._indptr[0]:self._indptr[0] + nnz]),
                      self._data[self._indptr[0]:self._indptr[0] + nnz])
        return out.reshape(self.shape)

    def asarray(self) -> np.ndarray | csr_matrix:
        """The data as one array, as ``cntk.Value.asarray()``.

        Dense: the padded ndarray of :attr:`shape` (padding zero); when the mask carries
        information (padding, or rows continuing a sequence) it warns that the mask is ignored.
        Sparse of rank 2 (a plain batch of vectors): a SciPy CSR matrix. Sparse of higher rank:
        the dense ndarray, with a warning.
        """
        return self._asarray(stacklevel=3)

    def _asarray(self, stacklevel: int) -> np.ndarray | csr_matrix:
        """asarray() with its warnings pointed at the caller ``stacklevel`` frames up."""
        self._check()
        if self._has_mask_info():
            warnings.warn(_MASK_WARNING, stacklevel=stacklevel)
        if self._values is None:
            if len(self.shape) <= 2:
                return self.as_csr()
            warnings.warn(f"asarray() densified a sparse Value of shape {self.shape} (rank > 2 "
                          "cannot be a CSR matrix); use as_sequences() or as_csr() to keep it "
                          "sparse", stacklevel=stacklevel)
        return self._padded()

    @property
    def data(self) -> np.ndarray | csr_matrix:
        """The stored data in its natural form (CNTK's NDArrayView): dense, the padded ndarray of
        :attr:`shape`; sparse, the CSR matrix of the valid samples (:meth:`as_csr`)."""
        self._check()
        return self.as_csr() if self._values is None else self._padded()

    def tensor_arrays(self) -> tuple:
        """The arrays of this Value's tensor (``to_torch``): ``("dense", padded)``, the padded
        array of :attr:`shape` (padding zero), or ``("csr", crow, col, values, (rows, dim))``, the
        valid samples as CSR with row pointers from 0 (int32 column indices as packed, int64
        past 2^31 non-zeros; the row pointers take their type), never densified."""
        self._check()
        if self._values is not None:
            return ("dense", self._padded())
        indptr = self._indptr
        p0, p1 = int(indptr[0]), int(indptr[-1])
        dim = _flat_dim(self._sample_shape) if self._sample_shape else 1
        col = self._indices[p0:p1]
        if col.dtype != np.int32 or p1 - p0 > np.iinfo(np.int32).max:
            col = col.astype(np.int64)
        return ("csr", (indptr - p0).astype(col.dtype), col, self._data[p0:p1], (len(indptr) - 1, dim))

    def token_ids(self, pad_id: int = 0, name: str = "") -> tuple[np.ndarray, np.ndarray]:
        """A one-hot sparse Value (every sample exactly one non-zero, of value 1) as padded int64
        token ids ``[S, T]`` (padding ``pad_id``) and the bool mask of valid cells ``[S, T]``;
        ``ValueError`` naming stream ``name`` otherwise."""
        self._check()
        if self._values is not None:
            raise ValueError(f"stream {name!r}: token ids need a sparse (one-hot) stream, this one is dense")
        check_one_hot(name, self._indptr, self._data)
        valid = self._mask != 0
        ids = np.full(valid.shape, int(pad_id), np.int64)
        p0 = int(self._indptr[0])
        ids[valid] = self._indices[p0:p0 + int(valid.sum())]
        return ids, valid

    def as_csr(self) -> csr_matrix:
        """The valid samples as one SciPy CSR matrix, one row per sample in row order (row 0's
        samples, then row 1's...), never densified. A dense Value is converted."""
        self._check()
        import scipy.sparse as sp
        dim = _flat_dim(self._sample_shape)
        if self._values is not None:
            return sp.csr_matrix(self._values.reshape(-1, dim))
        indptr = self._indptr - self._indptr[0] if self._indptr[0] else self._indptr
        end = int(self._indptr[-1])
        start = int(self._indptr[0])
        return sp.csr_matrix((self._data[start:end], self._indices[start:end], indptr),
                             shape=(len(indptr) - 1, dim))

    def as_sequences(self, variable: Any = None) -> list:
        """One entry per row with padding removed: dense ``(len, *shape)`` arrays, sparse CSR
        matrices ``(len, dim)``. ``variable`` is accepted for CNTK compatibility and not needed."""
        self._check()
        bounds = np.concatenate([[0], np.cumsum(self.sequence_lengths)])
        n = len(bounds) - 1
        if self._values is not None:
            return [self._values[bounds[i]:bounds[i + 1]] for i in range(n)]
        csr = self.as_csr()
        return [csr[bounds[i]:bounds[i + 1]] for i in range(n)]

    def erase(self) -> None:
        """Release the data now (as ``cntk.Value.erase``); later reads raise RuntimeError."""
        self._values = self._indptr = self._indices = self._data = None
        self._erased = True

    def __repr__(self) -> str:
        if self._erased:
            return "Value(<erased>)"
        return (f"Value(shape={self.shape}, dtype={self._dtype.name}, is_sparse={self.is_sparse}, "
                f"masked_count={self.masked_count()})")


def _mask_from_lengths(lengths: np.ndarray, seq_starts: Any) -> np.ndarray:
    S = len(lengths)
    T = int(lengths.max()) if S else 0
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(np.int8)
    if S and T:
        first = np.ones(S, np.int8) * 2
        if seq_starts is not None:
            first = np.where(np.asarray(seq_starts, bool), 2, 1).astype(np.int8)
        mask[:, 0] = np.where(lengths > 0, first, 0)
    return mask


_alloc = object.__new__  # an instance without __init__ (packers fill every slot)


class MinibatchData:
    """One stream's part of a minibatch (cntk.io's ``MinibatchData``).

    Sources build it from packed arrays (:meth:`from_packed`); user sources construct it as in
    cntk.io: ``MinibatchData(value, num_sequences, num_samples, sweep_end)``, where ``value`` is
    a :class:`Value`, a NumPy array, a SciPy CSR matrix, or a list of per-sequence arrays / CSR
    matrices. ``num_sequences`` counts rows, ``num_samples`` the valid samples of this stream,
    ``end_of_sweep`` tells whether the minibatch holds the last sample of a sweep.
    """

    __slots__ = ("stream", "_value", "end_of_sweep", "_num_sequences", "_num_samples",
                 "_lengths", "__weakref__")

    def __init__(self, value: Any, num_sequences: int, num_samples: int, sweep_end: bool) -> None:
        self.stream: StreamInformation | None = None
        self._value = value if isinstance(value, Value) else Value(batch=value)
        self._num_sequences: int | None = int(num_sequences)
        self._num_samples = int(num_samples)
        self.end_of_sweep = bool(sweep_end)
        self._lengths: np.ndarray | None = None

    @classmethod
    def from_packed(cls, stream: StreamInformation, mask: np.ndarray, *, values: np.ndarray | None = None,
                    indptr: np.ndarray | None = None, indices: np.ndarray | None = None,
                    data: np.ndarray | None = None, end_of_sweep: bool = False,
                    num_samples: int | None = None) -> "MinibatchData":
        """Wrap packed arrays: ``mask`` int8 ``[S, T]``; dense ``values[num_valid, *shape]`` or
        sparse CSR (``indptr`` int64 ``[num_valid+1]``, ``indices`` int32, ``data``) over the
        valid cells in row-major order; ``indptr`` may point into larger ``indices``/``data``
        (the valid cells' non-zeros are ``indices[indptr[0]:indptr[-1]]``). ``num_samples`` (the valid cells) may be given by a
        packer that knows it; otherwise it is counted from the mask when asked for. Called once
        per stream and minibatch, so it only assigns."""
        return cls._packed(stream, np.asarray(mask, dtype=np.int8), values, indptr, indices, data,
                           bool(end_of_sweep), num_samples)

    @classmethod
    def _packed(cls, stream, mask, values, indptr, indices, data, end_of_sweep, num_samples):
        """:meth:`from_packed` for packers (positional; ``mask`` already int8): once per stream
        and minibatch, so it only assigns."""
        value = _alloc(Value)
        value._mask = mask
        value._values, value._indptr, value._indices, value._data = values, indptr, indices, data
        value._sample_shape = stream.sample_shape
        value._dtype = values.dtype if values is not None else data.dtype
        value._seq_axis = True
        value._erased = False
        self = _alloc(cls)
        self.stream = stream
        self._value = value
        self._num_sequences = None
        self._num_samples = num_samples
        self.end_of_sweep = end_of_sweep
        self._lengths = None
        return self

    # --- counts -------------------------------------------------------------------------------
    @property
    def num_sequences(self) -> int:
        """Number of sequences (rows) in this minibatch for this stream."""
        if self._num_sequences is not None:
            return self._num_sequences
        return int(self._value._mask.shape[0])

    @property
    def number_of_sequences(self) -> int:
        """Alias of :attr:`num_sequences` (the C++ field name)."""
        return self.num_sequences

    @property
    def sequence_lengths(self) -> np.ndarray:
        """Valid samples per row, as int64 (from the mask)."""
        if self._lengths is None:
            self._lengths = self._value.sequence_lengths
        return self._lengths

    @property
    def num_samples(self) -> int:
        """Number of valid samples of this stream (not padded cells)."""
        if self._num_samples is not None:
            return self._num_samples
        return int(self.sequence_lengths.sum())

    @property
    def number_of_samples(self) -> int:
        """Alias of :attr:`num_samples` (the C++ field name)."""
        return self.num_samples

    @property
    def sweep_end(self) -> bool:
        """Alias of :attr:`end_of_sweep`."""
        return self.end_of_sweep

    @property
    def data(self) -> Value:
        """The underlying :class:`Value` (a masked tensor, as ``cntk.Value``)."""
        return self._value

    @property
    def is_sparse(self) -> bool:
        """Whether the stream is stored sparse."""
        return self._value.is_sparse

    @property
    def mask(self) -> np.ndarray:
        """int8 ``[S, T]``: 2 first sample of a sequence, 1 continuation, 0 padding."""
        return self._value.mask

    @property
    def shape(self) -> tuple[int, ...]:
        """``data.shape``: ``(num_sequences, max_len, *sample_shape)`` for reader output."""
        return self._value.shape

    @property
    def dtype(self) -> np.dtype:
        """Element type of the values."""
        return self._value.dtype

    def __len__(self) -> int:
        return self.num_sequences

    # --- views --------------------------------------------------------------------------------
    def asarray(self) -> np.ndarray | csr_matrix:
        """The data as one array (see :meth:`Value.asarray`): dense streams give the padded
        ndarray ``[S, T, *shape]`` (warning that the mask is ignored when cells are padded);
        sparse streams of rank > 2 are densified with a warning. The padded array is built anew
        on each call."""
        return self._value._asarray(stacklevel=3)

    def as_csr(self) -> csr_matrix:
        """The valid samples as one SciPy CSR matrix (one row per sample, rows in sequence
        order), never densified. Dense streams are converted."""
        return self._value.as_csr()

    def as_sequences(self, variable: Any = None) -> list:
        """One entry per row with padding removed: dense ``(len, *shape)`` arrays, sparse CSR
        matrices ``(len, dim)``."""
        return self._value.as_sequences(variable)

    def to_torch(self, device: Any = None, pin_memory: bool = False) -> Any:  # a torch.Tensor
        """The values as a torch tensor, on ``device`` if given (``pin_memory``: in page-locked
        memory first, for a fast copy to a GPU; an error where torch sees no CUDA device).

        Dense: the padded float tensor ``[S, T, *shape]`` (padding zero; a plain batch without a
        sequence axis keeps :attr:`shape`). Sparse: a ``torch.sparse_csr_tensor`` of shape
        ``(num_valid_samples, dim)`` holding the valid samples in sequence order (never
        densified); use :attr:`sequence_lengths` or :attr:`mask` to find each sequence's rows.
        """
        from .integrations.tensors import arrays_to_tensor  # the leaf: torch and NumPy only
        return arrays_to_tensor(self._value.tensor_arrays(), device, pin_memory)

    def __repr__(self) -> str:
        name = self.stream.name if self.stream is not None else None
        return (f"MinibatchData(stream={name!r}, shape={self.shape}, "
                f"num_sequences={self.num_sequences}, num_samples={self.num_samples}, "
                f"is_sparse={self.is_sparse}, end_of_sweep={self.end_of_sweep})")


class Minibatch(dict):
    """What ``MinibatchSource.next_minibatch`` returns: ``{StreamInformation: MinibatchData}``, as
    in cntk.io, that can also be indexed by stream name (``mb["features"]``). Empty (falsy) at the
    end of the epoch. ``ready`` (set by the packer, absent otherwise) is ``(make, index)``:
    ``make(index, layout)`` gives this minibatch's tensor-ready arrays (:meth:`tensor_ready`);
    ``packed_keys`` (set by the packer) the packed sequences' keys (:attr:`sequence_keys`)."""

    __slots__ = ("ready", "packed_keys")
    ready: tuple
    packed_keys: np.ndarray | None

    @property
    def sequence_keys(self) -> np.ndarray | None:
        """The keys of the minibatch's sequences, in the order they were packed (CNTK's
        ``m_getKeyById`` of a minibatch): unsigned 64-bit numbers, or strings for deserializers
        with string keys (``useNumericSequenceKeys = false``; HTK keys are hashed). None for a
        minibatch the engine did not pack (a user source's)."""
        try:
            return self.packed_keys
        except AttributeError:
            return None

    def __missing__(self, key):
        if isinstance(key, str):
            for info, data in self.items():
                if getattr(info, "name", None) == key:
                    return data
        raise KeyError(key)

    def tensor_ready(self, layout: Any) -> Any:
        """This minibatch's :class:`~cntkio.tensor_ready.TensorMinibatch` in ``layout`` (a
        :class:`~cntkio.tensor_ready.TensorLayout`) when its source packed it in a batch, else
        None (then convert it stream by stream)."""
        try:
            make, j = self.ready
        except AttributeError:
            return None
        return make(j, layout)
