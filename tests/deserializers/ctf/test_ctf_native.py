"""The C CTF parser (``cntkio._native._ctf``) agrees exactly with the pure-Python reference
(``cntkio.deserializers.ctf._reference``): same index arrays, same values bit for bit (compared
through ``.view(uint)``), same issues (code, stream, line, column, offset, length, detail), same
warning counts and abort points, on hypothesis-generated CTF files, valid and malformed, and on
CNTK's conformance inputs. Number parsing is checked against Python's ``float()`` directly.
"""
from __future__ import annotations

import os
import re
import struct
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cntkio.deserializers.ctf import _reference as ref

import paths
from cntkio._native import _ctf  # noqa: E402  (the C module itself, even under CNTKIO_PURE_PYTHON)

CONFORMANCE = paths.CONFORMANCE / "Data" / "CNTKTextFormatReader"
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


# --------------------------------------------------------------------------------------------
# Numbers


EDGE_NUMBERS = [
    "0", "-0", "+0", "0.0", "-0.0", "00000", "-0e999", "0e-99999", "1", "-1", "+1", "007",
    "1.", "-1.", ".5", "-.5", "+.5", "1.e5", "1.E-5", "1e0", "1e+0", "1e-0", "1E22", "1e23",
    "123456789012345678", "1234567890123456789", "12345678901234567890", "9007199254740992",
    "9007199254740993", "9007199254740995", "18446744073709551615", "18446744073709551616",
    "0.1", "0.2", "0.3", "3.141592653589793", "2.718281828459045235360287471352662497757",
    "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308", "1e308",
    "1e309", "1e400", "-1e400", "2.2250738585072011e-308", "2.2250738585072014e-308",
    "4.9406564584124654e-324", "2.4703282292062327e-324", "2.4703282292062328e-324",
    "5e-324", "1e-324", "1e-400", "-1e-400", "7.038531e-26", "1e-46", "1e39", "3.4028235e38",
    "3.4028236e38", "1.4e-45", "-6.4265e+020", "1.15459e-009", "-1.07905e+008",
    "0.000000000000000000000000000000000000000000000001", "1" + "0" * 400, "1" + "0" * 400 + "e-400",
    "0." + "0" * 330 + "1", "9" * 800, "9" * 800 + "e-800", "1." + "9" * 1000,
    "0.5" + "0" * 900 + "1", "4.4501477170144023e-308", "4.4501477170144022e-308",
    "1e-5", "1e-7", "1e22", "123.456e-3", "100000000000000000000000", "4e22", "9e22", "1e37",
    "12345678.12345678", "99999999.99999999", "0.12345678", "-0.00012345", "1.00000000000000011102230246251565",
]


@pytest.mark.parametrize("token", EDGE_NUMBERS)
def test_number_edge_cases_equal_float(token):
    assert bits(_ctf.parse_number(token.encode())) == bits(float(token))


BAD_TOKENS = ["", ".", "-", "+", "-.", "+.", "e5", ".e5", "1e", "1e+", "1e-", "1-2", "3+4", "2,0",
              "2#0", "inf", "-inf", "nan", "NaN", "Infinity", "0x1p3", "0x10", "1_000", "1.5.",
              "1..5", "1e5.5", "1e5e5", "--1", "+-1", "2.0f", " 1", "1 ", "1:2", "١٢"]


@pytest.mark.parametrize("token", BAD_TOKENS)
def test_malformed_numbers_rejected_like_the_reference(token):
    raw = token.encode()
    assert ref._number(raw) is None
    with pytest.raises(ValueError, match="not a CTF number"):
        _ctf.parse_number(raw)


@settings(max_examples=400, deadline=None)
@given(st.from_regex(_NUMBER_RE, fullmatch=True))
def test_any_grammatical_number_equals_float(token):
    assert bits(_ctf.parse_number(token.encode())) == bits(float(token))


@settings(max_examples=400, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False),
       st.sampled_from(["r", ".1g", ".6g", ".9g", ".15g", ".17g", ".25g", ".3e", ".20e", "f",
                        ".40f"]))
