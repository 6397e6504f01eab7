#!/usr/bin/env python3
"""Write the seed corpora of the native fuzz targets into tests/fuzz/corpus_<format>/ (deterministic).

    python tests/fuzz/make_native_corpus.py            # from the project root

Every seed is made by cntkio's own writers or taken from the project's own data: CBF files by
``ctf2bin`` and ``CBFWriter`` (dense and sparse streams, float32 and float64, one and several
chunks, empty sequences), HTK feature files by ``write_htk`` (several dimensions, both byte orders)
and slices of the speech example's MLF files, UCIFastReader text (the legacy example's digits, and
made-up records with labels, blank lines, CR line ends and bad numbers), token corpora (ASCII and
Unicode white space, CR/LF/CRLF lines) and randomizer parameters (chunk counts, windows, seeds).
The regression inputs of tests/fuzz/regressions/ join their format's corpus. Seeds stay small (a few
KB): a fuzzer mutates small inputs fastest.
"""
from __future__ import annotations

import os
import pathlib
import random
import shutil
import struct
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "src"))

from cntkio.deserializers.cbf import CBFWriter, ctf2bin  # noqa: E402
from cntkio.deserializers.htk.writer import write_htk  # noqa: E402
from cntkio.deserializers.protocol import ChunkData, DenseStream, SequenceTable, SparseStream  # noqa: E402

FORMATS = ("cbf", "htk", "uci", "tok", "rand")


def _out(fmt: str) -> pathlib.Path:
    d = HERE / f"corpus_{fmt}"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir()
    return d


def cbf_seeds(out: pathlib.Path, rng: np.random.Generator, tmp: str) -> None:
    texts = {
        "dense_seq": ("".join(f"{s} |x {rng.normal():.3g} {rng.normal():.3g} |y {rng.integers(9)}\n"
                              for s in range(12) for _ in range(int(rng.integers(1, 4)))),
                      {"x": {"dim": 2, "format": "dense"}, "y": {"dim": 1, "format": "dense"}}),
        "sparse_seq": ("".join(f"{s} |w {rng.integers(50)}:1 {rng.integers(50)}:{rng.normal():.2g} |t {rng.integers(5)}:1\n"
                               for s in range(10) for _ in range(int(rng.integers(1, 4)))),
                       {"w": {"dim": 50, "format": "sparse"}, "t": {"dim": 5, "format": "sparse"}}),
        "mixed": ("".join(f"{s} |f {' '.join(str(int(v)) for v in rng.integers(0, 9, 4))} |l {rng.integers(3)}:1\n"
                          + (f"{s} |f 1 2 3 4\n" if s % 3 == 0 else "") for s in range(10)),
                  {"f": {"dim": 4, "format": "dense"}, "l": {"dim": 3, "format": "sparse"}}),
    }
    for name, (text, streams) in texts.items():
        ctf = os.path.join(tmp, name + ".ctf")
        with open(ctf, "w") as f:
            f.write(text)
        for precision in ("float", "double"):
            for chunk in (None, 64):
                path = out / f"{name}_{precision}_{'one' if chunk is None else 'chunks'}.cbf"
                ctf2bin(ctf, str(path), streams, chunk_size=chunk, precision=precision, progress=False)
    # CBFWriter directly: empty sequences in one stream, a sparse stream with empty samples
    offsets = np.array([0, 2, 2, 5], np.int64)
    sparse = SparseStream(np.array([0, 1, 1, 3, 4, 4], np.int64), np.array([3, 0, 6, 2], np.int32),
                          np.array([1.5, -2, 0.25, 8], np.float32), offsets, 7)
    dense = DenseStream(np.arange(10, dtype=np.float32).reshape(5, 2), offsets)
    chunk = ChunkData(SequenceTable(np.arange(3, dtype=np.int64), np.diff(offsets)), {"d": dense, "s": sparse})
    for precision in ("float", "double"):
        path = out / f"writer_{precision}.cbf"
        with CBFWriter(str(path), [("d", 2, False), ("s", 7, True)], precision=precision, chunk_size=None) as w:
            w.write(chunk)
            w.write(chunk)
    for p in sorted((ROOT / "tests" / "data" / "cbf").glob("*.cbf")):
        if p.stat().st_size <= 16384:
            shutil.copy(p, out / ("data_" + p.name))


