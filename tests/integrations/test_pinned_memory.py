"""``to_torch(pin_memory=True)``: tensors in page-locked memory for a fast copy to a GPU (the
pinning itself needs CUDA; here torch's side is stood in for, and the CPU-only error is checked)."""
import numpy as np
import pytest
import torch

from cntkio import MinibatchSource
from cntkio.integrations.torch import to_torch
from fakes import FakeDeserializer


def _minibatch():
    src = MinibatchSource(FakeDeserializer([[1, 1, 1], [1, 1]], dense_dim=3, sparse_dim=4),
                          randomize=False, max_sweeps=1)
    mb = src.next_minibatch(5)
    src.close()
    return src, mb


def test_without_cuda_pinning_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    src, mb = _minibatch()
    with pytest.raises(RuntimeError, match="pinned memory is for copies to a CUDA device"):
        mb[src.streams.x].to_torch(pin_memory=True)
    with pytest.raises(RuntimeError, match="pinned memory"):
        to_torch(mb, pin_memory=True)


def test_every_tensor_is_pinned_and_copied_without_blocking(monkeypatch):
    pinned, moved = [], []

    def pin_memory(self):
        pinned.append(self.shape)
        return self.clone()

    def to(self, *args, **kwargs):
        moved.append(kwargs.get("non_blocking"))
        return self
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.Tensor, "pin_memory", pin_memory)
    src, mb = _minibatch()
    want = mb[src.streams.x].to_torch()
    got = mb[src.streams.x].to_torch(pin_memory=True)
    assert pinned == [want.shape] and torch.equal(got, want)
    monkeypatch.setattr(torch.Tensor, "to", to)
    pinned.clear()
    out = to_torch(mb, device="cuda:0", pin_memory=True)
    assert sorted(out) == ["x", "x_lengths", "y", "y_lengths"]
    assert len(pinned) == 4 and moved == [True] * 4   # every tensor pinned, then copied non-blocking
    assert np.array_equal(out["x"].numpy(), want.numpy())