def test_formatted_doubles_round_trip(x, fmt):
    token = repr(x) if fmt == "r" else format(x, fmt)
    assert bits(_ctf.parse_number(token.encode())) == bits(float(token))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789.eE+-", min_size=1, max_size=30))
def test_number_acceptance_matches_reference(token):
    raw = token.encode()
    expected = ref._number(raw)
    if expected is None:
        with pytest.raises(ValueError):
            _ctf.parse_number(raw)
    else:
        assert bits(_ctf.parse_number(raw)) == bits(expected)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(0, 40), st.integers(-400, 400), st.randoms())
def test_long_mantissas_with_exponents(int_digits, frac_digits, exp, rnd):
    digits = "".join(rnd.choice("0123456789") for _ in range(int_digits + frac_digits))
    token = digits[:int_digits] + ("." + digits[int_digits:] if frac_digits else "") + f"e{exp}"
    assert bits(_ctf.parse_number(token.encode())) == bits(float(token))


def test_halfway_cases_round_to_even():
    # 2**53 + 1 and friends: exactly halfway between two doubles, decided by the last digit
    for k in range(1, 50, 2):
        token = str(2**53 + k)
        assert bits(_ctf.parse_number(token.encode())) == bits(float(token))
        assert bits(_ctf.parse_number((token + "0" * 30 + "1").encode())) == bits(float(token + "0" * 30 + "1"))


# --------------------------------------------------------------------------------------------
# Differential scan/parse


def assert_same(a, b, where=""):
    """Recursive exact equality; arrays by dtype, shape and raw bytes (bitwise floats)."""
    if isinstance(a, (np.ndarray, memoryview, bytes)) or isinstance(b, (np.ndarray, memoryview)):
        x, y = np.asarray(a), np.asarray(b)
        assert x.dtype == y.dtype, f"{where}: dtype {x.dtype} != {y.dtype}"
        assert x.shape == y.shape, f"{where}: shape {x.shape} != {y.shape}"
        if x.dtype.kind == "f":
            x, y = x.view(f"u{x.dtype.itemsize}"), y.view(f"u{y.dtype.itemsize}")
        np.testing.assert_array_equal(x, y, err_msg=where)
        return
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), f"{where}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
        return
    assert type(a) is type(b) or (isinstance(a, int) and isinstance(b, int)), \
        f"{where}: type {type(a)} != {type(b)}"
    assert a == b, f"{where}: {a!r} != {b!r}"


def check_file(buf: bytes, streams, skip_ids=False, defining=-1, chunk_size=1 << 30,
               error_limits=(-1, 0, 2), warning_limit=3):
    """Scan and parse ``buf`` with both backends; every result must be identical."""
    aliases = [s[0] for s in streams]
    r = ref.scan_index(buf, aliases, skip_ids, defining, chunk_size)
    c = _ctf.scan_index(buf, aliases, skip_ids, defining, chunk_size)
    assert_same(r, c, "scan_index")
    enc, ids_mode, keys, starts, first_lines, lengths, chunk_starts = c
    for ci in range(len(chunk_starts) - 1):
        a, b = int(chunk_starts[ci]), int(chunk_starts[ci + 1])
        lo, hi = int(starts[a]), int(starts[b])
        # as the deserializer reads a chunk: its bytes alone, with base = their file offset
        piece = buf[lo:hi]
        for double in (False, True):
            for limit in error_limits:
                pr = ref.parse_chunk(piece, lo, starts[a:b + 1], first_lines[a:b], ids_mode,
                                     streams, double, limit, warning_limit)
                pc = _ctf.parse_chunk(piece, lo, starts[a:b + 1], first_lines[a:b], ids_mode,
                                      streams, double, limit, warning_limit)
                assert_same(pr, pc, f"parse_chunk chunk {ci} double={double} limit={limit}")
    return c


