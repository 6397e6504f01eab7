"""Networks built from CNTK's own configs vs the same networks written by hand in PyTorch.

The method of ``bench/brainscript_vs_torch.py`` (interleaved runs, the median time per training
step, torch.optim.SGD on the same in-memory data, criteria summed over the minibatch as CNTK's)
on two networks read from CNTK's Example configs (vendored in ``bench/configs/cntk/``, origin in
its README), built through cntkio's config layer as ``cntkio configFile=...`` builds them:

* ResNet20 of ``ResNet20_CIFAR10.cntk`` (+ ``Macros.bs``): 19 convolutions with batch
  normalisation, the residual additions, average pooling, a linear layer; by hand: ``nn.Conv2d``,
  ``nn.BatchNorm2d`` (CNTK's time constant as its momentum), the same blocks.
* the slot tagger of ``ATIS.cntk``: three one-hot words spliced (``RowStack``), an embedding
  ``Parameter * features``, ``BS.RNNs.RecurrentLSTMPStack`` (one LSTM of CNTK's speech recipes:
  each gate its own weights and bias, peepholes, state 0.1 before a sequence), ``W * h + b``;
  by hand: the same step written as a loop over time on padded sequences, the input projections
  of all steps computed before the loop.

The issue's target: the network from the config within 10% of the hand-written one.

    python bench/configs_vs_torch.py                     # CPU, both networks, small minibatches
    python bench/configs_vs_torch.py --only resnet --batch 64 --steps 10 --repeats 5
    python bench/configs_vs_torch.py --small             # a smoke run
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from brainscript_vs_torch import step_time  # noqa: E402
from cntkio.config.loader import load_config  # noqa: E402
from cntkio.networks.brainscript.config import build_from_config  # noqa: E402

CONFIGS = HERE / "configs" / "cntk"


def from_config(name: str, command: str, dev):
    """The network of ``command``'s BrainScriptNetworkBuilder in CNTK's config ``name``."""
    tmp = tempfile.mkdtemp(prefix="cntkio-bench-")
    cfg = load_config([f"configFile={CONFIGS / name}", f"configDir={CONFIGS}", f"outputDir={tmp}",
                       f"OutputDir={tmp}", f"dataDir={tmp}", f"DataDir={tmp}"])
    return build_from_config(cfg(command)).to(dev)


# --- ResNet20 (ResNet20_CIFAR10.cntk with Macros.bs) by hand --------------------------------------
class ConvBN(torch.nn.Module):
    """ConvBNLayer: a convolution without bias (padded), batch normalisation per channel."""

    def __init__(self, cin, cout, k, stride, momentum):
        super().__init__()
        self.conv = torch.nn.Conv2d(cin, cout, k, stride, padding=k // 2, bias=False)
        self.bn = torch.nn.BatchNorm2d(cout, momentum=momentum, eps=1e-5)

    def forward(self, x):
        return self.bn(self.conv(x))


class Basic(torch.nn.Module):
    """ResNetBasic (stride 1, same width) or ResNetBasicInc (stride 2, a 1x1 shortcut)."""

    def __init__(self, cin, cout, stride, momentum):
        super().__init__()
        self.a, self.b = ConvBN(cin, cout, 3, stride, momentum), ConvBN(cout, cout, 3, 1, momentum)
        self.s = ConvBN(cin, cout, 1, stride, momentum) if stride != 1 else None

    def forward(self, x):
        b = self.b(torch.relu(self.a(x)))
        return torch.relu(b + (self.s(x) if self.s is not None else x))


class ResNet20(torch.nn.Module):
    def __init__(self, momentum):
        super().__init__()
        blocks = [Basic(16, 16, 1, momentum) for _ in range(3)]
        blocks += [Basic(16, 32, 2, momentum)] + [Basic(32, 32, 1, momentum) for _ in range(2)]
        blocks += [Basic(32, 64, 2, momentum)] + [Basic(64, 64, 1, momentum) for _ in range(2)]
        self.first, self.blocks = ConvBN(3, 16, 3, 1, momentum), torch.nn.Sequential(*blocks)
        self.out = torch.nn.Linear(64, 10)

    def forward(self, x, y):
        h = self.blocks(torch.relu(self.first(x * (1 / 256))))
        z = self.out(F.avg_pool2d(h, 8).flatten(1))
        return -(y * torch.log_softmax(z, -1)).sum()


def bench_resnet(a, dev, sync) -> None:
    net = from_config("ResNet20_CIFAR10.cntk", "TrainConvNet", dev)
    # CNTK's normalizationTimeConstant 4096 samples: a minibatch of n moves the statistics by 1 - exp(-n/4096)
    hand = ResNet20(-math.expm1(-a.batch / 4096)).to(dev)
    gen = torch.Generator().manual_seed(0)
    data = [(torch.rand(a.batch, 3, 32, 32, generator=gen).mul(255).to(dev),
             F.one_hot(torch.randint(0, 10, (a.batch,), generator=gen), 10).float().to(dev)) for _ in range(4)]
    n_bs = sum(p.numel() for p in net.parameters() if p.requires_grad)
    n_hand = sum(p.numel() for p in hand.parameters())
    print(f"resnet20: {n_bs:,} trained values from the config, {n_hand:,} by hand")

    def bs_loss(x, y):
        return net.evaluate({"features": x, "labels": y}, ("ce",))["ce"].sum()
    run("resnet20", {"config": (net, bs_loss), "torch": (hand, hand)}, data, a, sync,
        f"minibatch {a.batch} images 32x32x3")


# --- the ATIS slot tagger (ATIS.cntk) by hand -----------------------------------------------------
class AtisTagger(torch.nn.Module):
    """Embedding of the three spliced words, one LSTMP layer of CNTK.core.bs (each of the four
    gates its own input, hidden and bias weights, peepholes on the input, forget and output gates),
    the output layer."""

    def __init__(self, v, e, h, labels):
        super().__init__()
        self.emb = torch.nn.Parameter(torch.empty(e, 3 * v).uniform_(-0.05, 0.05))
        self.wx = torch.nn.Parameter(torch.empty(4, h, e).uniform_(-0.05, 0.05))     # it, bit, ft, ot
        self.bx = torch.nn.Parameter(torch.zeros(4, h))
        self.wh = torch.nn.Parameter(torch.empty(4, h, h).uniform_(-0.05, 0.05))
        self.peep = torch.nn.Parameter(torch.zeros(3, h))                             # it, ft, ot
        self.W = torch.nn.Parameter(torch.empty(labels, h).uniform_(-0.05, 0.05))
        self.b = torch.nn.Parameter(torch.zeros(labels))
        self.h = h

    def forward(self, x, y, lengths):
        steps, n = int(lengths.max()), len(lengths)
        pin = torch.einsum("ghe,se->sgh", self.wx, x @ self.emb.T) + self.bx          # [samples, 4, h]
        index = _padded_index(lengths, x.device)                                      # [steps, n] -> sample
        hs, h, c = [], torch.full((n, self.h), 0.1, device=x.device), torch.full((n, self.h), 0.1, device=x.device)
        pin_t = torch.cat([pin, pin.new_zeros(1, 4, self.h)])[index]                  # [steps, n, 4, h]
        for t in range(steps):
            hh = torch.einsum("ghk,nk->ngh", self.wh, h)
            p = pin_t[t] + hh
            it = torch.sigmoid(p[:, 0] + self.peep[0] * c)
            bit = it * torch.tanh(p[:, 1])
            ft = torch.sigmoid(p[:, 2] + self.peep[1] * c)
            c = ft * c + bit
            ot = torch.sigmoid(p[:, 3] + self.peep[2] * c)
            h = ot * torch.tanh(c)
            hs.append(h)
        flat = torch.stack(hs).reshape(steps * n, self.h)[_flat_index(lengths, x.device)]
        z = flat @ self.W.T + self.b
        return -(y * torch.log_softmax(z, -1)).sum()


def _padded_index(lengths, dev):
    """[steps, n]: the sample of sequence j at step t (the row after the last sample where none)."""
    total, steps = int(lengths.sum()), int(lengths.max())
    starts = torch.cumsum(lengths, 0) - lengths
    t = torch.arange(steps).unsqueeze(1)
    idx = starts.unsqueeze(0) + t
    return torch.where(t < lengths.unsqueeze(0), idx, torch.full_like(idx, total)).to(dev)


def _flat_index(lengths, dev):
    """The rows of the [steps * n] step outputs that hold the samples, in the samples' order."""
    n = len(lengths)
    return torch.cat([torch.arange(k) * n + j for j, k in enumerate(lengths.tolist())]).to(dev)


