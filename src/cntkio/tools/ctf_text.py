"""CTF text from columnar arrays, made with NumPy: no Python object per sample or value.

Every value becomes a fixed-width byte string by NumPy's own cast (the shortest text that reads
back to the same float32/float64, as ``repr``), every token is followed by one separator byte
(``' '``, ``':'`` between a sparse index and its value, ``'\\n'`` at a line's end), and the line
is the tokens' bytes with the padding dropped: one boolean selection over a byte matrix.
Sequences are written in blocks of about a million tokens, each to the open file.
"""
from __future__ import annotations

from typing import BinaryIO, Sequence

import numpy as np

from ..deserializers.protocol import DenseStream, SparseStream

__all__ = ["write_ctf_block", "write_ctf"]

_W = 24  # bytes of a token: a float64's longest shortest-repr ('-2.2250738585072014e-308') fits
_BLOCK_TOKENS = 1 << 20


def _tokens(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "SU":
        return a.astype(f"S{_W}")
    if a.dtype.kind == "f" and a.dtype.itemsize < 4:
        a = a.astype(np.float32)
    return a.astype(f"S{_W}")


def write_ctf_block(out: BinaryIO, keys: np.ndarray, lengths: np.ndarray,
                    streams: Sequence[tuple[str, DenseStream | SparseStream]]) -> None:
    """Write sequences as CTF lines: sequence ``i`` (id ``keys[i]``) has ``lengths[i]`` lines,
    line ``t`` holding sample ``t`` of every stream that has one (``|name v v ...`` dense,
    ``|name i:v ...`` sparse). The streams' ``offsets`` index their samples per sequence."""
    lengths = np.asarray(lengths, np.int64)
    n_seq = len(lengths)
    if n_seq == 0:
        return
    n_lines = int(lengths.sum())
    line_seq = np.repeat(np.arange(n_seq, dtype=np.int64), lengths)
    seq_line0 = np.zeros(n_seq + 1, np.int64)
    np.cumsum(lengths, out=seq_line0[1:])
    step = np.arange(n_lines, dtype=np.int64) - seq_line0[:-1][line_seq]
    # tokens per line: the key, then per present stream its name and its values
    per_line = np.ones(n_lines, np.int64)
    plan = []
    for name, st in streams:
        off = np.asarray(st.offsets, np.int64)
        count = np.diff(off)
        present = step < count[line_seq]
        rows = off[:-1][line_seq] + step              # the sample of each present line
        if isinstance(st, SparseStream):
            nnz_row = np.diff(np.asarray(st.indptr, np.int64))
            ntok = np.where(present, 1 + 2 * nnz_row[np.minimum(rows, max(len(nnz_row) - 1, 0))], 0) \
                if len(nnz_row) else np.where(present, 1, 0)
        else:
            dim = int(np.prod(st.values.shape[1:], dtype=np.int64)) if st.values.ndim > 1 else 1
            ntok = np.where(present, 1 + dim, 0)
        plan.append((name, st, present, rows, ntok))
        per_line += ntok
    line_tok0 = np.zeros(n_lines + 1, np.int64)
    np.cumsum(per_line, out=line_tok0[1:])
    total = int(line_tok0[-1])
    tok = np.zeros(total, f"S{_W}")
    sep = np.full(total, b" ", "S1")
    tok[line_tok0[:-1]] = _tokens(np.asarray(keys)[line_seq])
    sep[line_tok0[1:] - 1] = b"\n"
    pos = line_tok0[:-1] + 1                          # where each line's next stream block starts
    for name, st, present, rows, ntok in plan:
        lines = np.flatnonzero(present)
        if not len(lines):
            continue
        head = pos[lines]
        tok[head] = ("|" + name).encode()
        r = rows[lines]
        if isinstance(st, SparseStream):
            ptr = np.asarray(st.indptr, np.int64)
            nnz = ptr[r + 1] - ptr[r]
            start = np.repeat(head + 1 - 2 * ptr[r], nnz)          # per non-zero, minus its rank
            # lines are in sequence order and a sequence's samples follow each other, so the
            # present lines' rows are one run and so are their non-zeros
            elem = np.arange(int(ptr[r[0]]), int(ptr[r[-1] + 1]), dtype=np.int64)
            at = start + 2 * elem
            tok[at] = _tokens(np.asarray(st.indices)[elem])
            sep[at] = b":"
            tok[at + 1] = _tokens(np.asarray(st.data)[elem])
        else:
            vals = np.asarray(st.values)
            dim = ntok[lines[0]] - 1
            flat = vals.reshape(len(vals), -1)[r].reshape(-1)
            at = (head[:, None] + 1 + np.arange(dim)).reshape(-1)
            tok[at] = _tokens(flat)
        pos[lines] += ntok[lines]
    mat = np.concatenate([tok.view(np.uint8).reshape(total, _W), sep.view(np.uint8).reshape(total, 1)], axis=1)
    out.write(mat[mat != 0].tobytes())


def write_ctf(out: BinaryIO, keys: np.ndarray, lengths: np.ndarray,
              streams: Sequence[tuple[str, DenseStream | SparseStream]], bar=None) -> None:
    """:func:`write_ctf_block` over blocks of sequences of about a million tokens each."""
    lengths = np.asarray(lengths, np.int64)
    n = len(lengths)
    if n == 0:
        return
    cost = lengths.copy()
    for _, st in streams:
        if isinstance(st, SparseStream):
            off = np.asarray(st.offsets, np.int64)
            ptr = np.asarray(st.indptr, np.int64)
            cost += 2 * (ptr[off[1:]] - ptr[off[:-1]]) + lengths
        else:
            dim = int(np.prod(st.values.shape[1:], dtype=np.int64)) if st.values.ndim > 1 else 1
            cost += (dim + 1) * np.diff(np.asarray(st.offsets, np.int64))
    cum = np.cumsum(cost)
    cuts = np.searchsorted(cum, np.arange(_BLOCK_TOKENS, int(cum[-1]), _BLOCK_TOKENS), side="right")
    bounds = [0] + sorted(set(int(c) for c in cuts if 0 < c < n)) + [n]
    for a, b in zip(bounds, bounds[1:]):
        write_ctf_block(out, np.asarray(keys)[a:b], lengths[a:b], [(name, _slice(st, a, b)) for name, st in streams])
        if bar is not None:
            bar.update(b - a)


def _slice(st, a: int, b: int):
    """Sequences ``a:b`` of a stream, offsets (and row pointers) from 0."""
    off = np.asarray(st.offsets, np.int64)
    r0, r1 = int(off[a]), int(off[b])
    if isinstance(st, SparseStream):
        ptr = np.asarray(st.indptr, np.int64)
        p0, p1 = int(ptr[r0]), int(ptr[r1])
        return SparseStream(ptr[r0:r1 + 1] - p0, np.asarray(st.indices)[p0:p1], np.asarray(st.data)[p0:p1],
                            off[a:b + 1] - r0, st.dim)
    return DenseStream(np.asarray(st.values)[r0:r1], off[a:b + 1] - r0)
