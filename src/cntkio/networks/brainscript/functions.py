"""The node functions of CNTK's BrainScript library (the ``new ComputationNode`` definitions of
CNTK.core.bs, top level and ``CNTK2``), bound to the shared node library; it never evaluates
BrainScript text. Each is registered with CNTK.core.bs's signature (``library.builtin``).

On numbers, ``Ceil``, ``Floor``, ``Round`` compute a number (CNTK made a constant node of it).
"""
from __future__ import annotations

import math

from .library import NONE, alias, as_node, builtin, dims_of, is_none, num, param, value
from .syntax import BrainScriptError, BrainScriptRefusal
from .values import Array, BNode, type_name

__all__: list[str] = []


def _node(ev, v, loc, what) -> BNode:
    return as_node(ev, v, loc, what)


def _op(ev, op, args, loc, name, attrs=None):
    return ev.node(op, [_node(ev, a, loc, name) for a in args], attrs, loc)


def _number(v, loc, what):
    if not num(v):
        raise BrainScriptError(f"{what}: expected a number, found {type_name(v)}", loc)
    return v


# --- inputs, parameters, constants ------------------------------------------------------------------
def _input(ev, dims, loc, sparse=False, layout="CHW"):
    if len(dims) == 3:
        if sparse:
            raise BrainScriptError("SparseInput: an image shape (w:h:c) cannot be sparse in cntkio", loc)
        return ev.node("ImageInput", [], {"imageWidth": dims[0], "imageHeight": dims[1], "imageChannels": dims[2],
                                          "imageLayout": layout}, loc)
    if not dims or any(d <= 0 for d in dims):
        raise BrainScriptError(f"Input: dimensions must be > 0, found {dims}", loc)
    attrs: dict = {"rows": math.prod(dims)}
    if len(dims) > 1:
        attrs["tensorShape"] = list(dims)
    return ev.node("SparseInput" if sparse else "Input", [], attrs, loc)


@builtin("Input (dims, dynamicAxis='', sparse=false, tag='feature')")
def _Input(ev, a, loc):
    return _input(ev, dims_of(a["dims"], loc, "Input"), loc, bool(a["sparse"]))


@builtin("CNTK2.Input (shape, dynamicAxis='', tag='feature')")
def _Input2(ev, a, loc):
    return _input(ev, dims_of(a["shape"], loc, "Input"), loc)


@builtin("SparseInput (dims, dynamicAxis='', tag='feature')")
def _SparseInput(ev, a, loc):
    return _input(ev, dims_of(a["dims"], loc, "SparseInput"), loc, True)


@builtin("ImageInput (imageWidth, imageHeight, imageChannels, imageLayout='CHW', dynamicAxis='', tag='feature')")
def _ImageInput(ev, a, loc):
    return _input(ev, [int(a["imageWidth"]), int(a["imageHeight"]), int(a["imageChannels"])], loc,
                  layout=a["imageLayout"])


@builtin("DynamicAxis (tag='')")
def _DynamicAxis(ev, a, loc):
    """cntkio's sequences come from the reader's layout: an input's ``dynamicAxis=`` names
    nothing more (inputs read in one minibatch share their sequences)."""
    return NONE


@builtin("CNTK2.DynamicAxis (tag='')")
def _DynamicAxis2(ev, a, loc):
    return NONE


def _parameter(ev, a, dims, loc, *, filter_rank=0, output_rank=1):
    return param(ev, dims, loc, init=a["init"], scale=_number(a["initValueScale"], loc, "initValueScale"),
                 value=a["initValue"] if a["initValue"] != "" else (a["value"] if a["init"] else ""),
                 lr_mult=_number(a["learningRateMultiplier"], loc, "learningRateMultiplier"),
                 path=a["initFromFilePath"], literal=a["initFromLiteral"], filter_rank=filter_rank,
                 output_rank=output_rank, seed=int(a["randomSeed"]))


