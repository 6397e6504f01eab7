"""The recurrent layers of CNTK's BrainScript library: ``RecurrentLSTMLayer`` and
``RecurrentLSTMLayerStack`` (CNTK.core.bs builds them on ``BS.RNNs.LSTMBlock``, as here). It never
evaluates text; ``BS.RNNs.*`` functions that take a previous state are in ``prelude.bs``.

An LSTM layer is built of node-library nodes: the input projection ``W·x + B`` is computed for the
whole minibatch at once; the loop closed through ``PastValue`` (``FutureValue`` with
``goBackwards=true``) holds the recurrent product and the gates, which the network runs one
sequence step at a time over the reader's packed sequences, or as one fused ``torch.lstm`` when
it is the plain LSTM (``ndl/fused.py``: no peepholes, no stabilizers). As in CNTK, the state
before a sequence is ``defaultHiddenActivation`` 0.1 (``BS.Loop.Previous`` is ``PastValue``'s
default).
"""
from __future__ import annotations

from .layers import stabilizer
from .library import as_node, builtin, dims_of, function_of, is_none, param
from .syntax import BrainScriptError
from .values import Array

__all__ = ["lstm"]

#: the value of the state before a sequence: BS.Loop.Previous's PastValue default (CNTK.core.bs)
INITIAL = 0.1


def lstm(ev, x, P: dict, cell: int, out: int, loc, *, backwards: bool = False):
    """One LSTM over the sequences of ``x`` with the parameters ``P`` (``W``, ``B``, ``H``, and
    optionally ``Wmr`` a projection, ``Ci``/``Cf``/``Co`` peepholes, ``S`` four stabilizers):
    ``(h, c)`` nodes, as CNTK's LSTMBlock computes them."""
    delay = "FutureValue" if backwards else "PastValue"
    dh = ev.node(delay, [None], {"rows": out, "timeStep": 1, "defaultHiddenActivity": INITIAL}, loc)
    dc = ev.node(delay, [None], {"rows": cell, "timeStep": 1, "defaultHiddenActivity": INITIAL}, loc)
    S = P.get("S")
    dhs, dcs = (S[0](ev, dh, loc), S[1](ev, dc, loc)) if S else (dh, dc)
    wx = ev.node("Plus", [ev.node("Times", [P["W"], x], loc=loc), P["B"]], loc=loc)     # outside the loop
    z = ev.node("Plus", [wx, ev.node("Times", [P["H"], dhs], loc=loc)], loc=loc)

    def part(k, peep=None, c=None):
        s = ev.node("RowSlice", [z], {"startIndex": k * cell, "numRows": cell}, loc)
        return s if peep is None else ev.node("Plus", [s, ev.node("ElementTimes", [peep, c], loc=loc)], loc=loc)
    peep = "Ci" in P
    it = ev.node("Sigmoid", [part(0, P.get("Ci"), dcs if peep else None)], loc=loc)
    cand = ev.node("Tanh", [part(1)], loc=loc)
    ft = ev.node("Sigmoid", [part(2, P.get("Cf"), dcs if peep else None)], loc=loc)
    c = ev.node("Plus", [ev.node("ElementTimes", [ft, dc], loc=loc), ev.node("ElementTimes", [it, cand], loc=loc)],
                loc=loc)
    ot = ev.node("Sigmoid", [part(3, P.get("Co"), S[2](ev, c, loc) if S and peep else (c if peep else None))],
                 loc=loc)
    h = ev.node("ElementTimes", [ot, ev.node("Tanh", [c], loc=loc)], loc=loc)
    if "Wmr" in P:
        h = ev.node("Times", [P["Wmr"], S[3](ev, h, loc) if S else h], loc=loc)
    dh.inputs[0], dc.inputs[0] = h, c
    return h, c


