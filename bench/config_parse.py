#!/usr/bin/env python3
"""Config parser speed: generated CNTK configs with large inline arrays, parsed and converted.

    python bench/config_parse.py --mb 50                 # the full run (about 50 MB per shape)
    python bench/config_parse.py --mb 1,5 [--repeat 3]   # linearity check at two sizes
    python bench/config_parse.py --small                 # smoke test (tiny configs)

Shapes, each generated to about ``--mb`` MB (10^6 bytes) of text:

* ``colon``: sections of parameters whose values are long ``:`` arrays (``w = 0.125:-1.5:...``),
  with comments between the sections;
* ``braces``: ``{ ... }`` arrays spanning many lines (numbers separated by line breaks), inside
  nested parameter sets;
* ``sets``: many small parameter sets (``layer17 = [ dim = 3 ; init = "uniform" ; ... ]``), and
  arrays of sets (``([..]:[..]:...)``).

Per shape: ``parse`` is ``parse_config`` of the text (the structure; values stay lazy strings,
as in CNTK), ``arrays`` is ``as_array()`` of every array value after it (one ConfigValue or
ConfigParameters per element); MB/s is the text size over the wall time of the parse, and of
both together. The target (issue 18) is a parse of >= 10 MB/s at 50 MB, in a time that grows
linearly with the size: with two sizes (``--mb 5,50``) the time per MB at the larger over the
smaller is printed (1.0 = linear). Each figure is the best of ``--repeat`` runs.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))

from cntkio.config import ConfigParameters, parse_config  # noqa: E402


def _numbers(n: int, seed: int) -> list[str]:
    x = seed * 7919 + 1
    out = []
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(f"{(x % 200000 - 100000) / 1024:.6g}")
    return out


def gen_colon(target: int) -> str:
    parts, size, s = [], 0, 0
    while size < target:
        body = [f"# section {s}", f"sec{s} = ["]
        for p in range(4):
            body.append(f"    w{p} = " + ":".join(_numbers(4000, s * 4 + p)))
        body.append(f'    name = "section {s}"\n]')
        text = "\n".join(body) + "\n"
        parts.append(text)
        size += len(text)
        s += 1
    return "".join(parts)


def gen_braces(target: int) -> str:
    parts, size, s = [], 0, 0
    while size < target:
        nums = "\n".join("            " + v for v in _numbers(8000, s))
        text = f"model{s} = [\n    layer = [\n        weights = {{\n{nums}\n        }}\n        dim = 8000\n    ]\n]\n"
        parts.append(text)
        size += len(text)
        s += 1
    return "".join(parts)


def gen_sets(target: int) -> str:
    parts, size, s = [], 0, 0
    while size < target:
        sets = ":\n".join(f'    [ type = "Layer{i}" ; dim = {i % 97} ; init = "uniform" ; scale = {v} ]'
                          for i, v in enumerate(_numbers(500, s)))
        flat = "\n".join(f"layer{s}_{i} = [ dim = {i} ; bias = true ; name = \"l{i}\" ]" for i in range(500))
        text = f"list{s} = (\n{sets}\n)\n{flat}\n"
        parts.append(text)
        size += len(text)
        s += 1
    return "".join(parts)


SHAPES = {"colon": gen_colon, "braces": gen_braces, "sets": gen_sets}


def _arrays(node: ConfigParameters) -> int:
    """as_array() of every value that holds an array; nested sets walked. The element count."""
    count = 0
    for _, v in node.items():
        if isinstance(v, ConfigParameters):
            count += _arrays(v)
        elif ":" in v or "\n" in v or v.lstrip()[:1] in "{(":
            for item in v.as_array():
                count += 1 + (_arrays(item) if isinstance(item, ConfigParameters) else 0)
    return count


def measure(text: str, repeat: int) -> dict:
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        cfg = parse_config(text)
        t1 = time.perf_counter()
        n = _arrays(cfg)
        t2 = time.perf_counter()
        if best is None or t2 - t0 < best["total_s"]:
            best = {"parse_s": t1 - t0, "arrays_s": t2 - t1, "total_s": t2 - t0, "elements": n}
    mb = len(text) / 1e6
    best.update(mb=round(mb, 3), parse_mb_per_s=round(mb / best["parse_s"], 2),
                total_mb_per_s=round(mb / best["total_s"], 2))
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", default="50", help="sizes in MB, comma-separated (default 50)")
    ap.add_argument("--only", default=",".join(SHAPES), help="shapes, comma-separated")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--small", action="store_true", help="smoke test: 0.05 and 0.2 MB")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    sizes = [0.05, 0.2] if args.small else [float(x) for x in args.mb.split(",")]
    results = {}
    for shape in args.only.split(","):
        rows = []
        for mb in sizes:
            text = SHAPES[shape](int(mb * 1e6))
            r = measure(text, args.repeat)
            rows.append(r)
            print(f"{shape:7s} {r['mb']:8.2f} MB  parse {r['parse_s']:7.3f} s = {r['parse_mb_per_s']:7.2f} MB/s"
                  f"   + arrays {r['arrays_s']:7.3f} s = {r['total_mb_per_s']:6.2f} MB/s"
                  f"  ({r['elements']} array elements)", flush=True)
        if len(rows) > 1:
            for what in ("parse", "total"):
                per = [r[f"{what}_s"] / r["mb"] for r in rows]
                print(f"{shape:7s} {what} time per MB at {rows[-1]['mb']:.2f} MB / at {rows[0]['mb']:.2f} MB: "
                      f"{per[-1] / per[0]:.2f} (1.0 = linear)")
        results[shape] = rows
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
