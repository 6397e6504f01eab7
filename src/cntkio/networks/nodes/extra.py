"""Node types BrainScript's library needs beyond NDL's: ``ClassificationErrorTopN``, the per-sample
reductions (``ReduceMean``, ``ReduceMax``, ``ReduceMin``, ``ReduceLogSum``), ``Hardmax``,
``Softplus``, ``ElementDivide``, the element-wise functions of the BrainScript reference (``Clip``,
``Ceil``, comparisons, ``If``, ...), padded pooling."""
from __future__ import annotations

from ...integrations.torch_backend import torch
from .base import NodeError, Op, as_int, numel, register
from .basic import _Binary, _Unary
from .criteria import _Criterion, _flat


@register
class ClassificationErrorTopN(_Criterion):
    """The number of samples whose label is not among the ``topN`` largest predictions
    (BrainScript's ``ClassificationError(labels, z, topN=k)``)."""
    name = "ClassificationErrorTopN"
    optional = {"topN": 1}

    def infer(self, attrs, shapes, sample):
        k = as_int(attrs["topN"], "topN")
        if k < 1 or k > numel(shapes[1]):
            raise NodeError(f"{self.name}: topN must be in 1..{numel(shapes[1])}, found {k}")
        return super().infer(attrs, shapes, sample)

    def compile(self, attrs, shapes, sample):
        k = as_int(attrs["topN"], "topN")

        def fn(y, z):
            top = torch.topk(_flat(z), k, dim=-1).indices
            hit = (top == _flat(y).argmax(dim=-1, keepdim=True)).any(dim=-1)
            return (~hit).sum().to(z.dtype).reshape(1, 1)
        return fn


class _PerSampleReduce(Op):
    """A reduction over all of each sample's values: one value per sample (or of a whole matrix)."""
    positional = node_args = ("input",)
    fn = staticmethod(torch.sum)

    def infer(self, attrs, shapes, sample):
        return ((1,), True) if sample[0] else ((1, 1), False)

    def compile(self, attrs, shapes, sample):
        f = self.fn
        if sample[0]:
            return lambda x: f(x.reshape(x.shape[0], -1), dim=1, keepdim=True)
        return lambda x: f(x.reshape(1, -1), dim=1, keepdim=True)


def _values(f):
    return lambda x, dim, keepdim: f(x, dim=dim, keepdim=keepdim).values


for _n, _f in (("ReduceMean", torch.mean), ("ReduceMax", _values(torch.max)), ("ReduceMin", _values(torch.min)),
               ("ReduceLogSum", torch.logsumexp)):
    register(type(_n, (_PerSampleReduce,), {"name": _n, "fn": staticmethod(_f)}))


@register
class Hardmax(Op):
    """1 at each sample's largest value, 0 elsewhere."""
    name = "Hardmax"
    positional = node_args = ("input",)

    def infer(self, attrs, shapes, sample):
        return tuple(shapes[0]), sample[0]

    def compile(self, attrs, shapes, sample):
        def fn(x):
            flat = x.reshape(x.shape[0], -1) if sample[0] else x.reshape(1, -1)
            out = torch.zeros_like(flat).scatter_(1, flat.argmax(1, keepdim=True), 1.0)
            return out.reshape(x.shape)
        return fn


@register
class Softplus(Op):
    """``log(1 + exp(x))``."""
    name = "Softplus"
    positional = node_args = ("input",)

    def infer(self, attrs, shapes, sample):
        return tuple(shapes[0]), sample[0]

    def compile(self, attrs, shapes, sample):
        return torch.nn.functional.softplus


@register
class ElementDivide(Op):
    """``a / b`` element-wise (the shapes as for ``ElementTimes``)."""
    name = "ElementDivide"
    positional = node_args = ("a", "b")

    def infer(self, attrs, shapes, sample):
        from .basic import binary_shape
        shape, s, _ = binary_shape(self.name, shapes, sample)
        return shape, s

    def compile(self, attrs, shapes, sample):
        from .basic import _viewer, binary_shape
        _, _, (va, vb) = binary_shape(self.name, shapes, sample)
        fa, fb = _viewer(va, sample[0]), _viewer(vb, sample[1])
        return lambda a, b: fa(a) / fb(b)


# --- element-wise functions of CNTK's BrainScript reference ---------------------------------------

for _n, _f in (("Ceil", torch.ceil), ("Floor", torch.floor), ("Round", torch.round),
               ("Reciprocal", torch.reciprocal), ("Not", lambda x: (x == 0).to(x.dtype))):
    register(type(_n, (_Unary,), {"name": _n, "fn": staticmethod(_f)}))


@register
class Clip(_Unary):
    """``Clip(x, minValue, maxValue)`` with numbers as the bounds."""
    name = "Clip"
    positional, node_args = ("input", "minValue", "maxValue"), ("input",)

    def compile(self, attrs, shapes, sample):
        lo, hi = float(attrs["minValue"]), float(attrs["maxValue"])
        if lo > hi:
            raise NodeError(f"Clip: minValue {lo} is above maxValue {hi}")
        return lambda x: torch.clamp(x, lo, hi)


