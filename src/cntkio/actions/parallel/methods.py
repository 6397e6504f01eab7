"""The parallel training methods (exact and quantized DataParallelSGD, ModelAveragingSGD,
BlockMomentumSGD) as :class:`Parallel`, what a training process does with its gradients and model."""
from __future__ import annotations

import time

from ...integrations.torch_backend import torch

from .._common import Dist, report
from .buckets import GradientBuckets
from .params import ParallelParams

__all__ = ["Parallel", "perf_clock"]


class Parallel:
    """What a training process does with its gradients and model under a ``parallelTrain`` method
    (``dist`` inactive: nothing, one process trains alone)."""

    def __init__(self, params: ParallelParams, dist: Dist, tensors: list, opt) -> None:
        self.p = params
        self.dist = dist
        self.tensors = tensors
        self.opt = opt
        self.buckets = GradientBuckets(tensors, dist, params.gradient_bits, params.zero_threshold)
        self.block_samples = 0                    # local samples since the last model sync
        self.block_total = 0                      # all processes' samples since the last sync
        self.prev = None                          # BlockMomentumSGD: the model at the last sync
        self.block_delta = None
        self.compute_time = 0.0
        self.mb_count = 0

    def active(self, epoch: int) -> bool:
        return self.dist.active and self.p.method != "none" and epoch + 1 >= self.p.start_epoch

    def local_updates(self, epoch: int) -> bool:
        """Whether processes update their own models (ModelAveraging/BlockMomentum) in ``epoch``."""
        return self.active(epoch) and self.p.method in ("modelaveragingsgd", "blockmomentumsgd")

    # -- per minibatch ---------------------------------------------------------------------------
    def _exact_or_quantized(self, epoch: int) -> bool:
        """Whether this minibatch's gradients are exchanged (exact sum, or quantized)."""
        return self.dist.active and not self.local_updates(epoch)

    def _quantized(self, epoch: int) -> bool:
        return self.active(epoch) and self.p.method == "dataparallelsgd" and self.p.gradient_bits < 32

    @property
    def bytes_sent(self) -> int:
        """The gradient bytes this process contributed since the count was last set to 0."""
        return self.buckets.bytes_sent

    @bytes_sent.setter
    def bytes_sent(self, value: int) -> None:
        self.buckets.bytes_sent = value

    @property
    def residuals(self):
        """The quantization residuals (error feedback) of every tensor, or None before the first
        quantized exchange."""
        return self.buckets.residuals

    def begin_minibatch(self, epoch: int, *, hooks: bool = True) -> None:
        """Before a minibatch's backward pass: arm the gradient buckets (see
        :meth:`GradientBuckets.begin`) when this epoch exchanges gradients."""
        if self._exact_or_quantized(epoch) and self.tensors:
            self.buckets.begin(self._quantized(epoch), hooks=hooks)

    def aggregate(self, stats: torch.Tensor, epoch: int) -> tuple[torch.Tensor, int]:
        """Exchange what the method exchanges after a minibatch's backward pass; returns the
        global stats (criterion, the eval nodes, the sample count last) and the sample count of
        this process's update.
        The gradients go in buckets in their own dtype (started during the backward pass after
        :meth:`begin_minibatch`), the stats (float64) in one small all-reduce beside them."""
        d = self.dist
        if not d.active:
            return stats, int(stats[-1].item())
        if self.local_updates(epoch):
            n_local = int(stats[-1].item())
            self.block_samples += n_local
            d.all_reduce_(stats)
            self.block_total += int(stats[-1].item())
            return stats, n_local
        if not self.tensors:
            d.all_reduce_(stats)
            return stats, int(stats[-1].item())
        if not self.buckets.armed:                # aggregate without begin_minibatch: every bucket now
            self.buckets.begin(self._quantized(epoch), hooks=False)
        self.buckets.finish(stats)
        return stats, int(stats[-1].item())

    def after_update(self, epoch: int) -> None:
        """After this process's update: sync the models when a block is full (MA, BM)."""
        if self.local_updates(epoch) and self.block_total >= self.p.block_size:
            self._sync_models(self.block_total)

    def end_epoch(self, epoch: int) -> None:
        if self.local_updates(epoch) and self.block_total > 0:
            self._sync_models(self.block_total)

    @torch.no_grad()
    def _sync_models(self, total: float) -> None:
        weight = self.block_samples / total
        flat = torch.cat([p.detach().reshape(-1).to(torch.float64) * weight for p in self.tensors])
        self.dist.all_reduce_(flat)
        avg, offset = [], 0
        for p in self.tensors:
            k = p.numel()
            avg.append(flat[offset:offset + k].reshape(p.shape).to(p.dtype))
            offset += k
        self.block_samples = self.block_total = 0
        if self.p.method == "modelaveragingsgd":
            for p, a in zip(self.tensors, avg):
                p.copy_(a)
            return
        if self.prev is None:
            raise RuntimeError("BlockMomentumSGD: start_epoch() was not called")
        bm = self.p.block_momentum
        for p, a, prev, delta in zip(self.tensors, avg, self.prev, self.block_delta):
            delta.mul_(bm).add_(prev - a, alpha=self.p.block_learning_rate)
            prev.sub_(delta)
            p.copy_(prev - bm * delta if self.p.nesterov else prev)
        if self.p.reset_sgd_momentum:
            for s in self.opt.smoothed:
                s.zero_()

    def start_epoch(self, epoch: int) -> None:
        if self.local_updates(epoch) and self.p.method == "blockmomentumsgd" and self.prev is None:
            self.prev = [p.detach().clone() for p in self.tensors]
            self.block_delta = [torch.zeros_like(p) for p in self.tensors]
        self.block_samples = self.block_total = 0

    # -- syncPerfStats -----------------------------------------------------------------------------
    def time_minibatch(self, seconds: float, epoch: int) -> None:
        if not (self.dist.active and self.p.sync_perf_stats):
            return
        self.compute_time += seconds
        self.mb_count += 1
        if self.mb_count % self.p.sync_perf_stats == 0:
            t = torch.zeros(self.dist.world_size, dtype=torch.float64)
            t[self.dist.rank] = self.compute_time
            self.dist.all_reduce_(t)
            report(f" Epoch[{epoch + 1}] syncPerfStats after {self.mb_count} minibatches: compute time per "
                   f"process {', '.join(f'{v:.3f}s' for v in t.tolist())} (slowest {t.max().item():.3f}s, "
                   f"fastest {t.min().item():.3f}s)", dist=self.dist)

    def state_dict(self) -> dict:
        out = {}
        if self.residuals is not None:
            out["residuals"] = [r.detach().cpu().clone() for r in self.residuals]
        if self.prev is not None:
            out["prev"] = [r.detach().cpu().clone() for r in self.prev]
            out["block_delta"] = [r.detach().cpu().clone() for r in self.block_delta]
        return out

    def load_state_dict(self, state: dict | None) -> None:
        if not state:
            return
        dev = self.tensors[0].device if self.tensors else "cpu"
        if "residuals" in state:
            self.buckets.residuals = [r.to(dev) for r in state["residuals"]]
        if "prev" in state:
            self.prev = [r.to(dev) for r in state["prev"]]
            self.block_delta = [r.to(dev) for r in state["block_delta"]]


def perf_clock() -> float:
    return time.perf_counter()
