"""The layers library of CNTK's BrainScript (CNTK.core.bs's layer constructors): each makes its
parameters once and returns the function applying them (``DenseLayer{128, activation=ReLU}``), so
a layer applied twice shares its parameters; and ``Sequential``. It never evaluates text.

The layers on images (convolutions, pooling) are in ``images.py``, the recurrent ones in
``recurrent.py``; ``FeatureMVNLayer`` and ``LogPriorLayer`` are written in ``prelude.bs``.
"""
from __future__ import annotations

import math

from .functions import constant, delay
from .library import apply, as_node, builtin, dims_of, function_of, is_none, num, param
from .syntax import BrainScriptError
from .values import Array, Function, Thunk, type_name

__all__ = ["activation", "output_dims"]


def activation(ev, act, x, loc):
    return apply(ev, act, x, loc)


def output_dims(v, loc, what: str) -> list[int]:
    d = dims_of(v, loc, what)
    if not d or any(x <= 0 for x in d):
        raise BrainScriptError(f"{what}: the output dimensions must be > 0, found {d}", loc)
    return d


def _ranks(a, loc, what):
    if not is_none(a["inputRank"]) or not is_none(a["mapRank"]):
        raise BrainScriptError(f"{what}: inputRank and mapRank are not supported by cntkio (the weights always "
                               "take all of the input's values, CNTK's default)", loc)


def _linear(ev, a, loc, what):
    _ranks(a, loc, what)
    out = output_dims(a["outDim"], loc, f"{what} outDim")
    W = param(ev, [*out, 0], loc, init=a["init"], scale=a["initValueScale"], output_rank=len(out),
              shape=(math.prod(out), 0))
    b = param(ev, out, loc, value=a["initBias"], shape=(math.prod(out), 1)) if a["bias"] else None

    def project(ev, x, loc2):
        z = ev.node("Times", [W, as_node(ev, x, loc2, what)], loc=loc)
        z = ev.node("Plus", [z, b], loc=loc) if b is not None else z
        if len(out) > 1:                # an output tensor: its axes as CNTK's outDim gives them
            z = ev.node("ReshapeAxes", [z], {"shape": list(out), "beginAxis": 0, "endAxis": 0}, loc)
        return z
    return project


_LINEAR = "bias=true, init='glorotUniform', initValueScale=1, inputRank=None, mapRank=None, initBias=0"


@builtin("LinearLayer {outDim, " + _LINEAR + "}")
def _LinearLayer(ev, a, loc):
    return function_of("LinearLayer", _linear(ev, a, loc, "LinearLayer"))


@builtin("DenseLayer {outDim, bias=true, activation=(x => x), init='glorotUniform', initValueScale=1, inputRank=None, "
         "mapRank=None, initBias=0}")
def _DenseLayer(ev, a, loc):
    project, act = _linear(ev, a, loc, "DenseLayer"), a["activation"]
    return function_of("DenseLayer", lambda ev, x, l2: activation(ev, act, project(ev, x, l2), loc))


@builtin("EmbeddingLayer {outDim, init='glorotUniform', initValueScale=1, embeddingPath='', transpose=false}")
def _EmbeddingLayer(ev, a, loc):
    out = output_dims(a["outDim"], loc, "EmbeddingLayer outDim")
    d, path, t = math.prod(out), str(a["embeddingPath"]), bool(a["transpose"])
    dims, shape = ([0, d], (0, d)) if t else ([d, 0], (d, 0))
    if path:            # a fixed embedding read from a text file (CNTK: learningRateMultiplier = 0)
        E = param(ev, dims, loc, path=path, lr_mult=0, shape=shape)
    else:
        E = param(ev, dims, loc, init=a["init"], scale=a["initValueScale"], shape=shape)
    op = "TransposeTimes" if t else "Times"
    return function_of("EmbeddingLayer", lambda ev, x, l2: ev.node(op, [E, as_node(ev, x, l2, "EmbeddingLayer")],
                                                                    loc=loc))


@builtin("DelayLayer {T=1, defaultHiddenActivation=0}")
def _DelayLayer(ev, a, loc):
    t = int(a["T"])

    def apply_(ev, x, l2):
        if t == 0:
            return x
        return delay(ev, t > 0, 0, Thunk.of(as_node(ev, x, l2, "DelayLayer")), abs(t), None,
                     a["defaultHiddenActivation"], loc)
    return function_of("DelayLayer", apply_)