def htk_seeds(out: pathlib.Path, rng: np.random.Generator) -> None:
    for dim, frames in ((1, 1), (3, 5), (13, 20), (40, 6), (2, 0)):
        values = rng.normal(size=(frames, dim)).astype(np.float32)
        path = out / f"feat_{dim}x{frames}.htk"
        write_htk(str(path), values)
        data = path.read_bytes()                 # the same file little-endian (CNTK 2.7 read both)
        le = struct.pack("<iihh", frames, 100000, dim * 4, 9) + values.astype("<f4").tobytes()
        (out / f"feat_{dim}x{frames}_le.htk").write_bytes(le)
        assert len(data) == len(le)
    mlf = (ROOT / "examples" / "speech" / "data" / "test.mlf").read_bytes()
    lines = mlf.split(b"\n")
    for i, (a, b) in enumerate(((0, 30), (26, 60), (100, 140))):
        (out / f"mlf_{i}.mlf").write_bytes(b"\n".join(lines[a:b]) + b"\n")
    (out / "mlf_odd.mlf").write_bytes(b"#!MLF!#\n\"a.lab\"\n0 100000 s1 -3.5 word\n  100000   200000 s2\n"
                                      b"200000 5042949672960000 s3\n1 2\n123456789012345678901 3 x\n.\n")


def uci_seeds(out: pathlib.Path, rng: np.random.Generator) -> None:
    digits = (ROOT / "examples" / "legacy" / "digits_train.txt").read_bytes().split(b"\n")
    for i in range(3):
        (out / f"digits_{i}.txt").write_bytes(b"\n".join(digits[5 * i:5 * i + 4]) + b"\n")
    rows = []
    for _r in range(12):
        rows.append(" ".join(f"{v:.4g}" for v in rng.normal(size=4)) + f" {rng.integers(3)}")
    (out / "records.txt").write_text("\n".join(rows) + "\n")
    (out / "labels_text.txt").write_bytes(b"cat 1 2 3\ndog 4 5 6\n\n  \t\nbird 7 8 9\r\nfish 1e5 -2 .5")
    (out / "bad.txt").write_bytes(b"1 2\n1 x 3 4\n\n1e999 -0 +3 4\n\t 5\t6 7 8\r\n" + b"9 " * 40 + b"\n")


def tok_seeds(out: pathlib.Path) -> None:
    (out / "sentences.txt").write_bytes(b"</s> the cat sat on the mat </s>\n</s> a dog </s>\r\n\n"
                                        b"</s> the end\rno newline")
    (out / "unicode.txt").write_text("caf\u00e9 na\u00efve\u00a0word\u2003em\u3000ideo\n"
                                     "\u2028line\u2029para \u0085next\x1c\x1d\x1e\x1fend\n", encoding="utf-8")
    (out / "bytes.txt").write_bytes(b"\xff\xfe tok \xc2 \xe2\x80 \xe2\x80\x8a x\xc2\xa0y \xe1\x9a\x80z\n")
    (out / "repeats.txt").write_bytes(b"a b a b c\n" * 20 + b"\x0b\x0c\t \n")


def rand_seeds(out: pathlib.Path, rng: random.Random) -> None:
    for i in range(12):
        seed = struct.pack("<Q", rng.getrandbits(64))
        mode = bytes([rng.choice([0, 0, 1, 2, 3, 6, 14, 16, 17])])
        body = bytes(rng.getrandbits(8) for _ in range(rng.randint(8, 60)))
        (out / f"params_{i}.bin").write_bytes(seed + mode + body)


def main() -> None:
    np_rng = np.random.default_rng(30)
    with tempfile.TemporaryDirectory() as tmp:
        cbf_seeds(_out("cbf"), np_rng, tmp)
    htk_seeds(_out("htk"), np_rng)
    uci_seeds(_out("uci"), np_rng)
    tok_seeds(_out("tok"))
    rand_seeds(_out("rand"), random.Random(30))
    for p in sorted((HERE / "regressions").iterdir()):
        fmt = p.name.split("_", 1)[0]
        if fmt in FORMATS:
            shutil.copy(p, HERE / f"corpus_{fmt}" / ("regression_" + p.name))
    for fmt in FORMATS:
        files = list((HERE / f"corpus_{fmt}").iterdir())
        print(f"corpus_{fmt}: {len(files)} files, {sum(f.stat().st_size for f in files)} bytes")


if __name__ == "__main__":
    main()
