"""The texts of the CTF parser's issues (malformed samples and lines) and of the encodings it
refuses: what a warning or an error says. Must never read the file: it describes what it is given.
"""
from __future__ import annotations

from typing import Any, Sequence

from . import _reference as ref

__all__ = ["ENCODING_NAMES", "describe_issue"]

ENCODING_NAMES = {
    ref.ENCODING_UTF16LE: "a UTF-16 little-endian byte order mark (FF FE)",
    ref.ENCODING_UTF16BE: "a UTF-16 big-endian byte order mark (FE FF)",
    ref.ENCODING_UTF32BE: "a UTF-32 big-endian byte order mark (00 00 FE FF)",
    ref.ENCODING_NUL: "NUL bytes at the start (UTF-16 text without a byte order mark?)",
}


def _show(text: bytes) -> str:
    if len(text) > 40:
        text = text[:40] + b"..."
    return repr(text.decode("utf-8", "replace"))


def _after(buf, pos: int) -> str:
    """What follows position pos (for '|' followed by nothing)."""
    if pos >= len(buf) or buf[pos:pos + 1] in (b"\n", b"\r"):
        return "the end of the line"
    ch = bytes(buf[pos:pos + 1])
    return {b" ": "a space", b"\t": "a tab", b"|": "another '|'"}.get(ch, _show(ch))


def describe_issue(issue, buf, base: int, streams: Sequence[Any]) -> tuple[str, str, str]:
    """``(message, expected, found)`` for an issue tuple from ``parse_chunk`` (``streams``: the
    deserializer's ``CTFStreamSpec`` list)."""
    code, stream, _line, _col, offset, length, detail = issue
    text = bytes(buf[offset - base:offset - base + length])
    s = streams[stream] if stream >= 0 else None
    name = "" if s is None else (f"input '{s.name}'" if s.alias == s.name
                                 else f"input '{s.name}' (alias '{s.alias}')")
    if code == ref.BAD_PREFIX:
        return ("malformed line start, the line is skipped",
                "a sequence id (digits) followed by white space or '|', or '|'", _show(text))
    if code == ref.BAD_ID:
        return ("sequence id out of range, the line is skipped",
                "a sequence id below 2**64", text.decode("ascii", "replace"))
    if code == ref.EMPTY_NAME:
        return ("'|' is not followed by an input name, skipped up to the next '|'",
                "an input name right after '|'", _after(buf, offset - base + 1))
    if code == ref.DUPLICATE_INPUT:
        return (f"{name} appears twice on one line, the second sample is skipped",
                "at most one sample of an input per line", f"a second {_show(text)}")
    if code == ref.BAD_NUMBER:
        return (f"malformed value in {name}, the sample is skipped",
                "a number like 1, -2.5, 3e-7", _show(text) if text else "nothing after ':'")
    if code == ref.MISSING_COLON:
        return (f"sparse value without an index in {name}, the sample is skipped",
                "index:value", _show(text))
    if code == ref.BAD_INDEX:
        return (f"malformed sparse index in {name}, the sample is skipped",
                "a non-negative integer index", _show(text) if text else "nothing before ':'")
    if code == ref.INDEX_RANGE:
        return (f"sparse index out of range in {name}, the sample is skipped",
                f"an index below dim = {s.dim}", text.decode("ascii", "replace"))
    if code == ref.TOO_MANY_VALUES:
        return (f"dense sample of {name} is longer than its dim, the sample is skipped",
                f"at most {s.dim} values", f"{detail} values")
    if code == ref.SHORT_DENSE:
        return (f"dense sample of {name} has {detail} of {s.dim} values, zero-padded",
                f"{s.dim} values", f"{detail}")
    return (f"issue code {code}", "", "")
