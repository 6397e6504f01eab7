"""Evaluation of BrainScript: scopes, records with lazy members, function calls, operators,
``include``, ``new ComputationNetwork``.

:class:`Evaluator` turns a syntax tree into values (``values.py``); the node functions and layers
(``library.py``) make :class:`~.values.BNode` s, which ``network.py`` turns into a graph.
"""
from __future__ import annotations

import contextlib
import operator
import os
import sys
from typing import Any

from . import syntax as S
from .syntax import BrainScriptError, BrainScriptRefusal, Loc
from ..nodes import lookup
from ..nodes.refused import refusal
from .values import Array, BNode, Function, Record, Thunk, near, type_name

__all__ = ["Evaluator", "Scope", "deep_recursion"]


@contextlib.contextmanager
def deep_recursion(limit: int = 20000):
    """Room for BrainScript's nesting (each level is a few Python frames); a Python recursion
    error that still happens is reported as a BrainScript error."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    except RecursionError as e:
        raise BrainScriptError("the network nests too deeply (an infinite recursion?)", None,
                               hint="a recursive function needs a condition that ends it") from e
    finally:
        sys.setrecursionlimit(old)

#: the deepest nesting of evaluations (recursive functions included) before an error
MAX_DEPTH = 1000


class Scope:
    """Names visible at one level (a record's members, a function's parameters), then the parent's."""

    __slots__ = ("names", "parent")

    def __init__(self, names: dict[str, Thunk], parent: "Scope | None") -> None:
        self.names, self.parent = names, parent

    def find(self, name: str) -> Thunk | None:
        s = self
        while s is not None:
            t = s.names.get(name)
            if t is not None:
                return t
            s = s.parent
        return None

    def visible(self) -> set[str]:
        out, s = set(), self
        while s is not None:
            out.update(s.names)
            s = s.parent
        return out


_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
          "%": operator.mod, "**": operator.pow, ".*": operator.mul}
_CMP = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge}
#: node operators: ``a op b`` with a node on either side; comparisons with a node operand are nodes
#: (CNTK's EvaluateNodeOp, BrainScriptEvaluator.cpp:357-363)
_NODE_OPS = {"+": "Plus", "-": "Minus", ".*": "ElementTimes", "*": "Times", "/": "ElementDivide",
             "<": "Less", "==": "Equal", ">": "Greater", ">=": "GreaterEqual", "!=": "NotEqual",
             "<=": "LessEqual", "&&": "ElementTimes"}


