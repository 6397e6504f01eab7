"""Convolution, pooling and batch normalisation on ``[channels, height, width]`` samples."""
from __future__ import annotations

import math

from ...integrations.torch_backend import nn, torch
from .base import NodeError, Op, as_bool, as_float, as_int, numel, register
from .convnd import conv_nd, geometry, local_conv_nd, nd_list, pool_nd, transposed_size, unpool_nd, volume_conv

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
    """Two forms, as CNTK's NDL (Source/ActionsLib/NDLNetworkBuilder.cpp): ``Convolution(W, image,
    kernelWidth, kernelHeight, outputChannels, horizontalSubsample, verticalSubsample,
    zeroPadding=false)`` (``W`` is ``[outputChannels, channels·kH·kW]``), and the N-dimensional
    ``Convolution(W, image, kernelShape, mapCount=, stride=1, sharing=true, autoPadding=true,
    lowerPad=0, upperPad=0, dilation=1, transpose=false, outputShape=0)`` with CNTK's geometry
    (``convnd.py``; shapes in CNTK's order, a number or one value per axis). A transposed
    convolution maps ``mapCount`` channels to the kernel's; its ``W`` is ``[mapCount, C·kH·kW]``."""
    name, aliases = "Convolution", ("Convolve",)
    positional = ("weights", "input", "kernelWidth", "kernelHeight", "outputChannels",
                  "horizontalSubsample", "verticalSubsample")
    node_args = ("weights", "input")
    min_args = 3
    optional = {"zeroPadding": False, "maxTempMemSizeInSamples": 0, "imageLayout": "cudnn", "mapCount": 0,
                "stride": 1, "sharing": True, "autoPadding": True, "lowerPad": 0, "upperPad": 0, "dilation": 1,
                "transpose": False, "outputShape": 0}

    def arrange(self, count):
        if count == 3:
            return ("weights", "input", "kernelShape")
        if count != len(self.positional):
            raise NodeError(f"Convolution takes 3 positional arguments (W, input, kernelShape) or 7 (W, input, "
                            f"kernelWidth, kernelHeight, outputChannels, horizontalSubsample, verticalSubsample), "
                            f"found {count}")
        return self.positional

    def bind(self, pos, named):
        return super().bind(pos, named) if len(pos) != 3 else self._nd_bind(pos, named)

    def _nd_bind(self, pos, named):
        attrs = self._named(named)
        attrs["kernelShape"] = pos[2]
        return [pos[0], pos[1]], attrs

    # --- the N-dimensional form -------------------------------------------------------------
    def _nd(self, attrs, image):
        """(geometry, maps, output shape) of the N-dimensional form on ``image`` [c, h, w]."""
        a = attrs
        maps = nd_list(a["mapCount"], "mapCount")
        k = numel(maps) if len(maps) > 1 else maps[0]
        sharing = {as_bool(v, "sharing") for v in nd_list(a["sharing"], "sharing", as_bool)}
        if len(sharing) > 1 or (False in sharing and as_bool(a["transpose"], "transpose")):
            raise NodeError("Convolution: sharing on some axes only, or with transpose=true, is not supported by "
                            "cntkio (sharing=true or false on every axis is)")
        if as_bool(a["transpose"], "transpose"):
            _image("ConvolutionTranspose", image)
            kern = nd_list(a["kernelShape"], "kernelShape")
            if len(kern) != 3 or kern[2] <= 0:
                raise NodeError(f"ConvolutionTranspose: the kernel shape must give the output channels (kW:kH:C), "
                                f"found {kern}")
            if k and k != image[0]:
                raise NodeError(f"ConvolutionTranspose: mapCount {k} differs from the input's {image[0]} channels")
            given = nd_list(a["outputShape"], "outputShape")
            if any(given):
                if len(given) < 2:
                    raise NodeError(f"ConvolutionTranspose: outputShape must be (w:h[:c]), found {given}")
                size = (given[1], given[0])
            else:
                size = transposed_size("ConvolutionTranspose", image[1:], kern, a["stride"], a["autoPadding"],
                                       a["lowerPad"], a["upperPad"])
            g = geometry("ConvolutionTranspose", (kern[2], *size), kern, a["stride"], a["autoPadding"],
                         a["lowerPad"], a["upperPad"], a["dilation"])
            if g.out != tuple(image[1:]):
                raise NodeError(f"ConvolutionTranspose: an output of {size[1]}x{size[0]} does not give back the "
                                f"input's {image[2]}x{image[1]}")
            return g, image[0], (kern[2], *size)
        g = geometry("Convolution", image, a["kernelShape"], a["stride"], a["autoPadding"], a["lowerPad"],
                     a["upperPad"], a["dilation"])
        if k <= 0:
            raise NodeError(f"Convolution: mapCount (the number of output maps) must be > 0, found {maps}")
        return g, k, (k, *g.out)

    def held_weights(self, attrs, image) -> tuple | None:
        """The shape ``torch`` takes the weights in, on an input of ``image`` [c, h, w]."""
        try:
            if len(image) == 4:
                return None
            if attrs.get("kernelShape") is None:
                return (int(attrs["outputChannels"]), int(image[0]), int(attrs["kernelHeight"]),
                        int(attrs["kernelWidth"]))
            g, maps, out = self._nd(attrs, tuple(image))
            if _local(attrs):
                return None
            return (maps, out[0] if as_bool(attrs["transpose"], "transpose") else g.channels, *g.kernel)
        except (NodeError, KeyError, TypeError, ValueError, IndexError):
            return None

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
        if attrs.get("kernelShape") is not None and len(shapes[1]) == 4 and sample[1] and not _local(attrs) \
                and not as_bool(attrs["transpose"], "transpose"):
            _, want, out = volume_conv(attrs, shapes[1])
            if sample[0] or numel(shapes[0]) != want:
                raise NodeError(f"Convolution: the weights must hold {want} values, found dimensions {list(shapes[0])}")
            return out, True
        if attrs.get("kernelShape") is not None:
            g, maps, out = self._nd(attrs, tuple(shapes[1]))
            want = maps * (out[0] if as_bool(attrs["transpose"], "transpose") else g.channels) * numel(g.kernel)
            if _local(attrs):            # a kernel per output position
                if sample[0] or numel(shapes[0]) != want * numel(g.out):
                    raise NodeError(f"Convolution: sharing=false: the weights must hold {want * numel(g.out)} values "
                                    f"({maps} maps x {numel(g.out)} positions x {want // maps} kernel values), found "
                                    f"dimensions {list(shapes[0])}")
                return out, True
            if sample[0] or numel(shapes[0]) != want:
                raise NodeError(f"Convolution: the weights must hold {want} values ({maps} maps x "
                                f"{want // maps // numel(g.kernel)} channels x {g.kernel[1]}x{g.kernel[0]}), found "
                                f"dimensions {list(shapes[0])}")
            return out, True
        c, h, w, kw, kh, oc, sw, sh, ph, pw = self._geom(attrs, shapes)
        if sample[0] or numel(shapes[0]) != oc * c * kh * kw:
            raise NodeError(f"Convolution: the weights must be [{oc}, {c * kh * kw}] (outputChannels x "
                            f"channels*kernelHeight*kernelWidth), found {list(shapes[0])}")
        oh, ow = _out(h, kh, sh, ph), _out(w, kw, sw, pw)
        if oh <= 0 or ow <= 0:
            raise NodeError(f"Convolution: a {kw}x{kh} kernel does not fit a {w}x{h} image")
        return (oc, oh, ow), True

    def compile(self, attrs, shapes, sample):
        if attrs.get("kernelShape") is not None and len(shapes[1]) == 4 and sample[1] and not _local(attrs) \
                and not as_bool(attrs["transpose"], "transpose"):
            return volume_conv(attrs, shapes[1])[0]
        if attrs.get("kernelShape") is not None:
            g, maps, out = self._nd(attrs, tuple(shapes[1]))
            if _local(attrs):
                return local_conv_nd(g, maps)
            return conv_nd(g, maps, as_bool(attrs["transpose"], "transpose"), out[1:])
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


