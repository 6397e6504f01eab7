"""ctf2bin's index scan on several threads (cbf/parallel_scan.py) gives exactly the index of one
scan of the whole buffer: at every cut of small files (with and without ids, a BOM, lines without
an id, blank and comment lines, both parser modules), on a buffer large enough to be cut by
itself, and through ctf2bin (the same CBF bytes)."""
from __future__ import annotations

import concurrent.futures as cf
import itertools

import numpy as np
import pytest

from cntkio.deserializers.cbf import ctf2bin
from cntkio.deserializers.cbf import parallel_scan as ps
from cntkio.deserializers.ctf import _reference as ref
from cntkio.deserializers.ctf.deserializer import available_backends

ALIASES = [b"x", b"y"]

TEXTS = {
    "ids": b"0 |x 1 2 |y 3:1\n0 |x 3 4\n1 |x 5 6 |y 0:2\n2 |x 1 1\n2 |x 2 2\n2 |y 1:1\n3 |x 0 0\n"
           b"\n# c\n4 |x 9 9\n4 |x 8 8\n5 |x 1 2\n",
    "no_ids": b"|x 1 2 |y 3:1\n|x 3 4\n\n|x 5 6 |y 0:2\n|x 1 1\n#c\n|x 2 2\n|y 1:1\n|x 0 0\n|x 9 9\n",
    "bom": b"\xef\xbb\xbf7 |x 1 2\n7 |x 3 4\n8 |x 5 6\n9 |x 1 1\n9 |x 2 2\n10 |y 1:1\n11 |x 0 0\n",
    "lines_without_id": b"0 |x 1 2\n|x 3 4\n1 |x 5 6\n|x 9 9\n1 |x 1 1\n2 |x 2 2\n|x 2 2\n"
                        b"3 |y 1:1\n4 |x 0 0\n5 |x 1 1\n",
}


def _same(want, got) -> None:
    assert int(got[0]) == int(want[0]) and bool(got[1]) == bool(want[1])
    for a, b in zip(want[2:], got[2:]):
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a))


@pytest.fixture(scope="module")
def pool():
    with cf.ThreadPoolExecutor(2) as p:
        yield p


@pytest.mark.parametrize("backend", available_backends(), ids=lambda b: b.__name__.rsplit(".", 1)[-1])
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_every_cut_gives_the_whole_scan(pool, backend, name):
    text = TEXTS[name]
    line_ends = [i + 1 for i, c in enumerate(text) if c == 10][:-1]
    for skip_ids, defining, chunk_size in itertools.product((False, True), (-1, 0), (10, 1000)):
        want = backend.scan_index(text, ALIASES, skip_ids, defining, chunk_size)
        joined = 0
        for cuts in itertools.chain(([c] for c in line_ends), itertools.combinations(line_ends, 2)):
            got = ps._join(backend, pool, memoryview(text), list(cuts), ALIASES, skip_ids, defining,
                           chunk_size)
            if got is not None:   # None: the caller scans the whole buffer instead
                _same(want, got)
                joined += 1
        # the join is taken at most cuts (not a fallback every time)
        assert joined >= len(line_ends) // 3, (name, skip_ids, joined)


def _big_text(ids: bool, rows: int = 80000) -> bytes:
    rng = np.random.default_rng(5)
    out = []
    seq = 0
    for r in range(rows):
        if rng.random() < 0.4:
            seq += 1
        vals = " ".join(str(v) for v in rng.integers(0, 100, 3))
        line = f"|x {vals}" + (f" |y {int(rng.integers(0, 50))}:1" if rng.random() < 0.5 else "")
        if r % 997 == 5:
            out.append("")
        out.append(f"{seq} {line}" if ids else line)
    return ("\n".join(out) + "\n").encode()


@pytest.mark.parametrize("ids", [True, False])
@pytest.mark.parametrize("pieces", [2, 3])
def test_large_buffer_in_pieces(pool, ids, pieces):
    text = _big_text(ids)
    assert len(text) > ps.MIN_PARALLEL_BYTES
    backend = available_backends()[-1]
    want = backend.scan_index(text, ALIASES, False, -1, 64 << 10)
    cuts = ps._cuts(memoryview(text), pieces)
    assert cuts is not None and len(cuts) == pieces - 1
    got = ps._join(backend, pool, memoryview(text), cuts, ALIASES, False, -1, 64 << 10)
    assert got is not None
    _same(want, got)
    _same(want, ps.parallel_scan_index(backend, pool, pieces, text, ALIASES, False, -1, 64 << 10))


def test_falls_back_on_long_sequences(pool):
    # two sequences of ~0.7 MB each: a piece holds fewer than three, so the buffer is scanned whole
    line = b"|x " + b"1 " * 20 + b"\n"
    text = b"".join((b"%d " % k) + line for k in (0, 1) for _ in range(16000))
    backend = available_backends()[-1]
    assert ps._join(backend, pool, memoryview(text), ps._cuts(memoryview(text), 2), ALIASES,
                    False, -1, 1 << 20) is None
    _same(backend.scan_index(text, ALIASES, False, -1, 1 << 20),
          ps.parallel_scan_index(backend, pool, 2, text, ALIASES, False, -1, 1 << 20))


def test_utf16_is_left_to_the_scan(pool):
    text = "0 |x 1 2\n".encode("utf-16") * 200000
    backend = ref
    got = ps.parallel_scan_index(backend, pool, 2, text, ALIASES, False, -1, 1 << 20)
    assert got[0] == ref.ENCODING_UTF16LE


def test_ctf2bin_bytes_unchanged(tmp_path, monkeypatch):
    src = tmp_path / "in.ctf"
    src.write_bytes(_big_text(True))
    streams = [("x", "x", False, 3), ("y", "y", True, 50)]
    a, b = tmp_path / "parallel.cbf", tmp_path / "one.cbf"
    calls = []
    join = ps._join
    monkeypatch.setattr(ps, "_join", lambda *args: calls.append(1) or join(*args))
    info = ctf2bin(str(src), str(a), streams, chunk_size=256 << 10, progress=False)
    assert calls and info["chunks"] > 1
    monkeypatch.setattr(ps, "MIN_PARALLEL_BYTES", 1 << 40)   # one scan of the whole file
    ctf2bin(str(src), str(b), streams, chunk_size=256 << 10, progress=False)
    assert a.read_bytes() == b.read_bytes()