@builtin("Parameter {outputDim, inputDim, learningRateMultiplier=1.0, init='', initValueScale=1, value=0, "
         "initValue='', initFromFilePath='', initFromLiteral='', initOnCPUOnly=true, randomSeed=-1, tag=''}",
         aliases=("LearnableParameter",))
def _Parameter(ev, a, loc):
    return _parameter(ev, a, [int(_number(a["outputDim"], loc, "outputDim")),
                              int(_number(a["inputDim"], loc, "inputDim"))], loc)


_TENSOR = ("learningRateMultiplier=1.0, init='', initValueScale=1, value=0, initValue='', initFilterRank=0, "
           "initOutputRank=1, initFromFilePath='', initFromLiteral='', initOnCPUOnly=true, randomSeed=-1, tag=''")


@builtin("ParameterTensor {dims, " + _TENSOR + "}")
def _ParameterTensor(ev, a, loc):
    return _parameter(ev, a, dims_of(a["dims"], loc, "ParameterTensor"), loc, filter_rank=int(a["initFilterRank"]),
                      output_rank=int(a["initOutputRank"]))


@builtin("CNTK2._Parameter (shape, value=0, initValue='', learningRateMultiplier=1.0, init='', initValueScale=1, "
         "initFilterRank=0, initOutputRank=1, initFromFilePath='', initFromLiteral='', initOnCPUOnly=true, "
         "randomSeed=-1, tag='')")
def _Parameter2(ev, a, loc):
    return _parameter(ev, a, dims_of(a["shape"], loc, "_Parameter"), loc, filter_rank=int(a["initFilterRank"]),
                      output_rank=int(a["initOutputRank"]))


@builtin("ConstantFromString (literal, tag='')")
def _ConstantFromString(ev, a, loc):
    rows = [r.split() for r in str(a["literal"]).splitlines() if r.strip()]
    if not rows:
        raise BrainScriptError("ConstantFromString: the literal holds no numbers", loc)
    return param(ev, [len(rows), len(rows[0])], loc, literal=str(a["literal"]), lr_mult=0)


def constant(ev, value, dims, loc) -> BNode:
    """A parameter of value ``value`` that is not trained (CNTK's Constant and ConstantTensor)."""
    return param(ev, dims, loc, value=_number(value, loc, "Constant"), lr_mult=0)


@builtin("ConstantTensor (val, dims, tag='')")
def _ConstantTensor(ev, a, loc):
    return constant(ev, a["val"], dims_of(a["dims"], loc, "ConstantTensor"), loc)


@builtin("Constant (val, rows=1, cols=1, tag='')")
def _Constant(ev, a, loc):
    if isinstance(a["val"], bool):
        a["val"] = 1 if a["val"] else 0
    return ev.node("Constant", [], {"value": float(_number(a["val"], loc, "Constant")), "rows": int(a["rows"]),
                                    "cols": int(a["cols"])}, loc)


# --- element-wise and matrix functions --------------------------------------------------------------
def _unary(sig: str, op: str, aliases: tuple = ()):
    name = sig.split(" ")[0]
    arg = sig[sig.index("(") + 1:sig.index(",")]

    @builtin(sig, aliases=aliases)
    def f(ev, a, loc):
        return _op(ev, op, [a[arg]], loc, name)


