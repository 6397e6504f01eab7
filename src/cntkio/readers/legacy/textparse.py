"""Indexing and parsing of delimited numeric text records (UCIFastReader's format).

The work is done by the C core (``cntkio._native._uci``, off the GIL, numbers through the CTF
parser's correctly rounded conversion). Under ``CNTKIO_PURE_PYTHON=1`` the pure-Python reference
below gives the same results (tests run both).

``index_records(buf, records_per_chunk, bytes_per_chunk)`` -> ``(begin, end, count, first_line)``
int64 arrays, one entry per chunk of whole lines; blank lines (spaces, tabs, CR only) are not
records.

``parse_records(buf, begin, end, first_line, colmap, values, spans, bad)`` -> ``(records,
errors)``: fills ``values`` (a tuple of ``[N, V_i]`` float32 or float64 arrays, one dtype),
``spans[N, L, 2]`` (byte spans of label tokens) and ``bad[N]`` (uint8) for the records of
``buf[begin:end]``; column ``j`` goes to ``values[colmap[j] >> 16][:, colmap[j] & 0xFFFF]``
(``colmap[j] >= 0``), to span ``-2 - colmap[j]`` (<= -2) or nowhere (-1). ``errors`` lists
``(record, line, column, code)``: code 1 = too few columns (column = the count found), 2 = not a
number.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..._native import native

__all__ = ["index_records", "parse_records"]

_mod = native("uci")

_NUMBER = re.compile(rb"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")


def _lines(buf: Any, begin: int, end: int):
    data = bytes(buf[begin:end])
    pos = begin
    for raw in data.split(b"\n"):
        yield pos, raw
        pos += len(raw) + 1


def _py_index(buf: Any, per_chunk: int, bytes_per_chunk: int):
    b, e, c, f = [], [], [], []
    count = 0
    chunk_begin = chunk_line = 0
    n = len(buf)
    line = 1
    for pos, raw in _lines(buf, 0, n):
        if pos >= n:
            break
        if raw.strip(b" \t\r"):
            if count == 0:
                chunk_begin, chunk_line = pos, line
            count += 1
        nxt = min(pos + len(raw) + 1, n)
        line += 1
        if count and ((per_chunk > 0 and count >= per_chunk) or
                      (per_chunk <= 0 and nxt - chunk_begin >= bytes_per_chunk)):
            b.append(chunk_begin), e.append(nxt), c.append(count), f.append(chunk_line)
            count = 0
    if count:
        b.append(chunk_begin), e.append(n), c.append(count), f.append(chunk_line)
    return tuple(np.array(x, np.int64) for x in (b, e, c, f))


def _py_parse(buf, begin, end, first_line, colmap, values, spans, bad):
    ncols = len(colmap)
    rec = 0
    errors = []
    for i, (pos, raw) in enumerate(_lines(buf, begin, end)):
        if rec >= len(bad) or pos >= end:
            break
        if not raw.strip(b" \t\r"):
            continue
        code = col = 0
        for m in re.finditer(rb"[^ \t\r]+", raw):
            if col >= ncols:
                break
            tok = m.group()
            j = int(colmap[col])
            if j >= 0:
                if not _NUMBER.match(tok):
                    code = 2
                    break
                values[j >> 16][rec, j & 0xFFFF] = float(tok)
            elif j <= -2:
                spans[rec, -2 - j] = (pos + m.start(), pos + m.end())
            col += 1
        if code == 0 and col < ncols:
            code = 1
        bad[rec] = code != 0
        if code:
            errors.append((rec, first_line + i, col, code))
        rec += 1
    return rec, errors


def index_records(buf: Any, records_per_chunk: int, bytes_per_chunk: int):
    """Chunks of whole records of ``buf`` (module docstring)."""
    if _mod is not None:
        return _mod.index_records(buf, int(records_per_chunk), int(bytes_per_chunk))
    return _py_index(buf, int(records_per_chunk), int(bytes_per_chunk))


def parse_records(buf: Any, begin: int, end: int, first_line: int, colmap: np.ndarray,
                  values: np.ndarray, spans: np.ndarray, bad: np.ndarray):
    """Parse the records of ``buf[begin:end]`` into the given arrays (module docstring)."""
    if _mod is not None:
        return _mod.parse_records(buf, int(begin), int(end), int(first_line), colmap, values, spans, bad)
    return _py_parse(buf, int(begin), int(end), int(first_line), colmap, values, spans, bad)
