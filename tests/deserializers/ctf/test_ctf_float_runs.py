"""The C parser's kernel for real-valued dense samples (``ctf_float_run`` in ctf_core.h: short
plain decimals such as ``-0.211548`` read token after token from 16-byte masks, with an SSE4.1
and a baseline SSE2 variant) gives exactly what the reference parser gives: Python's ``float()``
of each token cast to float32 (or kept as float64), the same issues at the same positions, for
every token shape at the edges of the kernel (8 and 9 digits either side of the point, 15 and 16
bytes, signs, leading and trailing points, exponents, control bytes, other white space, the
end of the line, of the sample and of the buffer). Both kernels are run where the CPU has both.
"""
from __future__ import annotations

import random
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cntkio._native import _ctf
from cntkio.deserializers.ctf import _reference as ref


def _kernels():
    kinds = ["sse2"]
    try:
        previous = _ctf._float_kernel()
        _ctf._float_kernel("sse41")
        kinds.append("sse41")
        _ctf._float_kernel(previous)
    except ValueError:
        pass
    return kinds


KERNELS = _kernels()


@pytest.fixture(params=KERNELS)
def kernel(request):
    before = _ctf._float_kernel()
    _ctf._float_kernel(request.param)
    yield request.param
    _ctf._float_kernel("auto" if before != "sse2" else before)


def parse_both(buf: bytes, streams, double: bool):
    c = _ctf.scan_index(buf, [s[0] for s in streams], False, -1, 1 << 30)
    r = ref.scan_index(buf, [s[0] for s in streams], False, -1, 1 << 30)
    assert [np.asarray(a).tobytes() for a in c[2:]] == [np.asarray(a).tobytes() for a in r[2:]]
    args = (buf, 0, c[3], c[4], c[1], streams, double, -1, 1000)
    return _ctf.parse_chunk(*args), ref.parse_chunk(*args)


def assert_same(got, want):
    (go, gi, gw, ga), (wo, wi, ww, wa) = got, want
    assert (gi, gw, ga) == (wi, ww, wa)
    assert len(go) == len(wo)
    for gs, ws in zip(go, wo):
        assert len(gs) == len(ws)
        for g, w in zip(gs, ws):
            g, w = np.asarray(g), np.asarray(w)
            assert g.dtype == w.dtype and g.shape == w.shape
            assert g.tobytes() == w.tobytes()


def values_of(buf: bytes, dim: int, double: bool) -> np.ndarray:
    (outs, issues, _, _), _ = parse_both(buf, [(b"x", dim, False)], double)
    assert issues == []
    return np.asarray(outs[0][0])


def expected(tokens, double):
    with np.errstate(over="ignore"):  # a float64 beyond float32 casts to inf, as the parser
        return np.array([float(t) for t in tokens], np.float64).astype(np.float64 if double else np.float32)


def test_kernel_is_reported_and_selectable():
    assert _ctf._float_kernel() in ("sse41", "sse2", "portable")
    with pytest.raises(ValueError, match="expected 'sse2', 'sse41' or 'auto'|kernel is built"):
        _ctf._float_kernel("avx9")


# Every token shape around the kernel's limits, each in a long sample (so the kernel runs into it)
EDGE_TOKENS = [
    "0", "-0", "+0", "0.0", "-0.0", "+0.0", "1.", "-1.", ".5", "-.5", "+.5", "5", "-5", "007",
    "0.1", "0.2", "0.3", "-0.211548", "0.0280977", "-0.00932655", "1.40328", "-2.06457",
    "12345678", "123456789", "1234567.8", "12345678.1234567", "99999999.9999999", "1.2345678",
    "0.12345678", "0.123456789", "12345678.12345678", "-1234567.1234567", "9.99999999",
    "0.00000001", "0.000000001", "-0.0000001", "5e-05", "1.5e-05", "-1e+10", "1E5", "2.5e3",
    "0.30000000000000004", "1.7976931348623157e308", "3.4028235e38", "1.401298e-45",
    "16777217", "16777217.0", "0.1000000015", "33554431.5", "9007199254.5", "0.000001",
]


@pytest.mark.parametrize("double", [False, True])
def test_edge_tokens_equal_float(kernel, double):
    for tok in EDGE_TOKENS:
        tokens = ["0.25"] * 5 + [tok] + ["-1.5"] * 5 + [tok, tok]
        buf = ("|x " + " ".join(tokens) + "\n").encode() + b" " * 40
        got = values_of(buf, len(tokens), double)
        assert got.tobytes() == expected(tokens, double).tobytes(), tok