for _sig, _o in (("Negate (input, tag='')", "Negate"), ("Reciprocal (z, tag='')", "Reciprocal"),
                 ("Sin (z, tag='')", "Sin"), ("Cosine (x, tag='')", "Cos"), ("Sqrt (z, tag='')", "Sqrt"),
                 ("Tanh (z, tag='')", "Tanh"), ("Hardmax (z, tag='')", "Hardmax"), ("LogSoftmax (z, tag='')", "LogSoftmax"),
                 ("SumElements (matrix, tag='')", "SumElements"), ("SumColumnElements (z, tag='')", "SumColumnElements"),
                 ("Mean (dataVectorSequence, tag='')", "Mean"), ("InvStdDev (dataVectorSequence, tag='')", "InvStdDev"),
                 ("MatrixL1Reg (matrix, tag='')", "MatrixL1Reg"), ("MatrixL2Reg (matrix, tag='')", "MatrixL2Reg"),
                 ("CNTK2.Abs (_, tag='')", "Abs"), ("CNTK2.Exp (_, tag='')", "Exp"), ("CNTK2.Log (_, tag='')", "Log"),
                 ("CNTK2.Sqrt (_, tag='')", "Sqrt"), ("CNTK2.Square (_, tag='')", "Square"),
                 ("CNTK2.Tanh (_, tag='')", "Tanh"), ("CNTK2.ReLU (_, tag='')", "RectifiedLinear"),
                 ("CNTK2.Sigmoid (_, tag='')", "Sigmoid"), ("CNTK2.Softmax (_, tag='')", "Softmax"),
                 ("StopGradient (input, tag='')", "StopGradient"), ("Acos (x, tag='')", "Acos"),
                 ("Asin (x, tag='')", "Asin"), ("Asinh (x, tag='')", "Asinh"), ("Atanh (x, tag='')", "Atanh"),
                 ("Cosh (x, tag='')", "Cosh"), ("Sinh (x, tag='')", "Sinh")):
    _unary(_sig, _o, aliases=("CNTK2.Relu",) if _o == "RectifiedLinear" else ())


def _num_or_node(sig: str, op: str, f):
    @builtin(sig)
    def g(ev, a, loc):
        x = a["_"]
        return f(x) if num(x) else _op(ev, op, [x], loc, op)


for _sig, _o, _f in (("CNTK2.Ceil (_, tag='')", "Ceil", math.ceil), ("CNTK2.Floor (_, tag='')", "Floor", math.floor),
                     ("CNTK2.Round (_, tag='')", "Round", lambda x: math.floor(x + 0.5))):
    _num_or_node(_sig, _o, _f)


def _binary(sig: str, op: str):
    name = sig.split(" ")[0]
    p = [s.strip() for s in sig[sig.index("(") + 1:sig.index(")")].split(",")][:2]

    @builtin(sig)
    def f(ev, a, loc):
        return _op(ev, op, [a[p[0]], a[p[1]]], loc, name)


for _sig, _o in (("CNTK2.Plus (_, y, tag='')", "Plus"), ("CNTK2.Minus (_, y, tag='')", "Minus"),
                 ("CNTK2.ElementTimes (_, y, tag='')", "ElementTimes"), ("CNTK2.ElementDivide (_, y, tag='')", "ElementDivide"),
                 ("CNTK2.Less (_, y, tag='')", "Less"), ("CNTK2.Equal (_, y, tag='')", "Equal"),
                 ("CNTK2.Greater (_, y, tag='')", "Greater"), ("CNTK2.GreaterEqual (_, y, tag='')", "GreaterEqual"),
                 ("CNTK2.NotEqual (_, y, tag='')", "NotEqual"), ("CNTK2.LessEqual (_, y, tag='')", "LessEqual"),
                 ("ColumnElementTimes (aVectorSequence, anotherVectorSequence, tag='')", "ElementTimes"),
                 ("TransposeTimes (leftMatrix, rightMatrix, tag='')", "TransposeTimes"),
                 ("DiagTimes (diagonalMatrixAsColumnVector, matrix, tag='')", "DiagTimes"),
                 ("Scale (scalarScalingFactor, matrix, tag='')", "Scale"),
                 ("LogPlus (leftMatrix, rightMatrix, tag='')", "LogPlus"),
                 ("KhatriRaoProduct (leftMatrix, rightMatrix, tag='')", "KhatriRaoProduct"),
                 ("CrossEntropy (refProbVectorSequence, outProbVectorSequence, tag='')", "CrossEntropy"),
                 ("SquareError (aMatrix, anotherMatrix, tag='')", "SquareError"),
                 ("Logistic (label, probability, tag='')", "Logistic"),
                 ("CosDistance (aVectorSequence, anotherVectorSequence, tag='')", "CosDistance")):
    _binary(_sig, _o)


