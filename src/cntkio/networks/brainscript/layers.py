"""The layers library of BrainScript: layer constructors that make their parameters once and
return the function applying them (``DenseLayer{128, activation=ReLU}``), and ``Sequential``."""
from __future__ import annotations

import math

from .library import _apply, _dims, _node, _param, define
from .syntax import BrainScriptError
from .values import Array, Function, Thunk, type_name

__all__: list[str] = []


def _layer(name: str, apply) -> Function:
    def call(ev, pos, named, loc):
        if len(pos) != 1 or named:
            raise BrainScriptError(f"the {name} takes one input, found {len(pos)}", loc,
                                   hint=f"{name}{{...}} makes the layer; apply it as layer(x)")
        return apply(ev, pos[0].force(ev), loc)
    return Function(name, ["x"], builtin=call)


def _activation(ev, act, x, loc):
    return x if act is None else _apply(ev, act, x, loc)


def _linear(ev, a, loc, name):
    out = int(a["outDim"]) if not isinstance(a["outDim"], Array) else math.prod(_dims(a["outDim"], loc, name))
    if out <= 0:
        raise BrainScriptError(f"{name}: outDim must be > 0, found {a['outDim']}", loc)
    W = _param(ev, out, 0, loc, init=a["init"], scale=a["initValueScale"], fan="dense")
    b = _param(ev, out, 1, loc, init="fixedValue", value=float(a.get("initBias", 0.0))) if a["bias"] else None
    return W, b


_DENSE = {"activation": None, "init": "glorotUniform", "initValueScale": 1.0, "bias": True, "initBias": 0.0,
          "inputRank": None, "mapRank": None}


@define("LinearLayer", ("outDim",), {k: v for k, v in _DENSE.items() if k != "activation"})
def _LinearLayer(ev, a, loc):
    W, b = _linear(ev, a, loc, "LinearLayer")

    def apply(ev, x, loc2):
        z = ev.node("Times", [W, _node(ev, x, loc2, "LinearLayer")], loc=loc)
        return ev.node("Plus", [z, b], loc=loc) if b is not None else z
    return _layer("LinearLayer", apply)


@define("DenseLayer", ("outDim",), _DENSE)
def _DenseLayer(ev, a, loc):
    W, b = _linear(ev, a, loc, "DenseLayer")
    act = a["activation"]

    def apply(ev, x, loc2):
        z = ev.node("Times", [W, _node(ev, x, loc2, "DenseLayer")], loc=loc)
        if b is not None:
            z = ev.node("Plus", [z, b], loc=loc)
        return _activation(ev, act, z, loc)
    return _layer("DenseLayer", apply)


@define("EmbeddingLayer", ("outDim",), {"init": "glorotUniform", "initValueScale": 1.0, "embeddingPath": "",
                                        "transpose": False})
def _EmbeddingLayer(ev, a, loc):
    if a["embeddingPath"]:
        raise BrainScriptError("EmbeddingLayer: embeddingPath (a fixed embedding from a file) is not supported by "
                               "cntkio", loc)
    E = _param(ev, int(a["outDim"]), 0, loc, init=a["init"], scale=a["initValueScale"], fan="dense")
    return _layer("EmbeddingLayer", lambda ev, x, l2: ev.node("Times", [E, _node(ev, x, l2, "EmbeddingLayer")], loc=loc))


def _pair(v, loc, what, default=None):
    if v is None:
        return default
    d = _dims(v, loc, what)
    if len(d) == 1:
        return d[0], d[0]
    if len(d) != 2 and not (len(d) == 3 and d[2] in (0, 1)):
        raise BrainScriptError(f"{what}: expected (width:height), found {d}", loc)
    return d[0], d[1]


def _pads(ev, pad, loc, what) -> tuple[bool, bool]:
    """``pad``: true/false for both axes, or per axis ``(width:height)`` (``(w:h:false)``: the
    channel axis is never padded)."""
    if isinstance(pad, bool):
        return pad, pad
    if isinstance(pad, Array):
        v = pad.values(ev)
        if all(isinstance(p, bool) for p in v) and len(v) in (2, 3) and (len(v) == 2 or not v[2]):
            return v[0], v[1]
    raise BrainScriptError(f"{what}: pad must be true, false or per axis (width:height[:false]), found "
                           f"{type_name(pad) if not isinstance(pad, Array) else pad.values(ev)}", loc)


