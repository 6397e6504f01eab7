"""The vectorized MLF scan equals the line-by-line parser: random files (several spacings, CRLF,
blank lines, scores, duplicates, gaps and overlaps, a missing last '.'), and the same first error."""
from __future__ import annotations

import numpy as np
import pytest

from cntkio.deserializers.htk.mlf import parse_mlf_files
from cntkio.errors import FormatError

STATES = {f"st{i}": i for i in range(7)}


def _random_mlf(rng) -> str:
    nl = "\r\n" if rng.random() < 0.3 else "\n"
    out = ["#!MLF!#"]
    for u in range(int(rng.integers(1, 12))):
        key = f"spk{u % 3}/u{int(rng.integers(0, 9))}"
        out.append(rng.choice([f'"*/{key}.lab"', f'"{key}.rec"', f'"*/{key}"', f'  "*/{key}.lab"  ']))
        t = 0
        for _ in range(int(rng.integers(0, 6))):
            d = int(rng.integers(0, 700000))
            start = t if rng.random() < 0.9 else t + int(rng.integers(-200000, 200000))
            sep = " " * int(rng.integers(1, 3))
            extra = sep + "-12.5 x y" if rng.random() < 0.4 else ""
            out.append(f"{max(start, 0)}{sep}{max(start, 0) + d}{sep}st{int(rng.integers(0, 7))}{extra}")
            t = max(start, 0) + d
            if rng.random() < 0.1:
                out.append("")
        out.append(".")
    if rng.random() < 0.3:
        out.pop()                                   # the last entry without its '.'
    return nl.join(out) + (nl if rng.random() < 0.7 else "")


def _both(tmp_path, text, dim=7):
    p = tmp_path / "x.mlf"
    p.write_bytes(text.encode())
    res = []
    for vec in (True, False):
        try:
            res.append(parse_mlf_files([str(p)], STATES, dim, vectorized=vec))
        except FormatError as e:
            res.append(("error", e.line, e.reason))
    return res