WS = st.sampled_from([" ", "\t", "  ", " \t ", "\r", ""])
SEP = st.sampled_from([" ", "\t", "  ", " \t"])
NAMES = ["a", "bb", "sp", "a2", "zz", "", "#", "b", "A", "a#", "sp:"]
BAD = ["1-2", "3+4", "inf", "nan", "x", "1e", "--1", "2,0", ".", "+", "0x1", "1.5f", "2#0", "é",
       "\x00", "1:2", "-", "1e+"]


def number_text():
    finite = st.floats(allow_nan=False, allow_infinity=False)
    return st.one_of(
        st.integers(0, 300).map(str),
        st.integers(-10**20, 10**20).map(str),
        finite.map(repr),
        st.tuples(finite, st.sampled_from([".6g", "e", ".3E", ".17g", "f", ".25g"])).map(
            lambda t: format(t[0], t[1])),
        st.from_regex(_NUMBER_RE, fullmatch=True),
        st.sampled_from(["-0", "1.", ".5", "007", "+3", "1e-46", "1e39", "-6.4265e+020",
                         "9" * 40, "1" * 25 + ".5e-10", "1e400"]))


@st.composite
def value_text(draw, sparse: bool):
    if draw(st.integers(0, 14)) == 0:
        return draw(st.sampled_from(BAD))
    if not sparse:
        return draw(number_text())
    kind = draw(st.integers(0, 12))
    if kind == 0:
        return draw(st.sampled_from(["5", "abc", ":1", "2.0:1", "-2:1", "1::2", "3:", "99999999999999999999999:1",
                                     "1:2:3", "007:1"]))
    index = draw(st.integers(0, 9) if kind < 11 else st.integers(0, 2**70))
    return f"{index}:{draw(number_text())}"


@st.composite
def sample_text(draw):
    name = draw(st.sampled_from(NAMES))
    sparse = name.startswith("sp") or (name == "b" and draw(st.booleans()))
    values = draw(st.lists(value_text(sparse), max_size=6))
    sep = draw(SEP)
    body = sep.join(values)
    return f"|{name}{draw(SEP) if values else draw(WS)}{body}{draw(WS)}"


@st.composite
def comment_text(draw):
    body = draw(st.text(alphabet=" ab#|1:\t", max_size=8))
    return "|#" + body.replace("|", "|#") + draw(WS)


@st.composite
def line_text(draw, ids_mode: bool, key: int):
    kind = draw(st.integers(0, 30))
    if kind == 0:
        return draw(WS)                                   # blank / whitespace-only
    if kind == 1:
        return draw(comment_text())                       # comment-only
    if kind == 2:
        return draw(st.sampled_from(["abc |a 1", "12a |a 1", "1.5 |a 1", " x", "|", "4| ",
                                     "99999999999999999999999 |a 1", "-1 |a 2", "\x80\x81 |a 1"]))
    prefix = ""
    if ids_mode or kind == 3:
        prefix = draw(st.sampled_from(["", " ", "\t"])) + \
            draw(st.sampled_from([str(key), str(key), str(key).zfill(4), str(key + 1)])) + draw(WS)
    parts = draw(st.lists(st.one_of(sample_text(), comment_text()), min_size=1, max_size=4))
    return prefix + "".join(parts)


@st.composite
def ctf_documents(draw):
    ids_mode = draw(st.booleans())
    keys = draw(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=4))
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        lines.append(draw(line_text(ids_mode, draw(st.sampled_from(keys)))))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = eol.join(lines)
    if draw(st.booleans()):
        text += eol
    raw = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 5)) == 0:
        raw = b"\xef\xbb\xbf" + raw
    return raw


# aliases as the deserializer admits them: unique, non-empty, no white space or '|', no leading '#'
STREAM_SETS = [
    [(b"a", 3, False), (b"bb", 2, True), (b"sp", 10, True)],
    [(b"a", 1, False), (b"b", 5, False), (b"sp:", 4, True), (b"zz", 1, False)],
    [(b"a2", 6, False), (b"a", 3, True)],
    [(b"a#", 3, False), (b"A", 2, True), (b"sp", 2**31 - 1, True)],
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ctf_documents(), st.sampled_from(STREAM_SETS), st.booleans(), st.integers(-1, 1),
       st.sampled_from([1, 20, 64, 1 << 30]), st.integers(0, 4))
