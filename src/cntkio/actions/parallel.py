"""The ``parallelTrain`` section: CNTK's parallel training methods on torch.distributed.

Processes are started by ``torchrun`` (or any launcher that sets ``WORLD_SIZE``, ``RANK``,
``MASTER_ADDR``/``MASTER_PORT``): gloo on CPU, NCCL on GPUs (:func:`cntkio.actions._common.dist_context`).
Every process reads its own partition of each minibatch (cntkio's readers always read
distributed); the methods differ in what the processes exchange:

* ``DataParallelSGD``: the summed gradients of every minibatch, so that every process applies the
  update of the whole minibatch. ``gradientBits`` = 32 (64 in double precision; CNTK's default is
  the precision's width) exchanges them exactly (one all-reduce). Fewer bits quantize each
  gradient column with **error feedback**, as CNTK's 1-bit SGD: the value quantized is the
  gradient plus the residual the previous quantization left, and the new residual is kept. With 1
  bit a column is sent as one bit per element (``>= 0``, or ``>=`` the column mean with
  ``useZeroThresholdFor1BitQuantization=false``) and two reconstruction values (the means of the
  elements on each side); with b bits as b-bit indices into 2**b evenly spaced levels between the
  column's minimum and maximum. Each process all-gathers the packed columns of all processes and
  sums their reconstructions. :attr:`Parallel.bytes_sent` counts what this process contributes.
* ``ModelAveragingSGD``: every process updates its own model with its own samples; after every
  ``blockSize`` samples (all processes together; ``blockSizePerWorker`` times the process count;
  CNTK's default 40000 per process) the models are averaged, each weighted by the samples it
  processed since the last average.
* ``BlockMomentumSGD``: as model averaging, then the block's change ``G = W_prev - W_avg`` goes
  through block momentum: ``D = bm * D + blockLearningRate * G``; ``W_prev -= D``; every process
  continues from ``W_prev`` (``- bm * D`` more with ``useNesterovMomentum=true``, the default).
  ``bm = exp(-blockSize / blockMomentumAsTimeConstant)`` (or ``blockMomentumPerSync``; default
  ``1 - 1/processes``); ``resetSGDMomentum=true`` (default) zeroes the local SGD momentum at each
  sync. ``blockSize`` defaults to 120000 per process.

Before ``parallelizationStartEpoch`` (1-based, default 1) every method trains as exact
data-parallel SGD, which gives the updates of a single process. A block that is not full at the
end of an epoch is synchronised there, so every model file holds the common model.
``distributedMBReading`` is accepted either way (reading is always distributed in cntkio, which
gives the same minibatches); ``syncPerfStats`` N prints every N minibatches the slowest and fastest
process's compute time. ``useBufferedAsyncGradientAggregation=true`` (asynchronous aggregation)
is refused. A ``parallelTrain`` section in a run without torch.distributed trains on one process
after one info line.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..integrations.torch_backend import torch

from .._log import get_logger
from ..errors import NotImplementedInCntkio
from ._common import Dist, report
from ._params import get_bool, get_float, get_int, get_str, has, key_path
from .sgd import config_error

__all__ = ["ParallelParams", "Parallel", "METHODS", "PARALLEL_KEYS", "check_reader_split", "randomized_chunks", "quantize_columns", "dequantize_columns",
           "encode_quantized", "decode_quantized_sum", "QuantizedHookState", "quantized_allreduce_hook"]

_log = get_logger("actions.parallel")

#: the gradient buckets' sizes (DDP's defaults are 1 MB for the first bucket and 25 MB; smaller
#: later buckets start more of the exchange during the backward pass)
FIRST_BUCKET_BYTES = 1 << 20
BUCKET_BYTES = 4 << 20

METHODS = ("none", "dataparallelsgd", "modelaveragingsgd", "blockmomentumsgd")

#: every key of the parallelTrain section and its method sub-sections that cntkio reads
PARALLEL_KEYS = ("parallelizationMethod", "parallelizationStartEpoch", "distributedMBReading", "syncPerfStats",
                 "DataParallelSGD", "gradientBits", "useZeroThresholdFor1BitQuantization",
                 "useBufferedAsyncGradientAggregation", "ModelAveragingSGD", "BlockMomentumSGD", "blockSize",
                 "blockSizePerWorker", "blockLearningRate", "blockMomentumAsTimeConstant", "blockMomentumPerSync",
                 "resetSGDMomentum", "useNesterovMomentum")


@dataclass
class ParallelParams:
    """A ``parallelTrain`` section, resolved for ``world_size`` processes."""

    method: str = "none"
    start_epoch: int = 1
    sync_perf_stats: int = 0
    gradient_bits: int = 32
    zero_threshold: bool = True
    block_size: int = 0                  # samples of all processes per model sync (MA, BM)
    block_learning_rate: float = 1.0
    block_momentum: float = 0.0          # per sync
    reset_sgd_momentum: bool = True
    nesterov: bool = True

    @classmethod
    def from_config(cls, command, sgd, world_size: int, double: bool = False) -> "ParallelParams":
        """The ``parallelTrain`` section found from the SGD section ``sgd`` (or up the chain)."""
        cfg = sgd if sgd is not None else command
        if not has(cfg, "parallelTrain"):
            return cls()
        pt = cfg("parallelTrain")
        method = (get_str(pt, "parallelizationMethod", "none") or "none").lower()
        if method not in METHODS:
            raise config_error(pt, "parallelizationMethod",
                               f"unknown parallelizationMethod {get_str(pt, 'parallelizationMethod')!r}",
                               hint="one of None, DataParallelSGD, ModelAveragingSGD, BlockMomentumSGD")
        p = cls(method=method, start_epoch=get_int(pt, "parallelizationStartEpoch", 1),
                sync_perf_stats=get_int(pt, "syncPerfStats", 0))
        if p.start_epoch < 1:
            raise config_error(pt, "parallelizationStartEpoch", f"must be >= 1 (1-based), found {p.start_epoch}")
        if p.sync_perf_stats < 0:
            raise config_error(pt, "syncPerfStats", f"must be >= 0, found {p.sync_perf_stats}")
        if pt.exists("distributedMBReading") and not get_bool(pt, "distributedMBReading"):
            _log.info("%s=false is accepted and has no effect: cntkio's readers always read distributed "
                      "(each process its partition), which gives the same minibatches",
                      key_path(pt, "distributedMBReading"))
        if method == "dataparallelsgd":
            sub = pt("DataParallelSGD") if pt.exists("DataParallelSGD") else pt
            full = 64 if double else 32
            p.gradient_bits = get_int(sub, "gradientBits", full)
            if not (1 <= p.gradient_bits <= 32 or p.gradient_bits == 64):
                raise config_error(sub, "gradientBits", f"gradientBits must be 1 to 32 (or 64), found {p.gradient_bits}")
            if p.gradient_bits >= 32:
                p.gradient_bits = 32
            p.zero_threshold = get_bool(sub, "useZeroThresholdFor1BitQuantization", True)
            if get_bool(sub, "useBufferedAsyncGradientAggregation", False):
                v = sub("useBufferedAsyncGradientAggregation")
                raise NotImplementedInCntkio(
                    f"{getattr(v, 'file', '') or ''}{':' + str(v.line) if getattr(v, 'line', None) else ''} "
                    f"{key_path(sub, 'useBufferedAsyncGradientAggregation')}=true: asynchronous gradient "
                    "aggregation is not implemented in cntkio (aggregation is synchronous)")
        elif method in ("modelaveragingsgd", "blockmomentumsgd"):
            name = "ModelAveragingSGD" if method == "modelaveragingsgd" else "BlockMomentumSGD"
            sub = pt(name) if pt.exists(name) else pt
            if sub.exists("blockSize") and sub.exists("blockSizePerWorker"):
                raise config_error(sub, "blockSizePerWorker", "give blockSize or blockSizePerWorker, not both")
            if sub.exists("blockSize"):
                p.block_size = get_int(sub, "blockSize")
            elif sub.exists("blockSizePerWorker"):
                p.block_size = get_int(sub, "blockSizePerWorker") * world_size
            else:
                p.block_size = (40000 if method == "modelaveragingsgd" else 120000) * world_size
            if p.block_size <= 0:
                raise config_error(sub, "blockSize" if sub.exists("blockSize") else "blockSizePerWorker",
                                   f"the block size must be > 0, found {p.block_size}")
            if method == "blockmomentumsgd":
                p.block_learning_rate = get_float(sub, "blockLearningRate", 1.0)
                p.reset_sgd_momentum = get_bool(sub, "resetSGDMomentum", True)
                p.nesterov = get_bool(sub, "useNesterovMomentum", True)
                if sub.exists("blockMomentumAsTimeConstant") and sub.exists("blockMomentumPerSync"):
                    raise config_error(sub, "blockMomentumPerSync",
                                       "give blockMomentumAsTimeConstant or blockMomentumPerSync, not both")
                if sub.exists("blockMomentumAsTimeConstant"):
                    tc = get_float(sub, "blockMomentumAsTimeConstant")
                    if tc < 0:
                        raise config_error(sub, "blockMomentumAsTimeConstant", f"must be >= 0, found {tc}")
                    p.block_momentum = 0.0 if tc == 0 else math.exp(-p.block_size / tc)
                elif sub.exists("blockMomentumPerSync"):
                    p.block_momentum = get_float(sub, "blockMomentumPerSync")
                else:
                    p.block_momentum = 1.0 - 1.0 / world_size
                if not 0 <= p.block_momentum < 1:
                    raise config_error(sub, "blockMomentumPerSync", f"block momentum must be in [0, 1), "
                                       f"found {p.block_momentum}")
        return p


# --- quantization ---------------------------------------------------------------------------------
def _columns(t: torch.Tensor) -> torch.Tensor:
    """A tensor as a 2-D ``[elements per column, columns]`` view (a vector is one column)."""
    return t.reshape(t.shape[0], -1) if t.dim() >= 2 else t.reshape(-1, 1)


def quantize_columns(values: torch.Tensor, bits: int, zero_threshold: bool = True):
    """Quantize each column of ``values`` (2-D, float) to ``bits`` bits: ``(indices, lower,
    upper, reconstruction)``; indices are integers in ``[0, 2**bits)`` (uint8 for 1 bit, else
    int32). Whole-tensor torch ops (multiplications by the 0/1 mask rather than ``torch.where``,
    which is several times slower on the CPU)."""
    if bits == 1:
        thr = 0.0 if zero_threshold else values.mean(0, keepdim=True)
        hi = values >= thr
        mask = hi.to(values.dtype)
        n_hi = mask.sum(0, keepdim=True)
        n_lo = values.shape[0] - n_hi
        s_hi = (values * mask).sum(0, keepdim=True)
        s_lo = values.sum(0, keepdim=True) - s_hi
        upper = s_hi / n_hi.clamp(min=1)
        lower = s_lo / n_lo.clamp(min=1)
        recon = torch.addcmul(lower, mask, upper - lower)
        return hi.to(torch.uint8), lower[0], upper[0], recon
    lower = values.amin(0, keepdim=True)
    upper = values.amax(0, keepdim=True)
    levels = (1 << bits) - 1
    span = (upper - lower).clamp(min=torch.finfo(values.dtype).tiny)
    idx = torch.round((values - lower) / span * levels).clamp(0, levels).to(torch.int32)
    recon = lower + idx.to(values.dtype) * (span / levels)
    return idx, lower[0], upper[0], recon


def dequantize_columns(idx: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor, bits: int) -> torch.Tensor:
    """The reconstruction of :func:`quantize_columns`'s indices (the same arithmetic, so that the
    receiver's values are the sender's)."""
    if bits == 1:
        return torch.addcmul(lower[None, :], idx.to(lower.dtype), (upper - lower)[None, :])
    levels = (1 << bits) - 1
    span = (upper - lower).clamp(min=torch.finfo(lower.dtype).tiny)
    return lower[None, :] + idx.to(lower.dtype) * (span / levels)[None, :]


def _pack(idx: torch.Tensor, bits: int) -> torch.Tensor:
    """``bits``-bit integers -> bytes (uint8), least significant bit first (numpy's packbits on
    the CPU; torch ops elsewhere)."""
    flat = idx.reshape(-1)
    if bits == 1:
        b = flat.to(torch.uint8)
    else:
        shifts = torch.arange(bits, device=flat.device, dtype=torch.int32)
        b = ((flat.to(torch.int32)[:, None] >> shifts) & 1).to(torch.uint8).reshape(-1)
    if b.device.type == "cpu":
        return torch.from_numpy(np.packbits(b.numpy(), bitorder="little"))
    pad = (-b.numel()) % 8
    if pad:
        b = torch.cat([b, torch.zeros(pad, dtype=torch.uint8, device=b.device)])
    weights = (1 << torch.arange(8, device=b.device)).to(torch.uint8)
    return (b.reshape(-1, 8) * weights).sum(1, dtype=torch.uint8)


def _unpack(packed: torch.Tensor, count: int, bits: int, dtype=torch.int64) -> torch.Tensor:
    """:func:`_pack`'s inverse: ``count`` integers of ``bits`` bits, as ``dtype``."""
    if packed.device.type == "cpu":
        b = torch.from_numpy(np.unpackbits(packed.numpy(), count=count * bits, bitorder="little"))
    else:
        shifts = torch.arange(8, device=packed.device, dtype=torch.uint8)
        b = ((packed[:, None] >> shifts) & 1).reshape(-1)[:count * bits]
    if bits == 1:
        return b.to(dtype)
    weights = 1 << torch.arange(bits, device=packed.device, dtype=torch.int32)
    return (b.reshape(count, bits).to(torch.int32) * weights).sum(1).to(dtype)


