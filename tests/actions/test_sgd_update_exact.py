"""CntkSGD's RmsProp and FSAdaGrad steps (written for speed: in-place, one reused buffer, fewer
passes) give the same numbers, bit for bit, as the plain formulas they replaced, which are kept here
as the reference (the version of src/cntkio/actions/sgd.py before the change, per parameter)."""
from __future__ import annotations

import math

import torch

from cntkio.actions.sgd import FSADAGRAD_TARGET_AV_DENOM, FSADAGRAD_VARIANCE_TIME_CONSTANT, CntkSGD


class PlainRule:
    """The plain formulas: every intermediate a fresh tensor, as first written."""

    def __init__(self, params, kind, rms=(1.2, 0.75, 10.0, 0.1, 0.99), norm_ave=True):
        self.params, self.kind, self.rms, self.norm_ave = params, kind, rms, norm_ave
        self.smoothed = [torch.zeros_like(p) for p in params]
        self.extra = [torch.zeros_like(p) for p in params]
        self.steps = [torch.zeros_like(p) for p in params]
        self.counts = [0.0] * len(params)

    @torch.no_grad()
    def step(self, n, lr, momentum_per_sample, unit_gain=True):
        m = momentum_per_sample ** n if momentum_per_sample > 0 else 0.0
        ug = (1.0 - m) if unit_gain else 1.0
        for i, p in enumerate(self.params):
            if self.kind == "rmsprop":
                self._rmsprop(i, p, p.grad, lr)
            else:
                self._fsadagrad(i, p, p.grad, lr, m, ug, n)

    def _rmsprop(self, i, p, g, lr):
        inc, dec, wmax, wmin, gamma = self.rms
        avar, signs, steps = self.smoothed[i], self.extra[i], self.steps[i]
        if not self.counts[i]:
            avar.copy_(g * g)
            steps.fill_(0.02)
            self.counts[i] = 1.0
        avar.mul_(gamma).addcmul_(g, g, value=1.0 - gamma)
        sign = torch.sign(g)
        same = signs.mul_(sign) > 0
        if inc >= 1.0 >= dec and wmax >= 0.02:
            steps.mul_(torch.where(same, inc, dec)).clamp_(wmin, wmax)
        else:
            steps.copy_(torch.where(same, torch.clamp(steps * inc, max=wmax), torch.clamp(steps * dec, min=wmin)))
        a = torch.rsqrt(avar + 1e-6).mul_(steps)
        signs.copy_(sign)
        step = g * a
        if self.norm_ave and a.numel():
            step.div_(a.mean())
        p.sub_(step, alpha=lr)

    def _fsadagrad(self, i, p, g, lr, m, ug, n):
        var_m = math.exp(-n / FSADAGRAD_VARIANCE_TIME_CONSTANT)
        self.counts[i] = var_m * self.counts[i] + (1.0 - var_m) * n
        ada_mul = FSADAGRAD_TARGET_AV_DENOM * math.sqrt(self.counts[i])
        ada, mom = self.smoothed[i], self.extra[i]
        ada.mul_(var_m).addcmul_(g, g, value=1.0 - var_m)
        w = torch.where(ada != 0, torch.clamp(ada_mul / torch.sqrt(ada), max=10.0), torch.ones_like(ada))
        g = g * w
        if m > 0:
            mom.mul_(m).add_(g, alpha=ug)
            g = mom
        p.sub_(g, alpha=lr)


