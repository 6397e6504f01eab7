"""Delay nodes: ``PastValue``/``FutureValue``/``Delay``, recurrence over the sequence axis.

``PastValue(rows, x, timeStep=1, defaultHiddenActivity=0.1)`` is ``x`` of ``timeStep`` steps
earlier in the same sequence, ``defaultHiddenActivity`` where there is none (the first steps of a
sequence); ``FutureValue`` looks ahead. Samples are in the reader's sequence layout: sequences
concatenated, each sample's position in its sequence known (``positions``, and the sequence
``lengths`` for FutureValue). A delay node may take a node defined later as its input (a forward
reference); the network then evaluates the loop it closes step by step (see
``ndl/graph.py``), everything else over the whole minibatch at once.
"""
from __future__ import annotations

from ...integrations.torch_backend import torch
from .base import NodeError, Op, as_float, as_int, register


@register
class PastValue(Op):
    name, aliases = "PastValue", ("Delay",)
    positional, min_args = ("rows", "cols", "input"), 2
    node_args = ("input",)
    optional = {"timeStep": 1, "delayTime": 1, "defaultHiddenActivity": 0.1}
    kind = "delay"
    direction = 1

    def arrange(self, count):
        return ("rows", "input") if count == 2 else self.positional

    def step(self, attrs) -> int:
        k = as_int(attrs.get("delayTime") if attrs.get("delayTime", 1) != 1 else attrs["timeStep"], "timeStep")
        if k < 1:
            raise NodeError(f"{self.name}: timeStep must be >= 1, found {k}")
        return k

    def infer(self, attrs, shapes, sample):
        rows = as_int(attrs["rows"], f"{self.name} rows")
        self.step(attrs)
        as_float(attrs["defaultHiddenActivity"], "defaultHiddenActivity")
        if shapes and shapes[0] is not None and int(torch.tensor(shapes[0]).prod()) != rows:
            raise NodeError(f"{self.name}: declared {rows} rows but its input has dimensions {list(shapes[0])}")
        return (rows,), True

    def compile(self, attrs, shapes, sample):
        """``fn(x, positions, lengths) -> delayed x`` over the whole minibatch (x is not in a loop)."""
        k, d = self.step(attrs), as_float(attrs["defaultHiddenActivity"], "defaultHiddenActivity")
        sign = self.direction

        def fn(x, positions, lengths):
            x = x.reshape(x.shape[0], -1)
            n = x.shape[0]
            idx = torch.arange(n, device=x.device) - sign * k
            valid = (positions >= k) if sign > 0 else (positions + k < lengths)
            src = x[idx.clamp(0, max(n - 1, 0))]
            return torch.where(valid.unsqueeze(1), src, torch.full_like(src, d))
        return fn


@register
class FutureValue(PastValue):
    name, aliases = "FutureValue", ()
    direction = -1