def encode_quantized(grads: list, residuals: list, bits: int, zero_threshold: bool = True):
    """Quantize ``grads`` (plus ``residuals``, which are replaced by the new residuals) into one
    uint8 message: the packed indices of every tensor, then its columns' two float32 values.
    Returns ``(message, column shapes, bytes of packed indices)``."""
    packs, ranges, shapes = [], [], []
    for i, g in enumerate(grads):
        v = _columns(g + residuals[i])
        idx, lo, hi, recon = quantize_columns(v, bits, zero_threshold)
        residuals[i] = (v - recon).reshape(g.shape)
        packs.append(_pack(idx, bits))
        ranges.append(torch.stack([lo, hi]).reshape(-1))
        shapes.append(tuple(v.shape))
    packed = torch.cat(packs)
    rng = torch.cat(ranges).to(torch.float32)
    return torch.cat([packed, rng.view(torch.uint8)]), shapes, packed.numel()


def decode_quantized_sum(gathered: list, grads: list, shapes: list, bits: int, packed_len: int) -> list:
    """The sum over the processes' messages (``gathered``) of their reconstructed tensors."""
    out = [torch.zeros_like(g) for g in grads]
    for message in gathered:
        got = message.to(grads[0].device if grads else "cpu")
        all_rng = got[packed_len:].clone().view(torch.float32)
        po = ro = 0
        for i, (g, shape) in enumerate(zip(grads, shapes)):
            count = shape[0] * shape[1]
            nbytes = (count * bits + 7) // 8
            idx = _unpack(got[po:po + nbytes], count, bits, torch.uint8 if bits == 1 else torch.int32).reshape(shape)
            lo = all_rng[ro:ro + shape[1]].to(g.dtype)
            hi = all_rng[ro + shape[1]:ro + 2 * shape[1]].to(g.dtype)
            out[i] += dequantize_columns(idx, lo, hi, bits).reshape(g.shape)
            po += nbytes
            ro += 2 * shape[1]
    return out


