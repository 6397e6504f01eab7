"""A vectorized MLF scan: the whole file's lines classified and its segment lines parsed with
NumPy (no Python object per segment line; one per utterance name).

The result equals :func:`cntkio.deserializers.htk.mlf` 's line-by-line parser, which remains the
reference and handles the rare shapes this scan hands back to it (an unquoted entry name, which
CNTK skipped with a warning, or a line opening with a quote that does not end with one).
"""
from __future__ import annotations

import numpy as np

from ..._native import native
from ...errors import FormatError
from .text import decimals, fnv1a, hash_names, line_bounds, padded

__all__ = ["scan_mlf", "FALLBACK", "MAX_FRAME", "frame_overflow", "mlf_key", "mlf_keys", "state_table"]

#: returned when the file needs the line-by-line parser
FALLBACK = None
#: bytes of an MLF file scanned at once (the scan's temporary tables are about 13 times that)
BLOCK_BYTES = 4 << 20
HEADER = b"#!MLF!#"
#: the largest frame number a segment may name: CNTK kept frames in uint32 and refused a time whose
#: frame does not fit ("not enough bits for one of the frame range values", MLFUtils.cpp:104-110)
MAX_FRAME = 2**32 - 1


def frame_overflow(path: str, line: int, text: str) -> FormatError:
    """CNTK's error for a time whose frame does not fit 32 bits (MLFUtils.cpp:109-110)."""
    return FormatError("not enough bits for one of the frame range values", file=path, line=line,
                       expected=f"times whose frames are at most {MAX_FRAME} (2^32 - 1)", found=repr(text))