def test_generated_files_agree(buf, streams, skip_ids, defining, chunk_size, warning_limit):
    defining = min(defining, len(streams) - 1)
    check_file(buf, streams, skip_ids, defining, chunk_size, warning_limit=warning_limit)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200), st.sampled_from(STREAM_SETS))
def test_random_bytes_agree(buf, streams):
    check_file(buf, streams, chunk_size=16)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ctf_documents(), st.data())
def test_truncated_and_mutated_files_agree(buf, data):
    streams = STREAM_SETS[0]
    if buf:
        cut = data.draw(st.integers(0, len(buf)))
        buf = buf[:cut]
    if buf and data.draw(st.booleans()):
        pos = data.draw(st.integers(0, len(buf) - 1))
        byte = data.draw(st.sampled_from(list(b"|#:\n\r\t .-e+0123456789\x00\xff")))
        buf = buf[:pos] + bytes([byte]) + buf[pos + 1:]
    check_file(buf, streams, chunk_size=32)


@pytest.mark.parametrize("path", sorted(CONFORMANCE.glob("*.txt")), ids=lambda p: p.name)
def test_conformance_inputs_agree(path):
    buf = path.read_bytes()
    for streams in ([(b"A", 1, False), (b"B", 5, True), (b"C", 1, False)],
                    [(b"features", 10, False), (b"labels", 10, True)],
                    [(b"features", 2, True), (b"labels", 10, False)],
                    [(b"F0", 100, True), (b"F1", 10, False)],
                    [(b"a", 3, False), (b"b", 2, False), (b"x", 5, False)],
                    [(b"F1", 1, False), (b"F2", 1, False)]):
        for skip_ids in (False, True):
            check_file(buf, streams, skip_ids=skip_ids, chunk_size=300)


@pytest.mark.parametrize("dim", [1, 3, 4, 5, 8, 9])
def test_runs_of_zeros_agree_at_every_dim_boundary(dim):
    # the dense fast path takes "0 0 0 0 " four values at a time: runs of every length around dim,
    # with the run at the line end, before '|', before a tab, cut by "-0", "00" or "0.5"
    lines = []
    for k in range(0, 12):
        for tail in ("", " ", "\t", " |b 1", " -0", " 00", " 0.5", "\r"):
            lines.append("|a " + " ".join(["0"] * k) + tail)
    buf = ("\n".join(lines) + "\n").encode()
    check_file(buf, [(b"a", dim, False), (b"b", 2, False)], error_limits=(-1,))
    check_file(buf.rstrip(b"\n"), [(b"a", dim, False), (b"b", 2, False)], error_limits=(-1,))


@pytest.mark.parametrize("dim", [1, 3, 8])
def test_integer_samples_agree(dim):
    # the dense fast path reads an integer's digits 8 bytes at a time until the sample holds
    # anything else: 1-9 digits, leading zeros, an integer at the line end (with and without the
    # last newline), before '|', tab or CR, after a real value, signs, "1.", "2e3", too many values
    lines = []
    for digits in range(1, 10):
        tok = "9876543210"[:digits]
        for tail in ("", " ", "\t", " |b 1", "\r", " 0.5 7", " -3 12", " 1. 5", " 2e3", " 007 8"):
            lines.append(f"|a {tok}{tail}")
            lines.append(f"|a 0.25 {tok}{tail}")
            lines.append(f"|a {tok} {tok} {tok} {tok}{tail}")
    buf = ("\n".join(lines) + "\n").encode()
    check_file(buf, [(b"a", dim, False), (b"b", 2, False)], error_limits=(-1,))
    check_file(buf.rstrip(b"\n"), [(b"a", dim, False), (b"b", 2, False)], error_limits=(-1,))


