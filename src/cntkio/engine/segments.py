"""Segment copies: the one gather the packer and the tensor-ready arrays are made of.

``dst[d:d+n] = src[s:s+n]`` along the first axis, one segment per sequence (or per row), as a
native ``memcpy`` loop without the GIL (``cntkio._native._rand``), with a NumPy fallback when
the native module is not built.
"""
from __future__ import annotations

import numpy as np

from .._native import native
from ..deserializers.protocol import ranges

__all__ = ["copy_segments"]


def copy_segments(src: np.ndarray, src_starts: np.ndarray, dst: np.ndarray, dst_starts: np.ndarray,
                  lengths: np.ndarray, shift: np.ndarray | None = None) -> None:
    """``dst[d:d+n] = src[s:s+n]`` along the first axis for every segment (C memcpy when built);
    ``shift`` (int64 arrays only) adds one number per segment to its elements. ``src`` may be a
    strided view whose rows are contiguous (a CBF chunk of one-sample sequences): a memcpy per row."""
    mod = native("rand")
    if mod is not None and dst.flags.c_contiguous and src.dtype == dst.dtype and src.shape[1:] == dst.shape[1:]:
        if src.flags.c_contiguous:
            mod.copy_segments(src, np.asarray(src_starts, np.int64), dst, np.asarray(dst_starts, np.int64),
                              np.asarray(lengths, np.int64),
                              *(() if shift is None else (np.asarray(shift, np.int64),)))
            return
        if shift is None and src.ndim >= 1 and (src.ndim == 1 or src[:1].flags.c_contiguous) and src.strides[0] > 0:
            native("gather").gather_rows(src, np.asarray(src_starts, np.int64), dst,
                                         np.asarray(dst_starts, np.int64), np.asarray(lengths, np.int64))
            return
    values = src[ranges(src_starts, lengths)]
    if shift is not None:
        values = values + np.repeat(np.asarray(shift, np.int64), lengths)
    dst[ranges(dst_starts, lengths)] = values