class QuantizedHookState:
    """The state of :func:`quantized_allreduce_hook`: bits, threshold rule, the residuals of each
    DDP bucket, and the bytes this process sent."""

    def __init__(self, bits: int = 1, zero_threshold: bool = True, process_group=None) -> None:
        if not 1 <= bits < 32:
            raise ValueError(f"bits must be 1 to 31, found {bits}")
        self.bits, self.zero_threshold, self.process_group = bits, zero_threshold, process_group
        self.residuals: dict[int, list] = {}
        self.bytes_sent = 0


def quantized_allreduce_hook(state: QuantizedHookState, bucket):
    """A DDP communication hook (``model.register_comm_hook(QuantizedHookState(1),
    quantized_allreduce_hook)``) that exchanges each bucket's gradients as CNTK's 1-bit SGD did
    (``bits`` per element with error feedback, the same encoding as ``gradientBits``) and gives DDP
    their average over the processes."""
    grads = list(bucket.gradients())
    shapes_of = [tuple(p.shape) for p in bucket.parameters()]
    grads = [g.reshape(s) for g, s in zip(grads, shapes_of)]
    residuals = state.residuals.setdefault(bucket.index(), [torch.zeros_like(g) for g in grads])
    message, shapes, packed_len = encode_quantized(grads, residuals, state.bits, state.zero_threshold)
    state.bytes_sent += message.numel()
    group = state.process_group
    world = torch.distributed.get_world_size(group)
    buffer = bucket.buffer()
    if buffer.is_cuda:
        message = message.to(buffer.device)
    gathered = [torch.empty_like(message) for _ in range(world)]
    work = torch.distributed.all_gather(gathered, message, group=group, async_op=True)

    def decode(fut):
        summed = decode_quantized_sum(gathered, grads, shapes, state.bits, packed_len)
        flat = torch.cat([t.reshape(-1) for t in summed]).to(buffer.dtype) / world
        buffer.copy_(flat)
        return buffer
    return work.get_future().then(decode)


