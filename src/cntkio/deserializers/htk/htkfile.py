"""HTK parameter files: the 12-byte header (features.py reads the frames with pread, never mapped).

Header (HTK book, 5.10.1): i32 nSamples, i32 sampPeriod (100 ns units), i16 sampSize (bytes per
frame), i16 parmKind, big-endian as HTK writes it; CNTK 2.7 also read a little-endian file the
same, so the byte order is the one whose header is consistent with the file. Frames are float32 in
that byte order. parmKind is a base kind (low 6 bits) plus qualifier bits. CNTK 2.7 read the kinds
MFCC (6), FBANK (7), USER (9) and PLP (11) with the qualifiers _E, _N, _D, _A, _Z, _K, _0 and
rejected every other base kind, a sampPeriod of 0 (``htkfeatreader:unsupported feature kind``) and
compressed files (_C, 1024): cntkio does the same, with an error naming the file.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ...errors import FormatError

__all__ = ["HTKHeader", "read_header", "KIND_NAMES", "QUALIFIER_C"]

HEADER_BYTES = 12
KIND_NAMES = {6: "MFCC", 7: "FBANK", 9: "USER", 11: "PLP"}
QUALIFIER_C = 0o2000        # compressed
_QUALIFIERS = {"_E": 0o100, "_N": 0o200, "_D": 0o400, "_A": 0o1000, "_C": 0o2000, "_Z": 0o4000,
               "_K": 0o10000, "_0": 0o20000, "_V": 0o40000, "_T": 0o100000}
_ACCEPTED_QUALIFIERS = 0o100 | 0o200 | 0o400 | 0o1000 | 0o4000 | 0o10000 | 0o20000


@dataclass(frozen=True)
class HTKHeader:
    """A parsed header: frames, frame period (100 ns), bytes per frame, kind, byte order."""

    num_frames: int
    samp_period: int
    samp_size: int
    parm_kind: int
    byteorder: str          # ">" or "<"

    @property
    def dim(self) -> int:
        return self.samp_size // 4

    @property
    def kind_name(self) -> str:
        base = KIND_NAMES.get(self.parm_kind & 0o77, str(self.parm_kind & 0o77))
        return base + "".join(q for q, b in _QUALIFIERS.items() if self.parm_kind & b)


def _parse(raw: bytes, order: str) -> HTKHeader:
    n, period = np.frombuffer(raw[:8], order + "i4").tolist()
    size, kind = np.frombuffer(raw[8:12], order + "i2").tolist()
    return HTKHeader(int(n), int(period), int(size), int(kind) & 0xFFFF, order)


def _plausible(h: HTKHeader, file_size: int) -> bool:
    return (h.num_frames >= 0 and h.samp_size > 0 and h.samp_size % 4 == 0 and h.samp_period >= 0
            and HEADER_BYTES + h.num_frames * h.samp_size <= file_size)


def read_header(path: str) -> HTKHeader:
    """The header of the HTK file ``path``, checked: a kind CNTK read, float frames, and a file
    long enough for ``nSamples`` frames (FormatError naming the file otherwise)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(HEADER_BYTES)
            size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise FormatError(f"cannot open the HTK feature file: {e.strerror}", file=path) from e
    return check_header(raw, size, path)


def check_header(raw: bytes, size: int, path: str) -> HTKHeader:
    """The header in the first bytes ``raw`` of a file of ``size`` bytes, checked (see
    :func:`read_header`; a file at a URL is checked here too)."""
    if len(raw) < HEADER_BYTES:
        raise FormatError("not an HTK feature file: shorter than the 12-byte header",
                          file=path, expected="12 header bytes", found=f"{len(raw)} bytes")
    big = _parse(raw, ">")
    h = big if _plausible(big, size) else _parse(raw, "<")
    if not _plausible(h, size):
        if big.samp_size > 0 and big.samp_size % 4 == 0 and big.num_frames >= 0:
            need = HEADER_BYTES + big.num_frames * big.samp_size
            raise FormatError("truncated HTK feature file: the header announces more frames than the "
                              "file holds", file=path,
                              expected=f"{need} bytes ({big.num_frames} frames of {big.samp_size} bytes)",
                              found=f"{size} bytes")
        raise FormatError("not an HTK feature file: the header is inconsistent in either byte order",
                          file=path, expected="sampSize a positive multiple of 4",
                          found=f"sampSize {big.samp_size}, nSamples {big.num_frames}")
    if h.parm_kind & QUALIFIER_C:
        raise FormatError("compressed HTK feature files (parmKind qualifier _C) are not supported, as "
                          "in CNTK 2.7", file=path, expected="uncompressed float frames",
                          found=f"parmKind {h.kind_name}")
    if (h.parm_kind & 0o77) not in KIND_NAMES or h.samp_period == 0 \
            or (h.parm_kind & ~0o77 & ~_ACCEPTED_QUALIFIERS):
        raise FormatError("htkfeatreader:unsupported feature kind", file=path,
                          expected="MFCC, FBANK, USER or PLP with sampPeriod > 0",
                          found=f"parmKind {h.parm_kind} ({h.kind_name}), sampPeriod {h.samp_period}")
    return h
