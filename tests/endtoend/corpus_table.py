"""Run every case of the corpus and write the per-configuration table of docs/from-cntk.md.

    python tests/endtoend/corpus_table.py [--only SUBSTRING] [--no-slow | --slow-only] [--json out.json] [--markdown out.md]
    python tests/endtoend/corpus_table.py --from-json out.json --markdown out.md

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

from cases import CASES, JOINED, NOT_CONFIGS, RUNS  # noqa: E402
from harness import CORPUS, run_case  # noqa: E402


class _TimeOut(Exception):
    pass


def _alarm(signum, frame):
    raise _TimeOut("the case ran past the time limit")


def survey(only: str | None = None, limit: int = 600, slow: bool = True, fast: bool = True) -> dict:
    import signal
    signal.signal(signal.SIGALRM, _alarm)
    results = {}
    for case in CASES:
        if (only and only not in case.id) or (case.slow and not slow) or (not case.slow and not fast):
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


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(results: dict) -> str:
    """The per-configuration table: each of the 121 ``.cntk`` files, the cases that run it, and
    what happened (``runs``; ``refused``/``invalid``: why, by design; ``not yet``: the gap)."""
    with open(os.path.join(CORPUS, "SOURCES.md")) as f:
        configs = [ln[3:-1] for ln in f.read().splitlines() if ln.startswith("- `") and ln.endswith(".cntk`")]
    by_config: dict = {}
    for case in CASES:
        for c in case.configs:
            by_config.setdefault(c, []).append(case)
    rows = ["| configuration | cases (run-tests) | result |", "|---|---|---|"]
    counts: dict = {}
    for c in sorted(configs + NOT_CONFIGS):
        if c in NOT_CONFIGS:
            result, where = "not a configuration: an MLF label file named .cntk (TIMIT's state alignments)", ""
            counts["not a configuration"] = counts.get("not a configuration", 0) + 1
        else:
            cases = by_config.get(c, [])
            if not cases and c in JOINED:
                cases = [next(k for k in CASES if k.id == JOINED[c])]
            where = ", ".join(k.id + (" (slow)" if k.slow else "") for k in cases)
            result = _result(cases, results)
            key = result.split(":")[0]
            counts[key] = counts.get(key, 0) + 1
        rows.append(f"| `{c}` | {_cell(where)} | {_cell(result)} |")
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    return f"{len(configs) + len(NOT_CONFIGS)} files: {summary}.\n\n" + "\n".join(rows) + "\n"


def _result(cases, results: dict) -> str:
    if not cases:
        return "no case"
    notes = []
    for case in cases:
        got = results.get(case.id)
        if got is None:
            notes.append("not run in this survey")
        elif case.expect != RUNS and got["status"] == "ok":
            notes.append("runs (its expectation in cases.py is stale)")
        elif case.expect != RUNS:
            kind = {"refused": "refused", "invalid": "invalid", "network": "not yet"}[case.expect.kind]
            notes.append(f"{kind}: {case.expect.reason}")
        elif got["status"] != "ok":
            notes.append(f"not yet: {got['status']}")
        elif case.criteria_gap is not None:
            notes.append(f"runs, names differ: {case.criteria_gap[2]}")
    if not notes:
        return "runs"
    return notes[0] if len(set(notes)) == 1 else "; ".join(dict.fromkeys(notes))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only")
    ap.add_argument("--json")
    ap.add_argument("--limit", type=int, default=600, help="seconds a case may run")
    ap.add_argument("--no-slow", action="store_true", help="leave out the cases marked slow")
    ap.add_argument("--slow-only", action="store_true", help="run only the cases marked slow")
    ap.add_argument("--markdown", help="write the per-configuration table to this file (docs/from-cntk.md: "
                                       "between its corpus-table markers)")
    ap.add_argument("--from-json", help="make the table from an earlier run's --json file instead of running")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            results = json.load(f)
    else:
        results = survey(args.only, args.limit, not args.no_slow, not args.slow_only)
    if args.markdown:
        table = markdown(results)
        text = open(args.markdown).read() if os.path.exists(args.markdown) else ""
        begin, end = "<!-- corpus-table:begin -->", "<!-- corpus-table:end -->"
        if begin in text and end in text:       # a page with the markers: the table between them
            text = text[:text.index(begin) + len(begin)] + "\n" + table + text[text.index(end):]
        else:
            text = table
        with open(args.markdown, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