# --- the methods ----------------------------------------------------------------------------------
class Parallel:
    """What a training process does with its gradients and model under a ``parallelTrain`` method
    (``dist`` inactive: nothing, one process trains alone)."""

    def __init__(self, params: ParallelParams, dist: Dist, tensors: list, opt) -> None:
        self.p = params
        self.dist = dist
        self.tensors = tensors
        self.opt = opt
        self.bytes_sent = 0                       # gradient bytes this process contributed
        self.residuals = None
        self.block_samples = 0                    # local samples since the last model sync
        self.block_total = 0                      # all processes' samples since the last sync
        self.prev = None                          # BlockMomentumSGD: the model at the last sync
        self.block_delta = None
        self.compute_time = 0.0
        self.mb_count = 0
        self._buckets = None                      # tensor indices of each gradient bucket
        self._hooks = None
        self._armed = False
        self._works = None

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

    def _build_buckets(self) -> None:
        """Group the tensors into buckets of about :data:`BUCKET_BYTES` (the first
        :data:`FIRST_BUCKET_BYTES`, so that the exchange starts early), in reverse order, the order
        in which the backward pass finishes their gradients (as DDP's buckets); a bucket holds one
        dtype and one device."""
        buckets, cur, size, cap = [], [], 0, FIRST_BUCKET_BYTES
        for i in reversed(range(len(self.tensors))):
            t = self.tensors[i]
            nbytes = t.numel() * t.element_size()
            if cur and (size + nbytes > cap or t.dtype != self.tensors[cur[0]].dtype
                        or t.device != self.tensors[cur[0]].device):
                buckets.append(cur)
                cur, size, cap = [], 0, BUCKET_BYTES
            cur.append(i)
            size += nbytes
        if cur:
            buckets.append(cur)
        self._buckets = buckets
        self._bucket_of = {i: b for b, idx in enumerate(buckets) for i in idx}
        self._flat = [None] * len(buckets)

    def begin_minibatch(self, epoch: int, *, hooks: bool = True) -> None:
        """Before a minibatch's backward pass: a bucket's exchange (all-reduce, or the quantized
        all-gather) starts as soon as the backward pass has finished all its gradients, while the
        pass goes on for the rest (as DDP overlaps its bucketed all-reduces with the backward
        pass). :meth:`aggregate` starts the buckets not started yet (a process without samples:
        all of them, zero gradients) and waits for all. The buckets start in the same order on
        every process. One backward pass per minibatch."""
        if not self._exact_or_quantized(epoch) or not self.tensors:
            return
        if self._buckets is None:
            self._build_buckets()
        if hooks and self._hooks is None:
            self._hooks = [t.register_post_accumulate_grad_hook(self._grad_ready) for t in self.tensors]
            self._index = {id(t): i for i, t in enumerate(self.tensors)}
        self._armed = True
        self._quant_now = self._quantized(epoch)
        self._pending = [len(b) for b in self._buckets]
        self._seen = set()
        self._works = [None] * len(self._buckets)
        self._next = 0

    def _grad_ready(self, t) -> None:
        if not self._armed:
            return
        i = self._index[id(t)]
        if i in self._seen:
            raise RuntimeError("parallelTrain: a second backward pass in one minibatch (the gradient exchange "
                               "starts after the first)")
        self._seen.add(i)
        b = self._bucket_of[i]
        self._pending[b] -= 1
        while self._next < len(self._buckets) and self._pending[self._next] == 0:
            self._launch(self._next)

    def _launch(self, b: int) -> None:
        """Start bucket ``b``'s exchange (asynchronous) and count its bytes."""
        idx = self._buckets[b]
        grads = [self.tensors[i].grad if self.tensors[i].grad is not None else torch.zeros_like(self.tensors[i])
                 for i in idx]
        d = self.dist
        if self._quant_now:
            if self.residuals is None:
                self.residuals = [torch.zeros_like(t) for t in self.tensors]
            res = [self.residuals[i] for i in idx]
            message, shapes, packed_len = encode_quantized(grads, res, self.p.gradient_bits, self.p.zero_threshold)
            for i, r in zip(idx, res):
                self.residuals[i] = r
            message = message.to(d.comm_device)
            self.bytes_sent += message.numel()
            gathered = [torch.empty_like(message) for _ in range(d.world_size)]
            work = torch.distributed.all_gather(gathered, message, async_op=True)
            self._works[b] = (work, gathered, grads, shapes, packed_len)
        else:
            flat = self._flat[b]
            total = sum(g.numel() for g in grads)
            if flat is None or flat.numel() != total or flat.dtype != grads[0].dtype:
                flat = self._flat[b] = torch.empty(total, dtype=grads[0].dtype, device=d.comm_device)
            offset = 0
            for g in grads:                       # a gradient that is its slot of the buffer stays
                k = g.numel()
                slot = flat[offset:offset + k]
                if g.device != slot.device or g.data_ptr() != slot.data_ptr():
                    slot.copy_(g.reshape(-1))
                offset += k
            self.bytes_sent += sum(g.numel() * g.element_size() for g in grads)
            work = torch.distributed.all_reduce(flat, op=torch.distributed.ReduceOp.SUM, async_op=True)
            self._works[b] = (work,)
        self._next = b + 1

    def _finish(self) -> None:
        """Wait for every bucket and give each tensor its summed gradient."""
        for b in range(len(self._buckets)):
            entry = self._works[b]
            entry[0].wait()
            idx = self._buckets[b]
            if len(entry) > 1:
                _, gathered, grads, shapes, packed_len = entry
                summed = decode_quantized_sum(gathered, grads, shapes, self.p.gradient_bits, packed_len)
                for i, g in zip(idx, summed):
                    self.tensors[i].grad = g
                continue
            flat, offset = self._flat[b], 0
            same = flat.device == self.tensors[idx[0]].device
            for i in idx:
                t = self.tensors[i]
                k = t.numel()
                v = flat[offset:offset + k].view(t.shape)
                t.grad = v if same else v.to(t.device)
                offset += k
        self._works = None

    def aggregate(self, stats: torch.Tensor, epoch: int) -> tuple[torch.Tensor, int]:
        """Exchange what the method exchanges after a minibatch's backward pass; returns the
        global stats (criterion, eval, samples) and the sample count of this process's update.
        The gradients go in buckets in their own dtype (started during the backward pass after
        :meth:`begin_minibatch`), the stats (float64) in one small all-reduce beside them."""
        d = self.dist
        if not d.active:
            return stats, int(stats[2].item())
        if self.local_updates(epoch):
            n_local = int(stats[2].item())
            self.block_samples += n_local
            d.all_reduce_(stats)
            self.block_total += int(stats[2].item())
            return stats, n_local
        if not self.tensors:
            d.all_reduce_(stats)
            return stats, int(stats[2].item())
        if not self._armed:                       # aggregate without begin_minibatch: every bucket now
            self.begin_minibatch(epoch, hooks=False)
        self._armed = False
        while self._next < len(self._buckets):
            self._launch(self._next)
        if stats.device == d.comm_device:
            work = torch.distributed.all_reduce(stats, op=torch.distributed.ReduceOp.SUM, async_op=True)
            self._finish()
            work.wait()
        else:
            self._finish()
            d.all_reduce_(stats)
        return stats, int(stats[2].item())

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
            self.residuals = [r.to(dev) for r in state["residuals"]]
        if "prev" in state:
            self.prev = [r.to(dev) for r in state["prev"]]
            self.block_delta = [r.to(dev) for r in state["block_delta"]]