# --------------------------------------------------------------------------------------------
# Specific behaviours, with expected values


def test_dense_and_sparse_values_with_crlf_bom_and_comments():
    buf = b"\xef\xbb\xbf7 |a 1 -0 2.5e1 |# note |sp 3:0.5 0:-1\r\n7 |sp\r\n|# only a comment\r\n8\t|a 4\r\n"
    streams = [(b"a", 3, False), (b"sp", 5, True)]
    enc, ids_mode, keys, starts, first_lines, lengths, chunk_starts = check_file(buf, streams)
    assert (enc, ids_mode) == (ref.ENCODING_UTF8_BOM, True)
    assert keys.tolist() == [7, 8] and first_lines.tolist() == [1, 4] and lengths.tolist() == [2, 1]
    outputs, issues, nwarn, aborted = _ctf.parse_chunk(buf, 0, starts, first_lines, ids_mode,
                                                       streams, False, -1, 10)
    values, offsets = outputs[0]
    assert values.dtype == np.float32 and offsets.tolist() == [0, 1, 2]
    assert values.view(np.uint32).tolist() == np.array([1, -0.0, 25, 4, 0, 0], np.float32).view(
        np.uint32).tolist()
    indptr, indices, data, soff = outputs[1]
    assert indptr.tolist() == [0, 2, 2] and indices.tolist() == [3, 0] and data.tolist() == [0.5, -1]
    assert soff.tolist() == [0, 2, 2]
    assert issues == [(ref.SHORT_DENSE, 0, 4, 3, starts[1] + 2, 2, 1)] and nwarn == 1 and not aborted


def test_issue_positions_and_error_limit():
    buf = b"|a 1 2 3 4\n|a 1-2\n|sp 9:1\n|sp x\n|sp -2:1\n|a 1 |a 2\n|\n"
    streams = [(b"a", 3, False), (b"sp", 5, True)]
    c = check_file(buf, streams)
    starts, first_lines = c[3], c[4]
    outputs, issues, nwarn, aborted = _ctf.parse_chunk(buf, 0, starts, first_lines, False, streams,
                                                       True, -1, 0)
    assert [(i[0], i[2], i[3], i[5], i[6]) for i in issues] == [
        (ref.TOO_MANY_VALUES, 1, 10, 1, 4), (ref.BAD_NUMBER, 2, 4, 3, 0),
        (ref.INDEX_RANGE, 3, 5, 1, 0), (ref.MISSING_COLON, 4, 5, 1, 0),
        (ref.BAD_INDEX, 5, 5, 2, 0), (ref.DUPLICATE_INPUT, 6, 6, 2, 0),
        (ref.EMPTY_NAME, 7, 1, 1, 0)]
    assert outputs[0][1].tolist() == [0, 0, 0, 0, 0, 0, 1, 1] and not aborted
    outputs, issues, nwarn, aborted = _ctf.parse_chunk(buf, 0, starts, first_lines, False, streams,
                                                       True, 2, 0)
    assert aborted and len(issues) == 2 and outputs[0][0].size == 0
    assert outputs[0][1].tolist() == [0] * 8 and outputs[1][0].tolist() == [0]


def test_rejects_inconsistent_arguments():
    with pytest.raises(ValueError):
        _ctf.parse_chunk(b"|a 1\n", 0, [0, 99], [1], False, [(b"a", 1, False)], False, -1, 0)
    with pytest.raises(ValueError):
        _ctf.parse_chunk(b"|a 1\n", 10, [0, 5], [1], False, [(b"a", 1, False)], False, -1, 0)
    with pytest.raises(ValueError, match="at least one"):
        _ctf.parse_chunk(b"|a 1\n", 0, [], [], False, [(b"a", 1, False)], False, -1, 0)
    with pytest.raises(ValueError):
        _ctf.scan_index(b"|a 1\n", [b"a"], False, 1, 10)
    with pytest.raises(ValueError):
        _ctf.scan_index(b"|a 1\n", [b"a"], False, -1, 0)
    with pytest.raises(ValueError, match="int32 indices"):
        _ctf.parse_chunk(b"|a 1:1\n", 0, [0, 7], [1], False, [(b"a", 2**31 + 1, True)], False, -1, 0)
    with pytest.raises(ValueError, match="expected \\(alias, dim, sparse\\)"):
        _ctf.parse_chunk(b"|a 1\n", 0, [0, 5], [1], False, [(b"a", 1)], False, -1, 0)