@define("ConvolutionalLayer", ("numOutputChannels", "filterShape"),
        {"activation": None, "init": "glorotUniform", "initValueScale": 1.0, "stride": 1, "pad": False,
         "lowerPad": 0, "upperPad": 0, "bias": True, "initBias": 0.0, "reductionRank": 1, "sharing": True,
         "maxTempMemSizeInSamples": 0})
def _ConvolutionalLayer(ev, a, loc):
    oc = int(a["numOutputChannels"])
    kw, kh = _pair(a["filterShape"], loc, "ConvolutionalLayer filterShape")
    sw, sh = _pair(a["stride"], loc, "ConvolutionalLayer stride")
    onw, onh = _pads(ev, a["pad"], loc, "ConvolutionalLayer")
    if (onw and kw % 2 == 0) or (onh and kh % 2 == 0):
        raise BrainScriptError("ConvolutionalLayer: padding needs an odd filter shape on the padded axes in cntkio, "
                               f"found {kw}x{kh}", loc)
    W = _param(ev, oc, 0, loc, init=a["init"], scale=a["initValueScale"], fan=("conv", kw * kh))
    W.attrs["bsConv"] = [kw, kh]
    b = _param(ev, oc, 1, loc, init="fixedValue", value=float(a["initBias"])) if a["bias"] else None
    act = a["activation"]

    def apply(ev, x, loc2):
        c = ev.node("Convolution", [W, _node(ev, x, loc2, "ConvolutionalLayer")],
                    {"kernelWidth": kw, "kernelHeight": kh, "outputChannels": oc, "horizontalSubsample": sw,
                     "verticalSubsample": sh, "zeroPadding": onw and onh, "padAxes": [onw, onh]}, loc)
        if b is not None:
            c = ev.node("Plus", [c, b], loc=loc)
        return _activation(ev, act, c, loc)
    return _layer("ConvolutionalLayer", apply)


def _pooling(op):
    def f(ev, a, loc):
        ww, wh = _pair(a["filterShape"], loc, f"{op} filterShape")
        sw, sh = _pair(a["stride"], loc, f"{op} stride")
        onw, onh = _pads(ev, a["pad"], loc, f"{op}Layer")
        if (onw and ww % 2 == 0) or (onh and wh % 2 == 0):
            raise BrainScriptError(f"{op}Layer: padding needs an odd window on the padded axes in cntkio, found "
                                   f"{ww}x{wh}", loc)
        kind = f"Padded{op}" if onw or onh else op
        attrs = {"windowWidth": ww, "windowHeight": wh, "horizontalSubsample": sw, "verticalSubsample": sh}
        if onw or onh:
            attrs["padAxes"] = [onw, onh]
        return _layer(f"{op}Layer", lambda ev, x, l2: ev.node(kind, [_node(ev, x, l2, f"{op}Layer")], attrs, loc))
    return f


for _op in ("MaxPooling", "AveragePooling"):
    define(f"{_op}Layer", ("filterShape",), {"stride": 1, "pad": False, "lowerPad": 0, "upperPad": 0})(_pooling(_op))


@define("BatchNormalizationLayer", (), {"spatialRank": 0, "normalizationTimeConstant": 0, "initialScale": 1.0,
                                        "epsilon": 0.00001, "useCntkEngine": True, "blendTimeConstant": 0,
                                        "disableRegularization": False})
def _BatchNormalizationLayer(ev, a, loc):
    scale = _param(ev, 0, 1, loc, init="fixedValue", value=float(a["initialScale"]))
    bias = _param(ev, 0, 1, loc, init="fixedValue", value=0.0)
    mean = _param(ev, 0, 1, loc, init="fixedValue", value=0.0, grad=False)
    var = _param(ev, 0, 1, loc, init="fixedValue", value=1.0, grad=False)
    spatial = int(a["spatialRank"]) > 0
    tc = float(a["normalizationTimeConstant"])

    def apply(ev, x, loc2):
        return ev.node("BatchNormalization", [_node(ev, x, loc2, "BatchNormalizationLayer"), scale, bias, mean, var],
                       {"spatial": spatial, "normalizationTimeConstant": tc, "epsilon": float(a["epsilon"])}, loc)
    return _layer("BatchNormalizationLayer", apply)