@pytest.mark.parametrize("seed", range(60))
def test_scan_equals_line_parser_on_random_files(tmp_path, seed):
    a, b = _both(tmp_path, _random_mlf(np.random.default_rng(seed)))
    for f in ("keys", "seg_offsets", "seg_starts", "seg_ends", "seg_labels", "valid"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    assert a.names == b.names and a.where == b.where


@pytest.mark.parametrize("body", ["0 100000 zz", "0 100000 st6", "0\t100000\tst1", "st1", "0 1e5 st1",
                                  '"*/u1.lab"\n0 100000 st1', "-5 100000 st1"])
def test_scan_raises_the_line_parsers_first_error(tmp_path, body):
    text = f'#!MLF!#\n"*/u0.lab"\n0 100000 st0\n{body}\n.\n'
    a, b = _both(tmp_path, text, dim=6)
    assert a[0] == b[0] == "error" and a[1] == b[1] and a[2] == b[2]


def test_unquoted_names_fall_back_to_the_line_parser(tmp_path):
    a, b = _both(tmp_path, '#!MLF!#\nu9\n0 100000 st0\n.\n"*/u0.lab"\n0 100000 st1\n.\n')
    assert a.names == b.names == ["u0"] and a.seg_labels.tolist() == [1]


def test_entry_keys_cut_on_bytes_equal_mlf_key():
    """The scan's keys of all entry names at once equal :func:`mlf_key` of each name: a leading
    ``*/`` dropped, the last component's extension dropped (not a leading dot, not a dot before
    the last slash or backslash), non-ASCII names, undecodable bytes, empty names."""
    from cntkio.deserializers.htk.mlfscan import mlf_key, mlf_keys

    names = ["*/u0.lab", "u0.lab", "*/u0.rec", "*/u0", "*/d/u0.lab", "/x/y/u0.lab", "", "*", "*/", "a",
             ".lab", "*/.lab", "d\\u.x.lab", "ü/é.lab", "x.y/z", "a..b", "*/*/q.r", "é"]
    text = "\n".join(f'"{n}"' for n in names).encode("utf-8") + b'\n"\xff\xfe.lab"\n'
    data = np.frombuffer(text, np.uint8)
    starts, ends, pos = [], [], 0
    for line in text.split(b"\n"):
        if line.startswith(b'"'):
            starts.append(pos + 1)
            ends.append(pos + len(line) - 1)
        pos += len(line) + 1
    got = mlf_keys(data, np.array(starts), np.array(ends))
    assert got[:-1] == [mlf_key(n) for n in names]
    assert got[:6] == ["u0", "u0", "u0", "u0", "d/u0", "/x/y/u0"]
    assert got[-1] == "\udcff\udcfe" == mlf_key(b"\xff\xfe.lab".decode("utf-8", "surrogateescape"))
    assert mlf_keys(data, np.zeros(0, np.int64), np.zeros(0, np.int64)) == []


@pytest.mark.parametrize("vectorized", [True, False])
def test_a_file_of_only_repeated_entries_adds_nothing(tmp_path, vectorized):
    """Several MLF files, the first entry of a key wins: a middle file whose entries are all
    repeats adds no utterance and no segment, and the next file's entries keep their own segments
    (this once raised an IndexError: the repeated file's segments were all kept)."""
    def write(name, ents):
        lines = ["#!MLF!#"]
        for k, segs in ents:
            lines.append(f'"*/{k}.lab"')
            lines += [f"{a * 100000} {b * 100000} {lab}" for a, b, lab in segs]
            lines.append(".")
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        return str(tmp_path / name)

    files = [write("a.mlf", [("u0", [(0, 2, "st0"), (2, 3, "st1")])]),
             write("b.mlf", [("u0", [(0, 1, "st2"), (1, 2, "st2"), (2, 3, "st2")])]),
             write("c.mlf", [("u1", [(0, 4, "st1")]), ("u0", [(0, 3, "st3")]), ("u2", [(0, 1, "st4")])])]
    idx = parse_mlf_files(files, STATES, len(STATES), vectorized=vectorized)
    assert idx.names == ["u0", "u1", "u2"]
    assert idx.seg_offsets.tolist() == [0, 2, 3, 4]
    assert idx.seg_starts.tolist() == [0, 2, 0, 0] and idx.seg_ends.tolist() == [2, 3, 4, 1]
    assert idx.seg_labels.tolist() == [0, 1, 1, 4]
    assert idx.where == [(files[0], 2), (files[2], 2), (files[2], 8)]
    assert idx.valid.tolist() == [True, True, True]


@pytest.mark.parametrize("seed", range(60))
def test_scan_in_small_blocks_equals_line_parser(tmp_path, monkeypatch, seed):
    """The scan in blocks cut after '.' lines (here of a few dozen bytes: many blocks a file) gives
    the line parser's entries, segments, line numbers and first error, as the whole-file scan."""
    from cntkio.deserializers.htk import mlfscan

    monkeypatch.setattr(mlfscan, "BLOCK_BYTES", int(np.random.default_rng(seed).integers(1, 60)))
    rng = np.random.default_rng(seed)
    text = _random_mlf(rng)
    if seed % 3 == 0:        # an error after the first blocks: a label not in the state list
        text = text.replace("st6", "st9", 1) if "st6" in text else text
    a, b = _both(tmp_path, text)
    if isinstance(b, tuple):
        assert a == b
        return
    for f in ("keys", "seg_offsets", "seg_starts", "seg_ends", "seg_labels", "valid"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    assert a.names == b.names and a.where == b.where


def test_block_cuts_end_after_lone_dot_lines():
    from cntkio.deserializers.htk.mlfscan import _block_cuts

    text = b'#!MLF!#\n"a"\n0 1 s\n.\n"b"\n0 1 s\n.\r\n"c"\n. x\n.\n'
    data = np.frombuffer(text, np.uint8)
    cuts = _block_cuts(data, 1)
    assert cuts == [0, text.index(b'.\n"b"') + 2, text.index(b'.\r\n') + 3, len(text)]
    assert _block_cuts(data, 1 << 20) == [0, len(text)]
