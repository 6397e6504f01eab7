"""Convolution, pooling and batch normalisation on ``[channels, height, width]`` samples."""
from __future__ import annotations

import math

from ...integrations.torch_backend import nn
from .base import NodeError, Op, as_bool, as_float, as_int, numel, register

F = nn.functional


def _image(name, shape):
    if len(shape) != 3:
        raise NodeError(f"{name}: the input must be an image ([channels, height, width], e.g. from "
                        f"ImageInput or Reshape with image dimensions), found dimensions {list(shape)}")
    return shape


def _out(size, k, stride, pad):
    return (size + 2 * pad - k) // stride + 1


@register
class Convolution(Op):
    """``Convolution(W, image, kernelWidth, kernelHeight, outputChannels, horizontalSubsample,
    verticalSubsample, zeroPadding=false)``; ``W`` is ``[outputChannels, channels·kH·kW]``."""
    name, aliases = "Convolution", ("Convolve",)
    positional = ("weights", "input", "kernelWidth", "kernelHeight", "outputChannels",
                  "horizontalSubsample", "verticalSubsample")
    node_args = ("weights", "input")
    optional = {"zeroPadding": False, "maxTempMemSizeInSamples": 0, "imageLayout": "cudnn"}

    def _geom(self, attrs, shapes):
        c, h, w = _image(self.name, shapes[1])
        kw, kh, oc, sw, sh = (as_int(attrs[k], k) for k in self.positional[2:])
        pad = as_bool(attrs["zeroPadding"], "zeroPadding")
        axes = attrs.get("padAxes")         # per axis (width, height), BrainScript's pad=(true:false)
        onw, onh = (bool(axes[0]), bool(axes[1])) if axes else (pad, pad)
        if (onw and kw % 2 == 0) or (onh and kh % 2 == 0):
            raise NodeError(f"Convolution: padding needs an odd kernel on the padded axes, found {kw}x{kh}")
        ph, pw = (kh // 2 if onh else 0), (kw // 2 if onw else 0)
        return c, h, w, kw, kh, oc, sw, sh, ph, pw

    def infer(self, attrs, shapes, sample):
        c, h, w, kw, kh, oc, sw, sh, ph, pw = self._geom(attrs, shapes)
        if sample[0] or numel(shapes[0]) != oc * c * kh * kw:
            raise NodeError(f"Convolution: the weights must be [{oc}, {c * kh * kw}] (outputChannels x "
                            f"channels*kernelHeight*kernelWidth), found {list(shapes[0])}")
        oh, ow = _out(h, kh, sh, ph), _out(w, kw, sw, pw)
        if oh <= 0 or ow <= 0:
            raise NodeError(f"Convolution: a {kw}x{kh} kernel does not fit a {w}x{h} image")
        return (oc, oh, ow), True

    def compile(self, attrs, shapes, sample):
        c, h, w, kw, kh, oc, sw, sh, ph, pw = self._geom(attrs, shapes)

        # the filters and bias are reshaped unless held in shape (ndl/layout.py)
        def fn(wt, x):
            wt = wt if wt.dim() == 4 else wt.reshape(oc, c, kh, kw)
            return F.conv2d(x, wt, stride=(sh, sw), padding=(ph, pw))

        def biased(wt, x, b):           # Plus(Convolution(W, x), b) with a bias per channel, in one call
            wt = wt if wt.dim() == 4 else wt.reshape(oc, c, kh, kw)
            return F.conv2d(x, wt, b if b.dim() == 1 else b.reshape(-1), stride=(sh, sw), padding=(ph, pw))
        fn.biased = biased
        return fn


@register
class MaxPooling(Op):
    """``MaxPooling(input, windowWidth, windowHeight, horizontalSubsample, verticalSubsample)``."""
    name = "MaxPooling"
    positional = ("input", "windowWidth", "windowHeight", "horizontalSubsample", "verticalSubsample")
    node_args = ("input",)
    optional = {"imageLayout": "cudnn"}
    pool = staticmethod(F.max_pool2d)

    def infer(self, attrs, shapes, sample):
        c, h, w = _image(self.name, shapes[0])
        ww, wh, sw, sh = (as_int(attrs[k], k) for k in self.positional[1:])
        oh, ow = _out(h, wh, sh, 0), _out(w, ww, sw, 0)
        if oh <= 0 or ow <= 0:
            raise NodeError(f"{self.name}: a {ww}x{wh} window does not fit a {w}x{h} image")
        return (c, oh, ow), sample[0]

    def compile(self, attrs, shapes, sample):
        ww, wh, sw, sh = (as_int(attrs[k], k) for k in self.positional[1:])
        f = self.pool
        return lambda x: f(x, (wh, ww), stride=(sh, sw))


@register
class AveragePooling(MaxPooling):
    name = "AveragePooling"
    pool = staticmethod(F.avg_pool2d)


@register
class BatchNormalization(Op):
    """``BatchNormalization(input, scale, bias, runMean, runVariance, spatial=false,
    normalizationTimeConstant=0, epsilon=1e-5)``: batch statistics while training (updating the
    running mean and variance, which are Parameters with ``needGradient=false``), the running
    ones in evaluation. ``spatial=true`` normalises per channel of an image."""
    name = "BatchNormalization"
    positional = node_args = ("input", "scale", "bias", "runMean", "runVariance")
    optional = {"spatial": False, "normalizationTimeConstant": 0.0, "epsilon": 1e-5, "eval": False,
                "useCntkEngine": True, "imageLayout": "cudnn", "blendTimeConstant": 0.0}
    stateful = True

    def infer(self, attrs, shapes, sample):
        x = shapes[0]
        spatial = as_bool(attrs["spatial"], "spatial")
        want = x[0] if spatial else numel(x)
        if spatial:
            _image(self.name, x)
        for i, what in enumerate(self.positional[1:], 1):
            if sample[i] or numel(shapes[i]) != want:
                raise NodeError(f"BatchNormalization: {what} must have {want} values, found dimensions "
                                f"{list(shapes[i])}")
        return tuple(x), sample[0]

    def compile(self, attrs, shapes, sample):
        spatial = as_bool(attrs["spatial"], "spatial")
        eps = as_float(attrs["epsilon"], "epsilon")
        tc = as_float(attrs["normalizationTimeConstant"], "normalizationTimeConstant")
        shape = tuple(shapes[0])

        def fn(x, g, b, m, v, training=False):
            n = x.shape[0]
            momentum = 1.0 if tc == 0 else (0.0 if math.isinf(tc) else 1.0 - math.exp(-n / tc))
            xs = x if spatial or x.dim() == 2 else x.reshape(n, -1)
            m, v, g, b = (t if t.dim() == 1 else t.reshape(-1) for t in (m, v, g, b))   # held as vectors
            out = F.batch_norm(xs, m, v, g, b, training=training and n > 1, momentum=momentum, eps=eps)
            return out if xs is x else out.reshape(n, *shape)
        fn.wants_training = True
        return fn
