#!/usr/bin/env python3
"""Write the fuzz corpus of the C CTF parser into tests/fuzz/corpus/ (deterministic).

    python tests/fuzz/make_corpus.py [--conformance DIR]

The corpus: CNTK's conformance CTF inputs (copied, MIT), truncated copies of them, random bytes,
and hand-made pathological files (huge ids, long mantissas, long lines, lone '|', NULs, BOMs,
CR-only line ends, unterminated last lines, comments everywhere). The harness
(ctf_fuzz_main.c) mutates each file further at run time.
"""
from __future__ import annotations

import argparse
import pathlib
import random

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_CONFORMANCE = HERE.parents[2] / "shared" / "conformance" / "cntk" / "Data" / "CNTKTextFormatReader"

PATHOLOGICAL = {
    "empty.txt": b"",
    "only_newlines.txt": b"\n\n\r\n\n",
    "bom_only.txt": b"\xef\xbb\xbf",
    "utf16le.txt": "|a 1\n".encode("utf-16-le"),
    "utf16be_bom.txt": b"\xfe\xff\x00|\x00a",
    "nul_start.txt": b"\x00|a 1\n",
    "lone_bars.txt": b"|\n||\n| |\n|#|\n|#\n||#|#||\n",
    "huge_ids.txt": b"18446744073709551615 |A 1\n18446744073709551616 |A 2\n"
                    + b"9" * 300 + b" |A 3\n0 |A 4\n",
    "long_mantissas.txt": b"|A " + b"1" * 2000 + b"." + b"9" * 2000 + b"e-2000\n|A 0." + b"0" * 900
                          + b"1\n|B 0:" + b"7" * 1500 + b"\n",
    "exponents.txt": b"|A 1e99999999999999999999\n|A 1e-99999999999\n|A -0e5\n|A 1e\n|A 1e+\n"
                     b"|A 1.e5\n|A .5e-3\n|A 1E308\n|A 2e-324\n",
    "long_line.txt": b"|A " + b"0 " * 20000 + b"\n|B " + b" ".join(b"%d:1" % i for i in range(5)) * 2000 + b"\n",
    "many_bars.txt": b"|A 1 " + b"|B 1:1 " * 5000 + b"\n" + b"|" * 10000 + b"\n",
    "comments.txt": b"|# a |# b |#|# c\n1 |# x |A 1 |# |B 1:1|#\n|####\t|A 4.0|####|B 4:4\n",
    "cr_only.txt": b"|A 1\r|A 2\r|B 1:1\r",
    "no_trailing_newline.txt": b"1 |A 1 |B 1:1\n1 |A 2 |B 2:2",
    "nul_inside.txt": b"|A 1\x00 2\n|B 1:\x001\n\x00|A 3\n",
    "high_bytes.txt": b"|A \xff\xfe 1\n|\xc3\xa9 1\n\x80 |A 1\n",
    "sparse_edge.txt": b"|B 0:1 4:2 5:3\n|B :1\n|B 1::2\n|B 1:\n|B -1:1\n|B 99999999999999999999999:1\n"
                       b"|B 1:2:3\n|B 007:1\n|B\n",
    "ids_edge.txt": b" 5 |A 1\n5|A 2\n5\t|A 3\n5a |A 4\n005 |A 5\n6\n6 |# c\n7 abc |A 1\n",
    "dup_inputs.txt": b"|A 1 |A 2 |B 1:1 |B 2:2 |C 1 |C\n",
    "tabs_spaces.txt": b"\t|A\t1\t\n  |B  1:1  \n \t \n",
    "short_dense_eof.txt": b"|A",
    "bar_eof.txt": b"1 |A 1\n1 |",
    "digits_eof.txt": b"1 |A 1\n12345",
    # real-valued samples for the 16-byte kernel (ctf_float_run): runs of short decimals up to the
    # very end of the buffer, 15/16-byte tokens, control bytes and odd white space inside runs
    "real_runs.txt": b"|features -0.211548 0.0280977 -0.00932655 1.40328 -2.06457 0.5 -.5 5. +3 7\n"
                     b"|features 12345678.1234567 123456789.5 1.123456789 -0.0 1e-05 0.25\x0b1 0.5\n"
                     b"|features 0.1 0.2\t0.3  0.4 0.5\r0.6 \x000.7 0.8 0.9 1.0 1.1 1.2 1.3\n"
                     b"|x 0.125 -0.25\n|features 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 -0.123456",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--conformance", type=pathlib.Path, default=DEFAULT_CONFORMANCE)
    a = ap.parse_args()
    out = HERE / "corpus"
    out.mkdir(exist_ok=True)
    rng = random.Random(1234)
    for name, data in PATHOLOGICAL.items():
        (out / name).write_bytes(data)
    for i in range(6):
        (out / f"random_{i}.bin").write_bytes(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 400))))
        alphabet = b"|#:\n\r\t .-+eE0123456789ABCabc"
        (out / f"random_ctf_{i}.txt").write_bytes(
            bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 600))))
    for src in sorted(a.conformance.glob("*.txt")):
        data = src.read_bytes()
        (out / f"conformance_{src.name}").write_bytes(data)
        for j in range(2):
            cut = rng.randint(0, len(data))
            (out / f"truncated_{j}_{src.name}").write_bytes(data[:cut])


if __name__ == "__main__":
    main()
