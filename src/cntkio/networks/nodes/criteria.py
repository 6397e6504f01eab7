"""Training and evaluation criteria: sums over the samples of a minibatch, as CNTK's criterion
nodes (its learning rates are per sample). Inputs are ``(labels, prediction)`` where CNTK puts the
labels first."""
from __future__ import annotations

from ...integrations.torch_backend import nn, torch
from .base import NodeError, Op, numel, register


def _flat(x):
    return x if x.dim() == 2 else x.reshape(x.shape[0], -1)


class _Criterion(Op):
    positional = node_args = ("labels", "prediction")
    criterion = True

    def infer(self, attrs, shapes, sample):
        a, b = shapes
        if numel(a) != numel(b):
            raise NodeError(f"{self.name}: the inputs' dimensions {list(a)} and {list(b)} differ")
        return (1, 1), False

    #: ``fn`` gives the ``[1, 1]`` value itself (a sum over both axes kept as axes: no reshape)
    keeps_dims = False

    def compile(self, attrs, shapes, sample):
        f = self.fn
        if self.keeps_dims:
            return lambda y, z: f(_flat(y), _flat(z))
        return lambda y, z: f(_flat(y), _flat(z)).reshape(1, 1)

    @staticmethod
    def fn(y, z):
        raise NotImplementedError


@register
class CrossEntropyWithSoftmax(_Criterion):
    name, aliases, keeps_dims = "CrossEntropyWithSoftmax", ("CEWithSM",), True
    fn = staticmethod(lambda y, z: -(y * torch.log_softmax(z, dim=-1)).sum((0, 1), keepdim=True))


@register
class CrossEntropy(_Criterion):
    """``-sum(y·log p)`` of probabilities ``p`` (log of 0 floored as in CNTK's safe log)."""
    name, keeps_dims = "CrossEntropy", True
    fn = staticmethod(lambda y, p: -(y * torch.log(torch.clamp(p, min=1e-38))).sum((0, 1), keepdim=True))


@register
class SquareError(_Criterion):
    name, aliases, keeps_dims = "SquareError", ("SE",), True
    fn = staticmethod(lambda a, b: ((a - b) ** 2).sum((0, 1), keepdim=True))


@register
class Logistic(_Criterion):
    """``-sum(y·log p + (1-y)·log(1-p))`` of probabilities ``p``; with a third input, each sample's
    term weighted by it (CNTK's WeightedLogistic)."""
    name = "Logistic"
    positional = node_args = ("labels", "prediction", "weights")
    min_args = 2
    fn = staticmethod(lambda y, p: nn.functional.binary_cross_entropy(torch.clamp(p, 1e-38, 1 - 1e-7), y,
                                                                       reduction="sum"))

    def infer(self, attrs, shapes, sample):
        if len(shapes) == 3 and numel(shapes[2]) != 1:
            raise NodeError(f"WeightedLogistic: the weights must be one value per sample, found dimensions "
                            f"{list(shapes[2])}")
        return super().infer(attrs, shapes[:2], sample[:2])

    def compile(self, attrs, shapes, sample):
        if len(shapes) == 2:
            return super().compile(attrs, shapes, sample)

        def weighted(y, p, w):
            terms = nn.functional.binary_cross_entropy(torch.clamp(_flat(p), 1e-38, 1 - 1e-7), _flat(y),
                                                       reduction="none")
            return (terms * w.reshape(-1, 1)).sum().reshape(1, 1)
        return weighted


@register
class ClassificationError(_Criterion):
    """The number of samples whose largest prediction is not the label's."""
    name, aliases = "ClassificationError", ("ErrorPrediction",)
    fn = staticmethod(lambda y, z: (z.argmax(dim=-1) != y.argmax(dim=-1)).sum().to(z.dtype))


@register
class CosDistance(Op):
    """The cosine of the angle between the two inputs, per sample."""
    name, aliases = "CosDistance", ("CosDist",)
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


@register
class ClassBasedCrossEntropyWithSoftmax(Op):
    """``ClassBasedCrossEntropyWithSoftmax(labels, h, W, classLogPost)``: the class-based language
    model criterion, summed over the samples. ``labels`` has CNTK's four rows per word (the
    LMSequenceReader's with a ``wordclass`` file): word id, class id, the class's first word id
    and its last + 1; ``W`` is ``[hidden, vocabulary]`` (a word's column is its output vector),
    ``classLogPost`` the per-sample class scores (``Times(WeightForClassPostProb, h)``). A word
    costs ``-log softmax(classLogPost)[class] - log softmax_{j in class}(h·W[:, j])[word]``.
    The word scores are computed for the whole vocabulary and masked to each sample's class
    (the same value as CNTK's per-class slices, without their speed)."""
    name, aliases = "ClassBasedCrossEntropyWithSoftmax", ("CBCEWithSM",)
    positional = node_args = ("labels", "input", "weights", "classLogPost")
    criterion = True

    def infer(self, attrs, shapes, sample):
        lab, h, w, c = (tuple(s) for s in shapes)
        if numel(lab) != 4:
            raise NodeError(f"{self.name}: labels must have 4 rows (word, class, class start, class end), "
                            f"found {list(lab)}")
        w2 = w if len(w) == 2 else (w[0], 1)
        if sample[2] or w2[0] != numel(h):
            raise NodeError(f"{self.name}: the weights must be a [{numel(h)}, vocabulary] matrix (the input has "
                            f"{numel(h)} rows), found {list(w)}")
        if numel(c) < 1:
            raise NodeError(f"{self.name}: the class scores are empty")
        return (1, 1), False

    def compile(self, attrs, shapes, sample):
        w2 = tuple(shapes[2]) if len(shapes[2]) == 2 else (shapes[2][0], 1)

        def fn(labels, h, w, cls):
            lab = _flat(labels).round().to(torch.int64)
            word, klass, first, end = lab[:, 0], lab[:, 1], lab[:, 2], lab[:, 3]
            vocab = w2[1]
            if lab.numel() and (bool((word < first).any()) or bool((word >= end).any())
                                or int(end.max()) > vocab or int(first.min()) < 0):
                raise ValueError(f"{ClassBasedCrossEntropyWithSoftmax.name}: a label's word id is not inside "
                                 f"its class's [start, end) or outside the vocabulary of {vocab}")
            cls = _flat(cls)
            class_lp = torch.log_softmax(cls, dim=-1).gather(1, klass[:, None])[:, 0]
            logits = _flat(h) @ w.reshape(w2)
            j = torch.arange(vocab, device=logits.device)
            inside = (j[None, :] >= first[:, None]) & (j[None, :] < end[:, None])
            word_lp = torch.log_softmax(logits.masked_fill(~inside, float("-inf")), dim=-1)
            word_lp = word_lp.gather(1, word[:, None])[:, 0]
            return -(class_lp + word_lp).sum().reshape(1, 1)
        return fn
