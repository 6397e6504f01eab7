"""Vectorized helpers over text held as one uint8 buffer: line bounds, keys of utterance names.

SCP lists and state lists can have millions of lines; they are indexed with NumPy over the whole
file's bytes, without a Python object per line. Utterance keys are 64-bit FNV-1a hashes of the
key text (computed column by column over a padded byte matrix), the form both HTK deserializers
join by.
"""
from __future__ import annotations

import numpy as np

__all__ = ["line_bounds", "padded", "decimals", "fnv1a", "hash_names", "numeric_keys", "numeric_names", "last_in_lines",
           "first_in_lines"]

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def line_bounds(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` of every line of ``buf`` (int64; ``ends`` exclude ``\\n`` and a ``\\r``
    before it); a last line without ``\\n`` counts when it is not empty."""
    nl = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], nl + 1)).astype(np.int64)
    ends = np.concatenate((nl, [len(buf)])).astype(np.int64)
    if starts[-1] == len(buf):
        starts, ends = starts[:-1], ends[:-1]
    cr = ends > starts
    cr[cr] = buf[ends[cr] - 1] == 13
    ends = ends - cr
    return starts, ends


def padded(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The byte ranges ``[starts, ends)`` as a zero-padded uint8 matrix ``(n, max length)``."""
    lens = np.maximum(ends - starts, 0)
    width = int(lens.max()) if len(lens) else 0
    if width == 0:
        return np.zeros((len(starts), 0), np.uint8)
    if len(buf) < width or int(starts.max()) + width > len(buf):
        buf = np.concatenate((buf, np.zeros(width, np.uint8)))
    windows = np.lib.stride_tricks.sliding_window_view(buf, width)
    out = windows[starts]                  # one contiguous row copy per range
    out[np.arange(width)[None, :] >= lens[:, None]] = 0
    return out


def fnv1a(mat: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """64-bit FNV-1a of each row's first ``lens`` bytes (uint64), one vectorized step per column."""
    h = np.full(mat.shape[0], _FNV_OFFSET, np.uint64)
    with np.errstate(over="ignore"):
        for j in range(mat.shape[1]):
            live = lens > j
            if not live.any():
                break
            step = (h ^ mat[:, j].astype(np.uint64)) * _FNV_PRIME
            h = np.where(live, step, h)
    return h


def hash_names(names) -> np.ndarray:
    """The keys (uint64) of utterance names given as str or bytes."""
    names = names if isinstance(names, list) else list(names)
    if not names:
        return np.zeros(0, np.uint64)
    joined = "".join(names) if set(map(type, names)) == {str} else None
    # surrogateescape: names decoded from bytes that are not UTF-8 hash as those bytes
    encoded = joined.encode("utf-8", "surrogateescape") if joined is not None else None
    if encoded is not None and len(encoded) == len(joined):    # ASCII: a byte a character
        buf = np.frombuffer(encoded, np.uint8)
        lens = np.fromiter(map(len, names), np.int64, len(names))
    else:
        raw = [n.encode("utf-8", "surrogateescape") if isinstance(n, str) else bytes(n) for n in names]
        buf = np.frombuffer(b"".join(raw), np.uint8)
        lens = np.fromiter((len(r) for r in raw), np.int64, len(raw))
    ends = np.cumsum(lens)
    return fnv1a(padded(buf, ends - lens, ends), lens)


_U64_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)


def numeric_keys(mat: np.ndarray, lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's first ``lens`` bytes read as CNTK read a numeric sequence key (``sscanf`` with
    ``%llu``, ``useNumericSequenceKeys``): leading white space skipped, an optional sign, then the
    longest run of digits; what follows is ignored (``"007"`` and ``"7x"`` are 7), a minus sign
    negates modulo 2**64, a value past 2**64 - 1 saturates. ``(values uint64, ok)``: ``ok`` is
    False where no digit follows (CNTK's ``Invalid numeric sequence id``)."""
    n, w = mat.shape
    col = np.arange(w)[None, :]
    live = col < lens[:, None]
    c = np.where(live, mat, 0)
    space = np.isin(c, (9, 10, 11, 12, 13, 32)) & live
    body = live & ~space
    first = np.where(body.any(1), body.argmax(1), w)
    sign = np.where(first < w, c[np.arange(n), np.minimum(first, w - 1)] if w else 0, 0)
    neg = sign == 45
    ds = first + ((sign == 43) | neg)
    digit = (c >= 48) & (c <= 57) & live
    stop = (~digit) & (col >= ds[:, None])
    end = np.where(stop.any(1), stop.argmax(1), w)
    ok = end > ds
    val = np.zeros(n, np.uint64)
    sat = np.zeros(n, bool)
    limit = _U64_MAX // np.uint64(10)
    with np.errstate(over="ignore"):
        for j in range(w):
            within = (j >= ds) & (j < end)
            if not within.any():
                continue
            d = (c[:, j].astype(np.uint64) - np.uint64(48)) * within
            over = within & ((val > limit) | ((val == limit) & (d > _U64_MAX % np.uint64(10))))
            sat |= over
            val = np.where(within & ~sat, val * np.uint64(10) + d, val)
        val = np.where(neg & ~sat, (~val) + np.uint64(1), val)
    val = np.where(sat, _U64_MAX, val)
    return val, ok


def numeric_names(names) -> tuple[np.ndarray, np.ndarray]:
    """:func:`numeric_keys` of names given as str or bytes."""
    raw = [n.encode("utf-8") if isinstance(n, str) else bytes(n) for n in names]
    if not raw:
        return np.zeros(0, np.uint64), np.zeros(0, bool)
    buf = np.frombuffer(b"".join(raw), np.uint8)
    lens = np.fromiter((len(r) for r in raw), np.int64, len(raw))
    ends = np.cumsum(lens)
    return numeric_keys(padded(buf, ends - lens, ends), lens)


def _in_lines(pos: np.ndarray, starts: np.ndarray, ends: np.ndarray, last: bool) -> np.ndarray:
    out = np.full(len(starts), -1, np.int64)
    if len(pos) == 0:
        return out
    line = np.searchsorted(starts, pos, side="right") - 1
    ok = (line >= 0) & (pos < ends[np.maximum(line, 0)])
    line, pos = line[ok], pos[ok]
    if len(line) == 0:
        return out
    if last:    # pos ascending, so line is non-decreasing: a line's last hit precedes a change
        pick = np.flatnonzero(np.diff(line, append=line[-1] + 1) != 0)
    else:
        pick = np.flatnonzero(np.diff(line, prepend=-1) != 0)
    out[line[pick]] = pos[pick]
    return out


def last_in_lines(buf: np.ndarray, char: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Position of the last ``char`` in each line, -1 where none."""
    return _in_lines(np.flatnonzero(buf == ord(char)).astype(np.int64), starts, ends, True)


def first_in_lines(buf: np.ndarray, char: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Position of the first ``char`` in each line, -1 where none."""
    return _in_lines(np.flatnonzero(buf == ord(char)).astype(np.int64), starts, ends, False)


def decimals(buf: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decimal values of ``buf[a:b]`` per row, and whether each row was 1-18 plain digits."""
    mat = padded(buf, a, b)
    lens = b - a
    ok = (lens >= 1) & (lens <= 18)
    val = np.zeros(len(a), np.int64)
    for j in range(mat.shape[1]):
        live = lens > j
        d = mat[:, j].astype(np.int64) - 48
        ok &= ~live | ((d >= 0) & (d <= 9))
        val = np.where(live, val * 10 + np.clip(d, 0, 9), val)
    return val, ok
