"""Node types BrainScript's library needs beyond NDL's: ``ClassificationErrorTopN``."""
from __future__ import annotations

from ....integrations.torch_backend import torch
from .base import NodeError, as_int, numel, register
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