@builtin("CNTK2.Times (x, y, outputRank=1, inferInputRankToMap=-1, tag='')")
def _Times(ev, a, loc):
    # cntkio's Times reduces over all of a sample's axes: CNTK's inferInputRankToMap=0 ("reduce over all
    # input axes", Source/ComputationNetworkLib/LinearAlgebraNodes.h:996-1006), the same as -1 on a vector
    if int(a["outputRank"]) != 1 or int(a["inferInputRankToMap"]) not in (-1, 0):
        raise BrainScriptRefusal("Times: outputRank other than 1 and inferInputRankToMap above 0 are not supported by "
                                 "cntkio (a product over all of the sample's values is)", loc)
    return _op(ev, "Times", [a["x"], a["y"]], loc, "Times")


@builtin("WeightedLogistic (label, probability, instanceWeight, tag='')")
def _WeightedLogistic(ev, a, loc):
    return _op(ev, "Logistic", [a["label"], a["probability"], a["instanceWeight"]], loc, "WeightedLogistic")


@builtin("CNTK2.Pass (_, tag='')", aliases=("CNTK2.Identity",))
def _Pass(ev, a, loc):
    return _node(ev, a["_"], loc, "Pass")


@builtin("CNTK2.Dropout (_, tag='')")
def _Dropout(ev, a, loc):
    n = ev.node("Dropout", [_node(ev, a["_"], loc, "Dropout")], {"dropoutRate": 0.0}, loc)
    n.attrs["bsDropout"] = True           # the rate comes from SGD's dropoutRate (the builder sets it)
    return n


@builtin("Clip (minValue, maxValue, x, tag='')")
def _Clip(ev, a, loc):
    return ev.node("Clip", [_node(ev, a["x"], loc, "Clip")], {"minValue": _number(a["minValue"], loc, "Clip minValue"),
                                                            "maxValue": _number(a["maxValue"], loc, "Clip maxValue")},
                   loc)


@builtin("CNTK2.Clip (_, minValue, maxValue, tag='')")
def _Clip2(ev, a, loc):
    return _Clip(ev, {"x": a["_"], "minValue": a["minValue"], "maxValue": a["maxValue"]}, loc)


@builtin("Softmax (z, axis=0, tag='')")
def _Softmax(ev, a, loc):
    k = int(a["axis"])
    if k == 0:
        return _op(ev, "Softmax", [a["z"]], loc, "Softmax")
    z = _node(ev, a["z"], loc, "Softmax")               # exp(z - ReduceLogSum(z, axis)), as CNTK.core.bs
    return ev.node("Exp", [ev.node("Minus", [z, _axis_reduce(ev, z, k, "logsum", loc, "Softmax")], loc=loc)], loc=loc)


# --- reductions -----------------------------------------------------------------------------------
def _axis_reduce(ev, x, k, how, loc, name):
    if k < 0:
        raise BrainScriptRefusal(f"{name}: axis={k} (over a sequence) is not supported by cntkio; static axes "
                                 "1, 2, ... are", loc)
    return ev.node("AxisReduce", [x], {"axis": k, "reduction": how}, loc)


def _reduce(sig: str, op: str, how: str):
    name = sig.split(" ")[0].split(".")[1]

    @builtin(sig)
    def f(ev, a, loc):
        x = _node(ev, a["_"], loc, name)
        if is_none(a["axis"]) or int(a["axis"]) == 0:   # over all of each sample's values
            return ev.node(op, [x], loc=loc)
        return _axis_reduce(ev, x, int(a["axis"]), how, loc, name)


