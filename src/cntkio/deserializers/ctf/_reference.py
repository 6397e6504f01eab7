"""The CNTK Text Format (CTF), stated as a pure-Python reference implementation.

This module is the readable definition of the format as cntkio reads it, the oracle of the
differential and fuzz tests of the C parser (``cntkio._native._ctf``), and the fallback under
``CNTKIO_PURE_PYTHON=1``. The C module exposes the two functions below with the SAME names,
arguments and return values, so ``backend = native("ctf") or _reference`` switches them. It is
written to be read, not to be fast.

Everything here works on bytes. Nothing here raises for malformed input: problems come back as
*issue* tuples, and the deserializer (``ctf/__init__.py``) turns them into log messages,
``FormatError`` and ``MaxErrorsExceeded``.

Lexical rules
=============
* **Encoding.** UTF-8 (ASCII in practice). A leading UTF-8 BOM ``EF BB BF`` is skipped. A file that
  starts with a UTF-16/UTF-32 BOM (``FF FE``, ``FE FF``, ``00 00 FE FF``) or whose first two bytes
  contain a NUL byte is not CTF: ``scan_index`` reports the encoding and stops (see ENCODING_*).
* **Lines** end at ``\\n``. The last line may lack it. ``\\r`` counts as white space everywhere, so
  ``\\r\\n`` line ends need no special case.
* **White space** (``WS``) is space, tab and ``\\r``.
* **Delimiters** are WS, ``\\n`` and ``|``. A *token* is a maximal run of non-delimiter bytes.
* Line numbers are 1-based. Columns are 1-based byte columns from the first byte of the line; on
  line 1 the BOM is not counted (the first character after it is column 1).

Line grammar
============
A line is ``WS* [ID] (WS | sample | comment)*`` where

* ``ID`` is a run of ASCII digits. It must be followed by WS, ``|`` or the line end; otherwise the
  line has an *invalid prefix*. Any other text before the first ``|`` (a token that is not all
  digits) is an invalid prefix too. White space before the id is allowed (CNTK 2.7 rejected it).
* ``comment`` is ``|#`` followed by anything up to (not including) the next ``|`` or the line
  end. A ``|#`` inside a comment body therefore ends the comment and starts a new one, which is how
  the format page's "escaped pipe" ``|#`` works; a bare ``|`` ends the comment.
* ``sample`` is ``|NAME`` followed by its values, up to (not including) the next ``|`` or the line
  end. ``NAME`` is the token right after ``|`` (it may be empty: an error, see below). Values are
  the tokens between NAME and the next ``|``/line end, separated by WS.

A line is **skipped** (no error, no sequence, no effect on grouping) when it is *blank* (only WS)
or has *no content*: after the optional id only WS and comments (``100 |# note`` and ``100`` alone
are skipped too). Every other line is a **data line**.

Values
------
* A **number** is ``[+-]? ( D+ ('.' D*)? | '.' D+ ) ([eE] [+-]? D+)?`` with ``D`` an ASCII digit
  (``1``, ``-2.5``, ``1.``, ``.5``, ``+3e-7``, ``-6.4265e+020``). Its value is the correctly
  rounded float64 (the same as Python's ``float(token)``, so ``1e400`` is ``inf``), cast to float32
  (round to nearest even) unless ``double``. ``-0`` stays ``-0.0``. ``inf``, ``nan``, hex, ``1e``,
  ``1-2``, ``3+4``, ``2,0``, ``2#0`` are not numbers (CNTK 2.7 rejected ``inf``/``nan`` too).
* A **dense** sample is up to ``dim`` numbers. Fewer are zero-padded (warning SHORT_DENSE; no
  values at all, ``|x``, gives a zero vector). More is an error (TOO_MANY_VALUES).
* A **sparse** sample is zero or more ``INDEX:VALUE`` tokens: the token is split at its FIRST
  ``:``; ``INDEX`` is ``D+`` (leading zeros allowed) and must be ``< dim``; ``VALUE`` is a number.
  Pairs are kept in the order written (not sorted; a repeated index is kept twice). An empty sparse
  sample is a valid all-zero sample, without a warning.

Errors (each one skips the smallest well-defined unit and counts once against ``maxErrors``)
-----------------------------------------------------------------------------------------
==================== ================================================= ============================
code                 when                                              what is skipped
==================== ================================================= ============================
BAD_PREFIX       1   text before the first ``|`` is not an id, or the  the whole line
                     id's digits are followed by something other than
                     WS, ``|`` or the line end (``12a |x 1``)
BAD_ID           2   an id that does not fit in 64 bits (> 2**64-1),   the whole line
                     only when ids are used (``ids_mode``)
EMPTY_NAME       3   ``|`` followed by WS, ``|`` or the line end        up to the next ``|``
DUPLICATE_INPUT  4   a declared input appears a second time on a line  that second sample
                     (the first occurrence counts even if malformed)
BAD_NUMBER       5   a dense value, or a sparse pair's VALUE, is not a  the sample
                     number
MISSING_COLON    6   a sparse token has no ``:``                       the sample
BAD_INDEX        7   a sparse INDEX is not ``D+`` (``-2:1``, ``2.0:1``) the sample
INDEX_RANGE      8   a sparse INDEX >= dim                             the sample
TOO_MANY_VALUES  9   a dense sample with more than ``dim`` values      the sample
==================== ================================================= ============================

Warnings (not counted): SHORT_DENSE (100), a dense sample with fewer values than ``dim``.
Unknown names (inputs not declared) are skipped silently, up to the next ``|``: reading a subset of
a file's inputs is normal use.
The values of a sample are checked left to right and the first problem is reported; for
TOO_MANY_VALUES that is the (dim+1)-th value, and ``detail`` is the total number of values.

Sequences (the index)
=====================
* ``ids_mode`` (ids are used) is decided by the **first data line**: it is on when that line's
  first non-WS byte is a digit and ``skip_ids`` is false. Otherwise every data line is its own
  sequence, and leading digits on later lines are ignored (the id is still checked for BAD_PREFIX,
  but not for BAD_ID).
* With ids: a data line with a valid id K starts a new sequence unless the current sequence has
  key K (consecutive lines with one id form one sequence). A data line with no id, or with an
  invalid prefix or BAD_ID, continues the current sequence. (Only when the very first data line
  has an invalid id is there no key yet: that sequence takes the first valid id that follows, or
  0 if none does.) An id that repeats after other ids starts a new sequence with the same key, as
  CNTK 2.7 did; the deserializer warns about it.
* Without ids the key of a sequence is its 0-based ordinal among all sequences of the file.
* A sequence's byte range runs from the first byte of its first data line to the first byte of
  the next sequence's first data line (or the end of the file), so it includes the skipped lines
  that follow it. Lines before the first data line belong to no sequence.
* **Sample counts** come from the index scan, without parsing values: in each data line with a
  valid prefix, every declared name that occurs (as ``|NAME``, not in a comment) counts once for
  its stream (a duplicate on the same line does not count twice). Lines with an invalid prefix
  count nothing. The **timeline length** of a sequence is the count of the defining stream, or
  the largest count over all streams. A sequence of length 0 (only unknown names or malformed
  lines) is kept in the scan's arrays, so its errors are still reported when its chunk is parsed,
  and the deserializer drops it from what it delivers.
* **Chunks**: sequences are grouped in file order; a new chunk starts before sequence i when the
  current chunk is not empty and its bytes plus sequence i's bytes exceed
  ``min(chunk_size, file size)`` (cntk-ctf-behaviours fact 16). ``file size`` is ``len(buf)``.

Interface (identical in ``cntkio._native._ctf``)
================================================
``scan_index(buf, aliases, skip_ids, defining_stream, chunk_size)``
    ``buf``: a bytes-like object, the whole file. ``aliases``: a sequence of ``bytes``, the names
    of the declared inputs in stream order. ``skip_ids``: bool. ``defining_stream``: index into
    ``aliases`` of the stream that defines the timeline length, or -1. ``chunk_size``: int > 0.

    Returns the tuple ``(encoding, ids_mode, keys, starts, first_lines, lengths, chunk_starts)``:

    * ``encoding`` int: ENCODING_PLAIN (0), ENCODING_UTF8_BOM (1), ENCODING_UTF16LE (2),
      ENCODING_UTF16BE (3), ENCODING_UTF32BE (4), ENCODING_NUL (5: a NUL byte in the first two bytes,
      UTF-16 without BOM). For 2..5 the scan stops: every array is empty and ``chunk_starts`` is
      ``[0]``.
    * ``ids_mode`` bool, as above.
    * ``keys`` uint64[n]; ``starts`` int64[n+1] (absolute byte offsets; ``starts[n]`` is
      ``len(buf)``; with n = 0 it is ``[len(buf)]``); ``first_lines`` int64[n] (1-based line of
      ``starts[i]``); ``lengths`` int64[n] timeline lengths (may be 0);
      ``chunk_starts`` int64[C+1]: chunk c holds sequences ``chunk_starts[c]:chunk_starts[c+1]``
      (``[0]`` when n = 0).

    The arrays may be numpy arrays or any buffer-protocol objects of these dtypes (the caller
    wraps them with ``numpy.frombuffer``).

``parse_chunk(buf, base, starts, first_lines, ids_mode, streams, double, error_limit, warning_limit)``
    Parses sequences ``starts[i]:starts[i+1]`` (absolute offsets, int64 array, n+1 entries) whose
    bytes are in ``buf``: the byte at absolute offset ``o`` is ``buf[o - base]``.
    ``first_lines`` int64[n] as from ``scan_index``. ``streams``: a sequence of
    ``(alias: bytes, dim: int, sparse: bool)`` in stream order. ``double``: float64 values when
    true, float32 otherwise. ``error_limit``: stop parsing right after this many errors (< 0: no
    limit). ``warning_limit``: return at most this many warning issues (all are counted).

    Returns ``(outputs, issues, num_warnings, aborted)``:

    * ``outputs``: one entry per stream. Dense: ``(values, offsets)`` with ``values`` float32/64
      of length total_samples * dim (sample-major) and ``offsets`` int64[n+1] (sequence i owns
      samples ``offsets[i]:offsets[i+1]``). Sparse: ``(indptr, indices, data, offsets)``:
      ``indptr`` int64[total_samples+1], ``indices`` int32[nnz], ``data`` float32/64[nnz],
      ``offsets`` int64[n+1]. Samples appear in line order within each sequence. When
      ``aborted``, the outputs are empty arrays (offsets all 0).
    * ``issues``: a list of tuples ``(code, stream, line, column, offset, length, detail)`` in
      file order: ``code`` as in the tables above; ``stream`` the stream index or -1; ``line``,
      ``column`` where the problem starts; ``offset`` its absolute byte offset and ``length`` the
      length in bytes of the offending text (the token; 0 at a line end); ``detail`` an int: the
      number of values for TOO_MANY_VALUES and SHORT_DENSE, else 0. The offending text is
      ``buf[offset-base : offset-base+length]``. Issue positions:

      - BAD_PREFIX: the first byte after the digits (if any digits) or the first non-WS byte;
        length = the run of non-delimiter bytes there.
      - BAD_ID: the digits. EMPTY_NAME: the ``|`` (length 1).
      - DUPLICATE_INPUT, SHORT_DENSE: the ``|`` of the sample; length 1 + len(NAME).
      - BAD_NUMBER: the value token (for sparse, the VALUE after the colon).
      - MISSING_COLON, BAD_INDEX, INDEX_RANGE: the whole ``INDEX:VALUE`` token for MISSING_COLON,
        the INDEX part for the other two.
      - TOO_MANY_VALUES: the (dim+1)-th value token.
    * ``num_warnings``: the number of warnings found (also those beyond ``warning_limit``).
    * ``aborted``: True when parsing stopped at ``error_limit``.
"""
from __future__ import annotations

