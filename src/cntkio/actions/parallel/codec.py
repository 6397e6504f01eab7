"""The quantized gradient encoding of CNTK's 1-bit (b-bit) SGD: columns quantized with error feedback,
packed into bytes and summed back; pure tensor functions, never a collective call."""
from __future__ import annotations

import numpy as np

from ...integrations.torch_backend import torch

__all__ = ["quantize_columns", "dequantize_columns", "encode_quantized", "decode_quantized_sum"]


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