for _n, _o, _how in (("ReduceSum", "SumColumnElements", "sum"), ("ReduceMean", "ReduceMean", "mean"),
                     ("ReduceMax", "ReduceMax", "max"), ("ReduceMin", "ReduceMin", "min"),
                     ("ReduceLogSum", "ReduceLogSum", "logsum")):
    _reduce(f"CNTK2.{_n} (_, axis=None, tag='')", _o, _how)


# --- criteria ---------------------------------------------------------------------------------------
@builtin("CNTK2.CrossEntropyWithSoftmax (labelSequence, outProbVectorSequence, axis=0, tag='')")
def _CrossEntropyWithSoftmax(ev, a, loc):
    k = int(a["axis"])
    lab = _node(ev, a["labelSequence"], loc, "CrossEntropyWithSoftmax")
    z = _node(ev, a["outProbVectorSequence"], loc, "CrossEntropyWithSoftmax")
    if k == 0:
        return ev.node("CrossEntropyWithSoftmax", [lab, z], loc=loc)
    # along an axis: ReduceLogSum (z, axis) - ReduceSum (labels .* z, axis) per sample (CNTK.core.bs)
    return ev.node("Minus", [_axis_reduce(ev, z, k, "logsum", loc, "CrossEntropyWithSoftmax"),
                             _axis_reduce(ev, ev.node("ElementTimes", [lab, z], loc=loc), k, "sum", loc,
                                          "CrossEntropyWithSoftmax")], loc=loc)


@builtin("CNTK2.ClassificationError (labelSequence, outVectorSequence, topN=1, axis=0, tag='')")
def _ClassificationError(ev, a, loc):
    lab = _node(ev, a["labelSequence"], loc, "ClassificationError")
    z = _node(ev, a["outVectorSequence"], loc, "ClassificationError")
    k, top = int(a["axis"]), int(a["topN"])
    if top < 1:
        raise BrainScriptError(f"ClassificationError: topN must be >= 1, found {top}", loc)
    if k == 0:
        if top == 1:
            return ev.node("ClassificationError", [lab, z], loc=loc)
        return ev.node("ClassificationErrorTopN", [lab, z], {"topN": top}, loc)
    if top != 1:
        raise BrainScriptError("ClassificationError() along a specific axis does not support topN.", loc)
    # an error where the label's 1 is not a maximum along the axis, averaged per sample (CNTK.core.bs)
    pred = ev.node("Equal", [z, _axis_reduce(ev, z, k, "max", loc, "ClassificationError")], loc=loc)
    wrong = _axis_reduce(ev, ev.node("NotEqual", [lab, pred], loc=loc), k, "sum", loc, "ClassificationError")
    return ev.node("ReduceMean", [ev.node("GreaterEqual", [wrong, ev.constant(1.0, loc)], loc=loc)], loc=loc)


@builtin("ClassBasedCrossEntropyWithSoftmax (labelClassDescriptorVectorSequence, mainInputInfo, mainWeight, "
         "classLogProbsBeforeSoftmax, tag='')")
def _ClassBased(ev, a, loc):
    return _op(ev, "ClassBasedCrossEntropyWithSoftmax", [a["labelClassDescriptorVectorSequence"], a["mainInputInfo"],
                                                        a["mainWeight"], a["classLogProbsBeforeSoftmax"]], loc,
               "ClassBasedCrossEntropyWithSoftmax")


# --- normalisation ----------------------------------------------------------------------------------
@builtin("PerDimMeanVarNormalization (x, mean, invStdDev)")
def _PerDimMVN(ev, a, loc):
    return _op(ev, "PerDimMeanVarNormalization", [a["x"], a["mean"], a["invStdDev"]], loc, "PerDimMeanVarNormalization")


