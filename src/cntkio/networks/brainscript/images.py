"""Convolutions and pooling in CNTK's BrainScript library: the node functions ``Convolution``,
``ConvolutionTranspose``, ``Pooling``, ``MaxUnpooling``, ``MaxPooling``, ``AveragePooling`` and the
layers on them (``ConvolutionalLayer``, ``ConvolutionTransposeLayer``, ``BilinearUpsamplingLayer``,
``MaxPoolingLayer``, ``AveragePoolingLayer``, ``MaxUnpoolingLayer``), with CNTK.core.bs's
parameters; the geometry is the node library's (``nodes/convnd.py``). It never evaluates text.
"""
from __future__ import annotations

import math

from .layers import activation
from .library import as_node, builtin, dims_of, function_of, is_none, param
from .syntax import BrainScriptError
from .values import Array

__all__: list[str] = []


def _shape(ev, v, loc, what):
    """A per-axis argument (a number or boolean, or an array of them) as the node takes it."""
    if isinstance(v, Array):
        items = v.values(ev)
        if not all(isinstance(i, (int, float, bool)) for i in items):
            raise BrainScriptError(f"{what}: expected numbers or booleans, one per axis", loc)
        return [i if isinstance(i, bool) else int(i) for i in items]
    if isinstance(v, (int, float, bool)):
        return v if isinstance(v, bool) else int(v)
    raise BrainScriptError(f"{what}: expected a number or one per axis (a:b:...), found {v!r}", loc)


def _maps(v, loc, what) -> int:
    d = dims_of(v, loc, what)
    return math.prod(d) if d else 0


def convolution(ev, W, x, kernel, maps, a, loc, *, transpose=False, output=None):
    attrs = {"kernelShape": _shape(ev, kernel, loc, "kernel shape"), "mapCount": maps,
             "stride": _shape(ev, a["stride"], loc, "stride"), "sharing": _shape(ev, a["sharing"], loc, "sharing"),
             "autoPadding": _shape(ev, a["autoPadding"], loc, "autoPadding"),
             "lowerPad": _shape(ev, a["lowerPad"], loc, "lowerPad"), "upperPad": _shape(ev, a["upperPad"], loc, "upperPad"),
             "dilation": _shape(ev, a.get("dilation", 1), loc, "dilation"), "transpose": transpose}
    if output is not None and not is_none(output):
        attrs["outputShape"] = _shape(ev, output, loc, "outputShape")
    return ev.node("Convolution", [as_node(ev, W, loc, "Convolution"), as_node(ev, x, loc, "Convolution")], attrs, loc)


_CONV = ("mapDims=0, stride=1, sharing=true, autoPadding=true, lowerPad=0, upperPad=0")


@builtin("Convolution (weightNode, inputValueNode, kernelDims, " + _CONV + ", dilation=1, imageLayout='CHW', "
         "maxTempMemSizeInSamples=0, tag='')")
def _Convolution(ev, a, loc):
    return convolution(ev, a["weightNode"], a["inputValueNode"], a["kernelDims"], _maps(a["mapDims"], loc, "mapDims"),
                       a, loc)


@builtin("ConvolutionTranspose (weightNode, inputValueNode, kernelDims, " + _CONV + ", outputShape=None, dilation=1, "
         "imageLayout='CHW', maxTempMemSizeInSamples=0, tag='')")
def _ConvolutionTranspose(ev, a, loc):
    return convolution(ev, a["weightNode"], a["inputValueNode"], a["kernelDims"], _maps(a["mapDims"], loc, "mapDims"),
                       a, loc, transpose=True, output=a["outputShape"])


def pooling(ev, x, kind, kernel, a, loc):
    attrs = {"poolKind": kind, "kernelShape": _shape(ev, kernel, loc, "kernel shape"),
             "stride": _shape(ev, a["stride"], loc, "stride"), "autoPadding": _shape(ev, a["autoPadding"], loc, "pad"),
             "lowerPad": _shape(ev, a["lowerPad"], loc, "lowerPad"), "upperPad": _shape(ev, a["upperPad"], loc, "upperPad"),
             "ceilOutDim": bool(a["ceilOutDim"]), "includePad": bool(a["includePad"])}
    return ev.node("Pooling", [as_node(ev, x, loc, "Pooling")], attrs, loc)


