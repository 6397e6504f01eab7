"""The built-in functions of BrainScript: the node functions (bound to the shared node library,
``models/nodes``) and the layers library (``DenseLayer``, ``ConvolutionalLayer``, ``Sequential``,
...). Written from CNTK's BrainScript documentation; a layer constructor (``DenseLayer{...}``)
makes its parameters once and returns a function that applies them, so a layer applied twice
shares its parameters.

Each built-in is a :class:`~.values.Function` whose ``builtin`` receives the evaluator, the
positional and named arguments as thunks and the call's location.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from ...errors import CntkioError
from .syntax import BrainScriptError, Loc
from .values import Array, BNode, Function, Record, Thunk, near, type_name

__all__ = ["builtins", "NAMESPACES"]

_LIB: dict[str, Function] = {}
_NODE_OPTS = ("tag",)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def define(name: str, params: tuple = (), defaults: dict | None = None, *, lazy: tuple = (),
           aliases: tuple = (), extra_ok: bool = False):
    """Register ``fn(ev, args: dict, loc)`` as the built-in ``name``: positional then named
    arguments bound to ``params``/``defaults`` (forced, except those in ``lazy``)."""
    defaults = dict(defaults or {})

    def deco(fn: Callable):
        def call(ev, pos: list[Thunk], named: dict[str, Thunk], loc: Loc | None):
            allp = list(params) + [k for k in defaults if k not in params]
            if len(pos) > len(params):
                raise BrainScriptError(f"{name} takes {len(params)} positional arguments "
                                       f"({', '.join(params) or 'none'}), found {len(pos)}", loc)
            args: dict[str, Any] = {}
            for p, t in zip(params, pos):
                args[p] = t
            tag = None
            for k, t in named.items():
                if k == "tag":
                    tag = t.force(ev)
                    continue
                if k not in allp:
                    if extra_ok:
                        args[k] = t
                        continue
                    raise BrainScriptError(f"{name} has no parameter {k!r}", loc,
                                           hint=near(k, allp) or f"its parameters: {', '.join(allp) or 'none'}")
                args[k] = t
            for p in allp:
                if p not in args:
                    if p not in defaults:
                        raise BrainScriptError(f"{name} needs its parameter {p!r} "
                                               f"({name}({', '.join(params)}))", loc)
                    args[p] = Thunk.of(defaults[p])
            vals = {k: (t if k in lazy else t.force(ev)) for k, t in args.items()}
            for v in vals.values():         # the elements of array arguments (shapes, layer lists)
                if isinstance(v, Array):
                    v.values(ev)
            try:
                out = fn(ev, vals, loc)
            except CntkioError:
                raise
            except (TypeError, ValueError, ArithmeticError) as e:    # an argument of the wrong kind or size
                raise BrainScriptError(f"{name}: an argument it cannot use ({type(e).__name__}: {e})", loc) from e
            if tag is not None:
                if not isinstance(out, BNode) or not isinstance(tag, str):
                    raise BrainScriptError(f"{name}: tag=\"...\" names a group of a node", loc)
                out.tags.append(tag)
            return out
        f = Function(name, list(params), builtin=call)
        for n in (name, *aliases):
            _LIB[n] = f
        return fn
    return deco


def builtins() -> dict[str, Any]:
    """The global names: built-in functions, and ``BS`` (its namespaces hold the same)."""
    out: dict[str, Any] = dict(_LIB)
    out["BS"] = _bs_record()
    out["Inferred"] = 0
    out["None"] = None
    return out


#: the namespaces of ``BS.``; any of them resolves a built-in by its name
NAMESPACES = ("Constants", "Boolean", "Seq", "Sequences", "Loop", "Layers", "Parameters", "RNNs", "RNN",
              "Network", "Math", "Old", "Feature", "Criteria")


def _bs_record() -> Record:
    def ns(name):
        members = {k: Thunk.of(v, k) for k, v in _LIB.items()}
        members.update({k: Thunk.of(v, k) for k, v in _CONSTANTS.items()})
        return Thunk.of(Record(members, f"BS.{name}"), f"BS.{name}")
    return Record({n: ns(n) for n in NAMESPACES}, "BS")


_CONSTANTS = {"Zero": 0, "One": 1, "True": True, "False": False, "None": None}


# --- helpers ----------------------------------------------------------------------------------
def _dims(v, loc, what: str) -> list[int]:
    """A tensor shape: a number or an array of numbers (``(a:b:c)``); 0 = inferred."""
    if isinstance(v, Array):
        items = [t.value if t.state == 2 else None for t in v.items]
        if any(not _num(i) or not math.isfinite(i) for i in items):
            raise BrainScriptError(f"{what}: expected dimensions (numbers), found {items}", loc)
        return [int(i) for i in items]
    if _num(v):
        if not math.isfinite(v):
            raise BrainScriptError(f"{what}: expected a dimension, found {v}", loc)
        return [int(v)]
    raise BrainScriptError(f"{what}: expected a dimension or (a:b:...) dimensions, found {type_name(v)}", loc)


def _force_array(ev, v) -> None:
    if isinstance(v, Array):
        v.values(ev)


def _node(ev, v, loc, what) -> BNode:
    return ev.as_node(v, loc, what)


def _apply(ev, fn, x, loc):
    if not isinstance(fn, Function):
        raise BrainScriptError(f"expected a function, found {type_name(fn)}", loc)
    return ev.call(fn, [Thunk.of(x)], {}, loc)


def _fn(name: str, f: Callable) -> Function:
    """A Python function of one value as a BrainScript function."""
    def call(ev, pos, named, loc):
        if len(pos) != 1 or named:
            raise BrainScriptError(f"{name} takes one argument, found {len(pos)}"
                                   + (f" and {', '.join(named)}" if named else ""), loc)
        return f(ev, pos[0].force(ev), loc)
    return Function(name, ["x"], builtin=call)


def _param(ev, rows: int, cols: int, loc, *, init: str = "uniform", scale: float = 1.0, value: float = 0.0,
           fan: tuple | None = None, grad: bool = True, lr_mult: float = 1.0) -> BNode:
    """A learnable ``[rows, cols]`` parameter (0 = inferred from its use). ``init``: uniform, gaussian,
    fixedValue, zero (the node library's) or glorotUniform, glorotNormal, heUniform, heNormal
    (initialised by the builder from the fan-in/fan-out)."""
    low = str(init).lower()
    kinds = {"uniform": "uniform", "gaussian": "gaussian", "fixedvalue": "fixedValue", "zero": "zero",
             "glorotuniform": "uniform", "glorotnormal": "gaussian", "heuniform": "uniform", "henormal": "gaussian",
             "xavier": "uniform"}
    if low not in kinds:
        raise BrainScriptError(f"init: expected uniform, gaussian, glorotUniform, glorotNormal, heUniform, heNormal, "
                               f"fixedValue or zero, found {init!r}", loc)
    attrs = {"rows": rows, "cols": cols, "init": kinds[low], "initValueScale": float(scale), "value": float(value)}
    n = ev.node("Parameter", [], attrs, loc)
    n.grad, n.lr_mult = grad, lr_mult
    if low in ("glorotuniform", "glorotnormal", "heuniform", "henormal", "xavier"):
        n.init = {"kind": low, "scale": float(scale), "fan": fan}
    return n


# --- inputs, parameters, constants --------------------------------------------------------------
def _input(ev, dims, loc, sparse=False, layout="cudnn"):
    if len(dims) == 3:
        if sparse:
            raise BrainScriptError("SparseInput: an image shape (w:h:c) cannot be sparse", loc)
        return ev.node("ImageInput", [], {"imageWidth": dims[0], "imageHeight": dims[1], "imageChannels": dims[2],
                                          "imageLayout": layout}, loc)
    if any(d <= 0 for d in dims):
        raise BrainScriptError(f"Input: dimensions must be > 0, found {dims}", loc)
    return ev.node("SparseInput" if sparse else "Input", [], {"rows": math.prod(dims)}, loc)


@define("Input", ("shape",), {"dynamicAxis": None, "sparse": False, "imageLayout": "cudnn"}, aliases=("InputValue",))
def _Input(ev, a, loc):
    return _input(ev, _dims(a["shape"], loc, "Input"), loc, bool(a["sparse"]), a["imageLayout"])


@define("SparseInput", ("shape",), {"dynamicAxis": None}, aliases=("SparseInputValue",))
def _SparseInput(ev, a, loc):
    return _input(ev, _dims(a["shape"], loc, "SparseInput"), loc, True)


@define("ImageInput", ("imageWidth", "imageHeight", "imageChannels"), {"imageLayout": "cudnn", "numImages": 1})
def _ImageInput(ev, a, loc):
    return _input(ev, [int(a["imageWidth"]), int(a["imageHeight"]), int(a["imageChannels"])], loc,
                  layout=a["imageLayout"])


@define("ParameterTensor", ("shape",), {"init": "uniform", "initValueScale": 1.0, "initValue": 0.0, "value": 0.0,
                                        "learningRateMultiplier": 1.0, "initOutputRank": 1, "initFilterRank": 0,
                                        "randomSeed": -1, "initOnCPUOnly": True})
def _ParameterTensor(ev, a, loc):
    d = _dims(a["shape"], loc, "ParameterTensor")
    rows = d[0]
    cols = 0 if any(x == 0 for x in d[1:]) else math.prod(d[1:])
    value = a["initValue"] if a["initValue"] else a["value"]
    return _param(ev, rows, cols, loc, init=a["init"] if not value or a["init"] != "uniform" else "fixedValue",
                  scale=a["initValueScale"], value=value, lr_mult=float(a["learningRateMultiplier"]),
                  grad=float(a["learningRateMultiplier"]) != 0)


@define("Parameter", ("rows", "cols"), {"cols": 1, "init": "uniform", "initValueScale": 1.0, "value": 0.0, "initValue": 0.0,
                                         "learningRateMultiplier": 1.0, "needGradient": True, "randomSeed": -1,
                                         "initOnCPUOnly": True}, aliases=("LearnableParameter",))
def _Parameter(ev, a, loc):
    value = a["initValue"] or a["value"]
    return _param(ev, int(a["rows"]), int(a["cols"]), loc, init=a["init"], scale=a["initValueScale"], value=value,
                  grad=bool(a["needGradient"]) and float(a["learningRateMultiplier"]) != 0,
                  lr_mult=float(a["learningRateMultiplier"]))


@define("Constant", ("value",), {"rows": 1, "cols": 1, "shape": None})
def _Constant(ev, a, loc):
    if not _num(a["value"]):
        raise BrainScriptError(f"Constant: expected a number, found {type_name(a['value'])}", loc)
    rows, cols = int(a["rows"]), int(a["cols"])
    if a["shape"] is not None:
        d = _dims(a["shape"], loc, "Constant shape")
        rows, cols = d[0], math.prod(d[1:]) if len(d) > 1 else 1
    return ev.node("Constant", [], {"value": float(a["value"]), "rows": rows, "cols": cols}, loc)


# --- node functions -----------------------------------------------------------------------------
def _unary_node(name: str, op: str, aliases=()):
    @define(name, ("x",), aliases=aliases)
    def f(ev, a, loc):
        return ev.node(op, [_node(ev, a["x"], loc, name)], loc=loc)


for _n, _op, _al in (("Sigmoid", "Sigmoid", ()), ("Tanh", "Tanh", ()), ("ReLU", "RectifiedLinear", ("RectifiedLinear",)),
                     ("Softmax", "Softmax", ()), ("LogSoftmax", "LogSoftmax", ()), ("Exp", "Exp", ()),
                     ("Log", "Log", ()), ("Abs", "Abs", ()), ("Negate", "Negate", ()), ("Sqrt", "Sqrt", ()),
                     ("Square", "Square", ()), ("Cosine", "Cos", ("Cos",)), ("Sin", "Sin", ()),
                     ("Transpose", "Transpose", ()), ("SumElements", "SumElements", ()),
                     ("SumColumnElements", "SumColumnElements", ()),
                     ("Mean", "Mean", ()), ("InvStdDev", "InvStdDev", ()),
                     ("Hardmax", "Hardmax", ()), ("Softplus", "Softplus", ()),
                     ("Reciprocal", "Reciprocal", ()), ("Not", "Not", ())):
    _unary_node(_n, _op, _al)


def _binary_node(name: str, op: str, aliases=()):
    @define(name, ("a", "b"), aliases=aliases)
    def f(ev, a, loc):
        return ev.node(op, [_node(ev, a["a"], loc, name), _node(ev, a["b"], loc, name)], loc=loc)


for _n, _op, _al in (("Times", "Times", ()), ("Plus", "Plus", ()), ("Minus", "Minus", ()),
                     ("ElementTimes", "ElementTimes", ()), ("TransposeTimes", "TransposeTimes", ()),
                     ("ElementDivide", "ElementDivide", ()), ("LogPlus", "LogPlus", ()), ("Less", "Less", ()),
                     ("LessEqual", "LessEqual", ()), ("Greater", "Greater", ()), ("GreaterEqual", "GreaterEqual", ()),
                     ("Equal", "Equal", ()), ("NotEqual", "NotEqual", ()), ("And", "And", ()), ("Or", "Or", ()),
                     ("Xor", "Xor", ()),
                     ("DiagTimes", "DiagTimes", ()), ("Scale", "Scale", ()),
                     ("CrossEntropyWithSoftmax", "CrossEntropyWithSoftmax", ("CEWithSM",)),
                     ("CrossEntropy", "CrossEntropy", ()), ("SquareError", "SquareError", ("SE",)),
                     ("Logistic", "Logistic", ()), ("CosDistance", "CosDistance", ())):
    _binary_node(_n, _op, _al)


@define("ClassificationError", ("labels", "z"), {"topN": 1}, aliases=("ErrorPrediction",))
def _ClassificationError(ev, a, loc):
    ins = [_node(ev, a["labels"], loc, "ClassificationError"), _node(ev, a["z"], loc, "ClassificationError")]
    k = int(a["topN"])
    if k == 1:
        return ev.node("ClassificationError", ins, loc=loc)
    if k < 1:
        raise BrainScriptError(f"ClassificationError: topN must be >= 1, found {k}", loc)
    return ev.node("ClassificationErrorTopN", ins, {"topN": k}, loc)


def _reduce(name: str, op: str, how: str):
    @define(name, ("x",), {"axis": None})
    def f(ev, a, loc):
        x = _node(ev, a["x"], loc, name)
        if a["axis"] is None:               # over all of each sample's values
            return ev.node(op, [x], loc=loc)
        k = int(a["axis"])
        if k < 1:
            raise BrainScriptError(f"{name}: axis={k} (over a sequence) is not supported by cntkio; static axes "
                                   "1, 2, ... are", loc)
        return ev.node("AxisReduce", [x], {"axis": k, "reduction": how}, loc)


for _n, _op, _how in (("ReduceSum", "SumColumnElements", "sum"), ("ReduceMean", "ReduceMean", "mean"),
                      ("ReduceMax", "ReduceMax", "max"), ("ReduceMin", "ReduceMin", "min"),
                      ("ReduceLogSum", "ReduceLogSum", "logsum")):
    _reduce(_n, _op, _how)


@define("Identity", ("x",), aliases=("Pass",))
def _Identity(ev, a, loc):
    return a["x"]


@define("Dropout", ("x",))
def _Dropout(ev, a, loc):
    n = ev.node("Dropout", [_node(ev, a["x"], loc, "Dropout")], {"dropoutRate": 0.0}, loc)
    n.attrs["bsDropout"] = True           # the rate comes from SGD's dropoutRate (the builder sets it)
    return n


@define("Splice", ("inputs",), {"axis": 1}, aliases=("RowStack",))
def _Splice(ev, a, loc):
    v = a["inputs"]
    items = v.values(ev) if isinstance(v, Array) else [v]
    nodes = [_node(ev, x, loc, "Splice") for x in items]
    k = int(a["axis"])
    if k < 1:
        raise BrainScriptError(f"Splice: axis={k} is not supported by cntkio (the static axes 1, 2, ... only)", loc)
    return ev.node("RowStack", nodes, loc=loc) if k == 1 else ev.node("AxisSplice", nodes, {"axis": k}, loc)


@define("RowSlice", ("beginIndex", "numRows", "x"))
def _RowSlice(ev, a, loc):
    return ev.node("RowSlice", [_node(ev, a["x"], loc, "RowSlice")],
                   {"startIndex": int(a["beginIndex"]), "numRows": int(a["numRows"])}, loc)


@define("Slice", ("beginIndex", "endIndex", "x"), {"axis": 1})
def _Slice(ev, a, loc):
    k, b, e = int(a["axis"]), int(a["beginIndex"]), int(a["endIndex"])
    if k < 1:
        raise BrainScriptError(f"Slice: axis={k} (the sequence axis) makes sequences of another length (a new "
                               "dynamic axis), which cntkio does not support; static axes 1, 2, ... are", loc)
    x = _node(ev, a["x"], loc, "Slice")
    if k == 1 and 0 <= b < e:
        return ev.node("RowSlice", [x], {"startIndex": b, "numRows": e - b}, loc)
    return ev.node("AxisSlice", [x], {"axis": k, "beginIndex": b, "endIndex": e}, loc)


@define("Reshape", ("x", "shape"), {"beginAxis": 0, "endAxis": 0})
def _Reshape(ev, a, loc):
    d = _dims(a["shape"], loc, "Reshape")
    if int(a["beginAxis"]) or int(a["endAxis"]) or len(d) not in (1, 3) or 0 in d:
        return ev.node("ReshapeAxes", [_node(ev, a["x"], loc, "Reshape")],
                       {"shape": list(d), "beginAxis": int(a["beginAxis"]), "endAxis": int(a["endAxis"])}, loc)
    attrs = {"numRows": math.prod(d)}
    if len(d) == 3:
        attrs.update(imageWidth=d[0], imageHeight=d[1], imageChannels=d[2])
    return ev.node("Reshape", [_node(ev, a["x"], loc, "Reshape")], attrs, loc)


def _delay(op):
    def f(ev, a, loc):
        d = _dims(a["shape"], loc, op)
        x = a["x"]          # a thunk: read after the node exists (a loop may close through it)
        rate = a["defaultHiddenActivation"] if a["defaultHiddenActivation"] is not None else a["defaultHiddenActivity"]
        return ev.node(op, [x], {"rows": math.prod(d), "timeStep": int(a["timeStep"]),
                                 "defaultHiddenActivity": float(rate)}, loc)
    return f


for _op in ("PastValue", "FutureValue"):
    define(_op, ("shape", "x"), {"timeStep": 1, "defaultHiddenActivation": None, "defaultHiddenActivity": 0.1},
           lazy=("x",), aliases=("Delay",) if _op == "PastValue" else ())(_delay(_op))


@define("Previous", ("x",), {"timeStep": 1, "defaultHiddenActivation": 0.0, "shape": 0})
def _Previous(ev, a, loc):
    return _delay("PastValue")(ev, {"shape": a["shape"], "x": Thunk.of(a["x"]), "timeStep": a["timeStep"],
                                    "defaultHiddenActivation": a["defaultHiddenActivation"],
                                    "defaultHiddenActivity": 0.0}, loc)


@define("Next", ("x",), {"timeStep": 1, "defaultHiddenActivation": 0.0, "shape": 0})
def _Next(ev, a, loc):
    return _delay("FutureValue")(ev, {"shape": a["shape"], "x": Thunk.of(a["x"]), "timeStep": a["timeStep"],
                                      "defaultHiddenActivation": a["defaultHiddenActivation"],
                                      "defaultHiddenActivity": 0.0}, loc)


# --- numbers, arrays --------------------------------------------------------------------------------
@define("Length", ("x",))
def _Length(ev, a, loc):
    v = a["x"]
    if isinstance(v, Array):
        return len(v.items)
    if isinstance(v, str):
        return len(v)
    raise BrainScriptError(f"Length: expected an array or a string, found {type_name(v)}", loc)


def _num_or_node(name, f):
    def g(ev, a, loc):
        x = a["x"]
        if isinstance(x, BNode):
            if name == "Sign":
                raise BrainScriptError("Sign: expected a number (Sign of a node is not supported)", loc)
            return ev.node(name, [x], loc=loc)
        return f(_number(x, loc, name))
    return g


for _n, _f in (("Ceil", math.ceil), ("Floor", math.floor), ("Round", round), ("Sign", lambda x: (x > 0) - (x < 0))):
    define(_n, ("x",))(_num_or_node(_n, _f))


@define("Clip", ("x", "minValue", "maxValue"))
def _Clip(ev, a, loc):
    return ev.node("Clip", [_node(ev, a["x"], loc, "Clip")], {"minValue": _number(a["minValue"], loc, "Clip minValue"),
                                                            "maxValue": _number(a["maxValue"], loc, "Clip maxValue")},
                   loc)


@define("If", ("condition", "thenValue", "elseValue"))
def _If(ev, a, loc):
    c = a["condition"]
    if isinstance(c, bool):                        # BS.Boolean.If on a boolean: the value chosen
        return a["thenValue"] if c else a["elseValue"]
    return ev.node("If", [_node(ev, a[k], loc, "If") for k in ("condition", "thenValue", "elseValue")], loc=loc)


def _number(v, loc, what):
    if not _num(v):
        raise BrainScriptError(f"{what}: expected a number, found {type_name(v)}", loc)
    return v


@define("Max", ("a", "b"))
def _Max(ev, a, loc):
    return max(_number(a["a"], loc, "Max"), _number(a["b"], loc, "Max"))


@define("Min", ("a", "b"))
def _Min(ev, a, loc):
    return min(_number(a["a"], loc, "Min"), _number(a["b"], loc, "Min"))


@define("Fail", ("what",))
def _Fail(ev, a, loc):
    raise BrainScriptError(str(a["what"]), loc)


@define("DynamicAxis", ())
def _DynamicAxis(ev, a, loc):
    """``DynamicAxis {}``: cntkio's sequences come from the reader's layout, so an input's
    ``dynamicAxis=`` names nothing more (inputs read in one minibatch share their sequences)."""
    return Record({}, "DynamicAxis", loc)