@define("DropoutLayer", (), {"dropoutRate": None})
def _DropoutLayer(ev, a, loc):
    rate = a["dropoutRate"]

    def apply(ev, x, loc2):
        n = ev.node("Dropout", [_node(ev, x, loc2, "Dropout")], {"dropoutRate": float(rate or 0.0)}, loc)
        if rate is None:
            n.attrs["bsDropout"] = True
        return n
    return _layer("DropoutLayer", apply)


@define("Sequential", ("arrayOfFunctions",))
def _Sequential(ev, a, loc):
    v = a["arrayOfFunctions"]
    fns = v.values(ev) if isinstance(v, Array) else [v]
    for i, f in enumerate(fns):
        if not isinstance(f, Function):
            raise BrainScriptError(f"Sequential: element {i} is {type_name(f)}, expected a function (a layer)", loc)

    def call(ev, pos, named, loc2):
        if len(pos) != 1 or named:
            raise BrainScriptError(f"a Sequential model takes one input, found {len(pos)}", loc2)
        x = pos[0].force(ev)
        for f in fns:
            x = ev.call(f, [Thunk.of(x)], {}, loc2)
        return x
    return Function("Sequential", ["x"], builtin=call)


@define("LayerNormalizationLayer", (), {"initialScale": 1.0, "initialBias": 0.0, "initScale": None, "initBias": None,
                                        "epsilon": 0.00001})
def _LayerNormalizationLayer(ev, a, loc):
    """``(x - mean(x)) / sqrt(var(x) + eps) · scale + bias``, the statistics over each sample."""
    scale = a["initialScale"] if a["initScale"] is None else a["initScale"]
    shift = a["initialBias"] if a["initBias"] is None else a["initBias"]
    gain = _param(ev, 0, 1, loc, init="fixedValue", value=float(scale))
    bias = _param(ev, 0, 1, loc, init="fixedValue", value=float(shift))
    eps = float(a["epsilon"])

    def apply(ev, x, l2):
        x = _node(ev, x, l2, "LayerNormalizationLayer")
        x0 = ev.node("Minus", [x, ev.node("ReduceMean", [x], loc=loc)], loc=loc)
        var = ev.node("ReduceMean", [ev.node("Square", [x0], loc=loc)], loc=loc)
        std = ev.node("Sqrt", [ev.node("Plus", [var, ev.constant(eps, loc)], loc=loc)], loc=loc)
        norm = ev.node("ElementDivide", [x0, std], loc=loc)
        return ev.node("Plus", [ev.node("ElementTimes", [norm, gain], loc=loc), bias], loc=loc)
    return _layer("LayerNormalizationLayer", apply)


@define("StabilizerLayer", (), {"steepness": 4.0})
def _StabilizerLayer(ev, a, loc):
    """A learned scalar ``β = softplus(s·p)/s`` times the input (``p`` starts where β = 1)."""
    s = float(a["steepness"])
    p0 = math.log(math.exp(s) - 1) / s
    p = _param(ev, 1, 1, loc, init="fixedValue", value=p0)
    beta = ev.node("ElementTimes", [ev.node("Softplus", [ev.node("ElementTimes", [p, ev.constant(s, loc)], loc=loc)],
                                            loc=loc), ev.constant(1.0 / s, loc)], loc=loc)
    return _layer("StabilizerLayer", lambda ev, x, l2: ev.node(
        "ElementTimes", [beta, _node(ev, x, l2, "StabilizerLayer")], loc=loc))


@define("FeatureMVNLayer", ())
def _FeatureMVNLayer(ev, a, loc):
    """Mean and variance normalisation with statistics of the training data (pre-computed)."""
    def apply(ev, x, l2):
        x = _node(ev, x, l2, "FeatureMVNLayer")
        return ev.node("PerDimMeanVarNormalization", [x, ev.node("Mean", [x], loc=loc),
                                                       ev.node("InvStdDev", [x], loc=loc)], loc=loc)
    return _layer("FeatureMVNLayer", apply)
