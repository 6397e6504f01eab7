"""HTK master label files (MLF) and state lists, as CNTK 2.7's HTKMLFDeserializer read them.

::

    #!MLF!#
    "*/u0.lab"
    0 2000000 s0 [score ...]
    2000000 3500000 s1
    .

The first line is ``#!MLF!#``. An entry starts with a quoted name; its key is the name without a
leading ``*/`` and without the extension of its last component (``"*/d/u0.lab"`` -> ``d/u0``).
An unquoted name is skipped with a warning, as CNTK did. Each line is ``start end label`` with
fields after the label ignored, separated by spaces; times are in 100 ns and a time becomes the
frame ``round_half_up(t / 100000)``. ``.`` ends an entry; a missing ``.`` at the end of the file
drops the last entry (logged), one missing before the next entry is an error. The first entry of
a key wins (within a file and over several files). Segments that do not start at frame 0 or are
not contiguous make the utterance an invalid sequence (counted against ``max_errors`` when read).

A state list has one label per line; a label's index is its 0-based line.
"""
from __future__ import annotations

import logging
from itertools import repeat
from dataclasses import dataclass

import numpy as np

from ...errors import FormatError
from .mlfscan import MAX_FRAME, frame_overflow, mlf_key, scan_mlf, state_table
from .text import hash_names

__all__ = ["MLFIndex", "parse_mlf_files", "read_state_list", "mlf_key"]

log = logging.getLogger("cntkio.deserializers.htk")

HEADER = "#!MLF!#"
FRAME_100NS = 100000
#: the most digits a time may have (the vectorized scan parses up to 18 into an int64)
MAX_TIME_DIGITS = 18


def read_state_list(path: str) -> dict[str, int]:
    """``{label: 0-based line}`` of a state list (the first line naming a label wins)."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise FormatError(f"cannot open the label mapping file: {e.strerror}", file=path) from e
    out: dict[str, int] = {}
    for i, s in enumerate(lines):
        out.setdefault(s.strip(), i)
    out.pop("", None)
    log.info("Total (%d) state names in state list '%s'", len(lines), path)
    return out


@dataclass
class MLFIndex:
    """The utterances of MLF files, in input order: key hashes, segment tables, validity."""

    keys: np.ndarray         # uint64, one per utterance
    seg_offsets: np.ndarray  # int64 (utterances + 1): utterance u owns segments [o[u], o[u+1])
    seg_starts: np.ndarray   # int64 first frame of each segment
    seg_ends: np.ndarray     # int64 end frame (exclusive)
    seg_labels: np.ndarray   # int32 label index
    valid: np.ndarray        # bool: segments start at 0 and are contiguous
    names: list              # utterance keys (str), for messages
    where: list              # (file, line of the entry's name)

    def __len__(self) -> int:
        return int(self.keys.shape[0])

    @property
    def lengths(self) -> np.ndarray:
        """Frames per utterance: the last segment's end (0 without segments)."""
        last = self.seg_offsets[1:] - 1
        has = self.seg_offsets[1:] > self.seg_offsets[:-1]
        return np.where(has, self.seg_ends[np.maximum(last, 0)] if len(self.seg_ends) else 0, 0)


_BLANK = " \t\r"