def describe(params: ParallelParams, dist: Dist, where: str) -> None:
    """The one info line of a parallelTrain section."""
    if params.method == "none":
        return
    if not dist.active:
        report(f"{where}: parallelTrain asks for {params.method}; not started under torchrun, so training on "
               "one process", dist=dist)
        return
    _log.info("%s: %s on %d processes (gradientBits=%d, blockSize=%d, start epoch %d)", where, params.method,
              dist.world_size, params.gradient_bits, params.block_size, params.start_epoch)


def randomized_chunks(source) -> int | None:
    """The number of chunks a randomized reader deals to processes, or None when ``source`` is not
    randomized or does not say (legacy readers, sources built from a user deserializer)."""
    if not getattr(source, "randomize", False):
        return None
    corpus = getattr(source, "_corpus", None)
    infos = getattr(corpus, "chunk_infos", None)
    if infos is None:
        return None
    return len(infos())


_RANDOMIZE = "randomize"


def _section_value(cfg, key: str):
    return cfg(key) if cfg is not None and cfg.exists(key) else None


def check_reader_split(params: ParallelParams, source, world_size: int, mb_sizes: list[int], command,
                       sgd_cfg) -> None:
    """A :class:`ConfigError` before training when a ``parallelTrain`` section asks for a method
    (``params``) and ``world_size`` processes cannot split the reader:

    * a minibatch size (of any epoch's ``minibatchSize``) smaller than the number of processes:
      every process reads at least one sequence, so the global minibatch would no longer be the one
      asked for;
    * a randomized reader with fewer chunks than processes: randomized, process ``r`` reads the
      sequences of the randomized chunks ``r, r + W, ...``, so the processes ``chunks .. W-1`` would
      read nothing (CNTK trained on with idle workers; cntkio refuses it).

    The error names the key (``minibatchSize``, or the reader section), the file and line where it
    was written, and the ``parallelTrain`` section. Without a parallelTrain method (plain
    ``torchrun``) both are allowed as before: a worker reads at least one sequence (with a warning)
    and a worker without chunks takes part in every step with no samples (cntk-io-semantics 2.6)."""
    if world_size <= 1 or params.method == "none":
        return
    cfg = sgd_cfg if sgd_cfg is not None else command
    asked = f"parallelTrain ({key_path(cfg, 'parallelTrain')}, {params.method}) on"
    small = [m for m in mb_sizes if m < world_size]
    if small:
        raise config_error(cfg, "minibatchSize",
                           f"{asked} {world_size} processes cannot split a minibatch of {min(small)} samples: "
                           "every process reads at least one sequence of each minibatch",
                           hint=f"give minibatchSize >= {world_size} in every epoch, or run fewer processes")
    chunks = randomized_chunks(source)
    if chunks is not None and chunks < world_size:
        reader = _section_value(command, "reader")
        # the reader's own key (not an SGD/parallelTrain key), named by the error when it is written
        key = _RANDOMIZE if reader is not None and reader.exists(_RANDOMIZE) else "reader"
        where = reader if key == "randomize" else command
        raise config_error(where, key,
                           f"{asked} {world_size} processes cannot split this reader: it has {chunks} randomized "
                           f"chunk(s), and a randomized reader deals whole chunks to processes, so process(es) "
                           f"{chunks}..{world_size - 1} would read nothing",
                           hint=f"run at most {chunks} processes, split the data into more chunks, or "
                           "read it without randomization (randomize=none)")


def perf_clock() -> float:
    return time.perf_counter()