@builtin("Pooling (input, poolKind, kernelDims, stride=1, autoPadding=true, lowerPad=0, upperPad=0, ceilOutDim=false, "
         "includePad=false, imageLayout='CHW', tag='')")
def _Pooling(ev, a, loc):
    return pooling(ev, a["input"], a["poolKind"], a["kernelDims"], a, loc)


def unpooling(ev, y, x, kernel, a, loc):
    attrs = {"kernelShape": _shape(ev, kernel, loc, "kernel shape"), "stride": _shape(ev, a["stride"], loc, "stride"),
             "autoPadding": _shape(ev, a["autoPadding"], loc, "pad"), "lowerPad": _shape(ev, a["lowerPad"], loc, "lowerPad"),
             "upperPad": _shape(ev, a["upperPad"], loc, "upperPad")}
    return ev.node("MaxUnpooling", [as_node(ev, y, loc, "MaxUnpooling"), as_node(ev, x, loc, "MaxUnpooling")], attrs,
                   loc)


@builtin("MaxUnpooling (unpoolInput, poolInput, kernelDims, stride=1, autoPadding=true, lowerPad=0, upperPad=0, "
         "imageLayout='CHW', tag='')")
def _MaxUnpooling(ev, a, loc):
    return unpooling(ev, a["unpoolInput"], a["poolInput"], a["kernelDims"], a, loc)


def _legacy_pooling(op):
    def f(ev, a, loc):
        return ev.node(op, [as_node(ev, a["input"], loc, op)],
                       {k: int(a[k]) for k in ("windowWidth", "windowHeight", "horizontalSubsample",
                                               "verticalSubsample")}, loc)
    return f


for _op in ("MaxPooling", "AveragePooling"):
    builtin(f"{_op} (input, windowWidth, windowHeight, horizontalSubsample, verticalSubsample, imageLayout='CHW', "
            "tag='')")(_legacy_pooling(_op))


# --- layers -------------------------------------------------------------------------------------
def _filter(ev, v, loc, what) -> list[int]:
    d = dims_of(v, loc, what)
    if not d or any(k <= 0 for k in d):
        raise BrainScriptError(f"{what}: expected a filter shape of dimensions > 0, e.g. (5:5), found {d}", loc)
    return d


@builtin("ConvolutionalLayer {numOutputChannels, filterShape, bias=true, activation=(x => x), init='glorotUniform', "
         "initValueScale=1, initBias=0, stride=1, pad=false, lowerPad=0, upperPad=0, dilation=1, "
         "maxTempMemSizeInSamples=0}")
def _ConvolutionalLayer(ev, a, loc):
    out = dims_of(a["numOutputChannels"], loc, "ConvolutionalLayer numOutputChannels")
    k = math.prod(out)
    filt = _filter(ev, a["filterShape"], loc, "ConvolutionalLayer filterShape")
    W = param(ev, [*filt, 0, *out], loc, init=a["init"], scale=a["initValueScale"], filter_rank=len(filt),
              output_rank=-1, shape=(k, 0))
    b = param(ev, [1] * len(filt) + out, loc, value=a["initBias"], shape=(k, 1)) if a["bias"] else None
    opts = {"stride": a["stride"], "sharing": True, "autoPadding": a["pad"], "lowerPad": a["lowerPad"],
            "upperPad": a["upperPad"], "dilation": a["dilation"]}
    act = a["activation"]

    def apply_(ev, x, l2):
        c = convolution(ev, W, x, a["filterShape"], k, opts, loc)
        return activation(ev, act, ev.node("Plus", [c, b], loc=loc) if b is not None else c, loc)
    return function_of("ConvolutionalLayer", apply_)


@builtin("ConvolutionTransposeLayer {numOutputChannels, filterShape, numInputChannels, bias=true, "
         "activation=(x => x), init='glorotUniform', initValueScale=0.001, initBias=0, stride=1, pad=false, "
         "lowerPad=0, upperPad=0, outputShape=None, dilation=1, maxTempMemSizeInSamples=0}")
