"""The C index scan's fast path (ctf_core.h: 64-byte blocks with at least 32 bytes after them,
ids of 1-7 digits and a space read at once, ``|name `` matched by one masked compare, per-line
stream sets counted as runs) gives exactly what the reference scan gives. The scan takes that
path only some way before the end of the buffer, so these files are long (hundreds of lines)
and mix the common lines with every line shape the fast path hands to the general one: ids of 8
and more digits, ids followed by a tab or '|', leading white space, names followed by a tab,
'|', the line end or more name bytes, names sharing a first byte, comments, unknown names,
invalid prefixes, ids past 64 bits, blank lines, CRLF, and stream sets of more than 64 streams
(counted the other way).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cntkio._native import _ctf
from cntkio.deserializers.ctf import _reference as ref


def same_scan(buf: bytes, aliases, skip_ids=False, defining=-1, chunk_size=1 << 30):
    r = ref.scan_index(buf, aliases, skip_ids, defining, chunk_size)
    c = _ctf.scan_index(buf, aliases, skip_ids, defining, chunk_size)
    assert r[:2] == tuple(c[:2])
    for k, (a, b) in enumerate(zip(r[2:], c[2:])):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, k
        assert a.tobytes() == b.tobytes(), k
    return c


ALIASES = [b"word", b"tag", b"w", b"wordy", b"features", b"x1234567", b"ab"]

LINE_KINDS = [
    "{id} |word 12:1 |tag 3:1",             # the common case, several times
    "{id} |word 12:1 |tag 3:1",
    "{id} |word 12:1 |tag 3:1",
    "{id} |word 1:1",
    "{id} |tag 3:1 |word 7:1 |word 8:1",    # a stream twice on a line: counted once
    "|word 5:1 |tag 1:1",                   # no id
    "  {id} |word 1:1",                     # leading white space
    "\t|tag 2:1",
    "{id}\t|word 1:1",                      # id followed by a tab
    "{id}|word 1:1",                        # id followed by '|'
    "{bigid} |word 1:1",                    # 8 and more digits
    "18446744073709551616 |word 1:1",       # past 64 bits: BAD_ID
    "12a |word 1:1",                        # invalid prefix
    "{id} |word\t1:1 |tag",                 # name then tab, name then line end
    "{id} |word|tag 1:1",                   # name then '|'
    "{id} |wordy 1:1 |w 2:1 |wor 3:1",      # names sharing a first byte, a prefix of a name
    "{id} |features 1 2 3 |x1234567 4 |ab 5",  # 8-byte names and longer
    "{id} |# comment |word 1:1",
    "{id} |zzz 1 |Word 2",                  # names nobody declared
    "{id} |",                               # an empty name
    "|#only a comment",
    "",                                      # blank
    "   ",
    "{id} |word 1:1 |tag 1:1 ",
]


@st.composite
def long_documents(draw):
    n = draw(st.integers(100, 400))
    key = draw(st.integers(0, 50))
    lines = []
    for _ in range(n):
        if draw(st.integers(0, 4)) == 0:
            key += draw(st.integers(1, 3))
        kind = draw(st.sampled_from(LINE_KINDS))
        lines.append(kind.format(id=str(key).zfill(draw(st.sampled_from([0, 0, 0, 3]))),
                                 bigid=str(key + 10**draw(st.integers(7, 19)))))
    eol = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    text = eol.join(lines)
    if draw(st.booleans()):
        text += eol
    return text.encode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(long_documents(), st.integers(1, len(ALIASES)), st.booleans(), st.integers(-1, 2),
       st.sampled_from([64, 1000, 1 << 30]))
def test_long_files_scan_as_the_reference(buf, na, skip_ids, defining, chunk_size):
    same_scan(buf, ALIASES[:na], skip_ids, min(defining, na - 1), chunk_size)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(long_documents())
def test_more_than_64_streams_scan_as_the_reference(buf):
    # streams 64 and up are counted per line by stamps, the first 64 as runs of line sets
    many = [b"s%d" % i for i in range(70)] + ALIASES
    same_scan(buf, many)
    same_scan(buf, many, defining=len(many) - 7)  # "word", stream 70


def test_sequence_lengths_of_a_known_file():
    # 3 sequences; "tag" on some lines only: each length is the most lines of any stream
    lines = []
    for key, (nw, nt) in enumerate([(5, 2), (1, 4), (40, 40)]):
        for i in range(max(nw, nt)):
            parts = [str(key)]
            if i < nw:
                parts.append(f"|word {i}:1")
            if i < nt:
                parts.append(f"|tag {i}:1")
            lines.append(" ".join(parts))
    buf = ("\n".join(lines) + "\n").encode()
    c = same_scan(buf, [b"word", b"tag"])
    assert c[2].tolist() == [0, 1, 2]
    assert c[5].tolist() == [5, 4, 40]
    c = same_scan(buf, [b"word", b"tag"], defining=1)
    assert c[5].tolist() == [2, 4, 40]


@pytest.mark.parametrize("tail", ["", "\n", "\r\n", " |word", " |wo", "|", " 5"])
def test_files_ending_inside_and_after_the_fast_blocks(tail):
    body = "".join(f"{i // 3} |word {i}:1 |tag 1:1\n" for i in range(40))
    for cut in range(len(body) - 120, len(body) + 1, 7):
        same_scan((body[:cut] + tail).encode(), [b"word", b"tag"])
