"""Run every case of the corpus and write the per-configuration table of docs/from-cntk.md.

    python tests/endtoend/corpus_table.py [--only SUBSTRING] [--json out.json] [--markdown out.md]

Each case (cases.py) runs as the tests run it (harness.py), in this process, one after another;
the result of a configuration is that of the case that covers it (cases.primary_case). Prints
one line per case (its id, ``ok`` or the first line of the error, seconds) and, with
``--markdown``, writes the table that docs/from-cntk.md includes.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cases import CASES, RUNS  # noqa: E402
from harness import run_case  # noqa: E402


class _TimeOut(Exception):
    pass


def _alarm(signum, frame):
    raise _TimeOut("the case ran past the time limit")


def survey(only: str | None = None, limit: int = 600, slow: bool = True) -> dict:
    import signal
    signal.signal(signal.SIGALRM, _alarm)
    results = {}
    for case in CASES:
        if (only and only not in case.id) or (case.slow and not slow):
            continue
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="cntk-e2e-") as tmp:
            signal.alarm(limit)
            try:
                outcomes, _ = run_case(case, tmp)
                err = next((o.error for o in outcomes if o.error is not None), None)
                status = "ok" if err is None else f"{type(err).__name__}: {str(err).splitlines()[0]}"
            except Exception as e:  # noqa: BLE001 - a traceback is a defect to report, not to stop at
                status = f"TRACEBACK {type(e).__name__}: {e}".splitlines()[0]
                traceback.print_exc()
            finally:
                signal.alarm(0)
        seconds = time.perf_counter() - start
        expected = "runs" if case.expect == RUNS else f"{case.expect.kind}: {case.expect.match}"
        results[case.id] = {"status": status, "seconds": round(seconds, 1), "expected": expected}
        print(f"{case.id:70s} {seconds:6.1f}s  {status[:300]}", flush=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    ap.add_argument("--json")
    ap.add_argument("--limit", type=int, default=600, help="seconds a case may run")
    ap.add_argument("--no-slow", action="store_true", help="leave out the cases marked slow")
    args = ap.parse_args()
    results = survey(args.only, args.limit, not args.no_slow)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
