"""CNTK's N-dimensional convolution, transposed convolution, pooling and max-unpooling on
``[channels, height, width]`` samples, with CNTK's geometry; it never binds a language's arguments.

The geometry is Source/Math/ConvolveGeometry.h's, per axis of CNTK's order (width, height,
channels): with ``autoPadding`` the output is ``ceil(size / stride)`` (``ceilOutDim`` aside) and
the padding before and after is where CNTK centres the kernel (``GetLowerPad``/``GetUpperPad``:
for an even kernel or a stride that does not divide the size the two differ); without it the
explicit ``lowerPad``/``upperPad``, which must then fill the whole input. The kernel spans all of
the input's channels (``(kW:kH)`` or ``(kW:kH:C)``); ``mapCount`` output maps. Symmetric padding
runs in ``torch.nn.functional``'s call itself; other padding pads the input first (zeros for
convolutions, -inf for max pooling, excluded from averages unless ``includePad``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ...integrations.torch_backend import nn, torch
from .base import NodeError, as_bool, as_int, numel

F = nn.functional

__all__ = ["Geometry", "geometry", "transposed_size", "conv_nd", "local_conv_nd", "volume_conv", "pool_nd", "unpool_nd", "nd_list"]


def nd_list(v, what: str, cast=as_int) -> list:
    """A per-axis value: a number (every axis) or a list in CNTK's order."""
    if isinstance(v, (list, tuple)):
        if not v:
            raise NodeError(f"{what}: expected a value or one per axis, found an empty list")
        return [cast(x, what) for x in v]
    return [cast(v, what)]


def _axis(values: list, i: int):
    return values[0] if len(values) == 1 else values[i]


