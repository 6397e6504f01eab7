"""The node-type protocol and the registry of node types (see the package docstring)."""
from __future__ import annotations

import difflib
from typing import Any, Callable

from ... import values
from ...errors import ConfigError

__all__ = ["NodeError", "Op", "OPS", "Shape", "lookup", "op_names", "register", "numel"]

Shape = tuple


class NodeError(ValueError):
    """A node's arguments or input shapes are wrong; the builder adds the file and line."""


class Op:
    """One node type. Subclasses set the class attributes and override what they need.

    ``positional``: names of the positional arguments in order; those listed in ``node_args`` are
    node inputs, the rest attributes (numbers, strings). ``optional``: named attributes with their
    defaults. ``min_args``: how many positional arguments are required (default all).
    ``variadic``: any number of node inputs (RowStack).
    """

    name: str = ""
    aliases: tuple[str, ...] = ()
    positional: tuple[str, ...] = ()
    node_args: tuple[str, ...] = ()
    optional: dict[str, Any] = {}
    min_args: int | None = None
    variadic: bool = False
    #: "compute", "input", "param", "constant", "precompute", "delay"
    kind: str = "compute"
    #: a criterion sums over the samples (the value is not per sample)
    criterion: bool = False

    # --- arguments -------------------------------------------------------------------------
    def bind(self, pos: list, named: dict[str, Any]) -> tuple[list, dict[str, Any]]:
        """``(inputs, attrs)`` of a call; ``pos`` items are node references or plain values."""
        if self.variadic:
            if not pos:
                raise NodeError(f"{self.name} needs at least one input")
            return list(pos), self._named(named)
        need = len(self.positional) if self.min_args is None else self.min_args
        if not need <= len(pos) <= len(self.positional):
            want = str(need) if need == len(self.positional) else f"{need} to {len(self.positional)}"
            raise NodeError(f"{self.name} takes {want} positional arguments "
                            f"({', '.join(self.positional)}), found {len(pos)}")
        names = self.arrange(len(pos))
        inputs, attrs = [], self._named(named)
        for n, v in zip(names, pos):
            if n in self.node_args:
                inputs.append(v)
            else:
                attrs[n] = v
        return inputs, attrs

    def arrange(self, count: int) -> tuple[str, ...]:
        """The names of ``count`` positional arguments (optional ones drop from the middle)."""
        return self.positional[:count]

    def accepts(self, key: str) -> bool:
        """True when ``key`` names one of the op's parameters (or a generic one: tag, ...)."""
        k = key.lower()
        return k in _GENERIC or any(k == p.lower() for p in (*self.optional, *self.positional))

    def _named(self, named: dict[str, Any]) -> dict[str, Any]:
        attrs = dict(self.optional)
        known = {k.lower(): k for k in list(self.optional) + list(self.positional)}
        for k, v in named.items():
            key = known.get(k.lower())
            if key is None:
                if k.lower() in _GENERIC:
                    attrs[k.lower()] = v
                    continue
                near = difflib.get_close_matches(k, list(known.values()), n=1)
                raise NodeError(f"{self.name} has no parameter {k!r}"
                                + (f"; did you mean {near[0]!r}?" if near else
                                   f" (it takes {', '.join(known.values()) or 'none'})"))
            attrs[key] = v
        return attrs

    # --- shapes and values -----------------------------------------------------------------
    def infer(self, attrs: dict, shapes: list[Shape], sample: list[bool]) -> tuple[Shape, bool]:
        """``(shape, per_sample)`` of the value; raise NodeError on incompatible inputs."""
        raise NotImplementedError

    def compile(self, attrs: dict, shapes: list[Shape], sample: list[bool]) -> Callable:
        """``fn(*input values) -> value`` (called once per minibatch)."""
        raise NotImplementedError


#: named parameters every call accepts (the builder reads them, ops ignore them)
_GENERIC = {"tag", "needgradient", "learningratemultiplier", "computegradient"}

OPS: dict[str, Op] = {}
_CANON: dict[str, str] = {}


def register(cls):
    """Class decorator: add an op under its name and aliases (case-insensitive)."""
    op = cls()
    OPS[op.name] = op
    for n in (op.name, *op.aliases):
        _CANON[n.lower()] = op.name
    return cls


def lookup(name: str) -> Op | None:
    """The op called ``name`` (any CNTK spelling, any case), or None."""
    canon = _CANON.get(str(name).lower())
    return OPS[canon] if canon else None


def op_names() -> list[str]:
    return sorted({n for op in OPS.values() for n in (op.name, *op.aliases)}, key=str.lower)


def near_names(name: str) -> list[str]:
    low = {n.lower(): n for n in op_names()}
    return [low[n] for n in difflib.get_close_matches(name.lower(), list(low), n=3, cutoff=0.6)]


def numel(shape: Shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _conv(fn, v, what: str):
    try:
        return fn(v if isinstance(v, (int, float, bool)) else str(v), what)
    except ConfigError as e:
        raise NodeError(e.reason) from e


def as_int(v, what: str) -> int:
    """An integer argument (cntkio.values' conversion; errors as NodeError)."""
    return _conv(values.to_int, v, what)


def as_float(v, what: str) -> float:
    return _conv(values.to_float, v, what)


def as_bool(v, what: str) -> bool:
    return _conv(values.to_bool, v, what)


def dims_from_use(user_op: str, user_attrs: dict, k: int, others: list, rows: int, cols: int) -> tuple[int, int]:
    """The ``[rows, cols]`` of a parameter whose 0 dimensions are inferred from its first use, input
    ``k`` of a ``user_op`` node whose other inputs have the shapes ``others`` (None: not known): a
    0 keeps its place when the use does not tell it (CNTK infers them in validation, from the node
    that reads the parameter: ``Times(W, x)`` gives W's columns, a convolution its filters', an
    element-wise node or a batch normalisation the other input's values)."""
    other = others[1 - k] if len(others) == 2 and k in (0, 1) else None
    if user_op == "Times" and k == 0 and others[1] is not None:
        return rows, (cols or numel(others[1]))
    if user_op == "TransposeTimes" and k == 0 and others[1] is not None:
        return (rows or numel(others[1])), cols
    if user_op == "Convolution" and k == 0 and others[1] is not None and len(others[1]) == 3:
        kern = user_attrs.get("kernelShape")
        kw, kh = (kern[0], kern[1]) if isinstance(kern, list) else (user_attrs["kernelWidth"], user_attrs["kernelHeight"])
        return rows, (cols or int(others[1][0]) * int(kw) * int(kh))
    if user_op == "BatchNormalization" and k >= 1 and others[0] is not None:
        x = others[0]
        return (rows or (int(x[0]) if user_attrs.get("spatial") else numel(x))), (cols or 1)
    if user_op in ("Plus", "Minus", "ElementTimes", "ElementDivide", "DiagTimes") and other is not None:
        return (rows or numel(other)), (cols or 1)
    return rows, cols
