#!/usr/bin/env python3
"""The ceiling: cntkio against a hand-written np.memmap loader and the packaged peers, as torch batches.

    pip install -r bench/requirements-peers.txt      # benchmark-only peers (a separate venv is best)
    python bench/ceiling.py --quick                  # 50k rows / 20k sequences, a few minutes
    python bench/ceiling.py                          # 500k rows / 200k sequences (issue 33)
    python bench/ceiling.py --only tokens --tools "cntkio CBF;DIY np.memmap" --workers 0

Two workloads (bench/ceiling_data.py): ``dense``, rows of 784 float32 and a label; ``tokens``,
sequences of 5..200 token ids below 50,000 and a label. Every loader (bench/ceiling_loaders.py,
bench/ceiling_peers.py) writes them once in its own format under ``--data`` (cntkio: CBF and CTF)
and delivers batches of ``--batch`` samples as torch tensors (cntkio's minibatch sizes count
samples, as CNTK's: tokens for sequences, so its tokens batches are ``--batch`` x the mean length,
about as many sequences): dense ``x`` [B, 784] and ``y``;
tokens padded int64 ``tokens`` [B, T], ``lengths`` and ``y``. Each cell (workload, loader,
shuffle on/off, DataLoader ``num_workers`` 0/2) runs one epoch in a process of its own:

* ``samples/s``: after the first batch, to the end of the epoch (every tensor of every batch is
  touched: its ``shape``); ``x DIY``: over the DIY memmap loader's figure in the same setting;
* ``cpu us/sample``: CPU seconds of the cell's processes (workers included) over the epoch, per
  sample: what wall time becomes where no core is idle, and steadier than wall time on a shared
  machine;
* ``first batch s``: from building the loader to holding its first batch (the loader's modules
  imported before, in every cell);
* ``peak anon MB``: the largest RssAnon of the cell's processes together (workers included),
  sampled every 10 ms; RssAnon leaves out a mapped file's page cache, which is not the reader's;
* ``resume`` (shuffle on, loaders that checkpoint): the state taken after half the epoch's
  batches, restored into a new loader: whether its next 16 batches equal the uninterrupted run's
  (CRC of every tensor) and the seconds from building the new loader to its first batch.

Before each cell every file of the loader's format is read once (the page cache warm for all:
cntkio's CBF writer bypasses the cache with O_DIRECT, the others do not). Runs on a shared
machine compare the loaders of one run with each other only.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SIZES = {"quick": {"dense": 50_000, "tokens": 20_000}, "full": {"dense": 500_000, "tokens": 200_000}}
RESUME_BATCHES = 16


def tools() -> list:
    from ceiling_loaders import Cntkio, Memmap, MemmapStateful
    from ceiling_peers import PEERS
    return [Memmap(), MemmapStateful(), Cntkio("cbf"), Cntkio("cbf", global_randomization=True), Cntkio("ctf"),
            *PEERS]


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.lower())


def prepare(args, workload: str, n: int) -> str:
    """The workload's folder, every loader's format written once (a ``done`` mark each)."""
    import numpy as np
    from ceiling_data import make
    root = os.path.join(args.data, f"{workload}-{n}")
    os.makedirs(root, exist_ok=True)
    data = None
    meta = os.path.join(root, "meta.json")
    if not os.path.exists(meta):
        data = make(workload, n, args.seed)
        mean = float(data["offsets"][-1]) / n if workload == "tokens" else 1.0
        with open(meta, "w") as f:
            json.dump({"n": n, "mean_length": mean}, f)
    for tool in tools():
        if not tool.available() or (args.tools and tool.name not in args.tools):
            continue
        folder = os.path.join(root, _slug(type(tool).__name__ + getattr(tool, "fmt", "")))
        if os.path.exists(os.path.join(folder, "done")):
            continue
        os.makedirs(folder, exist_ok=True)
        if data is None:
            data = make(workload, n, args.seed)
        t0 = time.perf_counter()
        tool.write(data, folder)
        open(os.path.join(folder, "done"), "w").close()
        print(f"  wrote {workload} for {tool.name} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    del np
    return root


class _Rss(threading.Thread):
    """Peak RssAnon of this process and its descendants, sampled every 10 ms."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self.stop = False

    @staticmethod
    def _anon(pid: int) -> int:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    @staticmethod
    def _children(pid: int) -> list:
        out = []
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out += [int(c) for c in f.read().split()]
        except OSError:
            pass
        return out

    def run(self) -> None:
        while not self.stop:
            todo, total = [os.getpid()], 0
            while todo:
                p = todo.pop()
                total += self._anon(p)
                todo += self._children(p)
            self.peak = max(self.peak, total)
            time.sleep(0.01)


def _warm(folder: str) -> None:
    """Read every file under ``folder`` once (into the page cache)."""
    for root, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                while f.read(1 << 24):
                    pass


def _cpu() -> float:
    """CPU seconds of this process and its reaped children (DataLoader workers), user + system."""
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def _crc(batch: dict) -> int:
    c = 0
    for k in sorted(batch):
        c = zlib.crc32(batch[k].contiguous().numpy().tobytes(), c)
    return c


def _rows(batch: dict) -> int:
    for v in batch.values():
        v.shape  # noqa: B018 (touched: nothing is lazy)
    return int(batch["y"].shape[0])