def bench_atis(a, dev, sync) -> None:
    net = from_config("ATIS.cntk", "Train", dev)
    v, e, h, labels = 944, 150, 300, 127
    hand = AtisTagger(v, e, h, labels).to(dev)
    gen = torch.Generator().manual_seed(0)
    data = []
    for _ in range(4):
        lengths = torch.randint(5, 21, (a.sequences,), generator=gen)
        n = int(lengths.sum())
        words = [F.one_hot(torch.randint(0, v, (n,), generator=gen), v).float().to(dev) for _ in range(3)]
        y = F.one_hot(torch.randint(0, labels, (n,), generator=gen), labels).float().to(dev)
        pos = torch.cat([torch.arange(k) for k in lengths.tolist()]).to(dev)
        lens = torch.repeat_interleave(lengths, lengths).to(dev)
        data.append((words, y, lengths, pos, lens))

    def bs_loss(words, y, lengths, pos, lens):
        feeds = {"featuresPW": words[0], "featuresCW": words[1], "featuresNW": words[2], "labels": y}
        return net.evaluate(feeds, ("cr",), positions=pos, lengths=lens)["cr"].sum()

    def hand_loss(words, y, lengths, pos, lens):
        return hand(torch.cat(words, 1), y, lengths)
    run("atis", {"config": (net, bs_loss), "torch": (hand, hand_loss)}, data, a, sync,
        f"{a.sequences} sequences of 5-20 words per minibatch")


