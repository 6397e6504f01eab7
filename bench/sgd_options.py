"""The cost of cntkio's SGD update rules against the same optimizer in plain PyTorch.

For each rule, one training step (forward, backward, update) of an MLP on random data is timed
with cntkio's ``CntkSGD`` and with the torch.optim optimizer that does the same kind of update
(momentum SGD, Nesterov, Adagrad, RMSprop; FSAdaGrad against Adam, its nearest relative; L1 against
momentum SGD plus the same soft threshold written by hand). Runs are interleaved (A, B, A, B, ...)
and the median per step is reported with the ratio cntkio / torch. The issue's target: within 10%.

    python bench/sgd_options.py                 # full: 784:1024:1024:10, minibatch 256, 7 x 60 steps
    python bench/sgd_options.py --small         # smoke run (seconds)
    python bench/sgd_options.py --device cuda   # on a GPU
"""
from __future__ import annotations

import argparse
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


def cases():
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
        "fsadagrad": (lambda ps: CntkSGD(ps, grad_update_type="fsadagrad"), lambda ps: torch.optim.Adam(ps, lr=lr)),
        "l1": (lambda ps: CntkSGD(ps, unit_gain=False, l1_reg_weight=1e-6), l1_torch),
    }


def timed_steps(model, opt, x, y, steps, cntk: bool, device) -> list[float]:
    out = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y, reduction="sum")
        loss.backward()
        if cntk:
            opt.step(x.shape[0], 1e-3, 0.9 ** (1 / x.shape[0]))
        else:
            opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only", default=None, help="comma-separated case names")
    args = ap.parse_args()
    device = torch.device(args.device)
    sizes, mb, rounds, steps = ([64, 64, 10], 32, 3, 10) if args.small else ([784, 1024, 1024, 10], 256, 7, 60)
    x = torch.randn(mb, sizes[0], device=device)
    y = torch.randint(0, sizes[-1], (mb,), device=device)
    print(f"MLP {':'.join(map(str, sizes))}, minibatch {mb}, {rounds} x {steps} steps, {device}")
    for name, (ours, theirs) in cases().items():
        if args.only and name not in args.only.split(","):
            continue
        a_model, b_model = mlp(sizes, device), mlp(sizes, device)
        a_opt, b_opt = ours(list(a_model.parameters())), theirs(list(b_model.parameters()))
        timed_steps(a_model, a_opt, x, y, 3, True, device)          # warm-up
        timed_steps(b_model, b_opt, x, y, 3, False, device)
        a, b = [], []
        for _ in range(rounds):
            a += timed_steps(a_model, a_opt, x, y, steps, True, device)
            b += timed_steps(b_model, b_opt, x, y, steps, False, device)
        ma, mb_ = statistics.median(a), statistics.median(b)
        print(f"{name:10s} cntkio {ma * 1e3:8.3f} ms/step   torch {mb_ * 1e3:8.3f} ms/step   ratio {ma / mb_:.3f}")


if __name__ == "__main__":
    main()
