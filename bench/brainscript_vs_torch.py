"""A BrainScript network vs the same network written by hand in PyTorch: training steps per second.

Three networks, each in BrainScript and by hand: an MLP (``Sequential`` of ``DenseLayer``s), the
ConvNet of CNTK's MNIST example (three ``ConvolutionalLayer``s, two ``MaxPoolingLayer``s, a
``DenseLayer``) and a slot tagger (``EmbeddingLayer : RecurrentLSTMLayer : DenseLayer`` over
sequences of 5 to 20 words; by hand: ``nn.LSTM`` over packed sequences); all train with torch.optim.SGD on the same in-memory data, minibatch and device,
criteria summed over the minibatch as CNTK's. Runs are interleaved and repeated; the median time
per step is reported. The issue's target: the BrainScript network within 10% of the hand-written one.
The BrainScript tagger's RecurrentLSTMLayer runs as one fused torch.lstm (docs/brainscript.md, Speed);
``--step-loop`` runs it as the node library's step-by-step loop instead, for comparison. On a shared
CPU, ``--threads 1`` gives steadier figures.

    python bench/brainscript_vs_torch.py                    # CPU, the three networks, minibatch 64
    python bench/brainscript_vs_torch.py --device cuda:0 --steps 400 --repeats 15
                                                            # on a GPU (a step is ~1 ms: long samples)
    python bench/brainscript_vs_torch.py --small            # a smoke run
    python bench/brainscript_vs_torch.py --proxy            # ATen ops per step; the launch-bound CPU proxy

``--proxy`` stands in for a GPU, where these small networks are bound by the Python and dispatch
work per operation, not by the arithmetic: it counts the ATen operations of one training step
(forward and backward) of both networks, then times tiny ones (MLP 784-16-16-10, a ConvNet of
the same layers 2-2-2-4 channels wide, minibatch 2, ``--batch`` to change) on one thread,
measuring the thread's CPU time (steady on a shared machine).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import cntkio.brainscript  # noqa: E402

TAIL = """
features = Input {SHAPE}
labels = Input {10}
z = model (features)
ce = CrossEntropyWithSoftmax (labels, z)
criterionNodes = (ce)
"""

MLP_BS = "model = Sequential (DenseLayer {H, activation=ReLU} : DenseLayer {H, activation=ReLU} : LinearLayer {10})"
CONV_BS = """model = Sequential (
    ConvolutionalLayer {C1, (5:5), pad = true} : ReLU : MaxPoolingLayer {(3:3), stride=(2:2)} :
    ConvolutionalLayer {C2, (3:3), pad = false} : ReLU : MaxPoolingLayer {(3:3), stride=(2:2)} :
    ConvolutionalLayer {C3, (3:3), pad = false} : ReLU :
    DenseLayer {D, activation=ReLU} : LinearLayer {10})"""
#: the ConvNet's widths (C1, C2, C3, D): CNTK's MNIST example, and narrow ones for the proxy
CONV_WIDTHS, NARROW = (32, 48, 64, 96), (2, 2, 2, 4)


def conv_text(widths=CONV_WIDTHS) -> str:
    text = CONV_BS
    for k, w in zip(("C1", "C2", "C3", "D"), widths):
        text = text.replace("{" + k + ",", "{" + str(w) + ",")
    return text + TAIL.replace("SHAPE", "28:28:1")


class MLP(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.a, self.b, self.c = torch.nn.Linear(d, h), torch.nn.Linear(h, h), torch.nn.Linear(h, 10)

    def forward(self, x, y):
        z = self.c(torch.relu(self.b(torch.relu(self.a(x)))))
        return -(y * torch.log_softmax(z, -1)).sum()


class Conv(torch.nn.Module):
    def __init__(self, widths=CONV_WIDTHS):
        super().__init__()
        c1, c2, c3, d = widths
        self.c1, self.c2, self.c3 = torch.nn.Conv2d(1, c1, 5, padding=2), torch.nn.Conv2d(c1, c2, 3), \
            torch.nn.Conv2d(c2, c3, 3)
        self.d, self.o = torch.nn.Linear(c3 * 3 * 3, d), torch.nn.Linear(d, 10)

    def forward(self, x, y):
        x = x.reshape(-1, 1, 28, 28)
        x = F.max_pool2d(torch.relu(self.c1(x)), 3, 2)
        x = F.max_pool2d(torch.relu(self.c2(x)), 3, 2)
        x = torch.relu(self.c3(x)).flatten(1)
        z = self.o(torch.relu(self.d(x)))
        return -(y * torch.log_softmax(z, -1)).sum()


LSTM_BS = """model = Sequential (EmbeddingLayer {E} : RecurrentLSTMLayer {H} : DenseLayer {10})
features = Input {V}
labels = Input {10}
z = model (features)
ce = CrossEntropyWithSoftmax (labels, z)
criterionNodes = (ce)
"""


class Tagger(torch.nn.Module):
    def __init__(self, v, e, h):
        super().__init__()
        self.emb = torch.nn.Linear(v, e, bias=False)
        self.lstm = torch.nn.LSTM(e, h)
        self.out = torch.nn.Linear(h, 10)

    def forward(self, x, y, lengths):
        seqs = torch.split(self.emb(x), lengths.tolist())
        packed = torch.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)
        h, _ = self.lstm(packed)
        padded, _ = torch.nn.utils.rnn.pad_packed_sequence(h)
        flat = torch.cat([padded[:n, i] for i, n in enumerate(lengths.tolist())])
        z = self.out(flat)
        return -(y * torch.log_softmax(z, -1)).sum()


def bench_lstm(a, dev, sync) -> None:
    v, e, h = (50, 8, 8) if a.small else (1000, 150, 300)
    gen = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(8):
        lengths = torch.randint(5, 21, (a.batch // 8 or 1,), generator=gen)
        n = int(lengths.sum())
        x = F.one_hot(torch.randint(0, v, (n,), generator=gen), v).float().to(dev)
        y = F.one_hot(torch.randint(0, 10, (n,), generator=gen), 10).float().to(dev)
        pos = torch.cat([torch.arange(k) for k in lengths.tolist()]).to(dev)
        lens = torch.repeat_interleave(lengths, lengths).to(dev)
        batches.append((x, y, lengths, pos, lens))
    text = LSTM_BS.replace("{E}", f"{{{e}}}").replace("{H}", f"{{{h}}}").replace("{V}", f"{{{v}}}")
    bs_net, hand = cntkio.brainscript.build(text, device=dev), Tagger(v, e, h).to(dev)
    bs_net.fuse_lstm = not a.step_loop
    runs = {}
    for kind, net in (("brainscript", bs_net), ("torch", hand)):
        opt = torch.optim.SGD(net.parameters(), lr=1e-4, momentum=0.9)
        state = {"i": 0}

        def step(net=net, opt=opt, state=state, kind=kind):
            i = state["i"] = (state["i"] + 1) % 8
            x, y, lengths, pos, lens = batches[i]
            opt.zero_grad(set_to_none=True)
            if kind == "brainscript":
                loss = net.evaluate({"features": x, "labels": y}, ("ce",), positions=pos, lengths=lens)["ce"]
            else:
                loss = net(x, y, lengths)
            loss.backward()
            opt.step()
        step()
        runs[kind] = (step, [])
    for _ in range(a.repeats):
        for step, times in runs.values():
            times.append(step_time(step, a.steps, sync))
    med = {n: statistics.median(t) for n, (_, t) in runs.items()}
    for n, m in med.items():
        print(f"lstm  {n:12s} {m * 1e3:8.3f} ms/step")
    print(f"lstm  brainscript/torch = {med['brainscript'] / med['torch']:.3f}  (sequences of 5-20 words, "
          f"{a.batch // 8 or 1} per minibatch)")


def step_time(step, steps: int, sync, clock=time.perf_counter) -> float:
    sync()
    t0 = clock()
    for _ in range(steps):
        step()
    sync()
    return (clock() - t0) / steps


class CountOps(TorchDispatchMode):
    """The ATen operations run under it (forward ops, and the backward pass's when it runs under it)."""

    def __init__(self):
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def op_counts(forward, params) -> tuple[int, int]:
    """ATen operations of one training step's forward and backward passes (gradients unset, as
    after ``zero_grad(set_to_none=True)``)."""
    for p in params:
        p.grad = None
    with CountOps() as f:
        loss = forward()
    with CountOps() as b:
        loss.backward()
    return len(f.ops), len(b.ops)


def bench(name, bs_net, hand, x, y, a, sync) -> None:
    runs = {}
    batches = [(x[i * a.batch:(i + 1) * a.batch], y[i * a.batch:(i + 1) * a.batch]) for i in range(8)]
    for kind, net in (("brainscript", bs_net), ("torch", hand)):
        opt = torch.optim.SGD(net.parameters(), lr=1e-4, momentum=0.9)
        state = {"i": 0}

        def forward(net=net, state=state, kind=kind):
            i = state["i"] = (state["i"] + 1) % 8
            xb, yb = batches[i]
            if kind == "brainscript":
                return net.evaluate({"features": xb, "labels": yb}, ("ce",))["ce"]      # [1, 1]: backward() takes it
            return net(xb, yb)

        def step(opt=opt, forward=forward):
            opt.zero_grad(set_to_none=True)
            forward().backward()
            opt.step()
        step()
        if a.proxy:
            fwd, bwd = op_counts(forward, list(net.parameters()))
            print(f"{name:5s} {kind:12s} {fwd:4d} ATen ops forward, {bwd:4d} backward per step")
        runs[kind] = (step, [])
    clock = time.thread_time if a.proxy else time.perf_counter
    for _ in range(a.repeats):                       # interleaved
        for step, times in runs.values():
            times.append(step_time(step, a.steps, sync, clock))
    med = {n: statistics.median(t) for n, (_, t) in runs.items()}
    for n, m in med.items():
        print(f"{name:5s} {n:12s} {m * 1e3:8.3f} ms/step  ({a.batch / m:,.0f} samples/s)")
    print(f"{name:5s} brainscript/torch = {med['brainscript'] / med['torch']:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--only", choices=("mlp", "conv", "lstm"), default=None)
    ap.add_argument("--small", action="store_true", help="a smoke run (tiny sizes)")
    ap.add_argument("--step-loop", action="store_true", help="the LSTM as the step-by-step loop, not fused")
    ap.add_argument("--proxy", action="store_true",
                    help="the launch-bound proxy on a CPU: ATen op counts per step, then tiny networks (MLP "
                         "784-16-16-10, narrow ConvNet) at minibatch 2, one thread, CPU time of the thread")
    a = ap.parse_args()
    if a.small:
        a.batch, a.hidden, a.steps, a.repeats = 4, 16, 2, 2
    if a.proxy:
        a.hidden, a.threads = 16, 1
        a.batch = a.batch if a.batch != 64 else 2
        a.steps, a.repeats = (2, 2) if a.small else (200, 9)
        if a.only is None:
            a.only = "proxy"
    if a.threads:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(a.batch * 8, 784, generator=gen).to(dev)
    y = F.one_hot(torch.randint(0, 10, (a.batch * 8,), generator=gen), 10).float().to(dev)
    if a.only in (None, "mlp", "proxy"):
        text = MLP_BS.replace("{H", "{" + str(a.hidden)) + TAIL.replace("SHAPE", "784")
        bench("mlp", cntkio.brainscript.build(text, device=dev), MLP(784, a.hidden).to(dev), x, y, a, sync)
    if a.only in (None, "conv", "proxy"):
        widths = NARROW if a.proxy else CONV_WIDTHS
        bench("conv", cntkio.brainscript.build(conv_text(widths), device=dev), Conv(widths).to(dev), x, y, a, sync)
    if a.only in (None, "lstm"):
        bench_lstm(a, dev, sync)
    print(f"(minibatch {a.batch}, device {dev}" + (", the CPU proxy: tiny networks, CPU time of the thread)"
                                                   if a.proxy else ")"))


if __name__ == "__main__":
    main()
