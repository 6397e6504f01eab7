"""Inputs, parameters, matrix and element-wise nodes, normalisation and pre-computed statistics."""
from __future__ import annotations

from ...integrations.torch_backend import torch
from .base import NodeError, Op, as_float, as_int, numel, register
from .init import KINDS

# --- inputs, parameters, constants -------------------------------------------------------------


@register
class Input(Op):
    """``Input(rows)``: ``rows`` values per sample; ``tensorShape`` (CNTK's order, e.g. BrainScript's
    ``Input {(3:4)}``) holds them as that tensor (held reversed, the first axis the fastest)."""
    name, aliases = "Input", ("InputValue",)
    positional, min_args = ("rows", "cols"), 1
    optional = {"tensorShape": None}
    kind = "input"

    def infer(self, attrs, shapes, sample):
        rows = as_int(attrs["rows"], "Input rows")
        if rows <= 0:
            raise NodeError(f"Input rows must be > 0, found {rows}")
        dims = attrs.get("tensorShape")
        if dims:
            shape = tuple(reversed([as_int(d, "Input shape") for d in dims]))
            if numel(shape) != rows:
                raise NodeError(f"Input: shape {list(dims)} does not hold {rows} values")
            return shape, True
        return (rows,), True

    def compile(self, attrs, shapes, sample):
        shape = tuple(self.infer(attrs, shapes, sample)[0])
        return lambda x: x if x.shape[1:] == shape else x.reshape(x.shape[0], *shape)


@register
class SparseInput(Input):
    name, aliases = "SparseInput", ("SparseInputValue",)


@register
class ImageInput(Op):
    """An image per sample, held as ``[channels, height, width]`` (``imageLayout=cudnn``, CNTK's
    ``[W x H x C]``, is that order in memory; ``HWC`` data is permuted once on input)."""
    name, aliases = "ImageInput", ("Image",)
    positional, min_args = ("imageWidth", "imageHeight", "imageChannels", "numImages"), 3
    optional = {"imageLayout": "cudnn"}
    kind = "input"

    def infer(self, attrs, shapes, sample):
        w, h, c = (as_int(attrs[k], f"ImageInput {k}") for k in ("imageWidth", "imageHeight", "imageChannels"))
        if str(attrs["imageLayout"]).lower() not in ("cudnn", "chw", "hwc", "legacy"):
            raise NodeError(f"imageLayout: expected cudnn or HWC, found {attrs['imageLayout']!r}")
        return (c, h, w), True

    def compile(self, attrs, shapes, sample):
        c, h, w = self.infer(attrs, shapes, sample)[0]
        if str(attrs["imageLayout"]).lower() in ("hwc", "legacy"):
            return lambda x: x.reshape(x.shape[0], h, w, c).permute(0, 3, 1, 2)
        return lambda x: x.reshape(x.shape[0], c, h, w)


@register
class Parameter(Op):
    """A learnable ``[rows, cols]`` matrix, initialised by ``init`` (any of CNTK's initializers,
    ``nodes/init.py``; uniform ``±0.05·initValueScale`` by default). ``cntkDims``,
    ``initFilterRank`` and ``initOutputRank`` give the fan-in and fan-out as CNTK computed them
    (default: fanIn = cols, fanOut = rows)."""
    name, aliases = "Parameter", ("LearnableParameter",)
    positional, min_args = ("rows", "cols"), 1
    optional = {"init": "uniform", "initValueScale": 1.0, "value": 0.0, "initFromFilePath": "",
                "randomSeed": -1, "initFromLiteral": "", "initFilterRank": 0, "initOutputRank": 1,
                "initOnCPUOnly": True, "kernelWidth": 0, "kernelHeight": 0}
    kind = "param"

    def infer(self, attrs, shapes, sample):
        rows = as_int(attrs["rows"], "Parameter rows")
        cols = as_int(attrs.get("cols", 1), "Parameter cols")
        if rows <= 0 or cols <= 0:
            raise NodeError(f"Parameter dimensions must be > 0, found [{rows}, {cols}]")
        if str(attrs["init"]).lower() not in KINDS:
            raise NodeError(f"init: expected one of {', '.join(KINDS.values())}, found {attrs['init']!r}")
        return (rows, cols), False


