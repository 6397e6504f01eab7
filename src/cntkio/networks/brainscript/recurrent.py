"""Recurrent layers of BrainScript: ``RecurrentLSTMLayer``, ``RecurrentLSTMLayerStack``,
``DelayLayer``, and ``BS.RNNs.RecurrentLSTMP``/``RecurrentLSTMPStack`` (with the ``PreviousHC``,
``NextHC`` and ``NoAuxInputHook`` hooks).

An LSTM layer is built of node-library nodes: the input projection ``W·x + b`` is computed for the
whole minibatch at once; the loop closed through ``PastValue`` (``FutureValue`` with
``goBackwards=true``) holds only the recurrent product and the gates, which the network runs one
sequence step at a time over the reader's packed sequences (no padding is computed).
"""
from __future__ import annotations

from .library import _LIB, _dims, _node, _param, define
from .layers import _layer
from .syntax import BrainScriptError
from .values import Array, Function, Record, Thunk, type_name

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


@define("DelayLayer", (), {"T": 1, "defaultHiddenActivation": 0.0, "defaultValue": None})
def _DelayLayer(ev, a, loc):
    t = int(a["T"])
    if t == 0:
        raise BrainScriptError("DelayLayer: T must not be 0", loc)
    op = "PastValue" if t > 0 else "FutureValue"

    def apply(ev, x, l2):
        return ev.node(op, [_node(ev, x, l2, "DelayLayer")], {"rows": 0, "timeStep": abs(t),
                                                             "defaultHiddenActivity": float(
                                                                 a["defaultHiddenActivation"] if a["defaultValue"] is None
                                                                 else a["defaultValue"])}, loc)
    return _layer("DelayLayer", apply)


# --- BS.RNNs: the LSTM functions of CNTK's BrainScript library ------------------------------------
def _hook(name: str):
    def call(ev, pos, named, loc):
        raise BrainScriptError(f"BS.RNNs.{name} is a hook for RecurrentLSTMP/RecurrentLSTMPStack; cntkio does not "
                               "call it on its own", loc)
    return Function(name, ["lstmState"], builtin=call)


for _h in ("PreviousHC", "NextHC", "NoAuxInputHook"):
    _LIB[_h] = _hook(_h)


def _direction(ev, a, loc) -> bool:
    hook, aux = a["previousHook"], a["augmentInputHook"]
    name = getattr(hook, "name", None)
    if name not in ("PreviousHC", "NextHC"):
        raise BrainScriptError("previousHook: cntkio supports BS.RNNs.PreviousHC and BS.RNNs.NextHC, found "
                               f"{name or type_name(hook)}", loc)
    if getattr(aux, "name", None) != "NoAuxInputHook" or int(a["augmentInputDim"]) != 0:
        raise BrainScriptError("augmentInputHook: cntkio supports BS.RNNs.NoAuxInputHook with augmentInputDim=0 "
                               "only", loc)
    if a["enableSelfStabilization"]:
        raise BrainScriptError("enableSelfStabilization=true is not supported by cntkio", loc)
    return name == "NextHC"


_LSTMP = {"inputDim": 0, "previousHook": _LIB["PreviousHC"], "augmentInputHook": _LIB["NoAuxInputHook"],
          "augmentInputDim": 0, "layerIndex": 0, "enableSelfStabilization": False}


def _lstmp(ev, x, out, cell, back, loc):
    a = {"init": "uniform", "initValueScale": 1.0}
    W, b, H, proj = _lstm_params(ev, cell, out, a, loc)
    h, c = lstm(ev, _node(ev, x, loc, "RecurrentLSTMP"), W, b, H, cell, out, loc, backwards=back, proj=proj)
    return Record({"h": Thunk.of(h), "c": Thunk.of(c), "dim": Thunk.of(out)})


@define("RecurrentLSTMP", ("outputDim", "x"), {**_LSTMP, "cellDim": None})
def _RecurrentLSTMP(ev, a, loc):
    """``BS.RNNs.RecurrentLSTMP (outputDim, cellDim=, x, ...)``: the record ``{h, c, dim}``."""
    out = _dim(a["outputDim"], loc, "outputDim")
    cell = out if a["cellDim"] is None else _dim(a["cellDim"], loc, "cellDim")
    return _lstmp(ev, a["x"], out, cell, _direction(ev, a, loc), loc)


@define("RecurrentLSTMPStack", ("layerDims", "input"), {**_LSTMP, "cellDims": None})
def _RecurrentLSTMPStack(ev, a, loc):
    """``BS.RNNs.RecurrentLSTMPStack (layerDims, cellDims=, input, ...)``: an array of ``{h, c, dim}``
    records, one per layer, each on the one before."""
    def ints(v, what):
        return [int(d) for d in v.values(ev)] if isinstance(v, Array) else [_dim(v, loc, what)]
    outs = ints(a["layerDims"], "layerDims")
    cells = outs if a["cellDims"] is None else ints(a["cellDims"], "cellDims")
    if len(outs) != len(cells):
        raise BrainScriptError(f"RecurrentLSTMPStack: {len(outs)} layerDims but {len(cells)} cellDims", loc)
    back = _direction(ev, a, loc)
    x, layers = a["input"], []
    for o, c in zip(outs, cells):
        rec = _lstmp(ev, x, o, c, back, loc)
        layers.append(Thunk.of(rec))
        x = rec.members["h"].value
    return Array(layers)