def _ConvolutionTransposeLayer(ev, a, loc):
    out = dims_of(a["numOutputChannels"], loc, "ConvolutionTransposeLayer numOutputChannels")
    inc = dims_of(a["numInputChannels"], loc, "ConvolutionTransposeLayer numInputChannels")
    filt = _filter(ev, a["filterShape"], loc, "ConvolutionTransposeLayer filterShape")
    ko, ki = math.prod(out), math.prod(inc)
    W = param(ev, [*filt, *out, *inc], loc, init=a["init"], scale=a["initValueScale"],
              shape=(ki, ko * math.prod(filt)))
    b = param(ev, [1] * len(filt) + out, loc, value=a["initBias"], shape=(ko, 1)) if a["bias"] else None
    kern = [*filt, ko]
    opts = {"stride": a["stride"], "sharing": True, "autoPadding": a["pad"], "lowerPad": a["lowerPad"],
            "upperPad": a["upperPad"], "dilation": a["dilation"]}
    act = a["activation"]

    def apply_(ev, x, l2):
        c = ev.node("Convolution", [W, as_node(ev, x, l2, "ConvolutionTransposeLayer")],
                    {"kernelShape": kern, "mapCount": ki, "transpose": True,
                     **{k2: _shape(ev, v, loc, k2) for k2, v in opts.items()},
                     **({} if is_none(a["outputShape"]) else
                        {"outputShape": _shape(ev, a["outputShape"], loc, "outputShape")})}, loc)
        return activation(ev, act, ev.node("Plus", [c, b], loc=loc) if b is not None else c, loc)
    return function_of("ConvolutionTransposeLayer", apply_)


@builtin("BilinearUpsamplingLayer {numChannels, kernelSize, stride}")
def _BilinearUpsamplingLayer(ev, a, loc):
    c, k = int(a["numChannels"]), int(a["kernelSize"])
    W = param(ev, [k, k, c, c], loc, init="bilinear", lr_mult=0, shape=(c, c * k * k))
    attrs = {"kernelShape": [k, k, c], "mapCount": c, "transpose": True, "stride": _shape(ev, a["stride"], loc, "stride"),
             "autoPadding": False, "lowerPad": 0, "upperPad": 0}
    return function_of("BilinearUpsamplingLayer", lambda ev, x, l2: ev.node(
        "Convolution", [W, as_node(ev, x, l2, "BilinearUpsamplingLayer")], attrs, loc))


def _pool_layer(name, kind_of):
    def f(ev, a, loc):
        kind = kind_of(a)
        opts = {"stride": a["stride"], "autoPadding": a["pad"], "lowerPad": a["lowerPad"], "upperPad": a["upperPad"],
                "ceilOutDim": a["ceilOutDim"], "includePad": a.get("includePad", False)}
        return function_of(name, lambda ev, x, l2: pooling(ev, x, kind, a["filterShape"], opts, loc))
    return f


_POOL = "stride=1, pad=false, lowerPad=0, upperPad=0, ceilOutDim=false"
builtin("_PoolingLayer {poolKind, filterShape, " + _POOL + ", includePad=false}")(
    _pool_layer("_PoolingLayer", lambda a: a["poolKind"]))
builtin("MaxPoolingLayer {filterShape, " + _POOL + "}")(_pool_layer("MaxPoolingLayer", lambda a: "max"))
builtin("AveragePoolingLayer {filterShape, " + _POOL + ", includePad=false}")(
    _pool_layer("AveragePoolingLayer", lambda a: "average"))


@builtin("MaxUnpoolingLayer {filterShape, stride=1, pad=false, lowerPad=0, upperPad=0}")
def _MaxUnpoolingLayer(ev, a, loc):
    opts = {"stride": a["stride"], "autoPadding": a["pad"], "lowerPad": a["lowerPad"], "upperPad": a["upperPad"]}
    return function_of("MaxUnpoolingLayer", lambda ev, y, x, l2: unpooling(ev, y, x, a["filterShape"], opts, loc),
                       ("unpoolInput", "poolInput"))