@register
class Constant(Op):
    name, aliases = "Constant", ("Const",)
    positional, min_args = ("value", "rows", "cols"), 1
    kind = "constant"

    def infer(self, attrs, shapes, sample):
        as_float(attrs["value"], "Constant value")
        return (as_int(attrs.get("rows", 1), "Constant rows"), as_int(attrs.get("cols", 1), "Constant cols")), False


# --- shapes of element-wise operands -----------------------------------------------------------
def _squeeze(shape):
    s = tuple(shape)
    while len(s) > 1 and s[-1] == 1:
        s = s[:-1]
    return s


def operand_view(shape, target):
    """How a non-sample operand of ``shape`` lines up with ``target`` (a reshape), or None."""
    s = _squeeze(shape)
    t = tuple(target)
    if s == t or s == _squeeze(t):
        return t if numel(s) == numel(t) else s
    if numel(s) == 1:
        return ()
    if len(t) == 3 and tuple(d for d in s if d != 1) == (t[0],):
        # a bias per channel of an image: [C] or CNTK's (1:1:C) tensor, held as [1, C]
        # (Tests/EndToEndTests/Image/QuickE2E/cntk.cntk: convB = ParameterTensor((1 : 1 : outMap)))
        return (t[0], 1, 1)
    if numel(s) == numel(t):
        return t
    return None


def binary_shape(name, shapes, sample):
    (a, b), (sa, sb) = shapes, sample
    if sa and sb:
        if tuple(a) != tuple(b):
            if numel(b) == 1 or numel(a) == 1:
                return (a if numel(a) >= numel(b) else b), True, (None, None)
            if numel(a) != numel(b):
                raise NodeError(f"{name}: the inputs' dimensions {list(a)} and {list(b)} do not match")
            return tuple(a), True, (None, tuple(a))
        return tuple(a), True, (None, None)
    if sa or sb:
        target, other = (a, b) if sa else (b, a)
        view = operand_view(other, target)
        if view is None:
            raise NodeError(f"{name}: cannot combine a per-sample value of dimensions {list(target)} with "
                            f"a matrix of dimensions {list(other)}")
        return tuple(target), True, ((None, view) if sa else (view, None))
    try:
        out = torch.broadcast_shapes(tuple(a), tuple(b))
    except RuntimeError as e:
        raise NodeError(f"{name}: the inputs' dimensions {list(a)} and {list(b)} do not match") from e
    return tuple(out), False, (None, None)


def _viewer(view, per_sample):
    if view is None:
        return lambda t: t
    if per_sample:
        return lambda t: t.reshape(t.shape[0], *view)
    return lambda t: t.reshape(view)


class _Binary(Op):
    positional = node_args = ("a", "b")
    fn = staticmethod(torch.add)

    def infer(self, attrs, shapes, sample):
        shape, s, _ = binary_shape(self.name, shapes, sample)
        return shape, s

    def compile(self, attrs, shapes, sample):
        _, _, (va, vb) = binary_shape(self.name, shapes, sample)
        fa, fb, f = _viewer(va, sample[0]), _viewer(vb, sample[1]), self.fn
        return lambda a, b: f(fa(a), fb(b))


@register
class Plus(_Binary):
    name, fn = "Plus", staticmethod(torch.add)


@register
class Minus(_Binary):
    name, fn = "Minus", staticmethod(torch.sub)


@register
class ElementTimes(_Binary):
    name, aliases, fn = "ElementTimes", ("ElementProduct", "ColumnElementTimes", "RowElementTimes"), staticmethod(torch.mul)