def run(name, nets: dict, data: list, a, sync, what: str) -> None:
    runs = {}
    for kind, (module, loss_of) in nets.items():
        opt = torch.optim.SGD(module.parameters(), lr=1e-5, momentum=0.9)
        state = {"i": 0}

        def step(opt=opt, loss_of=loss_of, state=state):
            i = state["i"] = (state["i"] + 1) % len(data)
            opt.zero_grad(set_to_none=True)
            loss_of(*data[i]).backward()
            opt.step()
        step()
        runs[kind] = (step, [])
    for _ in range(a.repeats):                            # interleaved
        for step, times in runs.values():
            times.append(step_time(step, a.steps, sync))
    med = {k: statistics.median(t) for k, (_, t) in runs.items()}
    for k, m in med.items():
        print(f"{name:8s} {k:7s} {m * 1e3:9.2f} ms/step")
    print(f"{name:8s} config/torch = {med['config'] / med['torch']:.3f}  ({what})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=16, help="ResNet20's minibatch (images)")
    ap.add_argument("--sequences", type=int, default=7, help="the tagger's sequences per minibatch (ATIS.cntk: 70 words)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--only", choices=("resnet", "atis"), default=None)
    ap.add_argument("--small", action="store_true", help="a smoke run")
    a = ap.parse_args()
    if a.small:
        a.batch, a.sequences, a.steps, a.repeats = 2, 2, 1, 1
    if a.threads:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    if a.only in (None, "resnet"):
        bench_resnet(a, dev, sync)
    if a.only in (None, "atis"):
        bench_atis(a, dev, sync)
    print(f"(device {dev}, threads {torch.get_num_threads()})")


if __name__ == "__main__":
    main()
