"""NDL statements -> a :class:`~.graph.Graph`: CNTK's evaluation passes.

* **create** (initial pass): statements are evaluated in order, lazily: a name used before its
  statement is evaluated on first use. A function call creates a node named by its full dot path
  (``L1.W`` for ``W`` inside the macro instance ``L1``); nested calls are named after the
  statement and the function (``L1.y.Times``); a number used as a node input becomes a Constant.
* **connect** (second pass): the inputs of delay nodes (``PastValue``, ``FutureValue``,
  ``Delay``) are resolved after the whole script, so they may name nodes defined later: that is
  how recurrent loops are written.
* validation, shapes and initial values are the graph's (``GraphNetwork``).

Macros are global to one build (``MacroLibrary``): defining one twice is CNTK's "function already
exists" error. A macro instance sees its parameters and its own statements; its value is its last
statement's; optional parameters of a macro call become local variables; ``tag=`` on a macro call
tags the macro's value. Names are case-insensitive, as in CNTK.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable

from ... import values
from ..._log import get_logger
from ...errors import ConfigError
from ..nodes import NodeError, lookup, op_names
from .graph import GROUPS, TAG_GROUPS, Graph, NodeDef
from .parser import (Assign, Block, Call, ExprStmt, ListExpr, Loc, MacroDef, NDLError, Num, Ref, Str)
from .special import add_run_count, image_parameter, is_top_n_error, refuse_if_refused, top_n_error

__all__ = ["MacroLibrary", "Evaluator", "NodeVal", "Instance"]

_log = get_logger("networks.ndl")

#: special-node array names (statement names) -> group
ARRAY_NAMES = {k: v for k, v in TAG_GROUPS.items() if k.endswith("nodes")}


class MacroLibrary:
    """The macros of one build (CNTK's global script), by lower-cased name."""

    def __init__(self) -> None:
        self.macros: dict[str, MacroDef] = {}

    def add(self, m: MacroDef) -> None:
        key = m.name.lower()
        if key in self.macros:
            first = self.macros[key]
            raise NDLError(f"function already exists: macro {m.name} is already defined at {first.loc}", m.loc,
                           hint="load each macro file or section once (ndlMacros, load)")
        if lookup(m.name) is not None:
            raise NDLError(f"function already exists: {m.name} is a built-in NDL function", m.loc)
        self.macros[key] = m

    def get(self, name: str) -> MacroDef | None:
        return self.macros.get(name.lower())


@dataclass(frozen=True)
class NodeVal:
    """A reference to a node of the graph."""
    name: str


class Instance:
    """A macro instance (or a nested section): its scope and its value."""

    def __init__(self, scope: "Scope", result: Any) -> None:
        self.scope, self.result = scope, result


class _Pending:
    """A delay node whose input is connected in the second pass."""

    def __init__(self, node: NodeDef, expr, scope: "Scope") -> None:
        self.node, self.expr, self.scope = node, expr, scope


class Scope:
    def __init__(self, ev: "Evaluator", prefix: str, statements: list, params: dict | None = None,
                 fallback: Callable[[str], Any] | None = None, parent: "Scope | None" = None) -> None:
        self.ev, self.prefix, self.fallback, self.parent = ev, prefix, fallback, parent
        self.vals: dict[str, Any] = dict(params or {})
        self.defs: dict[str, Assign] = {}
        self.order: list[str] = []
        self.busy: set[str] = set()
        self.add(statements)

    def add(self, statements: list) -> None:
        for st in statements:
            if isinstance(st, MacroDef):
                self.ev.macros.add(st)
            elif isinstance(st, Assign):
                key = st.name.lower()
                if key in self.defs or (key in self.vals and key not in ARRAY_NAMES):
                    where = self.defs[key].loc if key in self.defs else "a parameter of the macro"
                    raise NDLError(f"{st.name} is defined twice (first at {where})", st.loc)
                self.defs[key] = st
                self.order.append(key)
            elif isinstance(st, ExprStmt):
                raise NDLError(f"{st.expr.fn}(...): a statement must assign its value to a name "
                               f"(name = {st.expr.fn}(...))", st.loc)

    def run(self) -> Any:
        last = None
        for key in list(self.order):
            last = self.get(key, self.defs[key].loc)
        return last

    def has(self, key: str) -> bool:
        return key in self.vals or key in self.defs

    def _chain(self):
        s: Scope | None = self
        while s is not None:
            yield s
            s = s.parent

    def get(self, key: str, loc: Loc) -> Any:
        if key in self.vals:
            return self.vals[key]
        st = self.defs.get(key)
        if st is None:
            raise NDLError(f"undefined symbol {key!r}", loc)
        if key in self.busy:
            raise NDLError(f"{st.name} depends on itself without a delay node (a cycle)", loc,
                           hint="a loop must pass through PastValue, FutureValue or Delay")
        self.busy.add(key)
        try:
            value = self.ev.statement(self, st)
        finally:
            self.busy.discard(key)
        self.vals[key] = value
        return value

    def resolve(self, name: str, loc: Loc, *, soft: bool = False) -> Any:
        parts = name.split(".")
        owner = self
        while owner is not None and not owner.has(parts[0].lower()):
            owner = owner.parent            # a nested section sees the names around it
        if owner is not None:
            value = owner.get(parts[0].lower(), loc)
        else:
            fallback = next((s.fallback for s in self._chain() if s.fallback is not None), None)
            if fallback is not None:        # MEL: the model's nodes, seen from nested sections too
                hit = fallback(name)
                if hit is not None:
                    return hit
            if soft and len(parts) == 1:
                return name
            near = difflib.get_close_matches(parts[0].lower(), list(self.defs) + list(self.vals), n=3)
            raise NDLError(f"undefined symbol {parts[0]!r}", loc,
                           hint=("did you mean " + ", ".join(near) + "?") if near else
                           "define it with name = value before or after its use")
        for i, p in enumerate(parts[1:], 1):
            if not isinstance(value, Instance):
                raise NDLError(f"{'.'.join(parts[:i])} is not a macro instance, so {name} names nothing", loc)
            if not value.scope.has(p.lower()):
                raise NDLError(f"{'.'.join(parts[:i])} has no member {p!r} (it has: "
                               f"{', '.join(value.scope.order)})", loc)
            value = value.scope.get(p.lower(), loc)
        return value


class Evaluator:
    """Evaluates NDL statements into ``graph`` with the macros of ``macros``."""

    def __init__(self, graph: Graph | None = None, macros: MacroLibrary | None = None) -> None:
        self.graph = graph if graph is not None else Graph()
        self.macros = macros if macros is not None else MacroLibrary()
        self.pending: list[_Pending] = []

    # --- entry points ----------------------------------------------------------------------
    def run(self, statements: list, prefix: str = "", fallback=None, outer: list | None = None) -> "Scope":
        """Evaluate a script (create pass), then connect the delay nodes (second pass).
        ``outer``: statements around the script (an NDL file's top level), evaluated only when
        the script uses their names."""
        parent = Scope(self, "", outer) if outer else None
        scope = Scope(self, prefix, statements, fallback=fallback, parent=parent)
        scope.run()
        self.connect()
        return scope

    def connect(self) -> None:
        while self.pending:
            p = self.pending.pop(0)
            v = self.node_input(p.scope, p.expr, p.node.name + ".Constant")
            p.node.inputs = [v]

    # --- statements and expressions -----------------------------------------------------------
    def statement(self, scope: Scope, st: Assign) -> Any:
        group = ARRAY_NAMES.get(st.name.lower())
        if group is not None:
            items = st.expr.items if isinstance(st.expr, ListExpr) else [st.expr]
            for e in items:
                v = self.node_input(scope, e, None)
                self.graph.tag(group, v)
            return [NodeVal(n) for n in self.graph.groups[group]]
        return self.value(scope, st.expr, scope.prefix + st.name, st.loc)

    def value(self, scope: Scope, e, name: str, loc: Loc, *, soft: bool = False) -> Any:
        if isinstance(e, Num):
            return int(e.value) if e.value.is_integer() else e.value
        if isinstance(e, Str):
            return e.value
        if isinstance(e, Ref):
            return scope.resolve(e.name, e.loc, soft=soft)
        if isinstance(e, ListExpr):
            return [self.value(scope, x, f"{name}.{i}", x.loc, soft=soft) for i, x in enumerate(e.items)]
        if isinstance(e, Block):
            inner = Scope(self, name + ".", e.statements, parent=scope)
            return Instance(inner, inner.run())
        if isinstance(e, Call):
            return self.call(scope, e, name)
        raise NDLError(f"unexpected {type(e).__name__}", loc)

    def node_input(self, scope: Scope, e, const_name: str | None) -> str:
        """The node name an argument denotes (a number becomes a Constant node)."""
        v = self.value(scope, e, const_name or "", e.loc) if not isinstance(e, Call) else \
            self.call(scope, e, self._nested(const_name.rsplit(".", 1)[0] if const_name else "", e.fn))
        while isinstance(v, Instance):
            v = v.result
        if isinstance(v, NodeVal):
            return v.name
        if isinstance(v, (int, float)) and const_name:
            n = self._unique(const_name)
            self.graph.add(NodeDef(n, "Constant", [], {"value": float(v)}, grad=False, where=str(e.loc)))
            return n
        raise NDLError(f"expected a node, found {_describe(v)}", e.loc)

    def _nested(self, base: str, fn: str) -> str:
        return self._unique(f"{base}.{fn}" if base else fn)

    def _unique(self, name: str) -> str:
        if name not in self.graph.nodes:
            return name
        k = 1
        while f"{name}{k}" in self.graph.nodes:
            k += 1
        return f"{name}{k}"

    def call(self, scope: Scope, c: Call, name: str) -> Any:
        macro = self.macros.get(c.fn)
        if macro is not None:
            return self.instantiate(scope, macro, c, name)
        if c.fn.lower() == "imageparameter":
            return image_parameter(self, scope, c, name)
        if is_top_n_error(c):
            v = self.value(scope, c.args[2], f"{name}.topN", c.args[2].loc)
            while isinstance(v, Instance):
                v = v.result
            return top_n_error(self, scope, c, name, self.graph.nodes[v.name] if isinstance(v, NodeVal) else v)
        op = lookup(c.fn)
        if op is None:
            refuse_if_refused(c.fn, c.loc)
            names = op_names() + [m.name for m in self.macros.macros.values()]
            low = {n.lower(): n for n in names}
            near = [low[n] for n in difflib.get_close_matches(c.fn.lower(), list(low), n=3, cutoff=0.6)]
            raise NDLError(f"unknown function {c.fn!r}", c.loc,
                           hint=("did you mean " + ", ".join(near) + "?") if near else
                           "see docs/ndl.md for the NDL functions")
        if name in self.graph.nodes:
            raise NDLError(f"node {name} is defined twice (first at {self.graph.nodes[name].where})", c.loc)
        node = NodeDef(name, op.name, where=str(c.loc))
        self.graph.add(node)
        named: dict[str, Any] = {}
        tag = None
        for k, e in c.kwargs.items():
            v = self.value(scope, e, f"{name}.{k}", e.loc, soft=True)
            if isinstance(v, Instance):
                v = v.result
            if isinstance(v, NodeVal):
                raise NDLError(f"{c.fn}: optional parameter {k} must be a number or a string, found node "
                               f"{v.name}", c.kwlocs.get(k, c.loc))
            lk = k.lower()
            if lk == "tag":
                tag = v
            elif lk in ("needgradient", "computegradient"):
                node.grad = _flag(v, k, c.kwlocs.get(k, c.loc))
            elif lk == "learningratemultiplier":
                try:
                    node.lr_mult = values.to_float(v if isinstance(v, (int, float)) else str(v), k)
                except ConfigError as err:
                    raise NDLError(f"{k}: {err.reason}", c.kwlocs.get(k, c.loc)) from err
                node.grad = node.grad and node.lr_mult != 0
            elif not op.accepts(k):
                # CNTK's NDL reads the optional parameters a function knows and ignores the others
                # (NetworkDescriptionLanguage.h:307-321, GetOptionalParameter looks a name up; Text/SLU/lstm.ndl:193:
                # LookupTable(Wlookup, features, init="uniform", initValueScale=6))
                _log.warning("%s: %s has no optional parameter %r; ignored, as CNTK's NDL does", c.kwlocs.get(k, c.loc),
                             c.fn, k)
            else:
                named[k] = v
        pos: list[Any] = []
        try:
            order = op.arrange(len(c.args)) if not op.variadic else ("input",) * len(c.args)
        except NodeError as err:
            raise NDLError(str(err), c.loc) from err
        delay_expr = None
        for i, e in enumerate(c.args):
            role = order[i] if i < len(order) else None
            is_node = op.variadic or (role in op.node_args)
            if is_node and op.kind == "delay":
                delay_expr = e
                pos.append(None)
            elif is_node:
                pos.append(self.node_input(scope, e, f"{name}.Constant"))
            else:
                v = self.value(scope, e, f"{name}.{role}", e.loc)
                while isinstance(v, Instance):
                    v = v.result
                if isinstance(v, NodeVal) or (isinstance(v, list) and not _plain_list(v)):
                    raise NDLError(f"{c.fn}: argument {i + 1} ({role}) must be a number (or a list of numbers), "
                                   f"found {_describe(v)}", e.loc)
                pos.append(v)
        try:
            inputs, attrs = op.bind(pos, named)
        except NodeError as err:
            raise NDLError(str(err), c.loc) from err
        node.inputs = [i for i in inputs if i is not None]
        node.attrs = attrs
        if op.name == "BatchNormalization" and len(node.inputs) == 5:
            add_run_count(self, node)
        if op.kind in ("input", "constant", "precompute"):
            node.grad = False
        if delay_expr is not None:
            self.pending.append(_Pending(node, delay_expr, scope))
        if tag is not None:
            self.apply_tag(tag, name, c.loc)
        return NodeVal(name)

    def apply_tag(self, tag: Any, node: str, loc: Loc) -> None:
        for t in (tag if isinstance(tag, list) else [tag]):
            group = TAG_GROUPS.get(str(t).lower())
            if group is None:
                raise NDLError(f"unknown tag {t!r}", loc, hint="tags: " + ", ".join(GROUPS))
            self.graph.tag(group, node)

    def instantiate(self, scope: Scope, m: MacroDef, c: Call, name: str) -> Any:
        if len(c.args) != len(m.params):
            raise NDLError(f"macro {m.name} takes {len(m.params)} arguments ({', '.join(m.params)}), found "
                           f"{len(c.args)}", c.loc, hint=f"{m.name} is defined at {m.loc}")
        params: dict[str, Any] = {}
        for p, e in zip(m.params, c.args):
            params[p.lower()] = self.value(scope, e, f"{name}.{p}", e.loc)
        tag = None
        for k, e in c.kwargs.items():
            v = self.value(scope, e, f"{name}.{k}", e.loc, soft=True)
            if k.lower() == "tag":
                tag = v
            else:
                params[k.lower()] = v
        if isinstance(m.body, Block):
            inner = Scope(self, name + ".", m.body.statements, params)
            result = inner.run()
        else:
            inner = Scope(self, name + ".", [], params)
            result = self.value(inner, m.body, name, m.loc)
        inst = Instance(inner, result)
        if tag is not None:
            r = result
            while isinstance(r, Instance):
                r = r.result
            if not isinstance(r, NodeVal):
                raise NDLError(f"tag={tag}: the value of macro {m.name} is not a node", c.loc)
            self.apply_tag(tag, r.name, c.loc)
        return inst


def _plain_list(v: list) -> bool:
    """A list of numbers, strings or booleans (an NDL array such as ``{kW, kH, inMap}``)."""
    return all(isinstance(x, (int, float, str, bool)) for x in v)


def _flag(v, key: str, loc: Loc) -> bool:
    try:
        return values.to_bool(v if isinstance(v, (bool, int)) else str(v), key)
    except ConfigError as e:
        raise NDLError(f"{key}: {e.reason}", loc) from e


def _describe(v) -> str:
    if isinstance(v, NodeVal):
        return f"node {v.name}"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, str):
        return f"the name or string {v!r}"
    return repr(v)
