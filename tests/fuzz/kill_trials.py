#!/usr/bin/env python3
"""SIGKILL at random moments during the writes cntkio makes (issue 30): after each kill the final
name holds the old file or a complete new one (byte for byte the file an uninterrupted run
writes), never a partial one; a killed training run, run again, ends with exactly the parameters
of an uninterrupted run.

    nice -n 10 python tests/fuzz/kill_trials.py --trials 20          # the campaign: 20 per kind
    python tests/fuzz/kill_trials.py --kind convert --trials 3

Kinds: ``convert`` (``cntkio convert ctf2bin`` over an older output), ``index`` (the CTF index
cache, ``cacheIndex = true``), ``cache`` (the UCIFastReader binary cache, legacy
``BinaryWriter``), ``train`` (the train action with makeMode resume). Each kind first runs once
uninterrupted for its reference output and its duration T; each trial kills at a moment drawn
uniformly in [0, T] (the process's start included), so some trials kill before the write starts
and some after it ends; the summary counts the outcomes. Temporary files a kill leaves beside the
output are allowed (no process is left to remove them); a trial that leaves one killed the
process while it wrote (``killed_mid_write``), and the file is removed before the next trial.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
SRC = os.path.join(os.path.dirname(TESTS), "src")


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _run(cmd: list[str], cwd: str, kill_at: float | None, watch: bool = False) -> tuple[float, float]:
    """Run ``cmd``; SIGKILL it ``kill_at`` seconds after its start (None: let it finish, which
    it must). Returns the seconds it ran and (``watch``) when its first new file appeared in
    ``cwd`` (the write's start; polled every millisecond)."""
    t0 = time.monotonic()
    before = set(os.listdir(cwd))
    first_write = 0.0
    proc = subprocess.Popen(cmd, cwd=cwd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if kill_at is None:
            while watch and proc.poll() is None and not first_write:
                if set(os.listdir(cwd)) - before:
                    first_write = time.monotonic() - t0
                time.sleep(0.001)
            _, err = proc.communicate(timeout=600)
            if proc.returncode != 0:
                raise AssertionError(f"{cmd} failed: {err.decode()[-2000:]}")
        else:
            try:
                proc.wait(timeout=kill_at)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    return time.monotonic() - t0, first_write


# --- the file-writing kinds ----------------------------------------------------------------------

def _ctf(path: str, rows: int, seed: int) -> None:
    import numpy as np
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 8))
    with open(path, "w") as f:
        f.writelines(f"{i} |x {' '.join('%.5f' % v for v in x[i])} |y {i % 7}:1\n" for i in range(rows))


def _setup_convert(work: str) -> tuple[list[str], str, bytes | None]:
    _ctf(os.path.join(work, "in.ctf"), 60000, 1)
    _ctf(os.path.join(work, "old.ctf"), 50, 2)
    cmd = [sys.executable, "-m", "cntkio", "convert", "ctf2bin", "{in}", "out.cbf", "--stream", "x:x:dense:8",
           "--stream", "y:y:sparse:7", "--chunk-size", "200000"]
    _run([c.replace("{in}", "old.ctf") for c in cmd], work, None)          # the older output
    old = _read(os.path.join(work, "out.cbf"))
    return [c.replace("{in}", "in.ctf") for c in cmd], "out.cbf", old


_INDEX = """
from cntkio import MinibatchSource
d = {"type": "CNTKTextFormatDeserializer", "file": "in.ctf", "cacheIndex": True, "chunkSizeInBytes": 100000,
     "input": {"x": {"dim": 8, "format": "dense"}, "y": {"dim": 7, "format": "sparse"}}}
MinibatchSource([d], max_sweeps=1)
"""


def _setup_index(work: str) -> tuple[list[str], str, bytes | None]:
    _ctf(os.path.join(work, "in.ctf"), 60000, 1)
    return [sys.executable, "-c", _INDEX], "in.ctf.ctfidx", None


_CACHE = """
from cntkio.readers.legacy.ucifast import UCIFastDeserializer
UCIFastDeserializer({"file": "in.txt", "streams": {"x": {"dim": 8, "start": 1},
                     "y": {"dim": 1, "start": 0, "labelDim": 7}},
                     "cache": {"files": {"x": "cache.bin", "y": "cache.bin"}}}, trace_level=0).close()
"""


def _setup_cache(work: str) -> tuple[list[str], str, bytes | None]:
    import numpy as np
    rng = np.random.default_rng(3)
    x = rng.standard_normal((60000, 8))
    with open(os.path.join(work, "in.txt"), "w") as f:
        f.writelines(f"{i % 7} {' '.join('%.5f' % v for v in x[i])}\n" for i in range(len(x)))
    st = os.stat(os.path.join(work, "in.txt"))
    os.utime(os.path.join(work, "in.txt"), ns=(st.st_atime_ns, 10**18))   # one mtime for every trial
    return [sys.executable, "-c", _CACHE], "cache.bin", None