def _as(f):
    return lambda a, b: f(a, b).to(a.dtype if a.is_floating_point() else b.dtype)


for _n, _f in (("LogPlus", torch.logaddexp), ("Less", _as(torch.lt)), ("LessEqual", _as(torch.le)),
               ("Greater", _as(torch.gt)), ("GreaterEqual", _as(torch.ge)), ("Equal", _as(torch.eq)),
               ("NotEqual", _as(torch.ne)), ("And", _as(lambda a, b: (a != 0) & (b != 0))),
               ("Or", _as(lambda a, b: (a != 0) | (b != 0))), ("Xor", _as(lambda a, b: (a != 0) ^ (b != 0)))):
    register(type(_n, (_Binary,), {"name": _n, "fn": staticmethod(_f)}))


@register
class If(Op):
    """``If(condition, thenValue, elseValue)`` element-wise (the three of one shape, or numbers)."""
    name = "If"
    positional = node_args = ("condition", "thenValue", "elseValue")

    def infer(self, attrs, shapes, sample):
        from .basic import binary_shape
        s1, p1, _ = binary_shape(self.name, shapes[:2], sample[:2])
        return binary_shape(self.name, [s1, shapes[2]], [p1, sample[2]])[:2]

    def compile(self, attrs, shapes, sample):
        shape, per = self.infer(attrs, shapes, sample)

        def fit(t, s):
            if per and s:
                return t.reshape(t.shape[0], *shape) if t.numel() == t.shape[0] * numel(shape) else t
            return t.reshape(shape) if t.numel() == numel(shape) else t.reshape(())
        return lambda c, a, b: torch.where(fit(c, sample[0]) != 0, fit(a, sample[1]), fit(b, sample[2]))


