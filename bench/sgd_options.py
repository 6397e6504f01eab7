"""The cost of cntkio's SGD update rules against the same optimizer in plain PyTorch.

For each rule, one training step (forward, backward, update) of an MLP on random data is timed
with cntkio's ``CntkSGD`` and with the torch.optim optimizer that does the same kind of update
(momentum SGD, Nesterov, Adagrad, RMSprop; FSAdaGrad against Adam, its nearest relative; L1 against
momentum SGD plus the same soft threshold written by hand). Runs are interleaved (A, B, A, B, ...)
and the median per step is reported with the ratio cntkio / torch. The issue's target: within 10%.

torch.optim.RMSprop and Adam are not the same optimizer as CNTK's RmsProp and FSAdaGrad: RMSprop
keeps one square average (about 5 passes over the parameters per step), CNTK's RmsProp also keeps
a per-element step size that grows or shrinks with the gradient's sign and divides by the mean
multiplier (about 14 passes); FSAdaGrad's weights are clamped and its momentum is unit-gain. So
those two rules get a second row each, ``rmsprop=`` and ``fsadagrad=``, against the same rule
written by hand in plain PyTorch as one would write it from CNTK's description (a torch.optim
Optimizer, a fresh tensor per intermediate): the "same optimizer" of the issue's target. The
torch.optim rows stay as the cost of the nearest built-in rule.

    python bench/sgd_options.py                 # full: 784:1024:1024:10, minibatch 256, 7 x 60 steps
    python bench/sgd_options.py --small         # smoke run (seconds)
    python bench/sgd_options.py --device cuda   # on a GPU
    python bench/sgd_options.py --cpu-time      # CPU seconds of one intra-op thread (a loaded machine)
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

from cntkio.actions.sgd import CntkSGD  # noqa: E402


def mlp(sizes, device):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.Sigmoid()]
    torch.manual_seed(0)
    return torch.nn.Sequential(*layers[:-1]).to(device)


class PlainCntkRule(torch.optim.Optimizer):
    """CNTK's RmsProp or FSAdaGrad written straight from the rule in plain PyTorch (the reference
    of the ``rmsprop=`` and ``fsadagrad=`` rows; minibatch n and momentum per sample as CntkSGD)."""

    def __init__(self, params, kind, n, lr=1e-3, momentum=0.9, rms=(1.2, 0.75, 10.0, 0.1, 0.99)):
        super().__init__(params, {"lr": lr})
        self.kind, self.n, self.rms = kind, n, rms
        self.m = momentum ** (1.0 / n) if momentum > 0 else 0.0

    @torch.no_grad()
    def step(self):
        n = self.n
        m = self.m ** n
        for group in self.param_groups:
            lr = group["lr"]
            for p in group["params"]:
                g, st = p.grad, self.state[p]
                if self.kind == "rmsprop":
                    inc, dec, wmax, wmin, gamma = self.rms
                    if not st:
                        st["avar"], st["sign"] = g * g, torch.zeros_like(p)
                        st["steps"] = torch.full_like(p, 0.02)
                    st["avar"] = gamma * st["avar"] + (1 - gamma) * g * g
                    sign = torch.sign(g)
                    same = st["sign"] * sign > 0
                    st["steps"] = torch.clamp(st["steps"] * torch.where(same, inc, dec), wmin, wmax)
                    st["sign"] = sign
                    a = st["steps"] / torch.sqrt(st["avar"] + 1e-6)
                    p -= lr * g * a / a.mean()
                else:
                    var_m = math.exp(-n / 720000)
                    if not st:
                        st["ada"], st["mom"], st["count"] = torch.zeros_like(p), torch.zeros_like(p), 0.0
                    st["count"] = var_m * st["count"] + (1 - var_m) * n
                    st["ada"] = var_m * st["ada"] + (1 - var_m) * g * g
                    w = torch.where(st["ada"] != 0, torch.clamp(math.sqrt(st["count"]) / torch.sqrt(st["ada"]),
                                                                max=10.0), torch.ones_like(p))
                    st["mom"] = m * st["mom"] + (1 - m) * g * w
                    p -= lr * st["mom"]


def cases(n: int):
    """name -> (cntkio optimizer factory, torch optimizer factory); lr per sample 1e-3."""
    lr, m = 1e-3, 0.9

    def l1_torch(ps):
        opt = torch.optim.SGD(ps, lr=lr, momentum=m)
        step = opt.step

        def step_l1():
            step()
            with torch.no_grad():
                for p in ps:
                    p.copy_(torch.sign(p) * torch.clamp(p.abs() - 1e-6, min=0))
        opt.step = step_l1
        return opt
    return {
        "momentum": (lambda ps: CntkSGD(ps, unit_gain=False), lambda ps: torch.optim.SGD(ps, lr=lr, momentum=m)),
        "nesterov": (lambda ps: CntkSGD(ps, unit_gain=False, use_nag=True),
                     lambda ps: torch.optim.SGD(ps, lr=lr, momentum=m, nesterov=True)),
        "adagrad": (lambda ps: CntkSGD(ps, grad_update_type="adagrad"), lambda ps: torch.optim.Adagrad(ps, lr=lr)),
        "rmsprop": (lambda ps: CntkSGD(ps, grad_update_type="rmsprop"), lambda ps: torch.optim.RMSprop(ps, lr=lr)),
        "rmsprop=": (lambda ps: CntkSGD(ps, grad_update_type="rmsprop"), lambda ps: PlainCntkRule(ps, "rmsprop", n)),
        "fsadagrad": (lambda ps: CntkSGD(ps, grad_update_type="fsadagrad"), lambda ps: torch.optim.Adam(ps, lr=lr)),
        "fsadagrad=": (lambda ps: CntkSGD(ps, grad_update_type="fsadagrad"),
                       lambda ps: PlainCntkRule(ps, "fsadagrad", n)),
        "l1": (lambda ps: CntkSGD(ps, unit_gain=False, l1_reg_weight=1e-6), l1_torch),
    }


#: what each row's torch column is
REFERENCE = {
    "momentum": "torch.optim.SGD momentum, same rule",
    "nesterov": "torch.optim.SGD nesterov, same rule",
    "adagrad": "torch.optim.Adagrad, same rule less the mean multiplier",
    "rmsprop": "torch.optim.RMSprop: a cheaper rule, not CNTK's",
    "rmsprop=": "CNTK's RmsProp hand-written in plain torch: same rule",
    "fsadagrad": "torch.optim.Adam: a relative, not CNTK's rule",
    "fsadagrad=": "CNTK's FSAdaGrad hand-written in plain torch: same rule",
    "l1": "torch.optim.SGD momentum + soft threshold by hand, same rule",
}


def timed_steps(model, opt, x, y, steps, cntk: bool, device, clock=time.perf_counter) -> list[float]:
    out = []
    for _ in range(steps):
        t0 = clock()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y, reduction="sum")
        loss.backward()
        if cntk:
            opt.step(x.shape[0], 1e-3, 0.9 ** (1 / x.shape[0]))
        else:
            opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        out.append(clock() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only", default=None, help="comma-separated case names")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time.process_time with one intra-op thread: CPU cost, steady on a busy machine")
    args = ap.parse_args()
    clock = time.perf_counter
    if args.cpu_time:
        torch.set_num_threads(1)
        clock = time.process_time
    device = torch.device(args.device)
    sizes, mb, rounds, steps = ([64, 64, 10], 32, 3, 10) if args.small else ([784, 1024, 1024, 10], 256, 7, 60)
    x = torch.randn(mb, sizes[0], device=device)
    y = torch.randint(0, sizes[-1], (mb,), device=device)
    print(f"MLP {':'.join(map(str, sizes))}, minibatch {mb}, {rounds} x {steps} steps, {device}"
          + (", CPU time of 1 thread" if args.cpu_time else ""))
    for name, (ours, theirs) in cases(mb).items():
        if args.only and name not in args.only.split(","):
            continue
        a_model, b_model = mlp(sizes, device), mlp(sizes, device)
        a_opt, b_opt = ours(list(a_model.parameters())), theirs(list(b_model.parameters()))
        timed_steps(a_model, a_opt, x, y, 3, True, device)          # warm-up
        timed_steps(b_model, b_opt, x, y, 3, False, device)
        a, b = [], []
        for _ in range(rounds):
            a += timed_steps(a_model, a_opt, x, y, steps, True, device, clock)
            b += timed_steps(b_model, b_opt, x, y, steps, False, device, clock)
        ma, mb_ = statistics.median(a), statistics.median(b)
        print(f"{name:10s} cntkio {ma * 1e3:8.3f} ms/step   torch {mb_ * 1e3:8.3f} ms/step   ratio {ma / mb_:.3f}"
              f"   ({REFERENCE[name]})")


if __name__ == "__main__":
    main()