@builtin("PerDimMeanVarDeNormalization (dataVectorSequence, meanVector, invStdDevVector, tag='')")
def _PerDimMVDeN(ev, a, loc):
    return _op(ev, "PerDimMeanVarDeNormalization", [a["dataVectorSequence"], a["meanVector"], a["invStdDevVector"]],
               loc, "PerDimMeanVarDeNormalization")


@builtin("BatchNormalization (input, scale, bias, runMean, runVariance, runCount=None, spatial=false, "
         "normalizationTimeConstant=0, blendTimeConstant=0, epsilon=1e-05, useCntkEngine=true, "
         "disableRegularization=false, imageLayout='CHW', tag='')")
def _BatchNormalization(ev, a, loc):
    ins = [_node(ev, a[k], loc, "BatchNormalization") for k in ("input", "scale", "bias", "runMean", "runVariance")]
    # CNTK.core.bs: without runCount, a parameter of one value, 0 at first, not trained
    ins.append(param(ev, [1], loc, value=0, lr_mult=0) if is_none(a["runCount"]) else
               _node(ev, a["runCount"], loc, "BatchNormalization"))
    return ev.node("BatchNormalization", ins, {"spatial": bool(a["spatial"]),
                                               "normalizationTimeConstant": float(a["normalizationTimeConstant"]),
                                               "blendTimeConstant": float(a["blendTimeConstant"]),
                                               "epsilon": float(a["epsilon"])}, loc)


# --- shapes -----------------------------------------------------------------------------------------
@builtin("RowStack (inputs, axis=1, tag='')")
def _RowStack(ev, a, loc):
    v = a["inputs"]
    items = v.values(ev) if isinstance(v, Array) else [v]
    nodes = [_node(ev, x, loc, "Splice") for x in items]
    k = int(a["axis"])
    if k < 1:
        raise BrainScriptRefusal(f"Splice: axis={k} is not supported by cntkio (the static axes 1, 2, ... only)", loc)
    return ev.node("RowStack", nodes, loc=loc) if k == 1 else ev.node("AxisSplice", nodes, {"axis": k}, loc)


@builtin("CNTK2.Splice (_, axis=1, tag='')")
def _Splice(ev, a, loc):
    if int(a["axis"]) < 1:
        raise BrainScriptError("Splice does not yet implement splicing the time axis.", loc)
    return _RowStack(ev, {"inputs": a["_"], "axis": a["axis"]}, loc)


def slice_node(ev, x, b, e, k, loc) -> BNode:
    if k < 1:
        raise BrainScriptRefusal(f"Slice: axis={k} (the sequence axis) is not supported by cntkio: it makes sequences "
                                 "of another length (a new dynamic axis); static axes 1, 2, ... are", loc)
    x = _node(ev, x, loc, "Slice")
    if k == 1 and 0 <= b < e:
        return ev.node("RowSlice", [x], {"startIndex": b, "numRows": e - b}, loc)
    return ev.node("AxisSlice", [x], {"axis": k, "beginIndex": b, "endIndex": e}, loc)


@builtin("Slice (beginIndex, endIndex, input, axis=1, tag='')")
def _Slice(ev, a, loc):
    return slice_node(ev, a["input"], int(a["beginIndex"]), int(a["endIndex"]), int(a["axis"]), loc)


@builtin("CNTK2.Slice (_, beginIndex, endIndex, axis=1, tag='')")
def _Slice2(ev, a, loc):
    return slice_node(ev, a["_"], int(a["beginIndex"]), int(a["endIndex"]), int(a["axis"]), loc)


@builtin("RowSlice (beginIndex, numRows, input, tag='')")
def _RowSlice(ev, a, loc):
    b = int(a["beginIndex"])
    return slice_node(ev, a["input"], b, b + int(a["numRows"]), 1, loc)


@builtin("RowRepeat (input, numRepeats, tag='')")
def _RowRepeat(ev, a, loc):
    return ev.node("RowRepeat", [_node(ev, a["input"], loc, "RowRepeat")], {"numRepeats": int(a["numRepeats"])}, loc)