import re

import numpy as np

__all__ = [
    "scan_index", "parse_chunk", "FORMAT_VERSION",
    "ENCODING_PLAIN", "ENCODING_UTF8_BOM", "ENCODING_UTF16LE", "ENCODING_UTF16BE",
    "ENCODING_UTF32BE", "ENCODING_NUL",
    "BAD_PREFIX", "BAD_ID", "EMPTY_NAME", "DUPLICATE_INPUT", "BAD_NUMBER", "MISSING_COLON",
    "BAD_INDEX", "INDEX_RANGE", "TOO_MANY_VALUES", "SHORT_DENSE", "is_error",
]

#: Bumped whenever a rule that shapes the index changes (it is part of the index cache key).
FORMAT_VERSION = 1

ENCODING_PLAIN, ENCODING_UTF8_BOM, ENCODING_UTF16LE, ENCODING_UTF16BE = 0, 1, 2, 3
ENCODING_UTF32BE, ENCODING_NUL = 4, 5

BAD_PREFIX, BAD_ID, EMPTY_NAME, DUPLICATE_INPUT, BAD_NUMBER = 1, 2, 3, 4, 5
MISSING_COLON, BAD_INDEX, INDEX_RANGE, TOO_MANY_VALUES = 6, 7, 8, 9
SHORT_DENSE = 100

