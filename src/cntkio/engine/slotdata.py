"""A truncated-BPTT slot's copy of one sequence of one stream, taken out of its chunk: a dense
``[len, *shape]`` array, or a sparse stream's :class:`CsrRows` (CSR over its samples, densified
when emitted into a dense output stream). The packer (``TruncatedSlots``) joins the pieces of a
minibatch; the timelines take the sequences out of their chunks, one at a time or, for grouped
parallel sequences, a chunk's run at a time.
"""
from __future__ import annotations

import numpy as np

from ..deserializers.protocol import ChunkData
from ..streams import StreamInformation

__all__ = ["CsrRows", "sequence_arrays", "sequences_arrays"]


class CsrRows:
    """One sequence of a sparse stream held by a truncated-BPTT slot: CSR over its samples
    (``indptr`` from 0). Sliced by samples like an array; :func:`TruncatedSlots.emit` joins the
    pieces of a minibatch into its CSR arrays, or densifies them for a dense output stream."""

    __slots__ = ("indptr", "indices", "data")

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray) -> None:
        self.indptr, self.indices, self.data = indptr, indices, data

    def __len__(self) -> int:
        return len(self.indptr) - 1

    def __getitem__(self, rows: slice) -> "CsrRows":
        a, b, _ = rows.indices(len(self))
        b = max(a, b)
        p0, p1 = int(self.indptr[a]), int(self.indptr[b])
        return CsrRows(self.indptr[a:b + 1] - p0, self.indices[p0:p1], self.data[p0:p1])


def sequences_arrays(info: StreamInformation, chunk: ChunkData, indices: list) -> list:
    """:func:`sequence_arrays` of several sequences of one chunk (the same values); when they are
    consecutive sequences of the chunk, their samples are copied as one block and each sequence's
    arrays are views of it."""
    st = chunk.streams[info.name]
    idx = np.asarray(indices, np.int64)
    a, b = st.offsets[idx], st.offsets[idx + 1]
    run = len(idx) > 1 and bool((idx[1:] == idx[:-1] + 1).all())
    if not st.is_sparse:
        ab = list(zip(a.tolist(), b.tolist()))
        if not run:
            return [st.values[x:y].copy() for x, y in ab]
        a0 = ab[0][0]
        block = st.values[a0:ab[-1][1]].copy()
        return [block[x - a0:y - a0] for x, y in ab]
    ip = st.indptr
    lo, hi = ip[a], ip[b]
    # every sequence's row pointers ip[a:b + 1] from 0, all in one array (a view of it each)
    cnt = b - a + 1
    ends = cnt.cumsum()
    starts = ends - cnt
    flat = ip[np.arange(int(ends[-1])) - (starts - a).repeat(cnt)] - lo.repeat(cnt)
    ptrs = [flat[x:y] for x, y in zip(starts.tolist(), ends.tolist())]
    p = list(zip(lo.tolist(), hi.tolist()))
    if not run:
        return [CsrRows(ptr, st.indices[u:v].copy(), st.data[u:v].copy()) for ptr, (u, v) in zip(ptrs, p)]
    q0, q1 = p[0][0], p[-1][1]
    indices_block, data_block = st.indices[q0:q1].copy(), st.data[q0:q1].copy()
    return [CsrRows(ptr, indices_block[u - q0:v - q0], data_block[u - q0:v - q0]) for ptr, (u, v) in zip(ptrs, p)]


def sequence_arrays(info: StreamInformation, chunk: ChunkData, index: int):
    """One sequence of one stream for a truncated-BPTT slot: a dense ``[len, *shape]`` array, or
    a sparse stream's :class:`CsrRows` (densified when emitted into a dense output stream)."""
    st = chunk.streams[info.name]
    a, b = int(st.offsets[index]), int(st.offsets[index + 1])
    if not st.is_sparse:
        return st.values[a:b].copy()
    p0, p1 = int(st.indptr[a]), int(st.indptr[b])
    return CsrRows(st.indptr[a:b + 1] - p0, st.indices[p0:p1].copy(), st.data[p0:p1].copy())
