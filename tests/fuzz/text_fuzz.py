#!/usr/bin/env python3
"""Fuzz cntkio's text parsers (tests/fuzz/text_targets.py) against the error rule (issue 30).

The rule: every input either parses or raises one of cntkio's error classes (``CntkioError``) or
an ``OSError``, whose message names the file (or the key, for a ConfigError); no other exception,
no hang (more than 5 s of CPU time on an input under 1 MB; CPU time, so that a loaded machine
does not make one; the atheris engine uses libFuzzer's wall-clock ``-timeout``) and no memory blow-up (the process runs under an
address-space limit; a ``MemoryError`` is a finding). A finding's input is written to
``--findings`` (default ``tests/fuzz/text_findings/<target>/``), where ``test_text_fuzz.py``
replays it in CI once it is fixed.

    nice -n 10 python tests/fuzz/text_fuzz.py --inputs 100000                 # the campaign, every target
    python tests/fuzz/text_fuzz.py --target mlf --seconds 30 --engine mutate  # one target, a while

Engines: ``atheris`` (coverage-guided, libFuzzer's mutations, cntkio's modules instrumented; the
``fuzz`` extra installs it) or ``mutate`` (no dependency: random byte edits, splices of seeds and
the format's tokens; what CI's smoke uses). ``auto`` takes atheris where it imports. Each target
runs in a process of its own, one after another; the summary (inputs tried, findings, rate) is
printed as a table and, with ``--json``, written as JSON.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

HANG_SECONDS = 5.0
#: the address-space limit of a target's process (a parse that tries to allocate more fails with
#: MemoryError, a finding, instead of taking the machine's memory)
ADDRESS_SPACE = 6 << 30
MAX_INPUT = 1 << 20


class Hang(BaseException):
    """Raised by the profiling timer in a parse that used more than HANG_SECONDS of CPU time (a
    BaseException: no ``except Exception`` in cntkio swallows it)."""


def names_place(e: BaseException, path: str) -> bool:
    """Whether an allowed error's message says where: the file (its name in the message, or the
    ``file``/``filename`` attribute) or, for a ConfigError, a key path."""
    if getattr(e, "file", None) or getattr(e, "filename", None) or getattr(e, "path", None):
        return True
    return os.path.basename(path) in str(e)


def check(run, data: bytes, path: str, alarm: bool = True) -> tuple[str, str] | None:
    """Run one input; None when the rule holds, else ``(kind, detail)``."""
    from cntkio.errors import CntkioError
    with open(path, "wb") as f:
        f.write(data)
    if alarm:                   # CPU time (user + system): a loaded machine does not make a hang
        signal.setitimer(signal.ITIMER_PROF, HANG_SECONDS)
    try:
        run(path)
    except (CntkioError, OSError) as e:
        if not names_place(e, path):
            return "unnamed", f"{type(e).__name__}: {e}"
    except Hang:
        return "hang", f"more than {HANG_SECONDS} s of CPU time"
    except MemoryError as e:
        return "memory", f"MemoryError: {e}"
    except Exception as e:      # noqa: BLE001 - any other exception breaks the rule
        tb = traceback.extract_tb(e.__traceback__)
        where = f"{os.path.relpath(tb[-1].filename, os.path.dirname(os.path.dirname(HERE)))}:{tb[-1].lineno}" if tb else "?"
        return (f"{type(e).__name__} at {where}",
                "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-4)))
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_PROF, 0)
    return None


def _on_alarm(signum, frame):
    raise Hang()


# --- the mutator ------------------------------------------------------------------------------------

def mutate(rng: random.Random, data: bytes, seeds: list[bytes], tokens: list[bytes]) -> bytes:
    """One to eight random edits: flip, insert or delete bytes, repeat or drop a span, splice in a
    piece of another seed, insert one of the format's tokens, cut the input short."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(9)
        n = len(b)
        i = rng.randint(0, n)
        if op == 0 and n:
            b[min(i, n - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif op == 2 and n:
            del b[i:i + rng.randint(1, 16)]
        elif op == 3 and n:
            j = rng.randint(i, min(n, i + 64))
            b[j:j] = b[i:j] * rng.randint(1, 8)
        elif op == 4 and seeds:
            other = rng.choice(seeds)
            a = rng.randint(0, len(other))
            b[i:i] = other[a:a + rng.randint(1, 128)]
        elif op in (5, 6) and tokens:
            b[i:i] = rng.choice(tokens)
        elif op == 7 and n:
            b[i:i + rng.randint(1, 8)] = rng.choice(tokens) if tokens else b""
        elif op == 8 and n > 1:
            del b[rng.randint(1, n - 1):]
    return bytes(b[:MAX_INPUT])


# --- one target, in this process ------------------------------------------------------------------

def _save(findings_dir: str, target: str, data: bytes, kind: str, detail: str) -> str:
    d = os.path.join(findings_dir, target)
    os.makedirs(d, exist_ok=True)
    name = f"{kind.split()[0]}-{hashlib.sha1(data).hexdigest()[:12]}"
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
    with open(os.path.join(d, name + ".txt"), "w") as f:
        f.write(detail)
    return name


def warm_up(target, seeds: list[bytes], path: str) -> None:
    """Parse the seeds once with no alarm: what a target imports on first use (torch for the
    network languages, seconds on a loaded machine) is imported before the clock watches."""
    for s in seeds[:3]:
        check(target.run, s, path, alarm=False)


def run_mutate(target, work: str, *, inputs: int, seconds: float, seed: int, findings_dir: str | None,
               stop_on_finding: bool = False, progress=None) -> dict:
    """The mutate engine on one target: ``inputs`` inputs or ``seconds``, whichever ends first
    (``progress(summary)`` every 5000 inputs)."""
    rng = random.Random(seed)
    seeds = [s for s in target.seeds(work) if len(s) <= MAX_INPUT]
    path = os.path.join(work, "input" + target.suffix)
    warm_up(target, seeds, path)
    old = signal.signal(signal.SIGPROF, _on_alarm)
    found: dict[str, tuple[str, bytes]] = {}
    tried, t0 = 0, time.perf_counter()
    try:
        queue = list(seeds)          # every seed once as it is, then mutations
        while tried < inputs and time.perf_counter() - t0 < seconds:
            data = queue.pop() if queue else mutate(rng, rng.choice(seeds), seeds, target.tokens)
            tried += 1
            if progress is not None and tried % 5000 == 0:
                progress(_summary(target.name, tried, t0, found))
            r = check(target.run, data, path)
            if r is not None:
                kind, detail = r
                key = kind if " at " in kind else kind + ":" + detail.strip().splitlines()[-1][:80]
                if key not in found:
                    found[key] = (detail, data)
                    if findings_dir:
                        _save(findings_dir, target.name, data, kind, detail)
                if stop_on_finding:
                    break
    finally:
        signal.signal(signal.SIGPROF, old)
    return _summary(target.name, tried, t0, found)


def _summary(name: str, tried: int, t0: float, found: dict) -> dict:
    return {"target": name, "engine": "mutate", "inputs": tried, "seconds": round(time.perf_counter() - t0, 1),
            "findings": [{"kind": k, "detail": d, "input": data.hex() if len(data) < 512 else None}
                         for k, (d, data) in found.items()]}


def run_atheris(name: str, work: str, *, inputs: int, seconds: float, findings_dir: str) -> None:
    """The atheris engine on one target (this process ends when libFuzzer stops; the summary goes
    to ``work/summary.json``)."""
    import atheris
    with atheris.instrument_imports(include=["cntkio"]):
        import cntkio.errors  # noqa: F401
        from text_targets import TARGETS
        target = TARGETS[name]
        corpus = os.path.join(work, "corpus")
        os.makedirs(corpus, exist_ok=True)
        for i, s in enumerate(target.seeds(work)):
            with open(os.path.join(corpus, f"seed{i}"), "wb") as f:
                f.write(s)
        target.run(os.path.join(corpus, "seed0"))     # every module the target uses, imported now
    path = os.path.join(work, "input" + target.suffix)
    state = {"inputs": 0, "findings": {}, "t0": time.perf_counter()}

    def summary():
        with open(os.path.join(work, "summary.json"), "w") as f:
            json.dump({"target": name, "engine": "atheris", "inputs": state["inputs"],
                       "seconds": round(time.perf_counter() - state["t0"], 1),
                       "findings": [{"kind": k, "detail": d} for k, d in state["findings"].items()]}, f)

    def one(data: bytes) -> None:
        state["inputs"] += 1
        r = check(target.run, data, path, alarm=False)      # libFuzzer's -timeout watches hangs
        if r is not None:
            kind, detail = r
            key = kind if " at " in kind else kind + ":" + detail.strip().splitlines()[-1][:80]
            if key not in state["findings"]:
                state["findings"][key] = detail
                _save(findings_dir, name, data, kind, detail)
        if state["inputs"] % 1000 == 0:
            summary()
    import atexit
    atexit.register(summary)
    dict_path = os.path.join(work, "tokens.dict")       # the format's tokens, as libFuzzer's dictionary
    with open(dict_path, "w") as f:
        f.writelines('"' + "".join(f"\\x{c:02x}" for c in t) + '"\n' for t in target.tokens)
    argv = [sys.argv[0], f"-runs={inputs}", f"-dict={dict_path}", f"-max_total_time={int(seconds)}", f"-timeout={int(HANG_SECONDS)}",
            f"-rss_limit_mb={ADDRESS_SPACE >> 20}", f"-max_len={MAX_INPUT}",
            f"-artifact_prefix={os.path.join(findings_dir, name)}/", "-print_final_stats=1", corpus]
    os.makedirs(os.path.join(findings_dir, name), exist_ok=True)
    atheris.Setup(argv, one)
    atheris.Fuzz()


def _child(args) -> int:
    """A target's own process: the address-space limit, then the engine."""
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    os.chdir(args.work)               # files a parse may write (MEL's Dump) stay in the work folder
    name = args.target[0]
    if args.engine == "atheris":
        run_atheris(name, args.work, inputs=args.inputs, seconds=args.seconds, findings_dir=args.findings)
        return 0
    from text_targets import TARGETS

    def write(res: dict) -> None:          # also as it goes: a run stopped early still tells its count
        with open(os.path.join(args.work, "summary.json"), "w") as f:
            json.dump(res, f)
    res = run_mutate(TARGETS[name], args.work, inputs=args.inputs, seconds=args.seconds, seed=args.seed,
                     findings_dir=args.findings, progress=write)
    write(res)
    return 0


def main(argv=None) -> int:
    from text_targets import TARGETS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", action="append", choices=sorted(TARGETS), help="repeatable (default: all)")
    p.add_argument("--inputs", type=int, default=100_000, help="inputs per target (default 100000)")
    p.add_argument("--seconds", type=float, default=3 * 3600, help="time limit per target")
    p.add_argument("--engine", choices=("auto", "atheris", "mutate"), default="auto")
    p.add_argument("--seed", type=int, default=30)
    p.add_argument("--findings", default=os.path.join(HERE, "text_findings"))
    p.add_argument("--json", help="write the summary here")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return _child(args)
    engine = args.engine
    if engine == "auto":
        try:
            import atheris  # noqa: F401
            engine = "atheris"
        except ImportError:
            engine = "mutate"
    results = []
    for name in args.target or sorted(TARGETS):
        # the inputs are written to a file each: in memory where a tmpfs is mounted
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        with tempfile.TemporaryDirectory(prefix=f"cntkio-fuzz-{name}-", dir=shm) as work:
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--target", name, "--work", work,
                   "--inputs", str(args.inputs), "--seconds", str(args.seconds), "--engine", engine,
                   "--seed", str(args.seed), "--findings", os.path.abspath(args.findings)]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            try:
                with open(os.path.join(work, "summary.json")) as f:
                    res = json.load(f)
            except (OSError, ValueError):
                res = {"target": name, "engine": engine, "inputs": 0, "findings": []}
            if proc.returncode != 0:      # libFuzzer stopped on a timeout, an RSS limit or a crash
                res["findings"].append({"kind": f"process exit {proc.returncode}", "detail": proc.stderr[-3000:]})
            res["wall_seconds"] = round(time.perf_counter() - t0, 1)
            results.append(res)
            print(f"{name:12s} {engine:8s} {res['inputs']:>9d} inputs {res['wall_seconds']:>8.1f} s "
                  f"{len(res['findings'])} finding(s)", flush=True)
            for fd in res["findings"]:
                print("    " + fd["kind"] + " -- " + (fd["detail"].strip().splitlines() or [""])[-1][:200], flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if any(r["findings"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