@builtin("Reshape (input, numRows, imageWidth=0, imageHeight=0, imageChannels=0, tag='')")
def _Reshape(ev, a, loc):
    """CNTK's legacy reshape: each sample's values as ``numRows`` rows, or as an image."""
    return ev.node("Reshape", [_node(ev, a["input"], loc, "Reshape")],
                   {"numRows": int(a["numRows"]), "imageWidth": int(a["imageWidth"]),
                    "imageHeight": int(a["imageHeight"]), "imageChannels": int(a["imageChannels"])}, loc)


def new_reshape(ev, x, shape, b, e, loc) -> BNode:
    d = dims_of(shape, loc, "Reshape")
    x = _node(ev, x, loc, "Reshape")
    if b or e or len(d) not in (1, 3) or 0 in d:
        return ev.node("ReshapeAxes", [x], {"shape": list(d), "beginAxis": b, "endAxis": e}, loc)
    attrs = {"numRows": math.prod(d)}
    if len(d) == 3:
        attrs.update(imageWidth=d[0], imageHeight=d[1], imageChannels=d[2])
    return ev.node("Reshape", [x], attrs, loc)


@builtin("NewReshape (input, dims, beginAxis=0, endAxis=0, tag='')")
def _NewReshape(ev, a, loc):
    return new_reshape(ev, a["input"], a["dims"], int(a["beginAxis"]), int(a["endAxis"]), loc)


@builtin("CNTK2.Reshape (_, shape, beginAxis=0, endAxis=0, tag='')")
def _Reshape2(ev, a, loc):
    return new_reshape(ev, a["_"], a["shape"], int(a["beginAxis"]), int(a["endAxis"]), loc)


@builtin("CNTK2.TransposeDimensions (_, axis1, axis2, tag='')")
def _TransposeDimensions(ev, a, loc):
    return ev.node("TransposeDimensions", [_node(ev, a["_"], loc, "TransposeDimensions")],
                   {"axis1": int(a["axis1"]), "axis2": int(a["axis2"])}, loc)


@builtin("Transpose (x)")
def _Transpose(ev, a, loc):
    return _TransposeDimensions(ev, {"_": a["x"], "axis1": 1, "axis2": 2}, loc)


@builtin("ReconcileDynamicAxis (dataInput, layoutInput, tag='')", aliases=("ReconcileMBLayout",))
def _ReconcileDynamicAxis(ev, a, loc):
    return _op(ev, "ReconcileDynamicAxis", [a["dataInput"], a["layoutInput"]], loc, "ReconcileDynamicAxis")


# --- sequences ----------------------------------------------------------------------------------------
def delay(ev, past: bool, dims, x, step, initial, default, loc) -> BNode:
    """``PastValue``/``FutureValue``: ``x`` is a thunk (a loop may close through the node)."""
    if not is_none(initial):
        raise BrainScriptRefusal(f"{'PastValue' if past else 'FutureValue'}: initialState (a node giving the value "
                               "before the sequence) is not supported by cntkio; defaultHiddenActivation (a "
                               "number) is", loc)
    d = dims_of(dims, loc, "PastValue")
    return ev.node("PastValue" if past else "FutureValue", [x], {"rows": math.prod(d) if d else 0,
                                                               "timeStep": int(step),
                                                               "defaultHiddenActivity": float(_number(
                                                                   default, loc, "defaultHiddenActivation"))}, loc)


_PF = "timeStep=1, initialState=None, defaultHiddenActivation=0.1, tag=''"


@builtin("_PFValue (pastOrFuture, dims, input, " + _PF + ")", lazy=("input",))
def _PFValue(ev, a, loc):
    if a["pastOrFuture"] not in ("Past", "Future"):
        raise BrainScriptError(f"_PFValue: expected \"Past\" or \"Future\", found {a['pastOrFuture']!r}", loc)
    return delay(ev, a["pastOrFuture"] == "Past", a["dims"], a["input"], a["timeStep"], a["initialState"],
                 a["defaultHiddenActivation"], loc)


