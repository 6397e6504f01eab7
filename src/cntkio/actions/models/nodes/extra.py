"""Node types BrainScript's library needs beyond NDL's: ``ClassificationErrorTopN``, the per-sample
reductions (``ReduceMean``, ``ReduceMax``, ``ReduceMin``, ``ReduceLogSum``), ``Hardmax``,
``Softplus``, ``ElementDivide``."""
from __future__ import annotations

from ....integrations.torch_backend import torch
from .base import NodeError, Op, as_int, numel, register
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