def test_outputs_outlive_the_input_and_accept_mmap_like_buffers():
    buf = bytearray(b"|a " + b"1 " * 100 + b"\n") * 3000  # > 4 MB of output in float64: mmap'ed
    streams = [(b"a", 100, False)]
    c = _ctf.scan_index(memoryview(buf), [b"a"], False, -1, 1 << 30)
    outputs, *_ = _ctf.parse_chunk(memoryview(buf), 0, c[3], c[4], c[1], streams, True, -1, 0)
    values = outputs[0][0]
    del buf
    assert values.shape == (300000,) and float(values.sum()) == 300000.0
    assert values.base is not None  # owned through a capsule, no copy


# --------------------------------------------------------------------------------------------
# Threads


def _big_dense_file(lines=20000, dim=100):
    row = b"|x " + b" ".join(str(i % 256).encode() for i in range(dim)) + b"\n"
    return row * lines


def test_parse_chunk_releases_the_gil():
    buf = _big_dense_file()
    streams = [(b"x", 100, False)]
    c = _ctf.scan_index(buf, [b"x"], False, -1, 1 << 30)
    counter = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            counter[0] += 1
            time.sleep(0)

    t = threading.Thread(target=spin)
    t.start()
    try:
        ran = []
        for _ in range(3):  # the best of three against a busy machine
            before = counter[0]
            _ctf.parse_chunk(buf, 0, c[3], c[4], c[1], streams, False, -1, 0)
            ran.append(counter[0] - before)
    finally:
        done.set()
        t.join()
    # holding the GIL for the whole call would leave the other thread at most one step
    assert max(ran) > 20, ran


def test_two_threads_parse_two_chunks_to_the_same_result():
    buf = _big_dense_file(8000) + _big_dense_file(8000, 100).replace(b"|x 0 ", b"|x -0.5 ")
    streams = [(b"x", 100, False)]
    c = _ctf.scan_index(buf, [b"x"], False, -1, len(buf) // 2)
    starts, fl, cs = c[3], c[4], c[6]
    assert len(cs) >= 3  # at least two chunks

    def run(ci):
        a, b = int(cs[ci]), int(cs[ci + 1])
        return _ctf.parse_chunk(buf, 0, starts[a:b + 1], fl[a:b], c[1], streams, False, -1, 0)

    serial = [run(0), run(1)]
    results = [None, None]
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, run(i))) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert_same(serial, results, "threaded")


# --------------------------------------------------------------------------------------------
# parse_chunk_async: parse_chunk on a native thread of its own


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ctf_documents(), st.sampled_from(STREAM_SETS), st.integers(-1, 2), st.integers(0, 3),
       st.booleans(), st.randoms(use_true_random=False))
def test_parse_chunk_async_returns_what_parse_chunk_returns(buf, streams, error_limit, warning_limit,
                                                            with_ends, rnd):
    c = _ctf.scan_index(buf, [s[0] for s in streams], False, -1, 1 << 30)
    starts, fl = np.asarray(c[3]), np.asarray(c[4])
    n = len(fl)
    if with_ends:  # sequences in any order, as a randomized batch reads them
        order = np.array(rnd.sample(range(n), n), np.int64)
        args = (buf, 0, starts[order], fl[order], c[1], streams, False, error_limit, warning_limit,
                starts[order + 1])
    else:
        args = (buf, 0, starts, fl, c[1], streams, False, error_limit, warning_limit)
    jobs = [_ctf.parse_chunk_async(*args) for _ in range(3)]  # three threads at once
    expected = _ctf.parse_chunk(*args)
    for job in jobs:
        assert_same(job.result(), expected, "async")


