"""parallelTrain scaling: cntkio's train action on 1 and 2 CPU processes (gloo) against plain
PyTorch DistributedDataParallel on the same machine, data and network.

Runs, each timed by its per-epoch time (the median over epochs 2..N):

* cntkio, one process;
* cntkio, two processes, DataParallelSGD with gradientBits = 32, 1;
* cntkio, two processes, ModelAveragingSGD and BlockMomentumSGD;
* plain torch: one process, and two processes with DDP (the same MLP, minibatch and data, read
  from memory), as the reference for how DDP scales here.

The issue's target: DataParallelSGD on 2 processes scales as DDP does (ratio of 2-process to
1-process epoch time within 10% of DDP's). Every process uses one thread.

    python bench/parallel_train.py              # full: 60000 samples of 256 dims, MLP 256:1024:1024:10, 4 epochs
    python bench/parallel_train.py --small      # smoke run (about a minute)
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

SRC = Path(__file__).resolve().parents[1] / "src"

CONFIG = """
command = train
precision = float
deviceId = cpu
numCPUThreads = 1
progressBar = false
modelPath = {out}/model.dnn
makeMode = false
train = [
    action = train
    SimpleNetworkBuilder = [ layerSizes = {dim}:{hidden}:{hidden}:10 ; layerTypes = Sigmoid ]
    SGD = [ minibatchSize = {mb} ; learningRatesPerSample = 0.001 ; momentumPerMB = 0.9 ; maxEpochs = {epochs}
            numMBsToShowResult = 0 ; parallelTrain = [ {parallel} ] ]
    reader = [ readerType = CNTKTextFormatReader ; file = {data} ; randomize = false
               input = [ features = [ dim = {dim} ; format = dense ] ; labels = [ dim = 10 ; format = dense ] ] ]
]
"""

DDP = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import torch
    torch.set_num_threads(1)
    data, dim, hidden, mb, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    arr = np.load(data)
    x, y = torch.from_numpy(arr["x"]), torch.from_numpy(arr["y"])
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        torch.distributed.init_process_group("gloo")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(dim, hidden), torch.nn.Sigmoid(), torch.nn.Linear(hidden, hidden),
                                torch.nn.Sigmoid(), torch.nn.Linear(hidden, 10))
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    for epoch in range(epochs):
        t0 = time.perf_counter()
        for s in range(0, x.shape[0], mb):
            xb, yb = x[s + rank:s + mb:world], y[s + rank:s + mb:world]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb, reduction="sum").backward()
            opt.step()
        if rank == 0:
            print(f"epochTime = {time.perf_counter() - t0:.3f}s", flush=True)
    if world > 1:
        torch.distributed.destroy_process_group()
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(argv, world: int) -> str:
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   OMP_NUM_THREADS="1")
        if world > 1:
            env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world), RANK=str(rank),
                       LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world))
        procs.append(subprocess.Popen([sys.executable, *argv], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outs = [p.communicate() for p in procs]
    for p, (out, err) in zip(procs, outs):
        if p.returncode:
            raise SystemExit(f"a process failed:\n{out.decode()[-2000:]}\n{err.decode()[-3000:]}")
    return outs[0][0].decode()


def epoch_time(text: str) -> float:
    times = [float(v) for v in re.findall(r"epochTime = ([0-9.]+)s", text)]
    return statistics.median(times[1:] if len(times) > 1 else times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true")
    args = ap.parse_args()
    n, dim, hidden, mb, epochs = (4000, 32, 128, 128, 3) if args.small else (60000, 256, 1024, 256, 4)
    with tempfile.TemporaryDirectory() as d:
        rng = np.random.default_rng(0)
        y = rng.integers(0, 10, n)
        x = (rng.standard_normal((n, dim)) + np.eye(10, dim)[y] * 2).astype(np.float32)
        data = os.path.join(d, "d.ctf")
        with open(data, "w") as f:
            eye = np.eye(10, dtype=int)
            for xi, yi in zip(x, y):
                f.write("|features " + " ".join("%.4f" % v for v in xi) + " |labels "
                        + " ".join(map(str, eye[yi])) + "\n")
        np.savez(os.path.join(d, "d.npz"), x=x, y=y)
        ddp = os.path.join(d, "ddp.py")
        Path(ddp).write_text(DDP)
        rows = []

        def cntkio(parallel: str, world: int, label: str) -> None:
            cfg = os.path.join(d, f"{len(rows)}.cntk")
            Path(cfg).write_text(CONFIG.format(out=os.path.join(d, str(len(rows))), dim=dim, hidden=hidden, mb=mb,
                                               epochs=epochs, parallel=parallel, data=data))
            rows.append((label, epoch_time(launch(["-m", "cntkio", f"configFile={cfg}"], world))))

        cntkio("", 1, "cntkio, 1 process")
        cntkio("parallelizationMethod = DataParallelSGD", 2, "cntkio, 2 processes, DataParallelSGD 32 bits")
        cntkio("parallelizationMethod = DataParallelSGD ; DataParallelSGD = [ gradientBits = 1 ]", 2,
               "cntkio, 2 processes, DataParallelSGD 1 bit")
        cntkio(f"parallelizationMethod = ModelAveragingSGD ; ModelAveragingSGD = [ blockSize = {4 * mb} ]", 2,
               "cntkio, 2 processes, ModelAveragingSGD")
        cntkio(f"parallelizationMethod = BlockMomentumSGD ; BlockMomentumSGD = [ blockSize = {4 * mb} ]", 2,
               "cntkio, 2 processes, BlockMomentumSGD")
        for world in (1, 2):
            out = launch([ddp, os.path.join(d, "d.npz"), str(dim), str(hidden), str(mb), str(epochs)], world)
            rows.append((f"torch, {world} process{'es' if world > 1 else ''}{' (DDP)' if world > 1 else ''}",
                         epoch_time(out)))
    print(f"{n} samples of {dim} dims, MLP {dim}:{hidden}:{hidden}:10, minibatch {mb}, {epochs} epochs, CPU, 1 thread each")
    for label, t in rows:
        print(f"{label:50s} {t:8.3f} s/epoch")
    t = dict(rows)
    ours = t["cntkio, 2 processes, DataParallelSGD 32 bits"] / t["cntkio, 1 process"]
    theirs = t["torch, 2 processes (DDP)"] / t["torch, 1 process"]
    print(f"2-process / 1-process epoch time: cntkio {ours:.3f}, DDP {theirs:.3f}")


if __name__ == "__main__":
    main()