def _local(attrs) -> bool:
    """``sharing=false`` (on every axis): a kernel per output position."""
    return not as_bool(nd_list(attrs.get("sharing", True), "sharing", as_bool)[0], "sharing")


@register
class Pooling(Op):
    """``Pooling(input, poolKind, kernelShape, stride=1, autoPadding=true, lowerPad=0, upperPad=0,
    ceilOutDim=false, includePad=false)``: ``"max"`` or ``"average"`` pooling with CNTK's geometry
    (``convnd.py``); the kernel ``(kW:kH)`` or ``(kW:kH:1)``."""
    name = "Pooling"
    positional = ("input", "poolKind", "kernelShape")
    node_args = ("input",)
    optional = {"stride": 1, "autoPadding": True, "lowerPad": 0, "upperPad": 0, "ceilOutDim": False,
                "includePad": False, "imageLayout": "cudnn", "dilation": 1}

    def _geom(self, attrs, shape):
        kind = str(attrs["poolKind"]).lower()
        if kind not in ("max", "average"):
            raise NodeError(f"Pooling: poolKind must be \"max\" or \"average\", found {attrs['poolKind']!r}")
        k = nd_list(attrs["kernelShape"], "kernelShape")
        if len(k) == 3 and k[2] != 1:
            raise NodeError(f"Pooling: cntkio pools over width and height (kernel (kW:kH) or (kW:kH:1)), found {k}")
        g = geometry("Pooling", shape, k[:2], attrs["stride"], attrs["autoPadding"], attrs["lowerPad"],
                     attrs["upperPad"], attrs["dilation"], as_bool(attrs["ceilOutDim"], "ceilOutDim"))
        return kind, g

    def infer(self, attrs, shapes, sample):
        _, g = self._geom(attrs, shapes[0])
        return (shapes[0][0], *g.out), sample[0]

    def compile(self, attrs, shapes, sample):
        kind, g = self._geom(attrs, shapes[0])
        return pool_nd(g, kind, as_bool(attrs["includePad"], "includePad"))