def test_parse_chunk_async_result_once_and_arguments_checked_at_the_call():
    job = _ctf.parse_chunk_async(b"|a 1\n", 0, [0, 5], [1], False, [(b"a", 1, False)], False, -1, 0)
    outputs, issues, warnings, aborted = job.result()
    assert np.asarray(outputs[0][0]).tolist() == [1.0] and issues == [] and not aborted
    with pytest.raises(RuntimeError, match="already taken"):
        job.result()
    with pytest.raises(ValueError, match="outside the buffer"):
        _ctf.parse_chunk_async(b"|a 1\n", 0, [0, 99], [1], False, [(b"a", 1, False)], False, -1, 0)
    with pytest.raises(ValueError, match="ends"):
        _ctf.parse_chunk_async(b"|a 1\n", 0, [0, 5], [1], False, [(b"a", 1, False)], False, -1, 0, [5])


def test_parse_chunk_async_holds_its_input_until_the_result_is_taken():
    buf = bytearray(_big_dense_file(4000))
    streams = [(b"x", 100, False)]
    c = _ctf.scan_index(buf, [b"x"], False, -1, 1 << 30)
    job = _ctf.parse_chunk_async(buf, 0, c[3], c[4], c[1], streams, False, -1, 0)
    with pytest.raises(BufferError):  # the parse reads it: it cannot be resized away
        buf.extend(b"|x 1\n")
    values = job.result()[0][0][0]
    buf.extend(b"|x 1\n")  # released once parsed
    assert values.shape == (400000,)
    # a job dropped unread joins its thread and frees what it parsed
    for _ in range(20):
        _ctf.parse_chunk_async(buf, 0, c[3], c[4], c[1], streams, False, -1, 0)


def test_parse_chunk_async_runs_while_the_caller_holds_the_gil():
    buf = _big_dense_file(20000)
    streams = [(b"x", 100, False)]
    c = _ctf.scan_index(buf, [b"x"], False, -1, 1 << 30)
    t0 = time.perf_counter()
    _ctf.parse_chunk(buf, 0, c[3], c[4], c[1], streams, False, -1, 0)
    alone = time.perf_counter() - t0
    best = float("inf")
    for _ in range(5):  # the best of five against a busy machine
        t0 = time.perf_counter()
        job = _ctf.parse_chunk_async(buf, 0, c[3], c[4], c[1], streams, False, -1, 0)
        x = 0
        while time.perf_counter() - t0 < alone:  # pure Python: holds the GIL throughout
            x += 1
        job.result()
        best = min(best, time.perf_counter() - t0)
    # had the parse needed the GIL, it would have started only after the loop: twice as long
    assert best < 1.8 * alone, (best, alone)


def _in_forked_child(fn) -> int:
    """Run ``fn()`` in a forked child; its exit code (0: it returned), or fail after 30 s."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            fn()
            code = 0
        finally:
            os._exit(code)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError("the forked child hangs on a thread it does not have")
        time.sleep(0.01)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_job_copied_into_a_forked_child_is_orphaned_not_joined():
    # a child forked while a parse runs has no thread to join: it must neither wait for one
    # nor take (or free) the result the parent's thread was writing when it forked
    buf = _big_dense_file(40000)
    streams = [(b"x", 100, False)]
    c = _ctf.scan_index(buf, [b"x"], False, -1, 1 << 30)
    jobs = [_ctf.parse_chunk_async(buf, 0, c[3], c[4], c[1], streams, False, -1, 0)]

    def drop():  # dropping the copied job returns at once
        jobs.clear()

    def take():
        with pytest.raises(RuntimeError, match="forked"):
            jobs[0].result()
    assert _in_forked_child(drop) == 0
    assert _in_forked_child(take) == 0
    assert jobs[0].result()[0][0][0].shape == (4000000,)  # the parent's job is intact
