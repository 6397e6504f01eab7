"""Recurrent layers of BrainScript: ``RecurrentLSTMLayer``, ``RecurrentLSTMLayerStack``,
``DelayLayer``, and the LSTM step of ``BS.RNNs`` (``LSTMBlock``).

An LSTM layer is built of node-library nodes: the input projection ``W·x + b`` is computed for the
whole minibatch at once; the loop closed through ``PastValue`` (``FutureValue`` with
``goBackwards=true``) holds only the recurrent product and the gates, which the network runs one
sequence step at a time over the reader's packed sequences (no padding is computed).
"""
from __future__ import annotations

from .library import _dims, _node, _param, define
from .layers import _layer
from .syntax import BrainScriptError
from .values import Array

__all__: list[str] = []


def lstm(ev, x, W, b, H, cell: int, out: int, loc, *, backwards: bool = False, proj=None):
    """One LSTM over the sequences of ``x``: ``(h, c)`` nodes (``proj`` maps the cell output to
    ``out`` dimensions when they differ)."""
    delay = "FutureValue" if backwards else "PastValue"
    dh = ev.node(delay, [None], {"rows": out, "timeStep": 1, "defaultHiddenActivity": 0.0}, loc)
    dc = ev.node(delay, [None], {"rows": cell, "timeStep": 1, "defaultHiddenActivity": 0.0}, loc)
    wx = ev.node("Plus", [ev.node("Times", [W, x], loc=loc), b], loc=loc)       # outside the loop
    z = ev.node("Plus", [wx, ev.node("Times", [H, dh], loc=loc)], loc=loc)

    def part(k):
        return ev.node("RowSlice", [z], {"startIndex": k * cell, "numRows": cell}, loc)
    it = ev.node("Sigmoid", [part(0)], loc=loc)
    cand = ev.node("Tanh", [part(1)], loc=loc)
    ft = ev.node("Sigmoid", [part(2)], loc=loc)
    ot = ev.node("Sigmoid", [part(3)], loc=loc)
    c = ev.node("Plus", [ev.node("ElementTimes", [ft, dc], loc=loc), ev.node("ElementTimes", [it, cand], loc=loc)],
                loc=loc)
    h = ev.node("ElementTimes", [ot, ev.node("Tanh", [c], loc=loc)], loc=loc)
    if proj is not None:
        h = ev.node("Times", [proj, h], loc=loc)
    dh.inputs[0], dc.inputs[0] = h, c
    return h, c


def _lstm_params(ev, cell: int, out: int, a, loc):
    W = _param(ev, 4 * cell, 0, loc, init=a["init"], scale=a["initValueScale"], fan="dense")
    b = _param(ev, 4 * cell, 1, loc, init="fixedValue", value=0.0)
    H = _param(ev, 4 * cell, out, loc, init=a["init"], scale=a["initValueScale"], fan="dense")
    proj = _param(ev, out, cell, loc, init=a["init"], scale=a["initValueScale"], fan="dense") if cell != out else None
    return W, b, H, proj


_LSTM = {"cellShape": None, "goBackwards": False, "enableSelfStabilization": False, "init": "glorotUniform",
         "initValueScale": 1.0, "allowOptimizedEngine": False}


def _dim(v, loc, what) -> int:
    d = _dims(v, loc, what)
    if len(d) != 1 or d[0] <= 0:
        raise BrainScriptError(f"{what}: expected one dimension > 0, found {d}", loc)
    return d[0]


@define("RecurrentLSTMLayer", ("outputDim",), _LSTM)
def _RecurrentLSTMLayer(ev, a, loc):
    if a["enableSelfStabilization"]:
        raise BrainScriptError("RecurrentLSTMLayer: enableSelfStabilization=true is not supported by cntkio", loc)
    out = _dim(a["outputDim"], loc, "RecurrentLSTMLayer outputDim")
    cell = out if a["cellShape"] is None else _dim(a["cellShape"], loc, "RecurrentLSTMLayer cellShape")
    W, b, H, proj = _lstm_params(ev, cell, out, a, loc)
    back = bool(a["goBackwards"])
    return _layer("RecurrentLSTMLayer", lambda ev, x, l2: lstm(
        ev, _node(ev, x, l2, "RecurrentLSTMLayer"), W, b, H, cell, out, loc, backwards=back, proj=proj)[0])


@define("RecurrentLSTMLayerStack", ("layerDims",), _LSTM)
def _RecurrentLSTMLayerStack(ev, a, loc):
    if a["enableSelfStabilization"]:
        raise BrainScriptError("RecurrentLSTMLayerStack: enableSelfStabilization=true is not supported by cntkio",
                               loc)
    v = a["layerDims"]
    dims = [int(d) for d in v.values(ev)] if isinstance(v, Array) else [int(v)]
    params = [(_lstm_params(ev, d, d, a, loc), d) for d in dims]
    back = bool(a["goBackwards"])

    def apply(ev, x, l2):
        h = _node(ev, x, l2, "RecurrentLSTMLayerStack")
        for (W, b, H, _), d in params:
            h = lstm(ev, h, W, b, H, d, d, loc, backwards=back)[0]
        return h
    return _layer("RecurrentLSTMLayerStack", apply)


@define("DelayLayer", (), {"T": 1, "defaultValue": 0.0})
def _DelayLayer(ev, a, loc):
    t = int(a["T"])
    if t == 0:
        raise BrainScriptError("DelayLayer: T must not be 0", loc)
    op = "PastValue" if t > 0 else "FutureValue"

    def apply(ev, x, l2):
        return ev.node(op, [_node(ev, x, l2, "DelayLayer")], {"rows": 0, "timeStep": abs(t),
                                                             "defaultHiddenActivity": float(a["defaultValue"])}, loc)
    return _layer("DelayLayer", apply)
