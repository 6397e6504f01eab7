"""Generated CTF files (ids or not, dense and sparse inputs, comments, tabs, CRLF, blank lines,
BOM, a missing last newline, unknown inputs, malformed samples): the index agrees with a
straightforward model built line by line while writing the file, and the parsed values equal
Python's ``float()`` of the tokens (cast to float32 unless double)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cntkio.deserializers.ctf import CNTKTextFormatDeserializer, available_backends
from cntkio.errors import FormatError

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


def _chunks(sequences, size, limit):
    starts = [s["start"] for s in sequences] + [size]
    out, acc = [0], 0
    for i in range(len(sequences)):
        n = starts[i + 1] - starts[i]
        if i > out[-1] and acc + n > min(limit, size):
            out.append(i)
            acc = 0
        acc += n
    return out + [len(sequences)]


@pytest.mark.parametrize("backend", available_backends(), ids=lambda b: b.__name__.rsplit(".", 1)[-1])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(data=ctf_files(), chunk_size=st.integers(1, 400), double=st.booleans(),
       defining=st.sampled_from([None, "a", "b"]))
def test_generated_files(tmp_path, backend, data, chunk_size, double, defining):
    text, sequences, errors = data
    path = tmp_path / "gen.ctf"
    path.write_bytes(text)
    config = {"type": "CNTKTextFormatDeserializer", "file": str(path), "maxErrors": 10**6,
              "traceLevel": 0, "chunkSizeInBytes": chunk_size,
              "precision": "double" if double else "float",
              "input": {"A": {"alias": "a", "dim": DIM_A, "definesMBSize": defining == "a"},
                        "B": {"alias": "b", "dim": DIM_B, "format": "sparse",
                              "definesMBSize": defining == "b"}}}
    if defining is not None and not any(s[defining + "_lines"] for s in sequences):
        with pytest.raises(FormatError, match="no sequence has a sample"):
            CNTKTextFormatDeserializer(config, backend=backend)
        return
    d = CNTKTextFormatDeserializer(config, backend=backend)
    dtype = np.float64 if double else np.float32

    # the index
    assert d.index.chunk_starts.tolist() == _chunks(sequences, len(text), chunk_size)
    all_sequences = sequences
    if defining is not None:  # sequences without a sample of the defining input are dropped
        sequences = [s for s in sequences if s[defining + "_lines"]]
    keys = np.concatenate([d.sequence_infos(c.id).keys for c in d.chunk_infos()])
    lengths = np.concatenate([d.sequence_infos(c.id).lengths for c in d.chunk_infos()])
    assert keys.tolist() == [s["key"] for s in sequences]
    assert lengths.tolist() == [max(s["a_lines"], s["b_lines"]) if defining is None
                                else s[defining + "_lines"] for s in sequences]

    # the values
    got_a, got_b = [], []
    for c in d.chunk_infos():
        ch = d.get_chunk(c.id)
        a, b = ch.streams["A"], ch.streams["B"]
        assert a.values.dtype == dtype and b.data.dtype == dtype
        for i in range(len(ch.sequences)):
            got_a.append(a.values[a.offsets[i]:a.offsets[i + 1]].tobytes())
            pairs = []
            for smp in range(b.offsets[i], b.offsets[i + 1]):
                lo, hi = b.indptr[smp], b.indptr[smp + 1]
                pairs.append((b.indices[lo:hi].tolist(), b.data[lo:hi].tobytes()))
            got_b.append(pairs)
    with np.errstate(over="ignore"):
        want_a = [np.array(s["a"], np.float64).astype(dtype).reshape(-1, DIM_A).tobytes()
                  for s in sequences]
        want_b = [[([i for i, _ in p], np.array([v for _, v in p], np.float64).astype(dtype).tobytes())
                   for _, p in s["b"]] for s in sequences]
    assert got_a == want_a
    assert got_b == want_b
    assert d._errors_total == errors  # also those in dropped sequences
    assert len(all_sequences) >= len(sequences)