def run_cell(cell: dict) -> dict:
    tool = next(t for t in tools() if t.name == cell["tool"])
    folder, workload, shuffle, workers = cell["folder"], cell["workload"], cell["shuffle"], cell["workers"]
    batch = cell["batch"]
    if getattr(tool, "counts_samples", False):  # cntkio: a minibatch size counts samples (tokens), as CNTK
        batch = int(round(batch * cell["mean_length"]))
    args = (folder, workload, shuffle, workers, cell["seed"], batch)
    _warm(folder)
    tool.import_modules()             # imports are not the loader's reading (DataLoader workers fork after them)
    rss = _Rss()
    rss.start()
    c0 = _cpu()
    t0 = time.perf_counter()
    it = iter(tool.loader(*args))
    n = _rows(next(it))
    t1 = time.perf_counter()
    first_n, batches = n, 1
    for batch in it:
        n += _rows(batch)
        batches += 1
    t2 = time.perf_counter()
    del it
    import gc
    gc.collect()                      # the workers are joined and reaped: their CPU is counted
    cpu = _cpu() - c0
    out = {"samples": n, "batches": batches, "first_s": t1 - t0, "cpu_us": 1e6 * cpu / max(n, 1),
           "rate": (n - first_n) / max(t2 - t1, 1e-9), "epoch_s": t2 - t0}
    if shuffle and getattr(tool, "stateful", False) and cell.get("resume", True):
        out.update(_resume(tool, args, batches))
    rss.stop = True
    rss.join()
    out["peak_anon_mb"] = rss.peak / 1e6
    return out


def _resume(tool, args, batches: int) -> dict:
    k = max(1, batches // 2 - RESUME_BATCHES // 2)
    loader = tool.loader(*args, resume=True)
    it = iter(loader)
    for _ in range(k):
        next(it)
    state = tool.state(it, loader)
    if state is None:
        return {"resume": "no state"}
    expected = [_crc(next(it)) for _ in range(RESUME_BATCHES)]
    del it, loader
    t0 = time.perf_counter()
    loader = tool.loader(*args, resume=True, state=state)
    it = iter(loader)
    got = [_crc(next(it))]
    t1 = time.perf_counter()
    got += [_crc(next(it)) for _ in range(RESUME_BATCHES - 1)]
    return {"resume": "identical" if got == expected else "DIFFERENT", "resume_s": t1 - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="50k rows / 20k sequences")
    ap.add_argument("--data", default=os.path.join(HERE, "data", "ceiling"))
    ap.add_argument("--only", default="dense,tokens")
    ap.add_argument("--tools", default="", help="';'-separated loader names (default: all installed)")
    ap.add_argument("--workers", default="0,2")
    ap.add_argument("--shuffle", default="on,off")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    ap.add_argument("--json", help="write the results here too")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cell:
        print(json.dumps(run_cell(json.loads(args.cell))))
        return
    args.tools = [t for t in args.tools.split(";") if t]
    sizes = SIZES["quick" if args.quick else "full"]
    missing = [t.name for t in tools() if not t.available()]
    print(f"# ceiling ({'quick' if args.quick else 'full'}), load {os.getloadavg()[0]:.2f}; not installed: "
          f"{', '.join(missing) or 'none'}")
    results = []
    for workload in args.only.split(","):
        folder_root = prepare(args, workload, sizes[workload])
        with open(os.path.join(folder_root, "meta.json")) as f:
            mean_length = json.load(f)["mean_length"]
        print(f"\n## {workload}: {sizes[workload]:,} {'rows' if workload == 'dense' else 'sequences'}, "
              f"batches of {args.batch}\n")
        print("| loader | shuffle | workers | samples/s | x DIY | cpu us/sample | first batch s | peak anon MB | resume |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        diy = {}
        for tool in tools():
            if not tool.available() or (args.tools and tool.name not in args.tools):
                continue
            folder = os.path.join(folder_root, _slug(type(tool).__name__ + getattr(tool, "fmt", "")))
            for shuffle in [s == "on" for s in args.shuffle.split(",")]:
                for workers in [int(w) for w in args.workers.split(",")]:
                    cell = dict(tool=tool.name, folder=folder, workload=workload, shuffle=shuffle,
                                workers=workers, seed=args.seed, batch=args.batch, mean_length=mean_length)
                    try:
                        p = subprocess.run([sys.executable, __file__, "--cell", json.dumps(cell)],
                                           capture_output=True, text=True, timeout=args.timeout)
                        r = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else \
                            {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:120]}
                    except subprocess.TimeoutExpired:
                        r = {"error": f"timeout {args.timeout} s"}
                    cell.update(r)
                    results.append(cell)
                    if tool.name == "DIY np.memmap" and "rate" in r:
                        diy[(shuffle, workers)] = r["rate"]
                    _print(cell, diy)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


def _print(c: dict, diy: dict) -> None:
    on = "on" if c["shuffle"] else "off"
    if "error" in c:
        print(f"| {c['tool']} | {on} | {c['workers']} | error: {c['error']} | | | | | |", flush=True)
        return
    ref = diy.get((c["shuffle"], c["workers"]))
    ratio = f"{c['rate'] / ref:.2f}" if ref else ""
    resume = c.get("resume", "")
    if "resume_s" in c:
        resume += f", {c['resume_s']:.3f} s"
    print(f"| {c['tool']} | {on} | {c['workers']} | {c['rate']:,.0f} | {ratio} | {c['cpu_us']:.2f} | {c['first_s']:.3f} | "
          f"{c['peak_anon_mb']:.0f} | {resume} |", flush=True)


if __name__ == "__main__":
    main()