@register
class Scale(_Binary):
    """``Scale(s, M)``: the scalar ``s`` times ``M``. CNTK 2 builds Scale as an ElementTimes
    (Source/ComputationNetworkLib/ComputationNetworkBuilder.cpp: ``L"Scale"`` makes an
    ElementTimesNode), so the scalar may be either input (``Scale(features, featScale)``) and any
    two inputs that broadcast are multiplied element by element."""
    name, positional, node_args = "Scale", ("scalar", "matrix"), ("scalar", "matrix")
    fn = staticmethod(torch.mul)

    def infer(self, attrs, shapes, sample):
        if not sample[0] and numel(shapes[0]) == 1:
            return tuple(shapes[1]), sample[1]
        if not sample[1] and numel(shapes[1]) == 1:
            return tuple(shapes[0]), sample[0]
        return super().infer(attrs, shapes, sample)

    def compile(self, attrs, shapes, sample):
        if not sample[0] and numel(shapes[0]) == 1:
            return lambda s, m: s.reshape(()) * m
        if not sample[1] and numel(shapes[1]) == 1:
            return lambda m, s: m * s.reshape(())
        return super().compile(attrs, shapes, sample)


@register
class DiagTimes(_Binary):
    """``DiagTimes(d, M)``: the diagonal matrix of the column vector ``d`` times ``M``."""
    name, positional, node_args = "DiagTimes", ("diagonal", "matrix"), ("diagonal", "matrix")

    def infer(self, attrs, shapes, sample):
        d = _squeeze(shapes[0])
        if len(d) != 1 or numel(shapes[1]) != d[0]:
            raise NodeError(f"DiagTimes: a [{numel(shapes[1])}, 1] diagonal is needed, found {list(shapes[0])}")
        return tuple(shapes[1]), sample[1] or sample[0]

    def compile(self, attrs, shapes, sample):
        shape = tuple(shapes[1])
        return lambda d, m: d.reshape(shape) * m


@register
class Times(Op):
    """``Times(A, B)``: ``A·B``; a per-sample ``B`` (flattened) is a column per sample."""
    name = "Times"
    positional = node_args = ("a", "b")

    def infer(self, attrs, shapes, sample):
        a, b = shapes
        if sample[0]:
            raise NodeError("Times: the first input must be a matrix (a Parameter or Constant), found a "
                            "per-sample value")
        if len(a) != 2:
            a = (a[0], 1)
        if sample[1]:
            if a[1] != numel(b):
                raise NodeError(f"Times: the matrix is [{a[0]}, {a[1]}] but its input has {numel(b)} rows "
                                f"(dimensions {list(b)})")
            return (a[0],), True
        bb = tuple(b) if len(b) == 2 else (b[0], 1)
        if a[1] != bb[0]:
            raise NodeError(f"Times: [{a[0]}, {a[1]}] times [{bb[0]}, {bb[1]}]: the inner dimensions differ")
        return (a[0], bb[1]), False

    def compile(self, attrs, shapes, sample):
        if sample[1]:
            rows = self.infer(attrs, shapes, sample)[0][0]
            return lambda a, b: b.reshape(b.shape[0], -1) @ a.reshape(rows, -1).T
        a2 = tuple(shapes[0]) if len(shapes[0]) == 2 else (shapes[0][0], 1)
        return lambda a, b: a.reshape(a2) @ b.reshape(a2[1], -1)


@register
class TransposeTimes(Times):
    """``TransposeTimes(A, B)``: ``Aᵀ·B``."""
    name = "TransposeTimes"

    def infer(self, attrs, shapes, sample):
        if sample[0] and sample[1]:
            # two per-sample vectors: their dot product per sample (CNTK's TransposeTimes of [N] and [N] is
            # [1]; Tests/EndToEndTests/Speech/LSTM/cntk.cntk:169: TransposeTimes (labels, z))
            if numel(shapes[0]) != numel(shapes[1]):
                raise NodeError(f"TransposeTimes: the inputs' dimensions {list(shapes[0])} and {list(shapes[1])} differ")
            return (1,), True
        a = tuple(shapes[0]) if len(shapes[0]) == 2 else (shapes[0][0], 1)
        return super().infer(attrs, [(a[1], a[0]), shapes[1]], sample)

    def compile(self, attrs, shapes, sample):
        if sample[0] and sample[1]:
            return lambda a, b: (a.reshape(a.shape[0], -1) * b.reshape(b.shape[0], -1)).sum(-1, keepdim=True)
        if sample[1]:
            return lambda a, b: b.reshape(b.shape[0], -1) @ a.reshape(a.shape[0], -1)
        a2 = tuple(shapes[0]) if len(shapes[0]) == 2 else (shapes[0][0], 1)
        return lambda a, b: a.reshape(a2).T @ b.reshape(a2[0], -1)


