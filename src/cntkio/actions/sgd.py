"""The ``SGD`` section: CNTK's per-sample SGD with momentum, as a PyTorch update rule.

CNTK's criteria are sums over the samples of a minibatch and its learning rates are per sample, so
an update is ``lr_per_sample * sum_of_gradients``; ``learningRatesPerMB`` is converted with the
minibatch size of the epoch (``lr_per_sample = lr_per_MB / minibatchSize``). Momentum is per sample
too: ``momentumPerMB`` m gives ``m ** (1/minibatchSize)`` per sample, ``momentumAsTimeConstant`` T
gives ``exp(-1/T)``, and a minibatch of ``n`` samples uses ``momentum_per_sample ** n``. CNTK's
classic update is unit-gain momentum::

    smoothed = m * smoothed + (1 - m) * lr_per_sample * gradient     (unitGain=true, the default)
    smoothed = m * smoothed + lr_per_sample * gradient               (unitGain=false)
    W       -= smoothed

``L2RegWeight`` adds ``L2RegWeight * n * W`` to the gradient of every parameter (scaled by the
minibatch size because the learning rate is per sample), ``clippingThresholdPerSample`` truncates
each gradient element to ``±threshold * n`` (``gradientClippingWithTruncation=true``) or rescales
the gradient to that 2-norm (``false``).

torch.optim.SGD is not used: its momentum is not unit-gain and does not rescale with the actual
minibatch size, so it would not follow a CNTK schedule.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..integrations.torch_backend import torch

from ..errors import ConfigError, NotImplementedInCntkio
from ._params import get_bool, get_float, get_int, get_schedule, get_str, has, key_path, schedule_value

__all__ = ["SGDParams", "CntkSGD"]


@dataclass
class SGDParams:
    """The SGD parameters of a train/adapt command, resolved (schedules are per epoch)."""

    minibatch_size: list[int] = field(default_factory=lambda: [256])
    epoch_size: int = 0
    max_epochs: int = 1
    learning_rates_per_sample: list[float] | None = None
    learning_rates_per_mb: list[float] | None = None
    momentum_per_sample: list[float] | None = None
    momentum_per_mb: list[float] | None = None
    momentum_as_time_constant: list[float] | None = None
    unit_gain: bool = True
    l2_reg_weight: float = 0.0
    clipping_threshold_per_sample: float = math.inf
    clipping_with_truncation: bool = True
    num_mbs_to_show_result: int = 10

    def mb_size(self, epoch: int) -> int:
        """Minibatch size of 0-based ``epoch``."""
        return int(schedule_value(self.minibatch_size, epoch))

    def lr_per_sample(self, epoch: int) -> float:
        if self.learning_rates_per_sample is not None:
            return float(schedule_value(self.learning_rates_per_sample, epoch))
        return float(schedule_value(self.learning_rates_per_mb, epoch)) / self.mb_size(epoch)

    def momentum_per_sample_of(self, epoch: int) -> float:
        if self.momentum_per_sample is not None:
            return float(schedule_value(self.momentum_per_sample, epoch))
        if self.momentum_as_time_constant is not None:
            tc = float(schedule_value(self.momentum_as_time_constant, epoch))
            return 0.0 if tc == 0 else math.exp(-1.0 / tc)
        m = float(schedule_value(self.momentum_per_mb if self.momentum_per_mb is not None else [0.9], epoch))
        return m ** (1.0 / self.mb_size(epoch)) if m > 0 else 0.0

    @classmethod
    def from_config(cls, sgd, command) -> "SGDParams":
        """Read the ``SGD`` section (``sgd``; parameters also found up the chain, e.g. in the
        command section ``command`` where CNTK configs often put ``minibatchSize``/``epochSize``)."""
        cfg = sgd if sgd is not None else command
        lr_mb = get_schedule(cfg, "learningRatesPerMB", None)
        lr_s = get_schedule(cfg, "learningRatesPerSample", None)
        if lr_mb is not None and lr_s is not None:
            raise ConfigError("both learningRatesPerSample and learningRatesPerMB are given",
                              path=key_path(cfg, "learningRatesPerMB"), hint="keep only one of them")
        if lr_mb is None and lr_s is None:
            raise ConfigError("no learning rate given", path=key_path(cfg, "learningRatesPerMB"),
                              hint="set learningRatesPerMB or learningRatesPerSample, e.g. 0.1*2:0.05")
        moms = {k: get_schedule(cfg, k, None) for k in ("momentumPerMB", "momentumPerSample", "momentumAsTimeConstant")}
        given = [k for k, v in moms.items() if v is not None]
        if len(given) > 1:
            raise ConfigError(f"more than one momentum is given ({', '.join(given)})",
                              path=key_path(cfg, given[1]), hint="keep only one of them")
        if get_bool(cfg, "useNAG", False):
            raise NotImplementedInCntkio("SGD.useNAG (Nesterov momentum) is not implemented in cntkio")
        if get_float(cfg, "L1RegWeight", 0.0):
            raise NotImplementedInCntkio("SGD.L1RegWeight is not implemented in cntkio")
        adjust_cfg = cfg("AutoAdjust") if cfg.exists("AutoAdjust") else cfg     # CNTK's sub-section
        adjust = get_str_lower(adjust_cfg, "autoAdjustLR", "none")
        if adjust not in ("none", ""):
            raise NotImplementedInCntkio(f"SGD.autoAdjustLR={adjust} is not implemented in cntkio")
        if has(cfg, "gradUpdateType") and get_str_lower(cfg, "gradUpdateType", "none") not in ("none", ""):
            raise NotImplementedInCntkio("SGD.gradUpdateType (AdaGrad, RmsProp, FSAdaGrad) is not "
                                         "implemented in cntkio; only plain SGD with momentum")
        mbs = [int(v) for v in get_schedule(cfg, "minibatchSize", "256")]
        if any(m <= 0 for m in mbs):
            raise ConfigError(f"minibatchSize must be > 0, found {mbs}", path=key_path(cfg, "minibatchSize"))
        p = cls(
            minibatch_size=mbs,
            epoch_size=get_int(cfg, "epochSize", 0),
            max_epochs=get_int(cfg, "maxEpochs"),
            learning_rates_per_sample=lr_s, learning_rates_per_mb=lr_mb,
            momentum_per_sample=moms["momentumPerSample"], momentum_per_mb=moms["momentumPerMB"],
            momentum_as_time_constant=moms["momentumAsTimeConstant"],
            unit_gain=get_bool(cfg, "unitGain", True),
            l2_reg_weight=get_float(cfg, "L2RegWeight", 0.0),
            clipping_threshold_per_sample=get_float(cfg, "clippingThresholdPerSample", math.inf),
            clipping_with_truncation=get_bool(cfg, "gradientClippingWithTruncation", True),
            num_mbs_to_show_result=get_int(cfg, "numMBsToShowResult", 10),
        )
        if p.max_epochs <= 0:
            raise ConfigError(f"maxEpochs must be > 0, found {p.max_epochs}", path=key_path(cfg, "maxEpochs"))
        if p.epoch_size < 0:
            raise ConfigError(f"epochSize must be >= 0, found {p.epoch_size}", path=key_path(cfg, "epochSize"))
        return p


def get_str_lower(cfg, key: str, default: str) -> str:
    return (get_str(cfg, key, default) or "").lower()


class CntkSGD:
    """CNTK's SGD update over a module's parameters (see the module docstring for the rule).

    ``step(n, lr_per_sample, momentum_per_sample)`` applies one update for a minibatch of ``n``
    samples whose summed-criterion gradients are in ``p.grad``. The smoothed gradients are the
    whole state; :meth:`state_dict`/:meth:`load_state_dict` store them in model files.
    """

    def __init__(self, params, *, unit_gain: bool = True, l2_reg_weight: float = 0.0,
                 clipping_threshold_per_sample: float = math.inf, clipping_with_truncation: bool = True) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.unit_gain = unit_gain
        self.l2 = float(l2_reg_weight)
        self.clip = float(clipping_threshold_per_sample)
        self.truncate = bool(clipping_with_truncation)
        self.smoothed = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self, n: int, lr_per_sample: float, momentum_per_sample: float) -> None:
        if n <= 0:
            return
        m = momentum_per_sample ** n if momentum_per_sample > 0 else 0.0
        scale = (1.0 - m) * lr_per_sample if self.unit_gain else lr_per_sample
        for p, s in zip(self.params, self.smoothed):
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            if self.l2 > 0:
                g = g + (self.l2 * n) * p
            if math.isfinite(self.clip):
                limit = self.clip * n
                if self.truncate:
                    g = g.clamp(-limit, limit)
                else:
                    norm = torch.linalg.vector_norm(g)
                    if norm > limit:
                        g = g * (limit / norm)
            s.mul_(m).add_(g, alpha=scale)
            p.sub_(s)

    def state_dict(self) -> dict:
        return {"smoothed": [s.detach().cpu().clone() for s in self.smoothed]}

    def load_state_dict(self, state: dict) -> None:
        saved = state["smoothed"]
        if len(saved) != len(self.smoothed):
            raise ValueError(f"optimizer state has {len(saved)} tensors, expected {len(self.smoothed)}")
        for s, v in zip(self.smoothed, saved):
            s.copy_(v.to(s.device, s.dtype))
