"""On a CUDA device: tensors delivered to the GPU (``to_torch(device=...)``, pinned memory, the
DataLoader's pinning) equal the CPU ones, and the shipped configs train with ``deviceId = 0``
(SimpleNetworkBuilder, NDL, BrainScript, the image CNN) to the same error bars as on the CPU.

These need a GPU, which CI does not have: without one the module is skipped as a whole (the CPU
paths are tested everywhere else). They were run on a lent NVIDIA GPU; docs/torch.md says when and
what they showed."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import paths
from cntkio import MinibatchSource, StreamDef, StreamDefs
from cntkio.deserializers.ctf import CTFDeserializer
from cntkio.integrations.torch import MinibatchIterableDataset, to_torch
from cntkio.actions.runner import run

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

EX = os.path.join(str(paths.REPO), "examples")

CTF = "".join(
    f"{s}\t|x {s}.5 {s + 1}.25 -{s}\t|w {s % 7}:1\n" + "".join(
        f"{s}\t|w {(s * 3 + t) % 7}:1\n" for t in range(s % 4))
    for s in range(40))


def _source(path, randomize=False):
    streams = StreamDefs(x=StreamDef(field="x", shape=3), w=StreamDef(field="w", shape=7, is_sparse=True))
    return MinibatchSource(CTFDeserializer(str(path), streams), randomize=randomize, max_sweeps=1)


@pytest.fixture()
def ctf(tmp_path):
    p = tmp_path / "d.ctf"
    p.write_text(CTF)
    return p


def _batches(path, **kw):
    src = _source(path)
    out = []
    while True:
        mb = src.next_minibatch(24)
        if not mb:
            break
        out.append(to_torch(mb, **kw))
    src.close()
    return out


@pytest.mark.parametrize("pin", [False, True])
def test_to_torch_on_the_gpu_equals_the_cpu(ctf, pin):
    cpu = _batches(ctf)
    gpu = _batches(ctf, device="cuda:0", pin_memory=pin)
    assert len(cpu) == len(gpu) > 1
    for a, b in zip(cpu, gpu):
        assert sorted(a) == sorted(b)
        for k in a:
            assert b[k].device == torch.device("cuda", 0)
            x, y = a[k], b[k].cpu()
            if x.layout == torch.sparse_csr:
                x, y = x.to_dense(), y.to_dense()
            assert x.dtype == y.dtype and torch.equal(x, y), k


def test_token_ids_and_masks_on_the_gpu(ctf):
    cpu = _batches(ctf, ids=("w",), masks=True)
    gpu = _batches(ctf, ids=("w",), masks=True, device=torch.device("cuda"), pin_memory=True)
    for a, b in zip(cpu, gpu):
        assert b["w"].dtype == torch.int64 and b["w"].is_cuda and b["w_mask"].dtype == torch.bool
        for k in a:
            assert torch.equal(a[k], b[k].cpu()), k


def test_pinned_tensors_are_page_locked(ctf):
    src = _source(ctf)
    mb = src.next_minibatch(24)
    src.close()
    out = to_torch(mb, pin_memory=True)
    assert all(t.is_pinned() for t in out.values())
    x = mb[src.streams.x].to_torch(pin_memory=True)
    assert x.is_pinned() and torch.equal(x, mb[src.streams.x].to_torch())


def test_dataloader_pins_every_tensor(ctf):
    ds = MinibatchIterableDataset(lambda: _source(ctf), 24, ids=("w",))
    plain = list(torch.utils.data.DataLoader(ds, batch_size=None))
    pinned = list(torch.utils.data.DataLoader(ds, batch_size=None, pin_memory=True))
    assert len(plain) == len(pinned) > 1
    for a, b in zip(plain, pinned):
        for k in a:
            assert b[k].is_pinned(), k
            x, y = a[k], b[k]
            if x.layout == torch.sparse_csr:
                x, y = x.to_dense(), y.to_dense()
            assert torch.equal(x, y), k
        moved = {k: v.to("cuda", non_blocking=True) for k, v in b.items()}
        torch.cuda.synchronize()
        assert torch.equal(moved["x"].cpu(), a["x"])


def _final(results):
    for _section, action, result in results:
        if action == "test":
            return result.averages
    raise AssertionError(f"no test action in {[r[:2] for r in results]}")


@pytest.mark.parametrize("config,extra,bar", [
    ("digits/digits.cntk", ["dataDir=examples/digits"], 0.05),
    ("ndl/spec_mnist.cntk", ["dataDir=examples/legacy", "ndlMacros=examples/ndl/macros.ndl"], 0.06),
    ("brainscript/digits_inline.cntk", [], 0.06),
    ("images/shapes.cntk", ["dataDir=examples/images"], 0.2),
])
def test_shipped_configs_train_on_the_gpu(tmp_path, monkeypatch, config, extra, bar):
    monkeypatch.chdir(str(paths.REPO))
    seen = []
    real_to = torch.nn.Module.to

    def spy(self, *args, **kwargs):
        out = real_to(self, *args, **kwargs)
        seen.extend(p.device.type for p in self.parameters())
        return out
    monkeypatch.setattr(torch.nn.Module, "to", spy)
    results = run([f"configFile={EX}/{config}", *extra, f"outDir={tmp_path}", f"outputDir={tmp_path}", "deviceId=0",
                   "progressBar=false"])
    averages = _final(results)
    errors = [v for k, v in averages.items() if "err" in k.lower()]
    assert errors and min(errors) < bar, averages
    assert "cuda" in seen          # the network was moved to the GPU
    assert any(f.endswith(".dnn") for f in os.listdir(tmp_path))


def test_device_zero_resolves_to_the_first_gpu():
    from cntkio.actions._common import resolve_device
    from cntkio.config import parse_config
    assert resolve_device(parse_config("deviceId=0")) == torch.device("cuda", 0)
    assert resolve_device(parse_config("deviceId=auto")) == torch.device("cuda", 0)


def test_numpy_view_of_a_gpu_batch_round_trips(ctf):
    (first, *_) = _batches(ctf, device="cuda:0")
    x = first["x"]
    assert np.array_equal(x.cpu().numpy(), _batches(ctf)[0]["x"].numpy())
