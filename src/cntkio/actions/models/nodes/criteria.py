"""Training and evaluation criteria: sums over the samples of a minibatch, as CNTK's criterion
nodes (its learning rates are per sample). Inputs are ``(labels, prediction)`` where CNTK puts the
labels first."""
from __future__ import annotations

from ....integrations.torch_backend import nn, torch
from .base import NodeError, Op, numel, register


def _flat(x):
    return x.reshape(x.shape[0], -1)


class _Criterion(Op):
    positional = node_args = ("labels", "prediction")
    criterion = True

    def infer(self, attrs, shapes, sample):
        a, b = shapes
        if numel(a) != numel(b):
            raise NodeError(f"{self.name}: the inputs' dimensions {list(a)} and {list(b)} differ")
        return (1, 1), False

    def compile(self, attrs, shapes, sample):
        f = self.fn
        return lambda y, z: f(_flat(y), _flat(z)).reshape(1, 1)

    @staticmethod
    def fn(y, z):
        raise NotImplementedError


@register
class CrossEntropyWithSoftmax(_Criterion):
    name, aliases = "CrossEntropyWithSoftmax", ("CEWithSM",)
    fn = staticmethod(lambda y, z: -(y * torch.log_softmax(z, dim=-1)).sum())


@register
class CrossEntropy(_Criterion):
    """``-sum(y·log p)`` of probabilities ``p`` (log of 0 floored as in CNTK's safe log)."""
    name = "CrossEntropy"
    fn = staticmethod(lambda y, p: -(y * torch.log(torch.clamp(p, min=1e-38))).sum())


@register
class SquareError(_Criterion):
    name, aliases = "SquareError", ("SE",)
    fn = staticmethod(lambda a, b: ((a - b) ** 2).sum())


@register
class Logistic(_Criterion):
    """``-sum(y·log p + (1-y)·log(1-p))`` of probabilities ``p``."""
    name = "Logistic"
    fn = staticmethod(lambda y, p: nn.functional.binary_cross_entropy(torch.clamp(p, 1e-38, 1 - 1e-7), y,
                                                                       reduction="sum"))


@register
class ClassificationError(_Criterion):
    """The number of samples whose largest prediction is not the label's."""
    name, aliases = "ClassificationError", ("ErrorPrediction",)
    fn = staticmethod(lambda y, z: (z.argmax(dim=-1) != y.argmax(dim=-1)).sum().to(z.dtype))


@register
class CosDistance(Op):
    """The cosine of the angle between the two inputs, per sample."""
    name = "CosDistance"
    positional = node_args = ("a", "b")

    def infer(self, attrs, shapes, sample):
        if numel(shapes[0]) != numel(shapes[1]):
            raise NodeError(f"CosDistance: the inputs' dimensions {list(shapes[0])} and {list(shapes[1])} differ")
        return (1,), any(sample)

    def compile(self, attrs, shapes, sample):
        return lambda a, b: nn.functional.cosine_similarity(_flat(a), _flat(b), dim=-1, eps=1e-30).unsqueeze(-1)


@register
class MatrixL1Reg(Op):
    name, aliases = "MatrixL1Reg", ("L1Reg",)
    positional = node_args = ("input",)
    criterion = True

    def infer(self, attrs, shapes, sample):
        return (1, 1), False

    def compile(self, attrs, shapes, sample):
        return lambda x: x.abs().sum().reshape(1, 1)


@register
class MatrixL2Reg(MatrixL1Reg):
    """The Frobenius norm of the input."""
    name, aliases = "MatrixL2Reg", ("L2Reg",)

    def compile(self, attrs, shapes, sample):
        return lambda x: torch.sqrt((x * x).sum()).reshape(1, 1)