def lstm_params(ev, cell: int, out: int, a, loc, *, peepholes=False, stabilize=False) -> dict:
    """LSTMBlock's parameters (CNTK.core.bs): B [4C], W [4C x in], H [4C x out], Ci/Cf/Co [C]
    (peepholes), Wmr [out x C] (when out differs from C), and four stabilizers."""
    def w(dims, rows, cols):
        return param(ev, dims, loc, init=a["init"], scale=a["initValueScale"], shape=(rows, cols))
    P = {"B": param(ev, [4 * cell], loc, value=0, shape=(4 * cell, 1)), "W": w([4 * cell, 0], 4 * cell, 0),
         "H": w([4 * cell, out], 4 * cell, out)}
    if peepholes:
        P.update(Ci=w([cell], cell, 1), Cf=w([cell], cell, 1), Co=w([cell], cell, 1))
    if out != cell:
        P["Wmr"] = w([out, cell], out, cell)
    if stabilize:
        P["S"] = [stabilizer(ev, 4, loc) for _ in range(4)]
    return P


def _dim(v, loc, what) -> int:
    d = dims_of(v, loc, what)
    if len(d) != 1 or d[0] <= 0:
        raise BrainScriptError(f"{what}: expected one dimension > 0, found {d}", loc)
    return d[0]


def _check(a, loc, what):
    if a.get("trainInitialState"):
        raise BrainScriptError(f"{what}: trainInitialState=true (a learned state before each sequence) is not "
                               "supported by cntkio", loc)


_LSTM = ("usePeepholes=false, init='glorotUniform', initValueScale=1, enableSelfStabilization=false, "
         "allowOptimizedEngine=false")


@builtin("RecurrentLSTMLayer {outputDim, cellShape=None, goBackwards=false, usePeepholes=false, "
         "trainInitialState=false, init='glorotUniform', initValueScale=1, enableSelfStabilization=false, "
         "allowOptimizedEngine=false}")
def _RecurrentLSTMLayer(ev, a, loc):
    """``allowOptimizedEngine`` (CNTK's cuDNN LSTM) computes the same function: the fused
    ``torch.lstm`` path is taken whenever the layer is the plain LSTM."""
    _check(a, loc, "RecurrentLSTMLayer")
    out = _dim(a["outputDim"], loc, "RecurrentLSTMLayer outputDim")
    cell = out if is_none(a["cellShape"]) else _dim(a["cellShape"], loc, "RecurrentLSTMLayer cellShape")
    P = lstm_params(ev, cell, out, a, loc, peepholes=bool(a["usePeepholes"]),
                    stabilize=bool(a["enableSelfStabilization"]))
    back = bool(a["goBackwards"])
    return function_of("RecurrentLSTMLayer", lambda ev, x, l2: lstm(
        ev, as_node(ev, x, l2, "RecurrentLSTMLayer"), P, cell, out, loc, backwards=back)[0])


@builtin("RecurrentLSTMLayerStack {layerDims, cellShapes=None, " + _LSTM + "}")
def _RecurrentLSTMLayerStack(ev, a, loc):
    v = a["layerDims"]
    dims = [int(d) for d in v.values(ev)] if isinstance(v, Array) else [_dim(v, loc, "layerDims")]
    cells = dims if is_none(a["cellShapes"]) else [int(d) for d in dims_of(a["cellShapes"], loc, "cellShapes")]
    if len(cells) != len(dims):
        raise BrainScriptError(f"RecurrentLSTMLayerStack: {len(dims)} layerDims but {len(cells)} cellShapes", loc)
    params = [(lstm_params(ev, c, d, a, loc, peepholes=bool(a["usePeepholes"]),
                           stabilize=bool(a["enableSelfStabilization"])), c, d) for d, c in zip(dims, cells)]

    def apply_(ev, x, l2):
        h = as_node(ev, x, l2, "RecurrentLSTMLayerStack")
        for P, c, d in params:
            h = lstm(ev, h, P, c, d, loc)[0]
        return h
    return function_of("RecurrentLSTMLayerStack", apply_)
