"""The field names a CTF file has, for the warning about a stream ``field`` (alias) it does not have.

What it must never do: read more than :data:`FIELD_SCAN_BYTES` of the file, or change what is
read: CNTK skips a name no stream declares, and a declared name the file never writes gives its
stream no samples (cntk-ctf-behaviours 5); the warning only says so, once (issue 31).
"""
from __future__ import annotations

import difflib
import re

__all__ = ["FIELD_SCAN_BYTES", "file_fields", "missing_field_warnings"]

#: how much of the file's start is scanned for its field names
FIELD_SCAN_BYTES = 1 << 20

# a name follows "|" and runs to white space or the next "|"; "|#" starts a comment
_NAME = re.compile(rb"\|([^\s|#][^\s|]*)")


def file_fields(head: bytes) -> list[str]:
    """The distinct field names in ``head`` (a CTF file's first bytes), in order of appearance."""
    return list(dict.fromkeys(m.decode("utf-8", "replace") for m in _NAME.findall(head)))


def missing_field_warnings(filename: str, head: bytes, whole: bool, specs) -> list[str]:
    """One warning text per stream (``specs``: ``.name``, ``.alias``) whose field does not occur in
    ``head`` (the whole file when ``whole``), naming the fields that do; none when ``head`` holds no
    field at all (not a file to judge by its start)."""
    if not whole and b"\n" in head:
        head = head[:head.rfind(b"\n") + 1]       # whole lines: no name cut in two
    names = file_fields(head)
    if not names:
        return []
    out = []
    where = ("which the file does not have (its fields: " if whole else
             f"which the first {len(head)} bytes of the file do not have (their fields: ")
    for s in specs:
        if s.alias in names:
            continue
        guess = difflib.get_close_matches(s.alias, names, n=1, cutoff=0.6)
        out.append(f"{filename}: stream '{s.name}' reads the field '{s.alias}', {where}{', '.join(names)}): "
                   f"the stream gets no samples{'' if whole else ' there'}"
                   + (f" \N{EM DASH} did you mean '{guess[0]}'?" if guess else ""))
    return out