@register
class MaxUnpooling(Op):
    """``MaxUnpooling(unpoolInput, poolInput, kernelShape, stride=1, autoPadding=true, lowerPad=0,
    upperPad=0)``: ``unpoolInput`` put back where max pooling of ``poolInput`` (with that
    geometry) found its maxima, zeros elsewhere; the shape of ``poolInput``."""
    name = "MaxUnpooling"
    positional = ("unpoolInput", "poolInput", "kernelShape")
    node_args = ("unpoolInput", "poolInput")
    optional = {"stride": 1, "autoPadding": True, "lowerPad": 0, "upperPad": 0, "imageLayout": "cudnn"}

    def _geom(self, attrs, shapes):
        k = nd_list(attrs["kernelShape"], "kernelShape")
        if len(k) == 3 and k[2] != 1:
            raise NodeError(f"MaxUnpooling: the kernel must be (kW:kH) or (kW:kH:1), found {k}")
        g = geometry("MaxUnpooling", shapes[1], k[:2], attrs["stride"], attrs["autoPadding"], attrs["lowerPad"],
                     attrs["upperPad"])
        if tuple(shapes[0]) != (shapes[1][0], *g.out):
            raise NodeError(f"MaxUnpooling: the input to unpool has dimensions {list(shapes[0])}; pooling "
                            f"{list(shapes[1])} gives {[shapes[1][0], *g.out]}")
        return g

    def infer(self, attrs, shapes, sample):
        self._geom(attrs, shapes)
        return tuple(shapes[1]), sample[1]

    def compile(self, attrs, shapes, sample):
        return unpool_nd(self._geom(attrs, shapes))


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
    """``BatchNormalization(input, scale, bias, runMean, runVariance[, runCount], spatial=false,
    normalizationTimeConstant=0, epsilon=1e-5)``: batch statistics while training (updating the
    running mean and variance, which are Parameters with ``needGradient=false``), the running
    ones in evaluation. ``spatial=true`` normalises per channel of an image.

    The running statistics follow CNTK's exponential average (TrainingNodes.h,
    ``ComputeExpAvgFactor``): a minibatch of ``n`` samples weighs ``1 - exp(-n / timeConstant)``
    (0: the minibatch's own statistics; infinity: frozen); with ``runCount`` (the samples seen so
    far, as CNTK counts them) the first minibatch replaces them whole."""
    name = "BatchNormalization"
    positional = node_args = ("input", "scale", "bias", "runMean", "runVariance", "runCount")
    min_args = 5
    optional = {"spatial": False, "normalizationTimeConstant": 0.0, "epsilon": 1e-5, "eval": False,
                "useCntkEngine": True, "imageLayout": "cudnn", "blendTimeConstant": 0.0, "engine": "cntk",
                "disableRegularization": False}
    stateful = True

    def infer(self, attrs, shapes, sample):
        x = shapes[0]
        spatial = as_bool(attrs["spatial"], "spatial")
        want = x[0] if spatial else numel(x)
        if spatial:
            _image(self.name, x)
        for i, what in enumerate(self.positional[1:5], 1):
            if sample[i] or numel(shapes[i]) != want:
                raise NodeError(f"BatchNormalization: {what} must have {want} values, found dimensions "
                                f"{list(shapes[i])}")
        if len(shapes) > 5 and (sample[5] or numel(shapes[5]) != 1):
            raise NodeError(f"BatchNormalization: runCount must be one value, found dimensions {list(shapes[5])}")
        return tuple(x), sample[0]

    def compile(self, attrs, shapes, sample):
        spatial = as_bool(attrs["spatial"], "spatial")
        eps = as_float(attrs["epsilon"], "epsilon")
        tc = as_float(attrs["normalizationTimeConstant"], "normalizationTimeConstant")
        shape = tuple(shapes[0])
        seen = {"zero": None}           # runCount == 0, read from the device once, then kept here

        def fn(x, g, b, m, v, count=None, training=False):
            n = x.shape[0]
            momentum = 1.0 if tc == 0 else (0.0 if math.isinf(tc) else -math.expm1(-n / tc))
            if count is not None and training and n > 1 and count.device.type != "meta":
                if seen["zero"] is None:
                    seen["zero"] = bool(count.reshape(-1)[0] == 0)
                if seen["zero"]:
                    momentum = 1.0
                seen["zero"] = False
                with torch.no_grad():
                    count.add_(n)
            xs = x if spatial or x.dim() == 2 else x.reshape(n, -1)
            m, v, g, b = (t if t.dim() == 1 else t.reshape(-1) for t in (m, v, g, b))   # held as vectors
            out = F.batch_norm(xs, m, v, g, b, training=training and n > 1, momentum=momentum, eps=eps)
            return out if xs is x else out.reshape(n, *shape)
        fn.wants_training = True
        return fn
