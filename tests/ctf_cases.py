"""Generated CTF files for property tests (tests in several folders use them): a hypothesis
strategy that writes a CTF file with ids or not, dense input ``a`` (DIM_A) and sparse input ``b``
(DIM_B), comments, tabs, CRLF, blank lines, a BOM, a missing last newline, unknown inputs and
malformed samples, and returns ``(bytes, the sequences a line-by-line model expects, errors)``;
and the extended example of docs/ctf.md."""
from __future__ import annotations

from hypothesis import strategies as st

DIM_A, DIM_B = 3, 5
BAD_NUMBERS = ["1-2", "3+4", "inf", "nan", "x", "1e", "--1", "2,0", ".", "+", "0x1", "1.5f"]


def number_tokens():
    finite = st.floats(allow_nan=False, allow_infinity=False)
    return st.one_of(
        st.integers(-10**6, 10**6).map(str),
        finite.map(repr),
        st.tuples(finite, st.sampled_from([".6g", "e", ".3E", ".17g", "f"])).map(
            lambda t: format(t[0], t[1])),
        st.sampled_from(["-0", "1.", ".5", "007", "+3", "1e-46", "1e39", "-6.4265e+020"]))


@st.composite
def ctf_files(draw):
    ids_mode = draw(st.booleans())
    nseq = draw(st.integers(1, 7))
    # ids may repeat after other ids (read as a new sequence with the same key), never twice in
    # a row (that would be one sequence)
    pool = draw(st.lists(st.integers(0, 2**64 - 1), min_size=2, max_size=4, unique=True))
    ids = [pool[0]]
    for _ in range(nseq - 1):
        ids.append(draw(st.sampled_from([k for k in pool if k != ids[-1]])))
    text = bytearray(b"\xef\xbb\xbf" if draw(st.booleans()) else b"")
    ws = st.sampled_from([" ", "\t", "  ", " \t"])
    comment_text = st.text(st.characters(blacklist_characters="|\n", codec="utf-8"), max_size=8)
    sequences = []   # per sequence: key, start offset, a lines, b lines, a samples, b samples
    errors = 0

    def line_end():
        return draw(st.sampled_from(["\n", "\r\n"]))

    def filler():
        """Blank or comment-only lines, which are skipped."""
        out = ""
        for _ in range(draw(st.integers(0, 2))):
            kind = draw(st.integers(0, 3))
            if kind == 0:
                out += draw(st.sampled_from(["", " ", "\t", " \t "])) + line_end()
            elif kind == 1:
                out += "|#" + draw(comment_text) + line_end()
            elif kind == 2:
                out += f"{draw(st.integers(0, 99))} |# note |#" + draw(comment_text) + line_end()
            else:
                out += "|# a |# b " + line_end()
        return out

    for s in range(nseq):
        key = ids[s] if ids_mode else s
        seq = {"key": key, "a_lines": 0, "b_lines": 0, "a": [], "b": []}
        nlines = draw(st.integers(1, 3)) if ids_mode else 1
        for ln in range(nlines):
            text += filler().encode()
            if ln == 0:
                seq["start"] = len(text)
            if ids_mode:
                prefix = str(key) if ln == 0 or draw(st.booleans()) else ""
            else:
                prefix = "" if s == 0 or draw(st.booleans()) else str(draw(st.integers(0, 10**30)))
            line = draw(st.sampled_from(["", " ", "\t"])) + prefix + draw(ws)
            present = draw(st.sampled_from([["a"], ["b"], ["a", "b"], ["b", "a"]]))
            parts = []
            if draw(st.booleans()):
                parts.append("|zz 1 2 3:4")
            for name in present:
                malformed = draw(st.integers(0, 9)) == 0
                if name == "a":
                    seq["a_lines"] += 1
                    toks = draw(st.lists(number_tokens(), max_size=DIM_A))
                    if malformed:
                        if draw(st.booleans()):
                            toks = toks + ["1"] * (DIM_A + 1 - len(toks))
                        else:
                            toks = toks + [draw(st.sampled_from(BAD_NUMBERS))]
                        errors += 1
                    else:
                        vals = [float(t) for t in toks] + [0.0] * (DIM_A - len(toks))
                        seq["a"].append(vals)
                    parts.append("|a" + "".join(draw(ws) + t for t in toks))
                else:
                    seq["b_lines"] += 1
                    idx = draw(st.lists(st.integers(0, DIM_B - 1), max_size=4))
                    toks = [str(i) + ":" + draw(number_tokens()) for i in idx]
                    if malformed:
                        toks.append(draw(st.sampled_from([f"{DIM_B}:1", "7", "-1:1", "1:x", ":1"])))
                        errors += 1
                    else:
                        row = [0.0] * DIM_B
                        for t in toks:
                            i, v = t.split(":", 1)
                            row[int(i)] += float(v)
                        seq["b"].append((row, [(int(t.split(":", 1)[0]), float(t.split(":", 1)[1]))
                                               for t in toks]))
                    parts.append("|b" + "".join(draw(ws) + t for t in toks))
            if draw(st.booleans()):
                parts.append("|# " + draw(comment_text))
            line += draw(ws).join(parts) if draw(st.booleans()) else "".join(
                p + draw(ws) for p in parts)
            text += (line + line_end()).encode()
        sequences.append(seq)
    text += filler().encode()
    if draw(st.booleans()) and text.endswith(b"\n"):
        text = text[:-2] if text.endswith(b"\r\n") else text[:-1]
    return bytes(text), sequences, errors

EXTENDED = """100 |a 1 2 3 |b 100 200
100 |a 4 5 6 |b 101 201
100 |b 102983 14532 |a 7 8 9
100 |a 7 8 9
200 |b 300 400 |a 10 20 30
333 |b 500 100
333 |b 600 -900
400 |a 1 2 3 |b 100 200
|a 4 5 6 |b 101 201
|a 4 5 6 |b 101 201
500 |a 1 2 3 |b 100 200
"""