class Evaluator:
    """Evaluates BrainScript in a global scope of built-ins (``library.builtins``)."""

    def __init__(self, builtins: dict[str, Any] | None = None, *, base_dir: str | None = None) -> None:
        self.paths: list[str] = []
        self.base_dir = base_dir
        self.nodes: list[BNode] = []
        self.globals = Scope({k: Thunk.of(v, k) for k, v in (builtins or {}).items()}, None)
        #: the scopes of the library's namespaces ("" the top, "BS.RNNs", "CNTK2"...): library.install
        self.namespaces: dict[str, Scope] = {"": self.globals}
        self.depth = 0
        self.included: list[str] = []
        #: ``node.dim`` (set by the builder: shape inference over what the node reads)
        self.dim_of = None
        #: trained values of nodes from BS.Network.Load: id(node) -> (tensor, computed)
        self.loaded: dict[int, tuple] = {}

    # --- nodes ------------------------------------------------------------------------------
    @property
    def hint(self) -> str:
        for p in reversed(self.paths):
            if p:
                return p
        return ""

    def node(self, op: str, inputs: list, attrs: dict | None = None, loc: Loc | None = None) -> BNode:
        defaults = getattr(lookup(op), "optional", None) or {}      # the node type's optional attributes
        n = BNode(op, list(inputs), {**defaults, **(attrs or {})}, str(loc) if loc else "", self.hint)
        self.nodes.append(n)
        return n

    def constant(self, value: float, loc: Loc | None) -> BNode:
        return self.node("Constant", [], {"value": float(value), "rows": 1, "cols": 1}, loc)

    def as_node(self, v: Any, loc: Loc | None, what: str) -> BNode:
        if isinstance(v, BNode):
            return v
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return self.constant(v, loc)
        raise BrainScriptError(f"{what}: expected a node or a number, found {type_name(v)}", loc)

    # --- records ----------------------------------------------------------------------------
    def record(self, lit: S.RecordLit, env: Scope, path: str) -> Record:
        members: dict[str, Thunk] = {}
        scope = Scope(members, env)
        self.define_members(lit.members, scope, members, path)
        return Record(members, path, lit.loc)

    def define_members(self, items: list, scope: Scope, members: dict, path: str) -> None:
        for m in items:
            if isinstance(m, S.Include):
                self._include(m, scope, members, path)
                continue
            p = f"{path}.{m.name}" if path else m.name
            if m.params is not None:
                fn = Function(m.name, m.params, m.defaults, m.expr, scope, loc=m.loc)
                members[m.name] = Thunk.of(fn, p)
            elif m.index is not None:
                members[m.name] = Thunk(self._generator(m, scope, p), p, m.loc, m.name)
            else:
                members[m.name] = Thunk(self._later(m.expr, scope, p), p, m.loc, m.name)

    def _later(self, expr, scope: Scope, path: str):
        return lambda: self.eval(expr, scope, path)

    def _generator(self, m: S.Assign, scope: Scope, path: str):
        var, lo_e, hi_e = m.index

        def make():
            lo, hi = self.integer(self.eval(lo_e, scope, path), lo_e.loc), self.integer(self.eval(hi_e, scope, path),
                                                                                         hi_e.loc)
            _check_size(lo, hi, m.loc)
            items = []
            for i in range(lo, hi + 1):
                inner = Scope({var: Thunk.of(i)}, scope)
                items.append(Thunk(self._later(m.expr, inner, f"{path}[{i}]"), f"{path}[{i}]", m.loc, f"{m.name}[{i}]"))
            return Array(items, lo)
        return make

    def _include(self, inc: S.Include, scope: Scope, members: dict, path: str) -> None:
        name = inc.path
        cands = [name] if os.path.isabs(name) else [os.path.join(d, name) for d in
                                                    [os.path.dirname(inc.loc.file)] + ([self.base_dir] if self.base_dir else [])
                                                    + ["."] if d is not None]
        found = next((c for c in cands if os.path.isfile(c)), None)
        if found is None:
            raise BrainScriptError(f"include {name!r}: the file does not exist", inc.loc,
                                   hint="looked in " + ", ".join(sorted({os.path.dirname(os.path.abspath(c)) for c in cands})))
        found = os.path.abspath(found)
        if found in self.included:
            raise BrainScriptError(f"include {name!r}: the file includes itself", inc.loc)
        with open(found, encoding="utf-8") as f:
            text = f.read()
        self.included.append(found)
        try:
            body = S.parse_record_body(text, found)
            self.define_members(body.members, scope, members, path)
        finally:
            self.included.pop()

    # --- expressions ------------------------------------------------------------------------
    def eval(self, e, env: Scope, path: str = "") -> Any:
        if self.depth == 0:                 # the outermost evaluation makes room for the nesting
            with deep_recursion():
                return self._counted(e, env, path)
        return self._counted(e, env, path)

    def _counted(self, e, env: Scope, path: str) -> Any:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise BrainScriptError("the evaluation nests too deeply (an infinite recursion?)", e.loc,
                                       hint="a recursive function needs a condition that ends it")
            return self._eval(e, env, path)
        finally:
            self.depth -= 1

    def _eval(self, e, env: Scope, path: str) -> Any:
        if isinstance(e, S.Lit):
            return e.value
        if isinstance(e, S.Name):
            t = env.find(e.name)
            if t is None:
                raise BrainScriptError(f"undefined name {e.name!r}", e.loc, hint=near(e.name, env.visible()))
            return t.force(self)
        if isinstance(e, S.Member):
            obj = self.eval(e.obj, env, path)
            if isinstance(obj, Record):
                return obj.get(e.name, self, e.loc)
            if isinstance(obj, BNode) and e.name == "dim" and self.dim_of is not None:
                return self.dim_of(obj)
            raise BrainScriptError(f"'.{e.name}': expected a record before the dot, found {type_name(obj)}", e.loc)
        if isinstance(e, S.Call):
            fn = self.eval(e.fn, env, path)
            if not isinstance(fn, Function):
                raise BrainScriptError(f"expected a function to call, found {type_name(fn)}", e.loc)
            pos = [self._arg(a, env) for a in e.args]
            named = {k: self._arg(a, env) for k, a in e.named.items()}
            return self.call(fn, pos, named, e.loc)
        if isinstance(e, S.BinOp):
            a = self.eval(e.a, env, path)
            if e.op in ("&&", "||") and isinstance(a, bool) and a == (e.op == "||"):
                return a                # short-circuit, as CNTK's BoolOp (BrainScriptEvaluator.cpp)
            return self.binop(e.op, a, self.eval(e.b, env, path), e.loc)
        if isinstance(e, S.Unary):
            v = self.eval(e.a, env, path)
            if e.op == "!":             # on a node: element-wise (BS.Boolean.Not)
                return self.node("Not", [v], loc=e.loc) if isinstance(v, BNode) else not self.boolean(v, e.loc)
            if isinstance(v, BNode):
                return self.node("Negate", [v], loc=e.loc) if e.op == "-" else v
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v if e.op == "-" else v
            raise BrainScriptError(f"unary '{e.op}': expected a number or a node, found {type_name(v)}", e.loc)
        if isinstance(e, S.If):
            return self.eval(e.then if self.boolean(self.eval(e.cond, env, path), e.cond.loc) else e.other, env, path)
        if isinstance(e, S.ArrayLit):
            items = []
            for x in e.items:
                v = self.eval(x, env, path)
                items.extend(v.items if isinstance(v, Array) else [Thunk.of(v)])
            return Array(items)
        if isinstance(e, S.RecordLit):
            return self.record(e, env, path)
        if isinstance(e, S.Lambda):
            return Function("lambda", e.params, e.defaults, e.body, env, loc=e.loc)
        if isinstance(e, S.ArrayGen):
            lo = self.integer(self.eval(e.lo, env, path), e.lo.loc)
            hi = self.integer(self.eval(e.hi, env, path), e.hi.loc)
            fn = self.eval(e.fn, env, path)
            if not isinstance(fn, Function):
                raise BrainScriptError(f"array[..](f): expected a function i => ..., found {type_name(fn)}", e.fn.loc)
            _check_size(lo, hi, e.loc)
            items = [Thunk(self._gen(fn, i, e.loc), f"{path}[{i}]" if path else "", e.loc) for i in range(lo, hi + 1)]
            return Array(items, lo)
        if isinstance(e, S.Index):
            obj = self.eval(e.obj, env, path)
            i = self.eval(e.index, env, path)
            if isinstance(obj, Array):
                return obj.get(self.integer(i, e.index.loc), self, e.loc)
            raise BrainScriptError(f"'[...]': expected an array, found {type_name(obj)}", e.loc)
        if isinstance(e, S.New):
            if e.cls == "ComputationNode":
                return self._new_node(self.eval(e.body, env, path), e.loc)
            if e.cls != "ComputationNetwork":
                raise BrainScriptError(f"new {e.cls}: expected new ComputationNetwork or new ComputationNode", e.loc)
            v = self.eval(e.body, env, path)
            if not isinstance(v, Record):
                raise BrainScriptError(f"new ComputationNetwork: expected a record {{ ... }}, found {type_name(v)}", e.loc)
            return v
        raise BrainScriptError(f"cannot evaluate {type(e).__name__}", getattr(e, "loc", None))

    def _new_node(self, rec: Any, loc: Loc | None) -> BNode:
        """``new ComputationNode [ operation = 'Plus' ; inputs = (a : b) ; ... ]``: a node of the node
        library by CNTK's operation name, its other members the attributes the node type reads (CNTK
        ignores the others, as here)."""
        if not isinstance(rec, Record):
            raise BrainScriptError(f"new ComputationNode: expected a record [ operation = ... ], found "
                                   f"{type_name(rec)}", loc)
        if "operation" not in rec.members:
            raise BrainScriptError("new ComputationNode: the record has no member 'operation'", loc)
        name = rec.get("operation", self, loc)
        r = refusal(str(name))
        if r is not None:
            raise BrainScriptRefusal(f"{r[0]} is not supported by cntkio: {r[1]}", loc)
        op = lookup(str(name))
        if op is None:
            raise BrainScriptError(f"new ComputationNode: unknown operation {name!r}", loc)
        ins = rec.get("inputs", self, loc) if "inputs" in rec.members else Array([])
        nodes = [self.as_node(v, loc, str(name)) for v in (ins.values(self) if isinstance(ins, Array) else [ins])]
        attrs = {}
        for k in rec.members:
            if k not in ("operation", "inputs", "tag") and op.accepts(k):
                v = rec.get(k, self, loc)
                attrs[k] = v.values(self) if isinstance(v, Array) else v
        n = self.node(op.name, nodes, attrs, loc)
        tag = rec.get("tag", self, loc) if "tag" in rec.members else ""
        if tag:
            n.tags.append(str(tag))
        return n

    def _gen(self, fn: Function, i: int, loc: Loc):
        return lambda: self.call(fn, [Thunk.of(i)], {}, loc)

    def _arg(self, a, env: Scope) -> Thunk:
        if isinstance(a, S.Lit):
            return Thunk.of(a.value)
        return Thunk(self._later(a, env, self.hint), self.hint, a.loc, "an argument", names=False)

    # --- calls ------------------------------------------------------------------------------
    def call(self, fn: Function, pos: list[Thunk], named: dict[str, Thunk], loc: Loc | None) -> Any:
        if fn.builtin is not None:
            return fn.builtin(self, pos, named, loc)
        names = self.bind(fn, pos, named, loc)
        if fn.impl is not None:
            return fn.impl(self, names, loc)
        return self.eval(fn.body, Scope(names, fn.env), self.hint)

    def bind(self, fn: Function, pos: list[Thunk], named: dict[str, Thunk], loc: Loc | None) -> dict[str, Thunk]:
        """The arguments of a call by parameter name; a parameter not given is its default, computed
        on first use in a scope that sees the other arguments."""
        names: dict[str, Thunk] = {}
        for k, t in named.items():
            if k not in fn.params:
                raise BrainScriptError(f"{fn.name} has no parameter {k!r}", loc,
                                       hint=near(k, fn.params) or f"its parameters: {', '.join(fn.params) or 'none'}")
            names[k] = t
        # positional arguments fill the parameters without a default that are not named, in order
        # (CNTK's ConfigLambda: optional parameters are passed by name only)
        free = [p for p in fn.params if p not in names and p not in fn.defaults]
        if len(pos) > len(free):
            need = [p for p in fn.params if p not in fn.defaults]
            raise BrainScriptError(f"{fn.name} takes {len(need)} positional arguments ({', '.join(need) or 'none'}), "
                                   f"found {len(pos)}", loc,
                                   hint=f"optional parameters are named: {', '.join(fn.defaults)}" if fn.defaults
                                   else None)
        for p, t in zip(free, pos):
            names[p] = t
        scope = Scope(names, fn.env if fn.impl is None else self.namespaces.get(fn.ns, self.globals))
        for p in fn.params:
            if p not in names:
                if p not in fn.defaults:
                    raise BrainScriptError(f"{fn.name} needs its parameter {p!r} ({len(fn.params)} parameters: "
                                           f"{', '.join(fn.params)})", loc)
                t = names[p] = Thunk(self._later(fn.defaults[p], scope, self.hint), self.hint, loc, p, names=False)
                t.default = True
        return names

    # --- operators --------------------------------------------------------------------------
    def binop(self, op: str, a: Any, b: Any, loc: Loc | None) -> Any:
        if op == ">>":                  # F >> G: G(F(...)), with F's parameters
            if not (isinstance(a, Function) and isinstance(b, Function)):
                raise BrainScriptError(f"'>>' composes two functions, found {type_name(a)} and {type_name(b)}", loc)
            return self._compose(a, b)
        if op == "<<":                  # array << n: the array without its first n elements
            if not (isinstance(a, Array) and _num(b)):
                raise BrainScriptError(f"'<<' shifts an array by a number, found {type_name(a)} and {type_name(b)}",
                                       loc)
            return Array(a.items[int(b):])
        if isinstance(a, BNode) or isinstance(b, BNode):
            return self._node_op(op, a, b, loc)
        if op in ("&&", "||"):
            x, y = self.boolean(a, loc), self.boolean(b, loc)
            return (x and y) if op == "&&" else (x or y)
        if op in _CMP:
            if type(a) is not type(b) and not (_num(a) and _num(b)):
                raise BrainScriptError(f"'{op}' compares {type_name(a)} with {type_name(b)}", loc)
            if op not in ("==", "!=") and not (_num(a) or isinstance(a, str)):
                raise BrainScriptError(f"'{op}' orders numbers or strings, found {type_name(a)}", loc)
            return _CMP[op](a, b)
        if _num(a) and _num(b):
            if op == "/" and b == 0:
                raise BrainScriptError("division by zero", loc)
            v = _ARITH[op](a, b)
            return int(v) if op == "/" and float(v).is_integer() and isinstance(a, int) and isinstance(b, int) and a % b == 0 else v
        if op == "+" and isinstance(a, str) and isinstance(b, str):
            return a + b
        raise BrainScriptError(f"'{op}' is not defined for {type_name(a)} and {type_name(b)}", loc)

    def _node_op(self, op: str, a: Any, b: Any, loc: Loc | None) -> BNode:
        """An operator with a node on one side: a node (CNTK's EvaluateNodeOp,
        BrainScriptEvaluator.cpp): ``*`` with a number and ``.*`` are ElementTimes, ``*`` of two
        nodes Times; ``x / number`` scales, ``1 / x`` is Reciprocal; comparisons give 1 or 0;
        ``&&`` is ElementTimes; a boolean operand is the constant 1 or 0."""
        if op == "*" and (_num(a) or _num(b)):
            op = ".*"
        if op == "/" and _num(b):
            return self.node("ElementTimes", [a, self.constant(1.0 / b, loc)], loc=loc)
        if op == "/" and _num(a) and a == 1:
            return self.node("Reciprocal", [b], loc=loc)
        node_op = _NODE_OPS.get(op)
        if node_op is None:
            raise BrainScriptError(f"'{op}' is not defined for nodes (use the node functions)", loc)
        return self.node(node_op, [self._operand(a, loc, op), self._operand(b, loc, op)], loc=loc)

    def _operand(self, v: Any, loc: Loc | None, op: str) -> BNode:
        if isinstance(v, bool):
            return self.constant(1.0 if v else 0.0, loc)
        return self.as_node(v, loc, op)

    def _compose(self, f: Function, g: Function) -> Function:
        def call(ev, pos, named, loc):
            y = ev.call(f, pos, named, loc)
            return ev.call(g, [Thunk.of(y)], {}, loc)
        return Function(f"{f.name} >> {g.name}", list(f.params), builtin=call)

    def boolean(self, v: Any, loc: Loc | None) -> bool:
        if isinstance(v, bool):
            return v
        raise BrainScriptError(f"expected a boolean, found {type_name(v)}", loc)

    def integer(self, v: Any, loc: Loc | None) -> int:
        if _num(v) and float(v).is_integer():
            return int(v)
        raise BrainScriptError(f"expected an integer, found {v!r}" if _num(v) else
                               f"expected an integer, found {type_name(v)}", loc)


#: the most elements an ``array[lo..hi]`` may have: a thunk is made per element, so a typo'd bound
#: would otherwise take the machine's memory (BrainScript arrays hold layers and dimensions)
MAX_ARRAY = 1 << 16


def _check_size(lo: int, hi: int, loc: Loc | None) -> None:
    if hi - lo + 1 > MAX_ARRAY:
        raise BrainScriptError(f"array[{lo}..{hi}] would have {hi - lo + 1} elements, more than cntkio's "
                               f"limit of {MAX_ARRAY}", loc)


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
