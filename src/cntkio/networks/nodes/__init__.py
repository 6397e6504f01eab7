"""CNTK's computation nodes on PyTorch: one library for every network description language.

A node type (:class:`Op`) knows four things, and nothing about the language that names it:

* how a call's positional and named arguments map to its node inputs and attributes
  (:meth:`Op.bind`: ``Parameter(rows, cols, init=uniform)``, ``PastValue(rows, x, timeStep=1)``);
* the shape of its value from the shapes of its inputs (:meth:`Op.infer`), checked there;
* the function computing its value (:meth:`Op.compile`), made once when a network is built;
* its role: an input, a learnable parameter, a pre-computed statistic, a delay (recurrence), a
  criterion.

Values are batches: a *per-sample* node holds ``[N, *shape]`` (N samples, in the reader's order),
any other node (parameters, constants, pre-computed statistics, criteria) its plain ``shape``.
Learnable parameters keep CNTK's ``[rows, cols]`` shapes (``Times(W, x)`` is ``x @ W.T``).

The NDL builder (``cntkio.networks.ndl``) and MEL use this library; a BrainScript builder
would bind its calls to the same ops. :func:`lookup` finds an op by any of its CNTK names,
case-insensitively, and names the near ones when there is none.
"""
from __future__ import annotations

from .base import NodeError, Op, OPS, Shape, lookup, op_names, register
from . import basic, conv, criteria, recurrent, extra, axes  # noqa: F401  (they register their ops)

__all__ = ["NodeError", "Op", "OPS", "Shape", "lookup", "op_names", "register"]
