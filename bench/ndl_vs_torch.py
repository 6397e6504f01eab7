"""NDL network vs the same network written by hand in PyTorch: training steps per second.

Both train the same MLP (features -> [hidden tanh layers] -> softmax cross-entropy, sums over the
minibatch as CNTK's criteria) with torch.optim.SGD on the same in-memory data, minibatch and
device; the runs are interleaved and repeated, and the median time per step is reported. The
issue's target: the NDL network within 10% of the hand-written one.

    python bench/ndl_vs_torch.py                       # CPU, 784-512-512-10, minibatch 256
    python bench/ndl_vs_torch.py --device cuda:0       # on a GPU
    python bench/ndl_vs_torch.py --small               # a smoke run
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

import cntkio.ndl  # noqa: E402


def ndl_text(dims: list[int]) -> str:
    lines = [f"features = Input({dims[0]}, tag=feature)", f"labels = Input({dims[-1]}, tag=label)",
             "Layer(x, o, i) = [ W = Parameter(o, i)\n b = Parameter(o, init=zero)\n y = Tanh(Plus(Times(W, x), b)) ]"]
    x = "features"
    for k in range(1, len(dims) - 1):
        lines.append(f"L{k} = Layer({x}, {dims[k]}, {dims[k - 1]})")
        x = f"L{k}"
    lines += [f"Wo = Parameter({dims[-1]}, {dims[-2]})", f"bo = Parameter({dims[-1]}, init=zero)",
              f"z = Plus(Times(Wo, {x}), bo)", "ce = CrossEntropyWithSoftmax(labels, z, tag=criterion)"]
    return "\n".join(lines)


class Hand(torch.nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x, y):
        for layer in self.layers[:-1]:
            x = torch.tanh(layer(x))
        z = self.layers[-1](x)
        return -(y * torch.log_softmax(z, -1)).sum()


def step_time(step, steps: int, sync) -> float:
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return (time.perf_counter() - t0) / steps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dims", default="784:512:512:10")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--small", action="store_true", help="a smoke run (tiny sizes)")
    a = ap.parse_args()
    if a.small:
        a.dims, a.batch, a.steps, a.repeats = "16:8:4", 8, 5, 2
    if a.threads:
        torch.set_num_threads(a.threads)
    dims = [int(d) for d in a.dims.split(":")]
    dev = torch.device(a.device)
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(a.batch * 8, dims[0], generator=gen).to(dev)
    y = torch.nn.functional.one_hot(torch.randint(0, dims[-1], (a.batch * 8,), generator=gen), dims[-1]).float().to(dev)

    ndl = cntkio.ndl.build(ndl_text(dims), device=dev)
    hand = Hand(dims).to(dev)
    runs = {}
    for name, net in (("ndl", ndl), ("torch", hand)):
        opt = torch.optim.SGD(net.parameters(), lr=1e-4, momentum=0.9)
        state = {"i": 0}

        def step(net=net, opt=opt, state=state, name=name):
            i = state["i"] = (state["i"] + 1) % 8
            xb, yb = x[i * a.batch:(i + 1) * a.batch], y[i * a.batch:(i + 1) * a.batch]
            opt.zero_grad(set_to_none=True)
            if name == "ndl":
                loss = net.evaluate({"features": xb, "labels": yb}, ("ce",))["ce"].sum()
            else:
                loss = net(xb, yb)
            loss.backward()
            opt.step()
        step()
        runs[name] = (step, [])
    for _ in range(a.repeats):                       # interleaved
        for step, times in runs.values():
            times.append(step_time(step, a.steps, sync))
    med = {n: statistics.median(t) for n, (_, t) in runs.items()}
    for n, m in med.items():
        print(f"{n:6s} {m * 1e3:8.3f} ms/step  ({a.batch / m:,.0f} samples/s)")
    print(f"ndl/torch = {med['ndl'] / med['torch']:.3f}  (dims {a.dims}, minibatch {a.batch}, device {dev})")


if __name__ == "__main__":
    main()
