"""Two (or ``world``) local processes joined as one torch.distributed job, as torchrun starts
them: the launcher the distributed tests share."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys

import cntkio

#: the source folder, put first on each process's PYTHONPATH
SRC = os.path.dirname(os.path.dirname(os.path.abspath(cntkio.__file__)))
TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(argv: list, world: int = 2, what: str = "a process", check: bool = True) -> list[tuple[int, str, str]]:
    """Run ``python argv...`` as ranks 0..world-1 of one job on localhost (one thread each);
    return (rc, stdout, stderr) per rank, asserting (``check``) that every rank succeeded."""
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world), RANK=str(rank),
                   LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, *map(str, argv)], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
    outputs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=TIMEOUT_S)
            outputs.append((p.returncode, out.decode(), err.decode()))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
    for rc, out, err in outputs if check else ():
        assert rc == 0, f"{what} failed:\n{out[-2000:]}\n{err[-3000:]}"
    return outputs


def results(outputs: list[tuple[int, str, str]]) -> list:
    """The JSON each rank printed on its ``RESULT ...`` line."""
    return [json.loads(re.search(r"RESULT (.*)", out).group(1)) for _, out, _ in outputs]
