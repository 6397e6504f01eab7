"""The torch.distributed backend: NCCL only when every process of the node has a GPU of its own
(NCCL refuses two ranks on one GPU: "Duplicate GPU detected", seen with two processes on a
one-GPU machine), gloo otherwise."""
from __future__ import annotations

import pytest
import torch

from cntkio.actions._common import _backend


@pytest.mark.parametrize("cuda,gpus,local,world,want", [
    (False, 0, None, 2, "gloo"),
    (True, 1, "2", 2, "gloo"),      # two processes, one GPU
    (True, 1, None, 2, "gloo"),     # no LOCAL_WORLD_SIZE: the world is taken as local
    (True, 2, "2", 2, "nccl"),
    (True, 8, "4", 8, "nccl"),      # two nodes of four
    (True, 2, "4", 8, "gloo"),
])
def test_backend_by_processes_per_gpu(monkeypatch, cuda, gpus, local, world, want):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    if local is None:
        monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", local)
    assert _backend(world) == want