@dataclass(frozen=True)
class Geometry:
    """Per spatial axis (height, width: torch's order): kernel, stride, dilation, padding before
    and after; the input and output sizes; ``channels`` of the input."""
    kernel: tuple
    stride: tuple
    dilation: tuple
    lo: tuple
    hi: tuple
    size: tuple
    out: tuple
    channels: int

    @property
    def symmetric(self) -> bool:
        """The padding is one ``padding=`` argument (what it adds after the input is unused or equal)."""
        if any(p < 0 for p in self.lo + self.hi):
            return False
        return all(lo == hi or ((n + 2 * lo - (d * (k - 1) + 1)) // s + 1 == o and hi <= lo)
                   for lo, hi, n, k, s, d, o in zip(self.lo, self.hi, self.size, self.kernel, self.stride,
                                                     self.dilation, self.out))


def transposed_size(name: str, size: tuple, kernel, stride=1, auto=True, lower=0, upper=0) -> tuple:
    """(height, width) of a transposed convolution's output from its input's (CNTK's
    ComputeInputShape: ``(n-1)·stride + 1`` with autoPadding, else ``+ kernel - lowerPad - upperPad``)."""
    k, st = nd_list(kernel, f"{name} kernel shape"), nd_list(stride, f"{name} stride")
    ap = nd_list(auto, f"{name} autoPadding", as_bool)
    lp, up = nd_list(lower, f"{name} lowerPad"), nd_list(upper, f"{name} upperPad")
    out = []
    for i, n in ((1, size[0]), (0, size[1])):
        base = (n - 1) * _axis(st, i)
        out.append(base + 1 if _axis(ap, i) else base + k[i] - _axis(lp, i) - _axis(up, i))
    return tuple(out)


def geometry(name: str, shape, kernel, stride=1, auto=True, lower=0, upper=0, dilation=1, ceil=False,
             channel_kernel_any: bool = False) -> Geometry:
    """The geometry of a kernel ``kernel`` (CNTK order: ``[kW, kH]`` or ``[kW, kH, C]``) on an
    image of ``shape`` ``[c, h, w]`` (CNTK's ComputeOutputShape and GetLowerPad/GetUpperPad)."""
    if len(shape) != 3:
        raise NodeError(f"{name}: the input must be an image ([channels, height, width], e.g. from ImageInput "
                        f"or Reshape with image dimensions), found dimensions {list(shape)}")
    c, h, w = (int(d) for d in shape)
    k = nd_list(kernel, f"{name} kernel shape")
    if len(k) not in (2, 3) or (len(k) == 3 and k[2] not in (0, c) and not channel_kernel_any):
        raise NodeError(f"{name}: cntkio convolves images with a kernel over width and height spanning all "
                        f"channels ((kW:kH) or (kW:kH:{c})), found {k}")
    st, dl = nd_list(stride, f"{name} stride"), nd_list(dilation, f"{name} dilation")
    ap = nd_list(auto, f"{name} autoPadding", as_bool)
    lp, up = nd_list(lower, f"{name} lowerPad"), nd_list(upper, f"{name} upperPad")
    kern, strd, dil, lo, hi, outs = [], [], [], [], [], []
    for i, n in ((1, h), (0, w)):               # CNTK axis 1 is the width; torch's order is (h, w)
        kk, s, d = k[i], _axis(st, i), _axis(dl, i)
        if kk < 1 or s < 1 or d < 1:
            raise NodeError(f"{name}: kernel, stride and dilation must be >= 1, found {kk}, {s}, {d}")
        eff = (kk - 1) * d + 1
        if eff > n:
            raise NodeError(f"{name}: a kernel of {kk} (dilation {d}) does not fit an image axis of {n}")
        a = _axis(ap, i)
        padded = n + (d * (kk - 1) if a else _axis(lp, i) + _axis(up, i))
        exact = (padded - eff) / s + 1
        o = math.ceil(exact) if ceil else math.floor(exact)
        if a:
            cells = (o - 1) * s + 1
            extra = n - cells
            centre = extra // 2
            lo.append((eff - 1) // 2 - centre)
            hi.append((eff - 1) - (eff - 1) // 2 - (extra - centre))
        else:
            lo.append(_axis(lp, i))
            hi.append(_axis(up, i))
            if (lo[-1] or hi[-1]) and (o - 1) * s + kk != padded:
                raise NodeError(f"{name}: with lowerPad/upperPad the kernel must fill the whole padded axis "
                                f"({padded} values, kernel {kk}, stride {s})")
        kern.append(kk)
        strd.append(s)
        dil.append(d)
        outs.append(o)
    return Geometry(tuple(kern), tuple(strd), tuple(dil), tuple(lo), tuple(hi), (h, w), tuple(outs), c)


def _pad(x, g: Geometry, value: float):
    """The input padded by the geometry's padding (a negative one crops)."""
    return F.pad(x, (g.lo[1], g.hi[1], g.lo[0], g.hi[0]), value=value)


def conv_nd(g: Geometry, maps: int, transpose: bool = False, out_size: tuple | None = None):
    """``fn(W, x)``: the convolution (or transposed convolution) with weights ``W`` held as
    ``[maps, C·kH·kW]`` or ``[maps, C, kH, kW]``; ``fn.biased(W, x, b)`` adds a bias per map."""
    kh, kw = g.kernel
    if transpose:
        oh, ow = out_size or g.size

        def tfn(wt, x):             # the adjoint of the forward convolution of the geometry
            wt = wt if wt.dim() == 4 else wt.reshape(maps, -1, kh, kw)
            full = F.conv_transpose2d(x, wt, stride=g.stride, dilation=g.dilation)
            return F.pad(full, (-g.lo[1], ow + g.lo[1] - full.shape[3], -g.lo[0], oh + g.lo[0] - full.shape[2]))
        return tfn
    sym = g.symmetric
    pad = g.lo if sym else (0, 0)

    def fn(wt, x):
        wt = wt if wt.dim() == 4 else wt.reshape(maps, g.channels, kh, kw)
        return F.conv2d(x if sym else _pad(x, g, 0.0), wt, stride=g.stride, padding=pad, dilation=g.dilation)

    def biased(wt, x, b):
        wt = wt if wt.dim() == 4 else wt.reshape(maps, g.channels, kh, kw)
        return F.conv2d(x if sym else _pad(x, g, 0.0), wt, b if b.dim() == 1 else b.reshape(-1), stride=g.stride,
                        padding=pad, dilation=g.dilation)
    fn.biased = biased
    return fn


def volume_conv(attrs: dict, vol) -> tuple:
    """A convolution of a rank-4 input (CNTK's ``[W x H x D x C]``, held ``[C, D, H, W]``) with a
    kernel of rank 3 ``(kW:kH:kD)`` spanning the channels ``C``: ``(fn(W, x), weights' values,
    output shape)``. ConvNetLRN_CIFAR10_DataAug.cntk's LRN convolves ``SplitDimension (x2, 3, 1)``
    with a ``(1:1:2n+1)`` kernel: a sum over neighbouring channels. The padding is CNTK's
    autoPadding (odd kernels, centred) or none; strides per axis; no dilation."""
    c, d, h, w = (int(v) for v in vol)
    kern = nd_list(attrs["kernelShape"], "kernelShape")
    if len(kern) != 3:
        raise NodeError(f"Convolution: a rank-4 input needs a kernel of rank 3 (kW:kH:kD), found {kern}")
    maps = numel(nd_list(attrs["mapCount"], "mapCount"))
    stride, auto = nd_list(attrs["stride"], "stride"), nd_list(attrs["autoPadding"], "autoPadding", as_bool)
    if any(x != 1 for x in nd_list(attrs["dilation"], "dilation")):
        raise NodeError("Convolution: dilation of a rank-4 input is not supported by cntkio")
    if not all(auto) and any(nd_list(attrs["lowerPad"], "lowerPad") + nd_list(attrs["upperPad"], "upperPad")):
        raise NodeError("Convolution: lowerPad/upperPad of a rank-4 input are not supported by cntkio (autoPadding is)")
    size, ks, ss, ps = (w, h, d), [], [], []
    for i in range(3):
        k, st, pad = kern[i], _axis(stride, i), _axis(auto, i)
        if pad and k % 2 == 0:
            raise NodeError(f"Convolution: autoPadding of a rank-4 input needs odd kernels, found {kern}")
        if k < 1 or st < 1 or (size[i] + (k - 1 if pad else 0) - k) < 0:
            raise NodeError(f"Convolution: a kernel {kern} with stride {stride} does not fit the input "
                            f"[{w} x {h} x {d} x {c}]")
        ks.append(k)
        ss.append(st)
        ps.append(k // 2 if pad else 0)
    outs = tuple((n + 2 * p - k) // st + 1 for n, k, st, p in zip(size, ks, ss, ps))
    if maps <= 0:
        raise NodeError(f"Convolution: mapCount (the number of output maps) must be > 0, found {maps}")
    kt, st_t, pt = tuple(reversed(ks)), tuple(reversed(ss)), tuple(reversed(ps))       # torch's (D, H, W)

    def fn(wt, x):
        return F.conv3d(x, wt.reshape(maps, c, *kt), stride=st_t, padding=pt)
    return fn, maps * c * numel(ks), (maps, *reversed(outs))


def local_conv_nd(g: Geometry, maps: int):
    """``fn(W, x)``: CNTK's convolution with ``sharing=false``, a kernel per output position (a
    locally connected layer; Deprecated CIFAR-10 05_ConvLocal's ConvLocalReLULayer). ``W`` is held
    as ``[maps·outH·outW, C·kH·kW]``: its rows map by map (CNTK's output ``[outW x outH x maps]``),
    its columns as the shared kernel's (channel, row, column)."""
    positions = g.out[0] * g.out[1]

    def fn(wt, x):
        u = F.unfold(_pad(x, g, 0.0), g.kernel, dilation=g.dilation, stride=g.stride)    # [n, C·kH·kW, L]
        y = torch.einsum("mlk,nkl->nml", wt.reshape(maps, positions, -1), u)
        return y.reshape(x.shape[0], maps, *g.out)
    return fn


def pool_nd(g: Geometry, kind: str, include_pad: bool = False):
    """``fn(x)``: max or average pooling with the geometry's padding (never winning a max, not
    counted in an average unless ``include_pad``)."""
    if kind == "max":
        if g.symmetric and all(2 * p <= k for p, k in zip(g.lo, g.kernel)):
            return lambda x: F.max_pool2d(x, g.kernel, g.stride, g.lo, g.dilation)
        return lambda x: F.max_pool2d(_pad(x, g, -math.inf), g.kernel, g.stride, 0, g.dilation)
    if g.dilation != (1, 1):
        raise NodeError("average pooling with a dilation is not supported by cntkio")
    if g.symmetric and all(2 * p <= k for p, k in zip(g.lo, g.kernel)):
        return lambda x: F.avg_pool2d(x, g.kernel, g.stride, g.lo, count_include_pad=include_pad)
    area = float(numel(g.kernel))

    def avg(x):
        s = F.avg_pool2d(_pad(x, g, 0.0), g.kernel, g.stride) * area
        if include_pad:
            return s / area
        ones = _pad(torch.ones(1, 1, *x.shape[2:], dtype=x.dtype, device=x.device), g, 0.0)
        return s / (F.avg_pool2d(ones, g.kernel, g.stride) * area)
    return avg


def unpool_nd(g: Geometry):
    """``fn(y, x)``: ``y`` (of the pooled size) placed where max pooling of ``x`` found its maxima,
    zeros elsewhere (CNTK's MaxUnpooling); the result has the shape of ``x``."""
    def fn(y, x):
        xp = _pad(x, g, -math.inf)
        _, idx = F.max_pool2d(xp, g.kernel, g.stride, 0, g.dilation, return_indices=True)
        up = F.max_unpool2d(y, idx, g.kernel, g.stride, 0, output_size=xp.shape[2:])
        return F.pad(up, (-g.lo[1], -g.hi[1], -g.lo[0], -g.hi[0]))
    return fn