def random_token(rng: random.Random) -> str:
    ni, nf = rng.randint(0, 9), rng.randint(0, 9)
    digits = "".join(rng.choice("0123456789") for _ in range(ni))
    frac = "".join(rng.choice("0123456789") for _ in range(nf))
    sign = rng.choice(["", "", "-", "+"])
    if nf == 0 and rng.random() < 0.5:
        tok = digits
    else:
        tok = digits + "." + frac
    if not any(ch.isdigit() for ch in tok):
        tok += "7"
    return sign + tok


@pytest.mark.parametrize("seed", range(4))
def test_random_short_decimals_equal_float(kernel, seed):
    # 20,000 tokens of 0-9 digits either side of the point: inside and just outside the kernel
    rng = random.Random(seed)
    for double in (False, True):
        lines, want = [], []
        for _ in range(200):
            tokens = [random_token(rng) for _ in range(100)]
            lines.append("|x " + " ".join(tokens))
            want.extend(tokens)
        buf = ("\n".join(lines) + "\n").encode()
        got = values_of(buf, 100, double)
        assert got.tobytes() == expected(want, double).tobytes()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1, max_size=40),
       st.sampled_from(["%.6g", "%.9g", "%.3f", "%.8f", "%g", "%.1f", "%r", "%.7g"]), st.booleans())
def test_formatted_floats_equal_float(xs, fmt, double):
    tokens = [repr(x) if fmt == "%r" else fmt % x for x in xs]
    buf = ("|x " + " ".join(tokens) + " |y 1\n").encode()
    for name in KERNELS:
        _ctf._float_kernel(name)
        (outs, issues, _, _), _ = parse_both(buf, [(b"x", len(tokens), False), (b"y", 1, False)], double)
        assert issues == []
        assert np.asarray(outs[0][0]).tobytes() == expected(tokens, double).tobytes()
    _ctf._float_kernel("auto")


SEPARATORS = [" ", " ", " ", "  ", "\t", " \t", "\r ", " \x0b", "\x00", "\x1f", " |y 1 ", "|", " |#c| "]
ODD = ["1-2", "1.5.", "--1", ".", "-", "+.", "1e", "1,5", "0x1", "é", "1.5f", "١", "12345678901234567",
       "1." + "9" * 30, "-0.000000000001"]


@st.composite
def float_lines(draw):
    rows = []
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(0, 30))
        parts = []
        for _ in range(n):
            kind = draw(st.integers(0, 20))
            if kind == 0:
                parts.append(draw(st.sampled_from(ODD)))
            elif kind == 1:
                parts.append(draw(st.sampled_from(EDGE_TOKENS)))
            else:
                x = draw(st.floats(-1e4, 1e4, allow_nan=False))
                parts.append(draw(st.sampled_from(["%.6g", "%.9g", "%.4f", "%g"])) % x)
            parts.append(" " if draw(st.integers(0, 9)) else draw(st.sampled_from(SEPARATORS)))
        rows.append("|x " + "".join(parts) + draw(st.sampled_from(["", " ", "\r", " |y 2"])))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    text = eol.join(rows) + (eol if draw(st.booleans()) else "")
    pad = draw(st.integers(0, 30))  # where the buffer ends (the kernel needs 24 bytes ahead)
    return text.encode("utf-8") + b"\n" * draw(st.integers(0, 1)) + b" " * pad


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(float_lines(), st.sampled_from([1, 5, 12, 31]), st.booleans())
def test_mixed_lines_agree_with_the_reference(buf, dim, double):
    streams = [(b"x", dim, False), (b"y", 1, False)]
    want = None
    for name in KERNELS:
        _ctf._float_kernel(name)
        got, want = parse_both(buf, streams, double)
        assert_same(got, want)
    _ctf._float_kernel("auto")


def test_exact_halfway_and_double_rounding_cases(kernel):
    # decimals whose double lies next to a float32 rounding boundary: the value is rounded to
    # double first and then to float32 (as float() and a cast), never straight to float32
    rng = np.random.default_rng(3)
    f = rng.standard_normal(4000).astype(np.float32)
    nxt = np.nextafter(f, np.float32(np.inf))
    mid = (f.astype(np.float64) + nxt.astype(np.float64)) / 2  # halfway between two float32
    tokens = [f"{m:.7f}" for m in mid] + [f"{m:.8f}" for m in mid[:1000]]
    tokens = [t for t in tokens if len(t.lstrip("-")) <= 15]
    buf = ("|x " + " ".join(tokens) + "\n").encode()
    got = values_of(buf, len(tokens), False)
    assert got.tobytes() == expected(tokens, False).tobytes()
    got64 = values_of(buf, len(tokens), True)
    assert [struct.pack("<d", v) for v in got64.tolist()] == [struct.pack("<d", float(t)) for t in tokens]
