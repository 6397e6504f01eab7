"""SCP (HTK script) files: the corpus index of the feature deserializer, parsed with NumPy.

Each non-blank line names one utterance:

* ``logical=physical[start,end]``: frames ``start..end`` (inclusive) of the archive ``physical``;
* ``physical[start,end]``: the same, the logical name being the physical one;
* ``logical=physical`` or ``physical``: the whole file (cntkio; CNTK 2.7's deserializer required
  the range).

The utterance key is the logical name up to the last ``.`` of its last path component
(``u0.x.mfc`` -> ``u0.x``, ``d/u0.mfc`` -> ``d/u0``), spaces kept, as CNTK derived it. A physical
path starting with ``...`` is relative to the SCP file's folder (CNTK's convention); with
``prefixPathInSCP`` a relative physical path is joined to the prefix; other relative paths are
relative to the working directory, as in CNTK.

The whole file is indexed by vectorized operations over its bytes: no Python object per line
(only one per distinct physical file).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ...errors import FormatError
from ...remote import is_remote, read_path, resolve
from .text import decimals, first_in_lines, fnv1a, last_in_lines, line_bounds, numeric_keys, padded

__all__ = ["ScpIndex", "parse_scp", "parse_scp_files"]


@dataclass
class ScpIndex:
    """The utterances of SCP files, in order, as arrays (one entry per utterance)."""

    keys: np.ndarray        # uint64 key hashes
    file_ids: np.ndarray    # int32 index into ``files``
    starts: np.ndarray      # int64 first frame, -1: the whole file
    ends: np.ndarray        # int64 last frame (inclusive), -1: the whole file
    lines: np.ndarray       # int32 1-based line in its SCP file
    scp_ids: np.ndarray     # int32 index into ``scp_files``
    files: list             # distinct physical paths (str)
    scp_files: list         # the SCP files (str)

    def __len__(self) -> int:
        return int(self.keys.shape[0])



def _fail(path: str, line: int, text: bytes, why: str) -> FormatError:
    return FormatError(f"cannot parse the SCP line: {why}", file=path, line=line,
                       expected="logical=physical[start,end], physical[start,end], logical=physical or physical",
                       found=repr(text.decode("utf-8", "replace")))


def _resolve(physical: str, scp_path: str, prefix: str | None) -> str:
    """The physical path, absolute (resolved against the working directory when the index is
    built, so that later reads do not depend on it); in an SCP file at a URL, against its URL."""
    if is_remote(physical) or is_remote(scp_path) or (prefix and is_remote(prefix)):
        if prefix and not is_remote(physical) and not physical.startswith(("/", "...")):
            physical = prefix.rstrip("/") + "/" + physical
        return resolve(scp_path, physical) if is_remote(scp_path) else physical
    if physical.startswith("..."):
        physical = os.path.join(os.path.dirname(os.path.abspath(scp_path)), physical[3:].lstrip("/\\"))
    elif prefix and not os.path.isabs(physical):
        physical = os.path.join(prefix, physical)
    return os.path.abspath(physical)


def parse_scp(path: str, prefix: str | None = None, numeric: bool = False, config=None) -> tuple:
    """One SCP file: ``(keys, physical paths (object array of distinct str) and per-line ids, starts,
    ends, 1-based lines)``. Raises FormatError naming the file and line of a line that does not parse.
    An SCP file at a URL is read with the remote options of ``config`` (the deserializer's)."""
    try:
        data = np.frombuffer(read_path(path, config), np.uint8) if is_remote(path) else np.fromfile(path, np.uint8)
    except OSError as e:
        raise FormatError(f"cannot open the SCP file: {e.strerror or e}", file=path) from e
    if data[:3].tobytes() == b"\xef\xbb\xbf":
        data = data.copy()
        data[:3] = 32
    starts, ends = line_bounds(data)
    lineno = np.arange(1, len(starts) + 1, dtype=np.int64)
    # blank lines (only spaces/tabs) are skipped
    nonblank = np.zeros(len(starts), bool)
    if len(data):
        ink = np.flatnonzero((data != 32) & (data != 9) & (data != 13))   # non-blank bytes
        first = np.searchsorted(ink, starts)                                  # first ink at/after start
        nonblank = first < len(ink)
        nonblank[nonblank] = ink[first[nonblank]] < ends[nonblank]
    starts, ends, lineno = starts[nonblank], ends[nonblank], lineno[nonblank]
    n = len(starts)
    if n == 0:
        return (np.zeros(0, np.uint64), [], np.zeros(0, np.int32), np.zeros(0, np.int64),
                np.zeros(0, np.int64), np.zeros(0, np.int32))
    eq = first_in_lines(data, b"=", starts, ends)
    lb = last_in_lines(data, b"[", starts, ends)
    has_range = (ends > starts) & (data[np.maximum(ends - 1, 0)] == ord("]"))
    bad = has_range & (lb < 0)
    bad |= (~has_range) & (lb >= 0) & (first_in_lines(data, b"]", starts, ends) < 0)   # '[' never closed
    lb = np.where(has_range, lb, -1)
    comma = np.where(has_range, last_in_lines(data, b",", starts, ends), -1)
    bad |= has_range & ((comma < lb) | (comma < 0))
    phys_a = np.where(eq >= 0, eq + 1, starts)
    phys_b = np.where(has_range, lb, ends)
    log_a, log_b = starts, np.where(eq >= 0, eq, phys_b)
    bad |= (phys_b <= phys_a) | (log_b <= log_a)
    r_start = np.full(n, -1, np.int64)
    r_end = np.full(n, -1, np.int64)
    if has_range.any():
        hr = np.flatnonzero(has_range & ~bad)
        s, ok1 = decimals(data, lb[hr] + 1, comma[hr])
        e, ok2 = decimals(data, comma[hr] + 1, ends[hr] - 1)
        r_start[hr], r_end[hr] = s, e
        bad[hr[~(ok1 & ok2)]] = True
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fail(path, int(lineno[i]), data[starts[i]:ends[i]].tobytes(),
                    "a range must read [start,end] with decimal frame numbers, and the logical "
                    "and physical names must not be empty")
    # the key: the logical name up to the last '.' of its last path component
    slash = np.maximum(last_in_lines(data, b"/", log_a, log_b), last_in_lines(data, b"\\", log_a, log_b))
    dot = last_in_lines(data, b".", log_a, log_b)
    key_b = np.where((dot > slash) & (dot > log_a), dot, log_b)
    if numeric:     # useNumericSequenceKeys: the key's number, as CNTK's sscanf("%llu") read it
        keys, ok = numeric_keys(padded(data, log_a, key_b), key_b - log_a)
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            key = data[log_a[i]:key_b[i]].tobytes().decode("utf-8", "replace")
            raise FormatError(f"Invalid numeric sequence id '{key}' (useNumericSequenceKeys = true)", file=path,
                              line=int(lineno[i]), expected="a key that starts with a number", found=repr(key))
    else:
        keys = fnv1a(padded(data, log_a, key_b), key_b - log_a)
    # the physical paths: distinct ones only become Python strings
    mat = padded(data, phys_a, phys_b)
    width = mat.shape[1]
    as_s = np.ascontiguousarray(mat).view(f"S{width}").ravel()
    uniq, file_ids = np.unique(as_s, return_inverse=True)
    files = [_resolve(u.decode("utf-8", "surrogateescape"), path, prefix) for u in uniq.tolist()]
    return keys, files, file_ids.astype(np.int32).ravel(), r_start, r_end, lineno.astype(np.int32)


def parse_scp_files(paths: list[str], prefix: str | None = None, numeric: bool = False,
                    config=None) -> ScpIndex:
    """Several SCP files, concatenated in order (``numeric``: keys are numbers, see
    :func:`~cntkio.deserializers.htk.text.numeric_keys`)."""
    parts = [parse_scp(p, prefix, numeric, config) for p in paths]
    files: list[str] = []
    where: dict[str, int] = {}
    fids, scps = [], []
    for k, (_, fl, fid, *_rest) in enumerate(parts):
        remap = np.array([where.setdefault(f, len(where)) for f in fl], np.int32)
        fids.append(remap[fid] if len(fid) else fid)
        scps.append(np.full(len(fid), k, np.int32))
    files = list(where)
    cat = lambda i, dt: np.concatenate([p[i] for p in parts]).astype(dt) if parts else np.zeros(0, dt)  # noqa: E731
    return ScpIndex(cat(0, np.uint64), np.concatenate(fids) if fids else np.zeros(0, np.int32),
                    cat(3, np.int64), cat(4, np.int64), cat(5, np.int32),
                    np.concatenate(scps) if scps else np.zeros(0, np.int32), files, list(paths))