def _gradients(seed, shapes, steps):
    """Random gradients with the awkward cases in them: exact zeros (a sign of 0, ada == 0 in
    FSAdaGrad), runs of one sign and flips, tiny values whose square underflows, large values."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for k in range(steps):
        gs = []
        for shape in shapes:
            g = torch.randn(shape, generator=gen) * 10.0 ** torch.randint(-3, 3, shape, generator=gen)
            g[torch.rand(shape, generator=gen) < 0.1] = 0.0
            g[torch.rand(shape, generator=gen) < 0.05] = 1e-30 * (1 if k % 2 else -1)
            if shape[0] > 1:
                g[0] = 0.0                      # a row never non-zero: FSAdaGrad's ada stays 0 there
            gs.append(g)
        out.append(gs)
    return out


def _run_both(kind, *, rms=(1.2, 0.75, 10.0, 0.1, 0.99), norm_ave=True, momentum=0.99, unit_gain=True,
              dtype=torch.float32, seed=0):
    shapes = [(7, 13), (13,), (1, 5), (0, 3)]
    gen = torch.Generator().manual_seed(seed + 100)
    init = [torch.randn(s, generator=gen).to(dtype) for s in shapes]
    a = [torch.nn.Parameter(t.clone()) for t in init]
    b = [torch.nn.Parameter(t.clone()) for t in init]
    opt = CntkSGD(a, grad_update_type=kind, rms=rms, norm_with_ave_multiplier=norm_ave, unit_gain=unit_gain)
    ref = PlainRule(b, kind, rms=rms, norm_ave=norm_ave)
    for k, gs in enumerate(_gradients(seed, shapes, 12)):
        n = (16, 32, 7)[k % 3]
        lr = (1e-3, 5e-2, 0.3)[k % 3]
        for pa, pb, g in zip(a, b, gs):
            pa.grad, pb.grad = g.to(dtype).clone(), g.to(dtype).clone()
        opt.step(n, lr, momentum)
        ref.step(n, lr, momentum, unit_gain)
        for i, (pa, pb) in enumerate(zip(a, b)):
            assert torch.equal(pa, pb), (kind, k, i, (pa - pb).abs().max())
            assert torch.equal(opt.smoothed[i], ref.smoothed[i]), (kind, k, i)
            assert torch.equal(opt.extra[i], ref.extra[i]), (kind, k, i)
            if kind == "rmsprop":
                assert torch.equal(opt.steps[i], ref.steps[i]), (kind, k, i)
        assert opt.counts == ref.counts
    return opt, a


def test_rmsprop_step_equals_the_plain_formula_bit_for_bit():
    # (rms, whether the multiplier is built arithmetically): the defaults and another exact pair;
    # a pair whose inc - dec is not exact in float32 (the torch.where path); inc < 1 (the general
    # two-clamp branch)
    for rms, arithmetic in (((1.2, 0.75, 10.0, 0.1, 0.99), True), ((1.5, 0.5, 4.0, 0.05, 0.9), True),
                            ((1.6559907728754901, 0.24273997354306764, 10.0, 0.1, 0.99), False),
                            ((0.9, 1.1, 0.01, 0.001, 0.5), False)):
        for norm_ave in (True, False):
            for dtype in (torch.float32, torch.float64):
                opt, moved = _run_both("rmsprop", rms=rms, norm_ave=norm_ave, dtype=dtype, seed=len(rms) + norm_ave)
                assert (opt._rms_cache.get((dtype, torch.device("cpu"))) is not None) == arithmetic, rms
                assert all(torch.count_nonzero(s).item() == s.numel() for s in opt.steps)     # steps all set


def test_fsadagrad_step_equals_the_plain_formula_bit_for_bit():
    for momentum in (0.99, 0.0):
        for unit_gain in (True, False):
            for dtype in (torch.float32, torch.float64):
                _run_both("fsadagrad", momentum=momentum, unit_gain=unit_gain, dtype=dtype, seed=3)


def test_fsadagrad_weight_is_one_where_the_square_average_is_zero():
    # a parameter whose gradient is 0 in one element and tiny (square underflows to 0) in another:
    # both take the weight 1 (the plain rule's torch.where(ada != 0, ..., 1)), not the clamp's 10
    p = torch.nn.Parameter(torch.zeros(3))
    opt = CntkSGD([p], grad_update_type="fsadagrad")
    p.grad = torch.tensor([0.0, 1e-30, 1.0])
    opt.step(1, 1.0, 0.0)
    assert opt.smoothed[0][:2].tolist() == [0.0, 0.0]
    assert p[1].item() == torch.tensor(-1e-30).item()          # weight 1, not 10
    assert p[0].item() == 0.0