# --- element-wise functions of one input --------------------------------------------------------
class _Unary(Op):
    positional = node_args = ("input",)
    fn = staticmethod(torch.neg)

    def infer(self, attrs, shapes, sample):
        return tuple(shapes[0]), sample[0]

    def compile(self, attrs, shapes, sample):
        return self.fn


def _unary(name, fn, aliases=()):
    cls = type(name, (_Unary,), {"name": name, "aliases": aliases, "fn": staticmethod(fn)})
    register(cls)
    return cls


for _n, _f, _a in (("Negate", torch.neg, ()), ("Abs", torch.abs, ()), ("Exp", torch.exp, ()),
                   ("Log", torch.log, ()), ("Cos", torch.cos, ("Cosine",)), ("Sin", torch.sin, ()),
                   ("Sigmoid", torch.sigmoid, ()), ("Tanh", torch.tanh, ()),
                   ("RectifiedLinear", torch.relu, ("ReLU",)), ("Sqrt", torch.sqrt, ()),
                   ("Square", torch.square, ()), ("Acos", torch.acos, ()), ("Asin", torch.asin, ()),
                   ("Asinh", torch.asinh, ()), ("Atanh", torch.atanh, ()), ("Cosh", torch.cosh, ()),
                   ("Sinh", torch.sinh, ()), ("StopGradient", torch.Tensor.detach, ()),
                   ("Pass", lambda x: x, ())):
    _unary(_n, _f, _a)


class _PerSampleFlat(_Unary):
    """A function over each sample's values as one vector (Softmax, LogSoftmax)."""

    def compile(self, attrs, shapes, sample):
        f = self.fn
        if sample[0]:
            return lambda x: f(x.reshape(x.shape[0], -1), dim=-1).reshape(x.shape)
        return lambda x: f(x.reshape(-1), dim=0).reshape(x.shape)


register(type("Softmax", (_PerSampleFlat,), {"name": "Softmax", "fn": staticmethod(torch.softmax)}))
register(type("LogSoftmax", (_PerSampleFlat,), {"name": "LogSoftmax", "fn": staticmethod(torch.log_softmax)}))


@register
class Dropout(_Unary):
    """Drops values with probability ``dropoutRate`` while training (scaling the rest by
    ``1/(1-rate)``); the identity in evaluation. cntkio takes the rate from the node
    (``Dropout(x, dropoutRate=0.5)``; default 0), CNTK from SGD's ``dropoutRate``."""
    name = "Dropout"
    optional = {"dropoutRate": 0.0}
    stateful = True

    def compile(self, attrs, shapes, sample):
        rate = as_float(attrs["dropoutRate"], "dropoutRate")
        if not 0 <= rate < 1:
            raise NodeError(f"dropoutRate must be in [0, 1), found {rate}")

        box = [rate]            # SGD's dropoutRate sets box[0] per epoch (actions/sgd.set_dropout_rate)

        def fn(x, training=False):
            r = box[0]
            return torch.nn.functional.dropout(x, r, training) if r else x
        fn.wants_training = True
        fn.dropout_rate = box
        return fn