SETUPS = {"convert": _setup_convert, "index": _setup_index, "cache": _setup_cache}


def file_trials(kind: str, trials: int, rng: random.Random) -> dict:
    """``trials`` kills of the ``kind`` write; each ends with the old file, no file (where there was
    none) or the reference new one under the final name, else AssertionError."""
    outcomes = {"old": 0, "new": 0, "killed_mid_write": 0}
    with tempfile.TemporaryDirectory(prefix=f"cntkio-kill-{kind}-") as work:
        cmd, final, old = SETUPS[kind](work)
        target = os.path.join(work, final)
        files = set(os.listdir(work)) | {final}
        if old is None and os.path.exists(target):
            os.unlink(target)
        duration, writing = _run(cmd, work, None, watch=True)
        new = _read(target)
        assert new is not None and new != old
        for t in range(trials):
            _restore(work, target, old)
            # every other trial kills while the output is being written (from its first file to the
            # end), the others anywhere in the run
            when = rng.uniform(writing if t % 2 == 0 else 0, duration)
            _run(cmd, work, when)
            left = set(os.listdir(work)) - files       # a temporary file the kill left: it hit the write
            outcomes["killed_mid_write"] += bool(left)
            for name in left:
                os.unlink(os.path.join(work, name))
            got = _read(target)
            if got == new:
                outcomes["new"] += 1
            elif got == old:
                outcomes["old"] += 1
            else:
                raise AssertionError(f"{kind}: killed at {when:.3f} s of {duration:.3f} s, {final} holds "
                                     f"{len(got)} bytes, neither the old ({len(old or b'')}) nor the new "
                                     f"({len(new)}) file")
    return {"kind": kind, "trials": trials, "seconds_per_run": round(duration, 2),
            "write_starts_at": round(writing, 2), **outcomes}


def _restore(work: str, target: str, old: bytes | None) -> None:
    """The folder as before the write: the old output (or none); temporary files a kill left are
    kept (the next run must cope with them) but counted out of the outcome."""
    if old is None:
        if os.path.exists(target):
            os.unlink(target)
    else:
        with open(target + ".restore", "wb") as f:
            f.write(old)
        os.replace(target + ".restore", target)


# --- training ----------------------------------------------------------------------------------

def train_trials(trials: int, rng: random.Random) -> dict:
    """Kill a training run at a random moment, run it again (makeMode resumes from the last epoch
    file), and compare the final model's parameters and SGD state with an uninterrupted run's."""
    sys.path.insert(0, os.path.join(TESTS, "actions"))
    import torch
    from test_actions_train import CONFIG, _data, _params
    resumed_from: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="cntkio-kill-train-") as work:
        _data(os.path.join(work, "data.ctf"))

        def config(name: str) -> str:
            path = os.path.join(work, f"{name}.cntk")
            with open(path, "w") as f:
                f.write(CONFIG.format(out=os.path.join(work, name), data=os.path.join(work, "data.ctf")))
            return path
        cmd = [sys.executable, "-m", "cntkio", f"configFile={config('ref')}"]
        duration, _ = _run(cmd, work, None)
        ref = _params(os.path.join(work, "ref", "model.dnn"))
        for t in range(trials):
            run_cfg = config(f"t{t}")
            _run([sys.executable, "-m", "cntkio", f"configFile={run_cfg}"], work, rng.uniform(0, duration))
            out = os.path.join(work, f"t{t}")
            done = sum(os.path.exists(os.path.join(out, f"model.dnn.{e}")) for e in range(1, 4)) + \
                os.path.exists(os.path.join(out, "model.dnn"))
            resumed_from[str(done)] = resumed_from.get(str(done), 0) + 1
            _run([sys.executable, "-m", "cntkio", f"configFile={run_cfg}"], work, None)
            got = _params(os.path.join(out, "model.dnn"))
            for x, y in zip(ref[0] + ref[1], got[0] + got[1]):
                if not torch.equal(x, y):
                    raise AssertionError(f"train: trial {t} (killed with {done} epoch files) resumed to other parameters")
            shutil.rmtree(out)
    return {"kind": "train", "trials": trials, "seconds_per_run": round(duration, 2),
            "epoch_files_at_kill": resumed_from}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kind", action="append", choices=[*SETUPS, "train"], help="repeatable (default: all)")
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--seed", type=int, default=30)
    p.add_argument("--json", help="write the summary here")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    results = []
    for kind in args.kind or [*SETUPS, "train"]:
        res = train_trials(args.trials, rng) if kind == "train" else file_trials(kind, args.trials, rng)
        results.append(res)
        print(json.dumps(res), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