@register
class PaddedMaxPooling(Op):
    """Max pooling of ``[c, h, w]`` samples padded so that the output is ``ceil(size/stride)``
    (odd windows: half a window on each side; padding never wins the max). BrainScript's
    ``MaxPoolingLayer {..., pad=true}``."""
    name = "PaddedMaxPooling"
    positional = ("input", "windowWidth", "windowHeight", "horizontalSubsample", "verticalSubsample")
    node_args = ("input",)

    def _geom(self, attrs, shapes):
        if len(shapes[0]) != 3:
            raise NodeError(f"{self.name}: the input must be an image [channels, height, width], found dimensions "
                            f"{list(shapes[0])}")
        ww, wh, sw, sh = (as_int(attrs[k], k) for k in self.positional[1:])
        axes = attrs.get("padAxes") or (True, True)     # per axis (width, height)
        onw, onh = bool(axes[0]), bool(axes[1])
        if (onw and ww % 2 == 0) or (onh and wh % 2 == 0):
            raise NodeError(f"{self.name}: padding needs an odd window on the padded axes, found {ww}x{wh}")
        return shapes[0], ww, wh, sw, sh, (wh // 2 if onh else 0, ww // 2 if onw else 0)

    def infer(self, attrs, shapes, sample):
        (c, h, w), ww, wh, sw, sh, (ph, pw) = self._geom(attrs, shapes)
        oh, ow = (h + 2 * ph - wh) // sh + 1, (w + 2 * pw - ww) // sw + 1
        if oh <= 0 or ow <= 0:
            raise NodeError(f"{self.name}: a {ww}x{wh} window does not fit a {w}x{h} image")
        return (c, oh, ow), sample[0]

    def compile(self, attrs, shapes, sample):
        _, ww, wh, sw, sh, pad = self._geom(attrs, shapes)
        f = torch.nn.functional
        return lambda x: f.max_pool2d(x, (wh, ww), stride=(sh, sw), padding=pad)


@register
class PaddedAveragePooling(PaddedMaxPooling):
    """Average pooling padded as :class:`PaddedMaxPooling`; the padding is not counted in the average."""
    name = "PaddedAveragePooling"

    def compile(self, attrs, shapes, sample):
        _, ww, wh, sw, sh, pad = self._geom(attrs, shapes)
        f = torch.nn.functional
        return lambda x: f.avg_pool2d(x, (wh, ww), stride=(sh, sw), padding=pad, count_include_pad=False)


@register
class ConstantLike(Op):
    """``ConstantLike(x, value=0, rows=1)``: ``rows`` values ``value`` for every sample of ``x``
    (its sequence layout, none of its values: no gradient reaches ``x``). BrainScript's
    ``BS.Constants.ZeroSequenceLike`` and the masks ``BS.Sequences.IsFirst``/``IsLast`` read it."""
    name = "ConstantLike"
    positional = node_args = ("input",)
    optional = {"value": 0.0, "rows": 1}

    def infer(self, attrs, shapes, sample):
        rows = as_int(attrs["rows"], "rows")
        if rows < 1:
            raise NodeError(f"ConstantLike: rows must be >= 1, found {rows}")
        if not sample[0]:
            raise NodeError(f"ConstantLike: the input must have a value per sample, found dimensions {list(shapes[0])}")
        return (rows,), True

    def compile(self, attrs, shapes, sample):
        rows, value = as_int(attrs["rows"], "rows"), float(attrs["value"])
        return lambda x: torch.full((x.shape[0], rows), value, dtype=torch.get_default_dtype() if not
                                    x.is_floating_point() else x.dtype, device=x.device)


@register
class KhatriRaoProduct(Op):
    """Per sample, every product of a value of ``a`` with a value of ``b`` (the Kronecker product of
    the two vectors, ``a``'s index the slower): CNTK's KhatriRaoProduct of two matrices, column by
    column."""
    name, aliases = "KhatriRaoProduct", ("ColumnwiseCrossProduct",)
    positional = node_args = ("a", "b")

    def infer(self, attrs, shapes, sample):
        if sample[0] != sample[1]:
            raise NodeError("KhatriRaoProduct: both inputs must have a value per sample, or neither")
        return (numel(shapes[0]) * numel(shapes[1]),), sample[0]

    def compile(self, attrs, shapes, sample):
        if sample[0]:
            return lambda a, b: (a.reshape(a.shape[0], -1, 1) * b.reshape(b.shape[0], 1, -1)).reshape(a.shape[0], -1)
        return lambda a, b: (a.reshape(-1, 1) * b.reshape(1, -1)).reshape(-1)


@register
class TransposeDimensions(Op):
    """``TransposeDimensions(x, axis1, axis2)``: two axes of each sample swapped (CNTK's order:
    axis 1 the fastest; an axis beyond the rank is one of dimension 1). A matrix (not per sample)
    swaps its rows and columns (axes 1 and 2)."""
    name = "TransposeDimensions"
    positional, node_args = ("input", "axis1", "axis2"), ("input",)

    def _plan(self, attrs, shape, per):
        a1, a2 = as_int(attrs["axis1"], "axis1"), as_int(attrs["axis2"], "axis2")
        if a1 < 1 or a2 < 1:
            raise NodeError(f"TransposeDimensions: axes are 1, 2, ... (static axes), found {a1} and {a2}")
        if not per:
            if {a1, a2} not in ({1, 2}, {1}, {2}) or len(shape) > 2:
                raise NodeError("TransposeDimensions: a value that is not per sample transposes as a matrix "
                                "(axes 1 and 2)")
            s = tuple(shape) if len(shape) == 2 else (shape[0], 1)
            return s, (s[1], s[0]) if a1 != a2 else s, None
        r = max(len(shape), a1, a2)
        full = (1,) * (r - len(shape)) + tuple(shape)
        p1, p2 = r - a1, r - a2
        out = list(full)
        out[p1], out[p2] = out[p2], out[p1]
        return full, tuple(out), (p1 + 1, p2 + 1)

    def infer(self, attrs, shapes, sample):
        return self._plan(attrs, shapes[0], sample[0])[1], sample[0]

    def compile(self, attrs, shapes, sample):
        full, out, dims = self._plan(attrs, shapes[0], sample[0])
        if dims is None:
            return (lambda x: x.reshape(full).T) if out != full or attrs["axis1"] != attrs["axis2"] else \
                (lambda x: x.reshape(full))
        return lambda x: x.reshape(x.shape[0], *full).transpose(*dims)


@register
class ReconcileDynamicAxis(Op):
    """``ReconcileDynamicAxis(data, layout)``: ``data`` on the sequence layout of ``layout``. In
    cntkio every per-sample value of a minibatch is on the reader's one layout, so per-sample data
    is itself; a value that is not per sample is repeated for every sample of ``layout``."""
    name, aliases = "ReconcileDynamicAxis", ("ReconcileMBLayout",)
    positional = node_args = ("data", "layout")

    def infer(self, attrs, shapes, sample):
        if not sample[1]:
            raise NodeError("ReconcileDynamicAxis: the layout input must have a value per sample")
        return tuple(shapes[0]), True

    def compile(self, attrs, shapes, sample):
        if sample[0]:
            return lambda d, lay: d
        shape = tuple(shapes[0])
        return lambda d, lay: d.reshape(1, *shape).expand(lay.shape[0], *shape)


@register
class Diagonal(Op):
    """``Diagonal(M)``: the diagonal of the square matrix ``M`` (not per sample) as a row ``[1, n]``."""
    name = "Diagonal"
    positional = node_args = ("input",)

    def infer(self, attrs, shapes, sample):
        s = tuple(shapes[0])
        if sample[0] or len(s) != 2 or s[0] != s[1]:
            raise NodeError(f"Diagonal: the input must be a square matrix (not per sample), found dimensions {list(s)}")
        return (1, s[0]), False

    def compile(self, attrs, shapes, sample):
        return lambda m: m.diagonal().reshape(1, -1)