# --- reshaping ------------------------------------------------------------------------------------
@register
class Reshape(_Unary):
    """``Reshape(x, numRows, imageWidth=, imageHeight=, imageChannels=)``: each sample's values as
    ``numRows`` rows (or as an image when the image dimensions are given)."""
    name = "Reshape"
    positional, node_args, min_args = ("input", "numRows"), ("input",), 2
    optional = {"imageWidth": 0, "imageHeight": 0, "imageChannels": 0}

    def infer(self, attrs, shapes, sample):
        rows = as_int(attrs["numRows"], "Reshape numRows")
        w, h, c = (as_int(attrs[k], k) for k in ("imageWidth", "imageHeight", "imageChannels"))
        shape = (c, h, w) if w and h and c else (rows,)
        if numel(shape) != numel(shapes[0]) or numel(shape) != rows:
            raise NodeError(f"Reshape: {numel(shapes[0])} values per sample cannot become {rows} rows"
                            + (f" of a {w}x{h}x{c} image" if w else ""))
        return shape, sample[0]

    def compile(self, attrs, shapes, sample):
        shape = self.infer(attrs, shapes, sample)[0]
        return (lambda x: x.reshape(x.shape[0], *shape)) if sample[0] else (lambda x: x.reshape(shape))


@register
class RowSlice(_Unary):
    name = "RowSlice"
    positional, node_args = ("startIndex", "numRows", "input"), ("input",)

    def infer(self, attrs, shapes, sample):
        s, n = as_int(attrs["startIndex"], "startIndex"), as_int(attrs["numRows"], "numRows")
        rows = numel(shapes[0]) if sample[0] else shapes[0][0]
        if s < 0 or n <= 0 or s + n > rows:
            raise NodeError(f"RowSlice: rows {s}..{s + n - 1} are outside the input's {rows} rows")
        return ((n,), True) if sample[0] else ((n, *shapes[0][1:]), False)

    def compile(self, attrs, shapes, sample):
        s, n = as_int(attrs["startIndex"], "startIndex"), as_int(attrs["numRows"], "numRows")
        if sample[0]:
            return lambda x: x.reshape(x.shape[0], -1)[:, s:s + n]
        return lambda x: x[s:s + n]


@register
class RowStack(Op):
    name, variadic = "RowStack", True

    def infer(self, attrs, shapes, sample):
        if all(sample):
            return (sum(numel(s) for s in shapes),), True
        if any(sample):
            raise NodeError("RowStack: all inputs must be per-sample values, or all matrices")
        cols = {s[1] if len(s) > 1 else 1 for s in shapes}
        if len(cols) != 1:
            raise NodeError(f"RowStack: the inputs have different column counts {sorted(cols)}")
        return (sum(s[0] for s in shapes), cols.pop()), False

    def compile(self, attrs, shapes, sample):
        if all(sample):
            return lambda *xs: torch.cat([x.reshape(x.shape[0], -1) for x in xs], dim=1)
        return lambda *xs: torch.cat([x.reshape(x.shape[0], -1) for x in xs], dim=0)


@register
class RowRepeat(_Unary):
    name = "RowRepeat"
    positional, node_args = ("input", "numRepeats"), ("input",)

    def infer(self, attrs, shapes, sample):
        k = as_int(attrs["numRepeats"], "numRepeats")
        if k <= 0:
            raise NodeError(f"RowRepeat: numRepeats must be > 0, found {k}")
        if sample[0]:
            return (numel(shapes[0]) * k,), True
        return (shapes[0][0] * k, *shapes[0][1:]), False

    def compile(self, attrs, shapes, sample):
        k = as_int(attrs["numRepeats"], "numRepeats")
        if sample[0]:
            return lambda x: x.reshape(x.shape[0], -1).repeat(1, k)
        return lambda x: x.repeat(k, *([1] * (x.dim() - 1)))


@register
class Transpose(_Unary):
    name = "Transpose"

    def infer(self, attrs, shapes, sample):
        if sample[0]:
            raise NodeError("Transpose: the input must be a matrix (a Parameter, Constant or product of "
                            "them), not a per-sample value")
        s = tuple(shapes[0]) if len(shapes[0]) == 2 else (shapes[0][0], 1)
        return (s[1], s[0]), False

    def compile(self, attrs, shapes, sample):
        return lambda x: x.reshape(x.shape[0], -1).T


@register
class SumElements(_Unary):
    """The sum of all values of the minibatch: a 1x1 value."""
    name = "SumElements"

    def infer(self, attrs, shapes, sample):
        return (1, 1), False

    def compile(self, attrs, shapes, sample):
        return lambda x: x.sum().reshape(1, 1)