def _strip(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Line ranges without leading/trailing spaces, TABs and CRs (empty lines: start == end).
    Only the lines that start or end with one are looked at again (few, in a real MLF)."""
    a, b = starts.copy(), ends.copy()
    if len(data) == 0:
        return a, b
    ws = np.zeros(256, bool)
    ws[[32, 9, 13]] = True
    has = b > a
    edge = np.zeros(len(a), bool)
    edge[has] = ws[data[a[has]]] | ws[data[b[has] - 1]]
    for i in np.flatnonzero(edge).tolist():            # a Python step only for such lines
        seg = data[a[i]:b[i]]
        ink = np.flatnonzero(~ws[seg])
        if len(ink):
            a[i], b[i] = a[i] + ink[0], a[i] + ink[-1] + 1
        else:
            b[i] = a[i]
    return a, b


def _text(data, a, b) -> str:
    return data[a:b].tobytes().decode("utf-8", "surrogateescape")



def _tokens(data: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> tuple:
    """Per segment line: the token count, the first two tokens as decimals, whether both were 1-18
    plain digits, the third token's bounds and its FNV-1a hash (zeros where there are fewer than 3
    tokens). One C pass (``cntkio._native._htk.mlf_tokens``), or NumPy under CNTKIO_PURE_PYTHON."""
    htk = native("htk")
    if htk is not None:
        out = htk.mlf_tokens(data, np.ascontiguousarray(sa, np.int64), np.ascontiguousarray(sb, np.int64))
        ntok, v0, v1, ok, la, lb = (np.frombuffer(x, np.int64) for x in out[:6])
        return ntok, v0, v1, ok.astype(bool), la, lb, np.frombuffer(out[6], np.uint64)
    n = len(sa)
    is_sp = data == 32
    mask = ~is_sp
    mask[1:] &= is_sp[:-1]                     # a non-space after a space starts a token,
    mask[sa] = True                            # and so does a segment line's first byte
    tok_start = np.flatnonzero(mask)
    spaces = np.flatnonzero(is_sp)
    t0 = np.searchsorted(tok_start, sa)
    ntok = np.searchsorted(tok_start, sb) - t0
    tstart = [tok_start[np.minimum(t0 + k, len(tok_start) - 1)] for k in range(3)]
    tend = []
    for k in range(3):      # a token runs to the next space, or to the line's end
        if len(spaces):
            nxt = np.searchsorted(spaces, tstart[k])
            has = nxt < len(spaces)
            tend.append(np.where(has, np.minimum(spaces[np.minimum(nxt, len(spaces) - 1)], sb), sb))
        else:
            tend.append(sb)
    ok3 = ntok >= 3
    v0, ok0 = decimals(data, np.where(ok3, tstart[0], 0), np.where(ok3, tend[0], 0))
    v1, ok1 = decimals(data, np.where(ok3, tstart[1], 0), np.where(ok3, tend[1], 0))
    la, lb = np.where(ok3, tstart[2], 0), np.where(ok3, tend[2], 0)
    lh = fnv1a(padded(data, la, lb), lb - la) if n else np.zeros(0, np.uint64)
    return ntok, v0, v1, ok0 & ok1 & ok3, la, lb, lh


def scan_mlf(path: str, state_hashes: np.ndarray, state_index: np.ndarray, dim: int, log) -> dict | None:
    """One MLF file: entries (names, lines, segment counts) and segments (frames, labels), or
    :data:`FALLBACK`. Errors are raised as the line parser raises them (the first in the file).

    The file is scanned in blocks of about :data:`BLOCK_BYTES` that end after a ``.`` line (no
    entry is open there, as at the file's start), so the scan's temporary tables (a few int64 per
    line, about 13 times the bytes they cover) stay bounded whatever the file's size."""
    try:
        data = np.fromfile(path, np.uint8)
    except OSError as e:
        raise FormatError(f"cannot open the MLF file: {e.strerror}", file=path) from e
    cuts = _block_cuts(data, BLOCK_BYTES)
    parts, error, line0 = [], None, 0
    for k in range(len(cuts) - 1):
        block = data[cuts[k]:cuts[k + 1]]
        part = _scan_block(path, block, line0, k == 0, state_hashes, state_index, dim,
                           log if error is None else None)      # no warning after an error, as before
        if part is FALLBACK:
            return FALLBACK           # as the whole-file scan: the line parser decides, errors included
        result, err = part
        if err is not None and error is None:
            error = err               # the blocks are in file order: the first one's is the first error
        parts.append(result)
        line0 += int(np.count_nonzero(block == 10))
    if error is not None:
        raise error
    if len(parts) == 1:
        return parts[0]
    return {"names": [nm for p in parts for nm in p["names"]],
            **{f: np.concatenate([p[f] for p in parts]) for f in ("lines", "counts", "starts", "ends", "labels")}}


def _block_cuts(data: np.ndarray, size: int) -> list[int]:
    """Byte offsets cutting ``data`` into blocks of at least ``size`` bytes (but the last), each
    ending just after a line that is a lone ``.`` (``\\n.\\n`` or ``\\n.\\r\\n``)."""
    cuts = [0]
    pos = size
    while pos < len(data):
        window = data[pos:pos + max(size, 1 << 16) + 3]
        nl = np.flatnonzero(window[:-3] == 10) if len(window) > 3 else np.zeros(0, np.int64)
        dot = window[np.minimum(nl + 1, len(window) - 1)] == ord(".")
        after = window[np.minimum(nl + 2, len(window) - 1)]
        after2 = window[np.minimum(nl + 3, len(window) - 1)]
        lone = dot & ((after == 10) | ((after == 13) & (after2 == 10)))
        hit = np.flatnonzero(lone)
        if len(hit) == 0:
            pos += max(len(window) - 3, 1)
            continue
        i = int(nl[hit[0]])
        cut = pos + i + (3 if window[i + 2] == 10 else 4)
        if cut >= len(data):
            break
        cuts.append(cut)
        pos = cut + size
    cuts.append(len(data))
    return cuts


def _scan_block(path: str, data: np.ndarray, line0: int, with_header: bool, state_hashes: np.ndarray,
                state_index: np.ndarray, dim: int, log):
    """One block of lines of an MLF file (line numbers after ``line0``; the first block holds the
    header): :data:`FALLBACK`, or ``(result, first error or None)``."""
    starts, ends = line_bounds(data)
    lineno = np.arange(line0 + 1, line0 + len(starts) + 1, dtype=np.int64)
    a, b = _strip(data, starts, ends)
    keep = b > a
    a, b, lineno = a[keep], b[keep], lineno[keep]
    if with_header:
        if len(a) == 0 or data[a[0]:b[0]].tobytes() != HEADER:
            found = repr(_text(data, a[0], b[0])) if len(a) else "end of file"
            raise FormatError("Expected MLF header was not found.", file=path,
                              line=int(lineno[0]) if len(a) else 1, expected=HEADER.decode(), found=found)
        a, b, lineno = a[1:], b[1:], lineno[1:]
    n = len(a)
    first = data[a] if n else np.zeros(0, np.uint8)
    lastc = data[b - 1] if n else np.zeros(0, np.uint8)
    dot = (b - a == 1) & (first == ord("."))
    quoted = (first == ord('"')) & (lastc == ord('"')) & (b - a >= 2)
    if ((first == ord('"')) & ~quoted).any():
        return FALLBACK
    # the last event (name or '.') before each line: is an entry open there?
    event = np.where(quoted, 1, np.where(dot, 2, 0))
    idx = np.where(event > 0, np.arange(n), -1)
    last_event = np.maximum.accumulate(idx) if n else idx
    prev = np.concatenate(([-1], last_event[:-1])) if n else last_event
    prev_kind = np.where(prev >= 0, event[np.maximum(prev, 0)], 0)
    other = event == 0
    if (other & (prev_kind != 1)).any():
        return FALLBACK                           # an unquoted entry name: the line parser skips it
    bad_open = np.flatnonzero(quoted & (prev_kind == 1))
    seg = np.flatnonzero(other)
    # segment lines: tokens separated by spaces (a TAB is not a separator)
    sa, sb = a[seg], b[seg]
    ntok, v0, v1, ok01, la, lb, lh = _tokens(data, sa, sb)
    errors = []                                   # (line, exception)
    if len(bad_open):
        i = int(bad_open[0])
        entry = int(prev[i])
        errors.append((int(lineno[i]), FormatError(
            f"the entry '{_key(data, a[entry], b[entry])}' has no '.' line before the next entry", file=path,
            line=int(lineno[i]), expected="'.'", found=repr(_text(data, a[i], b[i])))))
    few = np.flatnonzero(ntok < 3)
    if len(few):
        i = int(few[0])
        errors.append((int(lineno[seg[i]]), FormatError(
            "do not support frame range format with less than two columns.", file=path, line=int(lineno[seg[i]]),
            expected="start end label (separated by spaces)", found=repr(_text(data, sa[i], sb[i])))))
    ok3 = np.flatnonzero(ntok >= 3)
    v0, v1, ok01, la, lb, lh = v0[ok3], v1[ok3], ok01[ok3], la[ok3], lb[ok3], lh[ok3]
    badnum = np.flatnonzero(~ok01)
    if len(badnum):
        i = int(ok3[badnum[0]])
        errors.append((int(lineno[seg[i]]), FormatError(
            "the start and end times must be integers in 100 ns units", file=path, line=int(lineno[seg[i]]),
            expected="start end label", found=repr(_text(data, sa[i], sb[i])))))
    pos = np.searchsorted(state_hashes, lh)
    posc = np.minimum(pos, max(len(state_hashes) - 1, 0))
    known = (pos < len(state_hashes)) & (state_hashes[posc] == lh) if len(state_hashes) else np.zeros(len(lh), bool)
    labels = np.where(known, state_index[posc] if len(state_index) else 0, -1)
    unknown = np.flatnonzero(~known)
    if len(unknown):
        i = int(unknown[0])
        text = _text(data, la[i], lb[i])
        line = int(lineno[seg[ok3[i]]])
        errors.append((line, FormatError(f"frame range state '{text}' is not found in the statelist", file=path,
                                         line=line, expected="a label of the labelMappingFile", found=repr(text))))
    big = np.flatnonzero(known & (labels >= dim))
    if len(big):
        i = int(big[0])
        line = int(lineno[seg[ok3[i]]])
        errors.append((line, FormatError(f"Class id '{labels[i]}' exceeds the model output dimension '{dim}'.",
                                         file=path, line=line, expected=f"a label index below dim {dim}",
                                         found=str(labels[i]))))
    frames0 = (v0 + 50000) // 100000
    frames1 = (v1 + 50000) // 100000
    huge = np.flatnonzero(ok01 & ((frames0 > MAX_FRAME) | (frames1 > MAX_FRAME)))
    if len(huge):
        i = int(ok3[huge[0]])
        line = int(lineno[seg[i]])
        errors.append((line, frame_overflow(path, line, _text(data, sa[i], sb[i]))))
    if errors:
        return None, min(errors, key=lambda e: e[0])[1]
    # entries: a name line; closed by the next event being a '.'
    names_at = np.flatnonzero(quoted)
    nxt_event = np.full(n, -1, np.int64)
    ev = np.flatnonzero(event > 0)
    if len(ev) > 1:
        nxt_event[ev[:-1]] = ev[1:]
    closed = (nxt_event[names_at] >= 0) & dot[np.maximum(nxt_event[names_at], 0)]
    entry_of_seg = np.searchsorted(names_at, seg, side="right") - 1
    if len(names_at) and not closed[-1] and log is not None:
        i = int(names_at[-1])
        log.warning("%s: the last entry '%s' (line %d) has no terminating '.' and is dropped, as in CNTK",
                    path, _key(data, a[i], b[i]), int(lineno[i]))
    counts = np.bincount(entry_of_seg, minlength=len(names_at)) if len(seg) else np.zeros(len(names_at), np.int64)
    seg_keep = closed[entry_of_seg] if len(seg) else np.zeros(0, bool)
    kept = names_at[closed]
    names = mlf_keys(data, a[kept] + 1, b[kept] - 1)
    return {"names": names, "lines": lineno[names_at[closed]], "counts": counts[closed],
            "starts": frames0[seg_keep], "ends": frames1[seg_keep],
            "labels": labels[seg_keep].astype(np.int32)}, None


def mlf_key(name: str) -> str:
    """The key of a quoted MLF entry name (without its quotes): without a leading ``*/`` and the
    extension of its last component."""
    if name.startswith("*/"):
        name = name[2:]
    slash = max(name.rfind("/"), name.rfind("\\"))
    dot = name.rfind(".")
    return name[:dot] if dot > slash + 1 else name


def mlf_keys(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[str]:
    """:func:`mlf_key` of the entry names at byte ranges ``[starts, ends)`` of ``data`` (inside
    the quotes), for all of them at once: the ranges cut on bytes ('*', '/', '\\' and '.' are
    ASCII, never part of a UTF-8 sequence) and decoded by one call, split at newlines."""
    n = len(starts)
    if n == 0:
        return []
    s = np.asarray(starts, np.int64)
    e = np.maximum(np.asarray(ends, np.int64), s)
    two = (e - s >= 2)
    lo = np.minimum(s, len(data) - 1)
    star = two & (data[lo] == ord("*")) & (data[np.minimum(lo + 1, len(data) - 1)] == ord("/"))
    s = s + 2 * star
    length = e - s
    mat = padded(data, s, e)
    col = np.arange(mat.shape[1], dtype=np.int64)
    inside = col[None, :] < length[:, None]
    slash = np.where(((mat == ord("/")) | (mat == ord("\\"))) & inside, col, -1).max(1, initial=-1)
    dot = np.where((mat == ord(".")) & inside, col, -1).max(1, initial=-1)
    klen = np.where(dot > slash + 1, dot, length)
    out_end = np.cumsum(klen + 1)
    out_start = out_end - klen - 1
    buf = np.full(int(out_end[-1]), ord("\n"), np.uint8)
    total = int(klen.sum())
    if total:
        within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(klen) - klen, klen)
        buf[np.repeat(out_start, klen) + within] = data[np.repeat(s, klen) + within]
    return buf[:-1].tobytes().decode("utf-8", "surrogateescape").split("\n")


def _key(data, a, b) -> str:
    return mlf_key(_text(data, a + 1, b - 1))


def state_table(states: dict) -> tuple[np.ndarray, np.ndarray]:
    """Sorted hashes of the state names and their indices (for :func:`scan_mlf`)."""
    names = list(states)
    h = hash_names(names)
    order = np.argsort(h, kind="stable")
    if len(h) > 1 and (np.diff(h[order]) == 0).any():
        raise ValueError("two state names share a 64-bit hash")
    return h[order], np.asarray([states[names[i]] for i in order], np.int64)

