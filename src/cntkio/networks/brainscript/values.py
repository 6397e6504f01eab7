"""The values of BrainScript: lazy thunks, records, arrays, functions, and graph nodes under
construction (:class:`BNode`).

Every name is bound to a :class:`Thunk`: the expression is evaluated the first time the value is
asked for, once. A thunk asked for while it is being evaluated is a cycle; a cycle is allowed only
through a delay node (``PastValue``/``FutureValue``), whose input is read after the node exists.
"""
from __future__ import annotations

import difflib
from typing import Any, Callable

from .syntax import BrainScriptError, Loc

__all__ = ["Thunk", "Record", "Array", "Function", "BNode", "type_name", "near"]

_PENDING, _RUNNING, _DONE = range(3)


class Thunk:
    """A value computed on first use: ``compute()`` gives it; ``path`` is the record member path
    it computes for: it names the node it holds (``names``) and prefixes the nodes made on the way."""

    __slots__ = ("compute", "state", "value", "path", "loc", "what", "names", "default")

    def __init__(self, compute: Callable[[], Any] | None = None, path: str = "", loc: Loc | None = None,
                 what: str = "", value: Any = None, names: bool = True) -> None:
        self.compute = compute
        self.state = _DONE if compute is None else _PENDING
        self.value = value
        self.path, self.loc, self.what = path, loc, what
        self.names = names          # a record member names the node it holds; an argument does not
        self.default = False        # the default value of a parameter not given in the call

    @classmethod
    def of(cls, value: Any, path: str = "") -> "Thunk":
        return cls(None, path, value=value)

    def force(self, ev) -> Any:
        if self.state == _DONE:
            return self.value
        if self.state == _RUNNING:
            raise BrainScriptError(f"{self.what or self.path or 'a value'} refers to itself (a cycle)", self.loc,
                                   hint="a loop must pass through PastValue or FutureValue")
        self.state = _RUNNING
        ev.paths.append(self.path)
        try:
            v = self.compute()
        except BaseException:
            self.state = _PENDING
            raise
        finally:
            ev.paths.pop()
        if isinstance(v, BNode) and self.path and self.names and (v.name is None or v.name.startswith(self.path + ".")):
            v.name = self.path      # a member names its node (z = model (x) names model's {...}.z "z")
        self.value, self.state, self.compute = v, _DONE, None
        return v


class Record:
    """``{ a = ...; b = ... }``: members by name (thunks), evaluated on first access."""

    def __init__(self, members: dict[str, Thunk], path: str = "", loc: Loc | None = None) -> None:
        self.members, self.path, self.loc = members, path, loc
        #: a loaded network's special-node groups (``BS.Network.Load``): the network's own when the
        #: record is the whole network (``BrainScriptNetworkBuilder = (BS.Network.Load (...))``)
        self.groups: dict[str, list] | None = None

    def get(self, name: str, ev, loc: Loc | None) -> Any:
        t = self.members.get(name)
        if t is None:
            hint = near(name, self.members)
            raise BrainScriptError(f"the record{(' ' + self.path) if self.path else ''} has no member {name!r}", loc,
                                   hint=hint or f"its members: {', '.join(sorted(self.members)) or 'none'}")
        return t.force(ev)


class Array:
    """``a : b : c`` or ``array[lo..hi](i => ...)``: elements (thunks) indexed from ``lo``."""

    def __init__(self, items: list[Thunk], lo: int = 0) -> None:
        self.items, self.lo = items, lo

    def get(self, i: int, ev, loc: Loc | None) -> Any:
        k = int(i) - self.lo
        if not 0 <= k < len(self.items):
            raise BrainScriptError(f"index {i} is outside the array [{self.lo}..{self.lo + len(self.items) - 1}]", loc)
        return self.items[k].force(ev)

    def values(self, ev) -> list:
        return [t.force(ev) for t in self.items]


class Function:
    """A function: a lambda or ``f(x) = ...`` member (``params``, ``defaults`` as expressions,
    ``body``, the scope it was written in); a built-in of the library (``impl(ev, args, loc)``
    with its arguments bound by the same rules, its defaults read in the scope of its namespace
    ``ns``, e.g. ``BS.RNNs``); or a function made by a built-in (``builtin(ev, pos, named, loc)``
    with the thunks of the call's arguments)."""

    def __init__(self, name: str, params: list[str], defaults: dict | None = None, body=None, env=None,
                 builtin: Callable | None = None, loc: Loc | None = None, impl: Callable | None = None,
                 ns: str = "") -> None:
        self.name, self.params, self.defaults = name, params, defaults or {}
        self.body, self.env, self.builtin, self.loc = body, env, builtin, loc
        self.impl, self.ns = impl, ns

    def __repr__(self) -> str:
        return f"<function {self.name}>"


class BNode:
    """A node of the network being built: its node type (``op``, a name of the node library),
    ``inputs`` (BNodes, or thunks still to be read: the input of a delay node), ``attrs``, where
    it was written and the member path it was made under (``hint``); ``name`` is the member that
    holds it, once known."""

    __slots__ = ("op", "inputs", "attrs", "where", "hint", "name", "grad", "lr_mult", "init", "tags")

    def __init__(self, op: str, inputs: list, attrs: dict, where: str, hint: str) -> None:
        self.op, self.inputs, self.attrs, self.where, self.hint = op, inputs, attrs, where, hint
        self.name: str | None = None
        self.grad, self.lr_mult = True, 1.0
        self.init: dict | None = None
        self.tags: list[str] = []

    def __repr__(self) -> str:
        return f"<node {self.name or self.hint}: {self.op}>"


def type_name(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, Record):
        return "a record"
    if isinstance(v, Array):
        return "an array"
    if isinstance(v, Function):
        return "a function"
    if isinstance(v, BNode):
        return "a node"
    return type(v).__name__


def near(name: str, names) -> str | None:
    hits = difflib.get_close_matches(name, list(names), n=3, cutoff=0.6)
    if not hits:
        low = {n.lower(): n for n in names}
        if name.lower() in low:
            hits = [low[name.lower()]]
    return ("did you mean " + " or ".join(repr(h) for h in hits) + "?") if hits else None