@builtin("PastValue (dims, input, " + _PF + ")", lazy=("input",), aliases=("Delay",))
def _PastValue(ev, a, loc):
    return delay(ev, True, a["dims"], a["input"], a["timeStep"], a["initialState"], a["defaultHiddenActivation"], loc)


@builtin("FutureValue (dims, input, " + _PF + ")", lazy=("input",))
def _FutureValue(ev, a, loc):
    return delay(ev, False, a["dims"], a["input"], a["timeStep"], a["initialState"], a["defaultHiddenActivation"],
                 loc)


@builtin("CNTK2.PastValue (_, shape, timeStep=1, defaultHiddenActivation=0.1, tag='')", lazy=("_",))
def _PastValue2(ev, a, loc):
    return delay(ev, True, a["shape"], a["_"], a["timeStep"], NONE, a["defaultHiddenActivation"], loc)


@builtin("CNTK2.FutureValue (_, shape, timeStep=1, defaultHiddenActivation=0.1, tag='')", lazy=("_",))
def _FutureValue2(ev, a, loc):
    return delay(ev, False, a["shape"], a["_"], a["timeStep"], NONE, a["defaultHiddenActivation"], loc)


@builtin("BS.Constants.ZeroesLike (x)")
def _ZeroesLike(ev, a, loc):
    """A 0 for every sample of ``x`` (no gradient reaches ``x``)."""
    return ev.node("ConstantLike", [_node(ev, a["x"], loc, "ZeroesLike")], {"value": 0.0, "rows": 1}, loc)


@builtin("BS.Constants.OnesLike (x)")
def _OnesLike(ev, a, loc):
    return ev.node("ConstantLike", [_node(ev, a["x"], loc, "OnesLike")], {"value": 1.0, "rows": 1}, loc)


@builtin("BS.Boolean.If (cond, thenVal, elseVal, tag='')")
def _If(ev, a, loc):
    c = a["cond"]
    if isinstance(c, bool):                        # on a boolean: the value chosen
        return a["thenVal"] if c else a["elseVal"]
    return _op(ev, "If", [a["cond"], a["thenVal"], a["elseVal"]], loc, "If")


for _n, _o in (("And (a, b)", "And"), ("Or (a, b)", "Or"), ("Xor (a, b)", "Xor")):
    _binary("BS.Boolean." + _n, _o)


@builtin("BS.Boolean.Not (x)")
def _Not(ev, a, loc):
    return _op(ev, "Not", [a["x"]], loc, "Not")


# --- the names CNTK.core.bs gives other names -----------------------------------------------------------
value("BS.Constants.None", NONE)
for _name in ("Less", "Equal", "Greater", "GreaterEqual", "NotEqual", "LessEqual", "Splice", "TransposeDimensions",
              "Times", "Abs", "Ceil", "CrossEntropyWithSoftmax", "Dropout", "ElementTimes", "ElementDivide",
              "ClassificationError", "Exp", "Floor", "Log", "Minus", "Pass", "Plus", "ReLU", "ReduceSum",
              "ReduceLogSum", "ReduceMean", "ReduceMin", "ReduceMax", "Round", "Sigmoid"):
    alias(_name, "CNTK2." + _name)
for _name, _target in (("RectifiedLinear", "CNTK2.ReLU"), ("ErrorPrediction", "ClassificationError"),
                       ("CNTK2.ErrorPrediction", "CNTK2.ClassificationError"), ("None", "BS.Constants.None"),
                       ("ColumnwiseCrossProduct", "KhatriRaoProduct"),
                       ("BS.Constants.ZeroSequenceLike", "BS.Constants.ZeroesLike")):
    alias(_name, _target)