def _frame(t: int) -> int:
    return (t + FRAME_100NS // 2) // FRAME_100NS


def _numeric_segment(fields: list, t0: int, t1: int, dim: int, path: str, line: int, text: str) -> tuple:
    """A segment of an MLF read without a state list: ``start end name id`` (CNTK 2.7's
    ``MLFFrameRange::Build``: exactly four columns, the class id last; the times are 100 ns units
    when the segment spans at least 99999 of them, else frame numbers: ``ParseFrameRange``,
    Source/Readers/HTKDeserializers/MLFUtils.cpp)."""
    if len(fields) != 4:
        raise FormatError("CNTK supports 4-column format frame range or state list table.", file=path, line=line,
                          expected="start end name class-id (no labelMappingFile is given)", found=repr(text))
    if not (fields[3].isdigit() and fields[3].isascii()):
        raise FormatError("cannot parse class id of the frame range", file=path, line=line,
                          expected="an integer class id in the fourth column", found=repr(fields[3]))
    label = int(fields[3])
    if label >= dim:
        raise FormatError(f"Class id '{label}' exceeds the model output dimension '{dim}'.", file=path,
                          line=line, expected=f"a label index below dim {dim}", found=str(label))
    if t1 - t0 >= FRAME_100NS - 1:
        return _frame(t0), _frame(t1), label
    return t0, t1, label


def _parse_lines(path: str, states: dict[str, int] | None, dim: int) -> dict:
    """The line-by-line parser (the reference; :func:`mlfscan.scan_mlf` is its vectorized twin):
    ``{names, lines, counts, starts, ends, labels}`` of the file's closed entries, in order.
    ``states`` None: no state list, the four-column form (:func:`_numeric_segment`)."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "surrogateescape")
    except OSError as e:
        raise FormatError(f"cannot open the MLF file: {e.strerror}", file=path) from e
    # lines end at LF only, their ends stripped of spaces, TABs and CRs (as the scan reads them;
    # str.splitlines would also break at VT, FF, U+2028 ...)
    lines = [ln.strip(_BLANK) for ln in text.split("\n")]
    i = 0
    while i < len(lines) and not lines[i]:
        i += 1
    if i == len(lines) or lines[i] != HEADER:
        raise FormatError("Expected MLF header was not found.", file=path, line=i + 1, expected=HEADER,
                          found=repr(lines[i]) if i < len(lines) else "end of file")
    i += 1
    out: dict = {"names": [], "lines": [], "counts": [], "starts": [], "ends": [], "labels": []}
    name = None           # the open entry
    skipping = False
    entry_line = 0
    segs: list = []
    n = len(lines)
    while i < n:
        raw = lines[i]
        s = raw
        i += 1
        if not s:
            continue
        if s == ".":
            if name is not None:
                out["names"].append(name)
                out["lines"].append(entry_line)
                out["counts"].append(len(segs))
                out["starts"].extend(t[0] for t in segs)
                out["ends"].extend(t[1] for t in segs)
                out["labels"].extend(t[2] for t in segs)
            name, skipping, segs = None, False, []
            continue
        if skipping:
            continue
        if name is None:
            if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
                name, entry_line, segs = mlf_key(s[1:-1]), i, []
            else:
                log.warning("%s:%d: Cannot parse the utterance '%s': an entry name must be quoted; "
                            "the entry is skipped", path, i, s)
                skipping = True
            continue
        if s[0] == '"':
            raise FormatError(f"the entry '{name}' has no '.' line before the next entry", file=path,
                              line=i, expected="'.'", found=repr(s))
        fields = [t for t in s.split(" ") if t]
        if len(fields) < 3:
            raise FormatError("do not support frame range format with less than two columns.", file=path,
                              line=i, expected="start end label (separated by spaces)", found=repr(s))
        if not all(f.isdigit() and f.isascii() and len(f) <= MAX_TIME_DIGITS for f in fields[:2]):
            raise FormatError("the start and end times must be integers in 100 ns units", file=path,
                              line=i, expected="start end label", found=repr(s))
        t0, t1 = int(fields[0]), int(fields[1])
        if _frame(t1) > MAX_FRAME or _frame(t0) > MAX_FRAME:
            raise frame_overflow(path, i, s)
        if states is None:          # no state list: CNTK's four-column form, the class id last
            segs.append(_numeric_segment(fields, t0, t1, dim, path, i, s))
            continue
        label = states.get(fields[2])
        if label is None:
            raise FormatError(f"frame range state '{fields[2]}' is not found in the statelist", file=path,
                              line=i, expected="a label of the labelMappingFile", found=repr(fields[2]))
        if label >= dim:
            raise FormatError(f"Class id '{label}' exceeds the model output dimension '{dim}'.", file=path,
                              line=i, expected=f"a label index below dim {dim}", found=str(label))
        segs.append((_frame(t0), _frame(t1), label))
    if name is not None:
        log.warning("%s: the last entry '%s' (line %d) has no terminating '.' and is dropped, as in CNTK",
                    path, name, entry_line)
    return out


def parse_mlf_files(paths: list[str], states: dict[str, int] | None, dim: int, *,
                    vectorized: bool = True) -> MLFIndex:
    """Several MLF files, their union in order (a key's first entry wins). Each file is scanned
    with NumPy (:func:`mlfscan.scan_mlf`), or parsed line by line when the scan hands it back
    (or ``vectorized=False``, or without a state list: ``states`` None, CNTK's four-column form,
    read by the line parser)."""
    if states is None:
        vectorized = False
    table = state_table(states or {})
    names: list = []
    where: list = []
    counts, starts, ends, labels = [], [], [], []
    seen: set = set()
    for p in paths:
        part = scan_mlf(p, table[0], table[1], dim, log) if vectorized else None
        if part is None:
            part = _parse_lines(p, states, dim)
        c = np.asarray(part["counts"], np.int64)
        off = np.concatenate(([0], np.cumsum(c)))
        pn = part["names"]
        if len(set(pn)) == len(pn) and seen.isdisjoint(pn):    # no name twice: every entry kept
            keep_entries = range(len(pn))
            seen.update(pn)
        else:
            keep_entries = []
            for j, nm in enumerate(pn):            # a step per utterance only here: first entry wins
                if nm not in seen:
                    seen.add(nm)
                    keep_entries.append(j)
        ke = np.asarray(keep_entries, np.int64)
        if len(ke) == len(c):
            seg_sel = slice(None)           # every segment: the scan's arrays as they are, no copy
        else:
            seg_sel = np.concatenate([np.arange(off[j], off[j + 1]) for j in keep_entries] or
                                     [np.zeros(0, np.int64)]).astype(np.int64)
        names.extend(pn if len(ke) == len(pn) else [pn[j] for j in keep_entries])
        lines = np.asarray(part["lines"], np.int64)
        where.extend(zip(repeat(p), lines[ke].tolist()))
        counts.append(c[ke] if len(ke) else np.zeros(0, np.int64))
        starts.append(np.asarray(part["starts"], np.int64)[seg_sel])
        ends.append(np.asarray(part["ends"], np.int64)[seg_sel])
        labels.append(np.asarray(part["labels"], np.int32)[seg_sel])
    def cat(xs: list, dt) -> np.ndarray:        # one file's array as it is (no copy when of dtype dt)
        if not xs:
            return np.zeros(0, dt)
        return (xs[0] if len(xs) == 1 else np.concatenate(xs)).astype(dt, copy=False)
    counts_a, starts_a, ends_a = cat(counts, np.int64), cat(starts, np.int64), cat(ends, np.int64)
    offsets = np.zeros(len(counts_a) + 1, np.int64)
    np.cumsum(counts_a, out=offsets[1:])
    valid = _validity(offsets, starts_a, ends_a)
    for u in np.flatnonzero(~valid).tolist():
        log.warning("%s:%d: Labels are not in the consecutive order MLF in label set for utterance '%s' "
                    "(segments must start at frame 0 and be contiguous): an invalid sequence",
                    where[u][0], where[u][1], names[u])
    idx = MLFIndex(hash_names(names), offsets, starts_a, ends_a, cat(labels, np.int32), valid, names, where)
    log.info("MLF Deserializer: '%d' utterances with '%d' frames", len(idx), int(idx.lengths.sum()))
    return idx


def _validity(offsets: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per utterance: it has segments, the first starts at 0, each starts where the previous ended,
    none ends before it starts."""
    n = len(offsets) - 1
    counts = np.diff(offsets)
    valid = counts > 0
    if len(starts) == 0:
        return valid
    utt = np.repeat(np.arange(n), counts)
    first = np.zeros(len(starts), bool)
    first[offsets[:-1][counts > 0]] = True
    prev_end = np.concatenate(([0], ends[:-1]))
    bad = (ends < starts) | np.where(first, starts != 0, starts != prev_end)
    valid &= np.bincount(utt[bad], minlength=n) == 0
    return valid