@builtin("BatchNormalizationLayer {spatialRank=0, initialScale=1, normalizationTimeConstant=5000, blendTimeConstant=0, "
         "epsilon=1e-05, useCntkEngine=false, disableRegularization=false}")
def _BatchNormalizationLayer(ev, a, loc):
    def stat(v, lr=1.0):                    # CNTK's normShape (0:1): inferred from the input
        return param(ev, [0, 1], loc, value=v, lr_mult=lr, shape=(0, 1))
    scale, bias = stat(a["initialScale"]), stat(0)
    mean, var, count = stat(0, 0), stat(0, 0), param(ev, [1], loc, value=0, lr_mult=0)
    spatial = int(a["spatialRank"]) > 0
    attrs = {"spatial": spatial, "normalizationTimeConstant": float(a["normalizationTimeConstant"]),
             "blendTimeConstant": float(a["blendTimeConstant"]), "epsilon": float(a["epsilon"])}
    return function_of("BatchNormalizationLayer", lambda ev, x, l2: ev.node(
        "BatchNormalization", [as_node(ev, x, l2, "BatchNormalizationLayer"), scale, bias, mean, var, count], attrs, loc))


@builtin("LayerNormalizationLayer {initScale=1, initBias=0}")
def _LayerNormalizationLayer(ev, a, loc):
    """``(x - mean) / std · gain + bias`` over each sample's values (no epsilon, as CNTK.core.bs)."""
    gain, bias = param(ev, [1], loc, value=a["initScale"]), param(ev, [1], loc, value=a["initBias"])

    def apply_(ev, x, l2):
        x = as_node(ev, x, l2, "LayerNormalizationLayer")
        x0 = ev.node("Minus", [x, ev.node("ReduceMean", [x], loc=loc)], loc=loc)
        std = ev.node("Sqrt", [ev.node("ReduceMean", [ev.node("ElementTimes", [x0, x0], loc=loc)], loc=loc)], loc=loc)
        norm = ev.node("ElementDivide", [x0, std], loc=loc)
        return ev.node("Plus", [ev.node("ElementTimes", [norm, gain], loc=loc), bias], loc=loc)
    return function_of("LayerNormalizationLayer", apply_)


def stabilizer(ev, steepness, loc):
    """CNTK's StabilizerLayer: a learned scalar ``log(1 + exp(s·p)) / s`` (``p`` starts at
    0.99537863, CNTK.core.bs's value, where it is 1 for s = 4) times the input."""
    if not num(steepness) or steepness == 0:
        raise BrainScriptError(f"StabilizerLayer: steepness must be a number other than 0, found {steepness!r}", loc)
    p = param(ev, [1], loc, value=0.99537863)
    s = constant(ev, float(steepness), [1], loc)
    beta = ev.node("ElementTimes", [ev.node("Softplus", [ev.node("ElementTimes", [s, p], loc=loc)], loc=loc),
                                    ev.constant(1.0 / float(steepness), loc)], loc=loc)
    return lambda ev, x, l2: ev.node("ElementTimes", [beta, as_node(ev, x, l2, "StabilizerLayer")], loc=loc)


@builtin("StabilizerLayer {steepness=4}")
def _StabilizerLayer(ev, a, loc):
    return function_of("StabilizerLayer", stabilizer(ev, a["steepness"], loc))


@builtin("Sequential (arrayOfFunctions)")
def _Sequential(ev, a, loc):
    v = a["arrayOfFunctions"]
    fns = v.values(ev) if isinstance(v, Array) else [v]
    for i, f in enumerate(fns):
        if not isinstance(f, Function):
            raise BrainScriptError(f"Sequential: element {i} is {type_name(f)}, expected a function (a layer)", loc)

    def call(ev, pos, named, loc2):
        x = None
        for k, f in enumerate(fns):     # the first function takes the call's arguments
            x = ev.call(f, pos, named, loc2) if k == 0 else ev.call(f, [Thunk.of(x)], {}, loc2)
        if not fns:
            if len(pos) != 1 or named:
                raise BrainScriptError(f"an empty Sequential takes one input, found {len(pos)}", loc2)
            x = pos[0].force(ev)
        return x
    return Function("Sequential", ["x"], builtin=call)
