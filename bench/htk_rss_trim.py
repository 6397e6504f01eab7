"""Frame mode's peak RSS and frames/s with and without the heap trim after chunk releases.

The chunk window hands the memory of released chunks back to the system
(``cntkio.engine.heap.trim``: glibc's ``malloc_trim``). This runs frame mode (context 5,
randomized, one sweep; as ``htk_throughput.py --rss``) at each window in frames, alternately with
the trim disabled and enabled, each run in its own process, and prints the medians (peak RSS,
frames/s, CPU seconds of the process)::

    python bench/htk_rss_trim.py bench/data/htk_q --gb 0.25 --frames 156000,625000 --repeat 5
    python bench/htk_rss_trim.py bench/data/htk --gb 1.0 --frames 156000,625000 --repeat 3

The corpus is made by ``htk_throughput.generate`` when missing (``--gb`` must match the folder's
manifest, or the folder is generated again at that size).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import htk_throughput  # noqa: E402


def child(folder: str, window: int, trim: bool) -> None:
    from cntkio.engine import heap
    if not trim:
        heap._malloc_trim = None           # trim() is then a no-op, as where glibc is absent
    r = htk_throughput.run_cntkio(folder, "frame", window)
    u = resource.getrusage(resource.RUSAGE_SELF)
    print("RESULT " + json.dumps({"rss_mb": u.ru_maxrss / 1024, "frames_per_s": r["frames"] / r["seconds"],
                                  "cpu_s": u.ru_utime + u.ru_stime, "trims": heap.runs}))


def run(folder: str, window: int, trim: bool) -> dict | None:
    cmd = [sys.executable, os.path.abspath(__file__), folder, "--child", "on" if trim else "off",
           "--frames", str(window)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if p.returncode != 0 or line is None:
        print(f"window {window} trim {trim}: failed (rc {p.returncode}): {p.stderr.strip()[-400:]}", file=sys.stderr)
        return None
    return json.loads(line[7:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--frames", default="156000,625000", help="windows in frames")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", choices=("on", "off"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.folder, int(args.frames), args.child == "on")
        return
    info = htk_throughput.generate(args.folder, args.gb)
    print(f"corpus: {info['utterances']} utterances, {info['frames']} frames; frame mode, context 5; "
          f"{args.repeat} runs each, off and on alternating")
    for w in (int(x) for x in args.frames.split(",")):
        got: dict[bool, list] = {False: [], True: []}
        for _ in range(args.repeat):
            for trim in (False, True):
                r = run(args.folder, w, trim)
                if r is None:
                    return
                got[trim].append(r)
        for trim in (False, True):
            rs = got[trim]
            med = {k: statistics.median(x[k] for x in rs) for k in ("rss_mb", "frames_per_s", "cpu_s")}
            each = ", ".join("%.0f" % x["rss_mb"] for x in rs)
            print(f"window {w:>9d} frames, trim {'on ' if trim else 'off'}: peak RSS {med['rss_mb']:6.0f} MB "
                  f"[{each}], {med['frames_per_s']:>10.0f} frames/s, "
                  f"CPU {med['cpu_s']:.2f} s, trims {rs[0]['trims']}")


if __name__ == "__main__":
    main()
