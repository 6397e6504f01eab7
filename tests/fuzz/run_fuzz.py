#!/usr/bin/env python3
"""Build and run the native fuzz targets under AddressSanitizer and UndefinedBehaviorSanitizer.

    python tests/fuzz/run_fuzz.py --runs 10000000                    # the campaign (one format at a time)
    python tests/fuzz/run_fuzz.py --formats cbf,htk --seconds 60      # a shorter run of two formats
    python tests/fuzz/run_fuzz.py --engine driver --seconds 2         # the CI smoke's way (gcc only)

Targets: ``cbf``, ``htk``, ``uci``, ``tok``, ``rand`` (tests/fuzz/fuzz_<format>.c over the C cores
src/cntkio/_native/<format>_core.h) and ``ctf`` (tests/fuzz/ctf_fuzz_main.c over ctf_core.h),
each seeded with tests/fuzz/corpus_<format>/ (``corpus/`` for ctf; written by make_native_corpus.py
and make_corpus.py with cntkio's own writers).

Engines: ``libfuzzer`` (clang ``-fsanitize=fuzzer,address,undefined``: coverage-guided; Debian's
``clang`` and ``libclang-rt-14-dev``), ``driver`` (any C compiler with the sanitizers, gcc here:
tests/fuzz/fuzz_driver.c mutates the seeds without coverage feedback; about four times as many
inputs a CPU second), ``auto`` (libFuzzer where it builds, else the driver). A hang is an input
taking more than 5 s: of CPU time with the driver; libFuzzer's timeout is wall time, so it is set
to 60 s (on a loaded machine a fair input waits longer than 5 s), and an input it reports is run
again alone by the driver, which judges it by CPU time. Inputs up to 64 KiB, ``nice -n 10`` (the
runner applies it: do not add another), one format at a time. A crash, a sanitizer report or a hang
stops that format's run with its input saved under ``--out``/artifacts/ and makes the exit status
non-zero. The summary (inputs run, seconds, inputs/s, problems, engine, compiler, commit) is
printed as a Markdown table and written to ``--out``/summary.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
NATIVE = ROOT / "src" / "cntkio" / "_native"
FORMATS = ("cbf", "htk", "uci", "tok", "rand", "ctf")
SAN = ["-g", "-O1", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all"]
ENV = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0:exitcode=23:allocator_may_return_null=1",
       "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer", "check failed", "HANG",
         "ERROR: libFuzzer", "SUMMARY: ")
MAX_LEN = 65536


def source(fmt: str) -> tuple[Path, list[str]]:
    if fmt == "ctf":
        return HERE / "ctf_fuzz_main.c", ["-DCTF_FUZZ_NO_MAIN"]
    return HERE / f"fuzz_{fmt}.c", []


def corpus(fmt: str) -> Path:
    return HERE / ("corpus" if fmt == "ctf" else f"corpus_{fmt}")


def build(fmt: str, engine: str, out: Path, cc: str | None = None) -> tuple[Path, str]:
    """The target's executable (built into out/bin) and the compiler line's first word."""
    src, defs = source(fmt)
    exe = out / "bin" / f"{fmt}-{engine}"
    exe.parent.mkdir(parents=True, exist_ok=True)
    if engine == "libfuzzer":
        cc = cc or "clang"
        cmd = [cc, *SAN, "-fsanitize=fuzzer,address,undefined", *defs, "-I", str(NATIVE), str(src), "-o", str(exe), "-lm"]
    else:
        cc = cc or os.environ.get("CC") or "gcc"
        cmd = [cc, "-std=c11", *SAN, "-fsanitize=address,undefined", "-Wall", "-Wextra", "-Werror", *defs,
               f'-DFUZZ_NAME="{fmt}"', "-I", str(NATIVE), str(src), str(HERE / "fuzz_driver.c"), "-o", str(exe), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"building the {fmt} target failed: {' '.join(cmd)}\n{res.stderr[-4000:]}")
    return exe, cc


def libfuzzer_works(out: Path) -> bool:
    if not shutil.which("clang"):
        return False
    try:
        build("rand", "libfuzzer", out)
        return True
    except RuntimeError:
        return False


def _nice() -> None:
    os.nice(10)


def run(fmt: str, engine: str, exe: Path, out: Path, runs: int, seconds: float, seed: int) -> dict:
    art = out / "artifacts"
    art.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **ENV)
    t0 = time.time()
    if engine == "libfuzzer":
        work = out / "corpus" / fmt              # the seeds plus what libFuzzer keeps
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(corpus(fmt), work)
        cmd = [str(exe), f"-runs={runs}" if runs else "-runs=-1", "-timeout=60", f"-max_len={MAX_LEN}",
               "-rss_limit_mb=2048", "-print_final_stats=1", f"-seed={seed}", f"-artifact_prefix={art}/{fmt}-",
               str(work)]
        if seconds:
            cmd.insert(1, f"-max_total_time={int(seconds)}")
    else:
        cmd = [str(exe), "--timeout", "5", "--seed", str(seed), "--crash-dir", str(art)]
        cmd += (["--runs", str(runs)] if runs else []) + (["--seconds", str(seconds)] if seconds else [])
        cmd.append(str(corpus(fmt)))
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, preexec_fn=_nice)
    wall = time.time() - t0
    text = res.stdout + res.stderr
    if engine == "libfuzzer":
        m = re.search(r"stat::number_of_executed_units:\s*(\d+)", text)
        inputs = int(m.group(1)) if m else 0
    else:
        m = re.search(r"(\d+) inputs \((\d+) seeds\)", text)
        so_far = re.findall(r"(\d+) inputs in \d+ s so far", text)     # a run cut short: its progress
        inputs = int(m.group(1)) if m else (int(so_far[-1]) if so_far else 0)
    problems = [ln for ln in text.splitlines() if any(k in ln for k in MARKS)]
    rechecked = []
    if engine == "libfuzzer":                   # a wall-time timeout: judged again alone, by CPU time
        for p in sorted(art.glob(f"{fmt}-timeout-*")):
            driver, _ = build(fmt, "driver", out)
            again = subprocess.run([str(driver), "--runs", "1", "--timeout", "5", "--crash-dir", str(art), str(p)],
                                   capture_output=True, text=True, env=env, preexec_fn=_nice)
            if again.returncode == 0:
                rechecked.append(p.name)
                p.rename(p.with_name(p.name.replace("-timeout-", "-slow-under-load-")))
        if rechecked and all("timeout" in ln for ln in problems if "SUMMARY" in ln or "ERROR" in ln):
            problems = [ln for ln in problems if "timeout" not in ln]
    hangs = sum(1 for p in art.glob(f"*{fmt}*") if "timeout" in p.name or "hang" in p.name)
    crashes = sum(1 for p in art.glob(f"*{fmt}*") if "crash" in p.name or "leak" in p.name or "oom" in p.name)
    return {"format": fmt, "engine": engine, "inputs": inputs, "seconds": round(wall, 1),
            "inputs_per_s": round(inputs / wall) if wall else 0, "exit": res.returncode, "crashes": crashes,
            "hangs": hangs, "sanitizer_or_check_lines": problems[:20], "wall_timeouts_rechecked": rechecked,
            "clean": (res.returncode == 0 or bool(rechecked)) and not problems and not crashes and not hangs,
            "tail": text[-3000:] if res.returncode else ""}


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--formats", default="cbf,htk,uci,tok,rand")
    ap.add_argument("--runs", type=int, default=0, help="inputs per format (0: no limit; give --seconds)")
    ap.add_argument("--seconds", type=float, default=0, help="seconds per format (0: no limit; give --runs)")
    ap.add_argument("--engine", choices=("auto", "libfuzzer", "driver"), default="auto")
    ap.add_argument("--seed", type=int, default=30)
    ap.add_argument("--out", default=str(ROOT / "build" / "fuzz-campaign"))
    a = ap.parse_args()
    if not a.runs and not a.seconds:
        ap.error("give --runs or --seconds")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    engine = a.engine
    if engine == "auto":
        engine = "libfuzzer" if libfuzzer_works(out) else "driver"
    rows = []
    for fmt in a.formats.split(","):
        if fmt not in FORMATS:
            ap.error(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
        exe, cc = build(fmt, engine, out)
        row = run(fmt, engine, exe, out, a.runs, a.seconds, a.seed)
        row.update(compiler=cc, commit=commit(), date=time.strftime("%Y-%m-%d"), load=round(os.getloadavg()[0], 2))
        rows.append(row)
        print(f"| {fmt} | {engine} | {row['inputs']:,} | {row['seconds']} | {row['inputs_per_s']:,} | "
              f"{row['crashes']} | {row['hangs']} | {len(row['sanitizer_or_check_lines'])} | "
              f"{'clean' if row['clean'] else 'PROBLEM'} |", flush=True)
        if not row["clean"]:
            print(row["tail"], file=sys.stderr)
    (out / "summary.json").write_text(json.dumps(rows, indent=1))
    return 0 if all(r["clean"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