_UINT64_MAX = 2**64 - 1
_WS = b" \t\r"
_DELIMS = b" \t\r\n|"
_NUMBER = re.compile(rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_DIGITS = re.compile(rb"[0-9]+\Z")


def is_error(code: int) -> bool:
    """True for issue codes that are errors (counted against maxErrors), False for warnings."""
    return code < 100


def detect_encoding(buf) -> tuple[int, int]:
    """``(encoding, data_start)``: the ENCODING_* code and the offset of the first text byte."""
    head = bytes(buf[:4])
    if head.startswith(b"\xef\xbb\xbf"):
        return ENCODING_UTF8_BOM, 3
    if head.startswith(b"\xff\xfe"):
        return ENCODING_UTF16LE, 0
    if head.startswith(b"\xfe\xff"):
        return ENCODING_UTF16BE, 0
    if head.startswith(b"\x00\x00\xfe\xff"):
        return ENCODING_UTF32BE, 0
    if b"\x00" in head[:2]:
        return ENCODING_NUL, 0
    return ENCODING_PLAIN, 0


def _lines(buf: bytes, start: int, end: int):
    """Yield ``(line_start, line_end)`` for the lines in ``buf[start:end]`` (end excludes ``\\n``)."""
    pos = start
    while pos < end:
        nl = buf.find(b"\n", pos, end)
        if nl < 0:
            yield pos, end
            return
        yield pos, nl
        pos = nl + 1


def _skip_ws(line: bytes, p: int) -> int:
    while p < len(line) and line[p] in _WS:
        p += 1
    return p


def _token_end(line: bytes, p: int) -> int:
    while p < len(line) and line[p] not in _DELIMS:
        p += 1
    return p


def _next_bar(line: bytes, p: int) -> int:
    """Position of the next ``|`` at or after p, or the line length."""
    q = line.find(b"|", p)
    return len(line) if q < 0 else q


class _Prefix:
    """The part of a line before its first ``|``: blank, id (valid or not), or invalid."""

    __slots__ = ("blank", "digits_start", "digits_end", "invalid_at", "body")

    def __init__(self, line: bytes) -> None:
        p = _skip_ws(line, 0)
        self.blank = p == len(line)
        self.digits_start = p
        q = p
        while q < len(line) and 48 <= line[q] <= 57:
            q += 1
        self.digits_end = q
        self.invalid_at = -1  # where an invalid prefix starts, or -1
        if self.blank:
            self.body = p
            return
        if q > p:
            if q < len(line) and line[q] not in b" \t\r|":
                self.invalid_at = q
        elif line[p] != 0x7C:  # '|'
            self.invalid_at = p
        self.body = _skip_ws(line, q)

    @property
    def has_id(self) -> bool:
        return self.digits_end > self.digits_start and self.invalid_at < 0

    def id_value(self, line: bytes) -> int:
        return int(line[self.digits_start:self.digits_end])


def _line_names(line: bytes, p: int):
    """Yield ``(bar_position, name_end)`` for every sample (not comment) of the line from p."""
    while True:
        bar = line.find(b"|", p)
        if bar < 0:
            return
        if bar + 1 < len(line) and line[bar + 1] == 0x23:  # '#': comment up to the next '|'
            p = bar + 2
            continue
        name_end = _token_end(line, bar + 1)
        yield bar, name_end
        p = name_end


def _classify(line: bytes):
    """``(prefix, has_content)``; a line without content is skipped."""
    prefix = _Prefix(line)
    if prefix.blank:
        return prefix, False
    if prefix.invalid_at >= 0:
        return prefix, True
    for _ in _line_names(line, prefix.body):
        return prefix, True
    return prefix, False


def scan_index(buf, aliases, skip_ids, defining_stream, chunk_size):
    """One pass over the file: sequences (key, byte range, first line, length) and chunks.

    See the module docstring for the rules and the exact return value.
    """
    buf = bytes(buf)
    size = len(buf)
    encoding, data_start = detect_encoding(buf)
    if encoding >= ENCODING_UTF16LE:
        return (encoding, False, np.zeros(0, np.uint64), np.array([size], np.int64),
                np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(1, np.int64))
    lookup = {bytes(a): k for k, a in enumerate(aliases)}
    nstreams = len(lookup)

    keys: list[int] = []
    starts: list[int] = []
    first_lines: list[int] = []
    lengths: list[int] = []
    counts = [0] * nstreams          # per-stream line counts of the current sequence
    ids_mode = None                  # decided by the first data line
    pending_key = False              # the first sequence has no valid id yet

    def close_sequence() -> None:
        if not starts:
            return
        if defining_stream >= 0:
            lengths.append(counts[defining_stream])
        else:
            lengths.append(max(counts) if counts else 0)

    for line_no, (ls, le) in enumerate(_lines(buf, data_start, size), start=1):
        line = buf[ls:le]
        prefix, has_content = _classify(line)
        if not has_content:
            continue
        if ids_mode is None:
            ids_mode = (not skip_ids) and prefix.digits_end > prefix.digits_start
        valid = prefix.invalid_at < 0
        new_key = None
        if ids_mode and prefix.has_id:
            value = prefix.id_value(line)
            if value <= _UINT64_MAX:
                new_key = value
            else:
                valid = False  # BAD_ID: the line continues the current sequence, counts nothing
        if not ids_mode:
            start_new = True
            key = len(keys)
        elif not starts:
            start_new = True
            key = new_key if new_key is not None else 0
            pending_key = new_key is None
        elif new_key is None:
            start_new = False
        elif pending_key:
            keys[-1] = new_key
            pending_key = False
            start_new = False
        else:
            start_new = new_key != keys[-1]
            key = new_key
        if start_new:
            close_sequence()
            keys.append(key)
            starts.append(ls)
            first_lines.append(line_no)
            counts = [0] * nstreams
        if valid:
            seen = set()
            for bar, name_end in _line_names(line, prefix.body):
                k = lookup.get(line[bar + 1:name_end])
                if k is not None and k not in seen:
                    seen.add(k)
                    counts[k] += 1
    close_sequence()
    starts.append(size)

    n = len(keys)
    limit = min(int(chunk_size), size)
    chunk_starts = [0]
    chunk_bytes = 0
    for i in range(n):
        seq_bytes = starts[i + 1] - starts[i]
        if i > chunk_starts[-1] and chunk_bytes + seq_bytes > limit:
            chunk_starts.append(i)
            chunk_bytes = 0
        chunk_bytes += seq_bytes
    chunk_starts.append(n)
    if n == 0:
        chunk_starts = [0]
    return (encoding, bool(ids_mode), np.array(keys, np.uint64), np.array(starts, np.int64),
            np.array(first_lines, np.int64), np.array(lengths, np.int64),
            np.array(chunk_starts, np.int64))


class _Abort(Exception):
    pass


def parse_chunk(buf, base, starts, first_lines, ids_mode, streams, double, error_limit,
                warning_limit, ends=None):
    """Parse the sequences ``starts[i]:starts[i+1]`` into columnar arrays, collecting issues.
    With ``ends``, sequence ``i`` is ``starts[i]:ends[i]`` instead (any order, as a randomized
    minibatch reads them out of a whole file).

    See the module docstring for the rules and the exact arguments and return value.
    """
    buf = bytes(buf)
    starts = [int(s) for s in np.asarray(starts)]
    first_lines = [int(x) for x in np.asarray(first_lines)]
    if ends is None:
        ends = starts[1:]
    else:
        ends = [int(e) for e in np.asarray(ends)]
        if len(ends) != len(starts):
            raise ValueError("ends must hold one offset per start")
    n = len(ends)
    lookup = {bytes(s[0]): k for k, s in enumerate(streams)}
    dims = [int(s[1]) for s in streams]
    sparse = [bool(s[2]) for s in streams]
    dtype = np.float64 if double else np.float32

    # Per stream: dense -> list of sample vectors; sparse -> list of (indices, values) samples.
    samples: list[list] = [[] for _ in streams]
    seq_counts = [[0] * n for _ in streams]
    issues: list[tuple] = []
    state = {"errors": 0, "warnings": 0}

    def report(code, stream, line_no, line_off, col, length, detail=0):
        if is_error(code):
            issues.append((code, stream, line_no, col + 1, line_off + col, length, detail))
            state["errors"] += 1
            if 0 <= error_limit <= state["errors"]:
                raise _Abort()
        else:
            state["warnings"] += 1
            if len(issues) - state["errors"] < warning_limit:
                issues.append((code, stream, line_no, col + 1, line_off + col, length, detail))

    def parse_line(line: bytes, line_no: int, line_off: int, seq: int) -> None:
        prefix = _Prefix(line)
        if prefix.blank:
            return
        if prefix.invalid_at >= 0:
            at = prefix.invalid_at
            report(BAD_PREFIX, -1, line_no, line_off, at, _token_end(line, at) - at)
            return
        if next(_line_names(line, prefix.body), None) is None:
            return  # id and comments only: a skipped line
        if ids_mode and prefix.has_id and prefix.id_value(line) > _UINT64_MAX:
            report(BAD_ID, -1, line_no, line_off, prefix.digits_start,
                   prefix.digits_end - prefix.digits_start)
            return
        seen = set()
        p = prefix.body
        while True:
            bar = line.find(b"|", p)
            if bar < 0:
                return
            if bar + 1 < len(line) and line[bar + 1] == 0x23:  # '|#' comment
                p = bar + 2
                continue
            name_end = _token_end(line, bar + 1)
            p = _next_bar(line, name_end)  # the sample's text ends here
            if name_end == bar + 1:
                report(EMPTY_NAME, -1, line_no, line_off, bar, 1)
                continue
            k = lookup.get(line[bar + 1:name_end])
            if k is None:
                continue  # unknown input: skipped silently
            if k in seen:
                report(DUPLICATE_INPUT, k, line_no, line_off, bar, name_end - bar)
                continue
            seen.add(k)
            tokens = []  # (start, end) of each value token
            q = name_end
            while True:
                q = _skip_ws(line, q)
                if q >= p:
                    break
                e = _token_end(line, q)
                tokens.append((q, e))
                q = e
            if sparse[k]:
                sample = _parse_sparse(line, tokens, dims[k], k, line_no, line_off, report)
            else:
                sample = _parse_dense(line, tokens, dims[k], k, bar, name_end, line_no, line_off,
                                      report)
            if sample is not None:
                samples[k].append(sample)
                seq_counts[k][seq] += 1

    aborted = False
    try:
        for seq in range(n):
            line_no = first_lines[seq]
            for ls, le in _lines(buf, starts[seq] - base, ends[seq] - base):
                parse_line(buf[ls:le], line_no, ls + base, seq)
                line_no += 1
    except _Abort:
        aborted = True

    outputs = []
    for k in range(len(streams)):
        counts = [0] * n if aborted else seq_counts[k]
        offsets = np.zeros(n + 1, np.int64)
        offsets[1:] = np.cumsum(counts, dtype=np.int64)
        kept = [] if aborted else samples[k]
        if sparse[k]:
            indptr = np.zeros(len(kept) + 1, np.int64)
            indptr[1:] = np.cumsum([len(ix) for ix, _ in kept], dtype=np.int64)
            indices = np.array([i for ix, _ in kept for i in ix], np.int32)
            with np.errstate(over="ignore"):
                data = np.array([v for _, vals in kept for v in vals], np.float64).astype(dtype)
            outputs.append((indptr, indices, data, offsets))
        else:
            values = np.zeros(len(kept) * dims[k], dtype)
            with np.errstate(over="ignore"):  # 1e39 is inf in float32, as in C
                for s, vec in enumerate(kept):
                    values[s * dims[k]:s * dims[k] + len(vec)] = \
                        np.array(vec, np.float64).astype(dtype)
            outputs.append((values, offsets))
    return outputs, issues, state["warnings"], aborted


def _number(text: bytes):
    """The float64 value of a number token, or None when it is not a number."""
    if _NUMBER.match(text) is None:
        return None
    return float(text)


def _parse_dense(line, tokens, dim, k, bar, name_end, line_no, line_off, report):
    values = []
    for t, (s, e) in enumerate(tokens):
        if t == dim:
            report(TOO_MANY_VALUES, k, line_no, line_off, s, e - s, len(tokens))
            return None
        v = _number(line[s:e])
        if v is None:
            report(BAD_NUMBER, k, line_no, line_off, s, e - s)
            return None
        values.append(v)
    if len(values) < dim:
        report(SHORT_DENSE, k, line_no, line_off, bar, name_end - bar, len(values))
    return values


def _parse_sparse(line, tokens, dim, k, line_no, line_off, report):
    indices, values = [], []
    for s, e in tokens:
        token = line[s:e]
        colon = token.find(b":")
        if colon < 0:
            report(MISSING_COLON, k, line_no, line_off, s, e - s)
            return None
        index_text = token[:colon]
        if _DIGITS.match(index_text) is None:
            report(BAD_INDEX, k, line_no, line_off, s, colon)
            return None
        index = int(index_text)
        if index >= dim:
            report(INDEX_RANGE, k, line_no, line_off, s, colon)
            return None
        v = _number(token[colon + 1:])
        if v is None:
            report(BAD_NUMBER, k, line_no, line_off, s + colon + 1, e - s - colon - 1)
            return None
        indices.append(index)
        values.append(v)
    return indices, values
