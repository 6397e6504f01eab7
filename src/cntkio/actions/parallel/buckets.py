"""Gradients exchanged in buckets that start during the backward pass (exact all-reduce, or the
quantized all-gather), and the DDP communication hook with the same encoding; never decides a method."""
from __future__ import annotations

from ...integrations.torch_backend import torch

from .._common import Dist
from .codec import decode_quantized_sum, encode_quantized

__all__ = ["GradientBuckets", "QuantizedHookState", "quantized_allreduce_hook", "FIRST_BUCKET_BYTES", "BUCKET_BYTES"]

#: the gradient buckets' sizes (DDP's defaults are 1 MB for the first bucket and 25 MB; smaller
#: later buckets start more of the exchange during the backward pass)
FIRST_BUCKET_BYTES = 1 << 20
BUCKET_BYTES = 4 << 20


class GradientBuckets:
    """The gradients of ``tensors`` exchanged among the processes of ``dist`` in buckets.

    Tensors are grouped into buckets of about :data:`BUCKET_BYTES` (the first
    :data:`FIRST_BUCKET_BYTES`, so that the exchange starts early), in reverse order, the order in
    which the backward pass finishes their gradients (as DDP's buckets); a bucket holds one dtype
    and one device. A bucket's exchange (all-reduce of the exact sum, or the all-gather of the
    quantized encoding with ``bits`` per element and error feedback) starts as soon as the backward
    pass has finished all its gradients, while the pass goes on for the rest. :meth:`finish`
    starts the buckets not started yet (a process without samples: all of them, zero gradients)
    and waits for all. The buckets start in the same order on every process. One backward pass per
    minibatch."""

    def __init__(self, tensors: list, dist: Dist, bits: int, zero_threshold: bool) -> None:
        self.tensors, self.dist = tensors, dist
        self.bits, self.zero_threshold = bits, zero_threshold
        self.bytes_sent = 0                       # gradient bytes this process contributed
        self.residuals = None                     # quantization residuals, one per tensor
        self.armed = False
        self._buckets = None                      # tensor indices of each gradient bucket
        self._hooks = None
        self._works = None
        self._next = 0

    def _build(self) -> None:
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

    def begin(self, quantized: bool, *, hooks: bool = True) -> None:
        """Arm the buckets for the next backward pass (``hooks``: start each bucket as the pass
        finishes it; without them :meth:`finish` starts them all)."""
        if self._buckets is None:
            self._build()
        if hooks and self._hooks is None:
            self._hooks = [t.register_post_accumulate_grad_hook(self._grad_ready) for t in self.tensors]
            self._index = {id(t): i for i, t in enumerate(self.tensors)}
        self.armed = True
        self._quant_now = quantized
        self._pending = [len(b) for b in self._buckets]
        self._seen = set()
        self._works = [None] * len(self._buckets)
        self._next = 0

    def _grad_ready(self, t) -> None:
        if not self.armed:
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
            message, shapes, packed_len = encode_quantized(grads, res, self.bits, self.zero_threshold)
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

    def finish(self, stats: torch.Tensor) -> None:
        """Start the buckets not started yet, sum ``stats`` (in place) in one small all-reduce
        beside them, wait for every bucket and give each tensor its summed gradient."""
        self.armed = False
        d = self.dist
        while self._next < len(self._buckets):
            self._launch(self._next)
        if stats.device == d.comm_device:
            work = torch.distributed.all_reduce(stats, op=torch.distributed.ReduceOp.SUM, async_op=True)
            self._wait()
            work.wait()
        else:
            self._wait()
            d.all_reduce_(stats)

    def _wait(self) -> None:
        for b in range(len(self._buckets)):
            entry = self._works[b]
            entry[0].wait()
            idx = self._buckets[b]
            if len(entry) > 1:
                _, gathered, grads, shapes, packed_len = entry
                summed = decode_quantized_sum(gathered, grads, shapes, self.bits, packed_len)
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