@register
class SumColumnElements(_Unary):
    """The sum of each sample's values (a 1-row value per sample)."""
    name = "SumColumnElements"

    def infer(self, attrs, shapes, sample):
        return ((1,), True) if sample[0] else ((1, shapes[0][1] if len(shapes[0]) > 1 else 1), False)

    def compile(self, attrs, shapes, sample):
        if sample[0]:
            return lambda x: x.reshape(x.shape[0], -1).sum(1, keepdim=True)
        return lambda x: x.sum(0, keepdim=True)


# --- pre-computed statistics and normalisation ----------------------------------------------------
@register
class Mean(_Unary):
    """The mean of a per-sample input over the training data, computed before the first epoch."""
    name = "Mean"
    kind = "precompute"

    def infer(self, attrs, shapes, sample):
        if not sample[0]:
            raise NodeError(f"{self.name}: the input must be a per-sample value (an Input or a node of one)")
        return tuple(shapes[0]), False


@register
class InvStdDev(Mean):
    """``1/stddev`` of a per-sample input over the training data (variance floored at 1e-10)."""
    name = "InvStdDev"


@register
class PerDimMeanVarNormalization(Op):
    name, aliases = "PerDimMeanVarNormalization", ("PerDimMVNorm",)
    positional = node_args = ("input", "mean", "invStdDev")

    def infer(self, attrs, shapes, sample):
        for i, what in ((1, "mean"), (2, "invStdDev")):
            if sample[i] or operand_view(shapes[i], shapes[0]) is None:
                raise NodeError(f"{self.name}: {what} has dimensions {list(shapes[i])}, expected "
                                f"{list(shapes[0])} (one value per input row)")
        return tuple(shapes[0]), sample[0]

    def compile(self, attrs, shapes, sample):
        view = operand_view(shapes[1], shapes[0])
        return lambda x, m, s: (x - m.reshape(view)) * s.reshape(view)


@register
class PerDimMeanVarDeNormalization(PerDimMeanVarNormalization):
    name, aliases = "PerDimMeanVarDeNormalization", ("PerDimMVDeNorm",)

    def compile(self, attrs, shapes, sample):
        view = operand_view(shapes[1], shapes[0])
        return lambda x, m, s: x / s.reshape(view) + m.reshape(view)


@register
class LookupTable(Op):
    """``LookupTable(E, x)``: the embedding ``E`` (``[dim, vocabulary]``) of each of the ``k``
    one-hot (or weighted) words stacked in ``x`` (``k·vocabulary`` rows) -> ``k·dim`` rows."""
    name = "LookupTable"
    positional = node_args = ("embedding", "input")

    def infer(self, attrs, shapes, sample):
        e = tuple(shapes[0]) if len(shapes[0]) == 2 else (shapes[0][0], 1)
        if sample[0]:
            raise NodeError("LookupTable: the embedding must be a matrix (a Parameter), not a per-sample value")
        if numel(shapes[1]) % e[1]:
            raise NodeError(f"LookupTable: the input's {numel(shapes[1])} rows are not a multiple of the "
                            f"vocabulary size {e[1]} (the embedding is [{e[0]}, {e[1]}])")
        return (e[0] * (numel(shapes[1]) // e[1]),), sample[1]

    def compile(self, attrs, shapes, sample):
        d, v = tuple(shapes[0]) if len(shapes[0]) == 2 else (shapes[0][0], 1)
        return lambda e, x: (x.reshape(x.shape[0], -1, v) @ e.reshape(d, v).T).reshape(x.shape[0], -1)


@register
class Hardmax(_PerSampleFlat):
    """1 at each sample's largest value, 0 elsewhere."""
    name = "Hardmax"

    @staticmethod
    def fn(x, dim):
        return torch.zeros_like(x).scatter_(dim, x.argmax(dim, keepdim=True), 1.0)


_unary("Reciprocal", torch.reciprocal)


@register
class ElementDivide(_Binary):
    name, fn = "ElementDivide", staticmethod(torch.div)
