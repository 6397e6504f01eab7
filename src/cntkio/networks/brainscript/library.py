"""The names of CNTK's BrainScript library, CNTK.core.bs, in their namespaces (``Times``,
``CNTK2.Times``, ``BS.Loop.IsFirst``...): the registry the built-ins are written into, and the
scopes a network is evaluated in. It never builds a network itself.

Every name of CNTK.core.bs is defined here, with CNTK's parameters and defaults
(``tests/data/brainscript/cntk_core_names.txt`` lists them; a test compares), in one of three ways:

* a built-in written in Python (:func:`builtin`, in ``functions.py``, ``layers.py``, ...): its
  signature is written as CNTK.core.bs writes it (``"LinearLayer {outDim, bias=true, ...}"``) and
  parsed by BrainScript's parser, so its arguments bind as any BrainScript function's (positional
  ones to the parameters without a default, the others by name; a default is computed in the
  scope of the function's namespace, ``BS.RNNs`` for ``BS.RNNs.LSTMP``);
* a definition in BrainScript (``prelude.bs``), for the library functions CNTK itself writes in
  BrainScript over the others (``BFF``, ``Repeat``, ``BS.Boolean.Xor``...);
* a refusal (:func:`refuse`): a function cntkio cannot build on torch, whose call is an error
  naming it and saying why, raised while the network is built (before any data is read).
"""
from __future__ import annotations

import math
import os
from functools import lru_cache
from typing import Any, Callable

from ...errors import CntkioError
from .syntax import Assign, BrainScriptError, BrainScriptRefusal, Loc, RecordLit, parse_record_body
from .values import Array, BNode, Function, Record, Thunk, type_name

__all__ = ["builtin", "refuse", "value", "alias", "install", "NONE", "is_none", "num", "dims_of", "as_node", "apply",
           "function_of", "param", "library_paths", "REFUSED"]

#: ``BS.Constants.None``: CNTK's empty array ``[| |]``, tested by identity (``IsNone``)
NONE = Array([])

#: path -> a built-in or a refused function, or a plain value (``Inferred``)
_LIB: dict[str, Any] = {}
#: path -> the path it names (``Less = CNTK2.Less``)
_ALIASES: dict[str, str] = {}
#: path -> why cntkio refuses it
REFUSED: dict[str, str] = {}


def is_none(v: Any) -> bool:
    return v is NONE or v is None


def num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _signature(sig: str) -> tuple[str, list[str], dict, Loc]:
    """``"BS.Loop.IsFirst (x)"`` -> path, parameters, defaults (syntax trees), location."""
    head, _, rest = sig.strip().partition(" ")
    path = head
    if "(" in head or "{" in head:                      # "Name(x)" written without a blank
        k = min(i for i in (head.find("("), head.find("{")) if i >= 0)
        path, rest = head[:k], head[k:] + " " + rest
    leaf = path.rsplit(".", 1)[-1]
    body = parse_record_body(f"{leaf} {rest.strip()} = 0", f"<signature {path}>")
    m = body.members[0]
    assert isinstance(m, Assign) and m.params is not None, sig
    return path, list(m.params), dict(m.defaults), m.loc


def _register(path: str, f: Any, aliases: tuple) -> None:
    if path in _LIB or path in _ALIASES:
        raise ValueError(f"BrainScript library: {path} is defined twice")
    _LIB[path] = f
    for a in aliases:
        _ALIASES[a] = path


def builtin(signature: str, *, lazy: tuple = (), aliases: tuple = ()):
    """Register ``fn(ev, args: dict, loc)`` as the built-in of ``signature`` (CNTK.core.bs's form).
    ``args`` holds the values of the parameters (forced, with the elements of arrays, except those
    named in ``lazy``, which stay thunks); ``tag`` is handled here: a node's tag when given."""
    path, params, defaults, _ = _signature(signature)
    ns, _, leaf = path.rpartition(".")

    def deco(fn: Callable):
        def impl(ev, names: dict[str, Thunk], loc: Loc | None):
            args: dict[str, Any] = {}
            for k, t in names.items():
                if k in lazy:
                    args[k] = t
                    continue
                v = t.force(ev)
                if isinstance(v, Array):
                    v.values(ev)
                args[k] = v
            args["given"] = {k for k, t in names.items() if not t.default}
            tag = args.pop("tag", "")
            try:
                out = fn(ev, args, loc)
            except CntkioError:
                raise
            except (TypeError, ValueError, ArithmeticError) as e:    # an argument of the wrong kind or size
                raise BrainScriptError(f"{leaf}: an argument it cannot use ({type(e).__name__}: {e})", loc) from e
            if tag and "tag" in args["given"]:
                if not isinstance(out, BNode) or not isinstance(tag, str):
                    raise BrainScriptError(f"{leaf}: tag=\"...\" names a group of a node", loc)
                out.tags.append(tag)
            return out
        _register(path, Function(leaf, params, defaults, impl=impl, ns=ns), aliases)
        return fn
    return deco


def refuse(signature: str, reason: str, *, aliases: tuple = ()) -> None:
    """Register a function of CNTK's library that cntkio cannot build on torch: calling it is an
    error naming it with ``reason``."""
    path, params, defaults, _ = _signature(signature)
    ns, _, leaf = path.rpartition(".")

    def impl(ev, names, loc):
        raise BrainScriptRefusal(f"{path} is not supported by cntkio: {reason}", loc)
    _register(path, Function(leaf, params, defaults, impl=impl, ns=ns), aliases)
    REFUSED[path] = reason


def value(path: str, v: Any) -> None:
    """A plain value of the library (``BS.Constants.None``)."""
    _register(path, v, ())


def alias(path: str, target: str) -> None:
    """``path`` names what ``target`` names (CNTK.core.bs's ``Less = CNTK2.Less``)."""
    if path in _LIB or path in _ALIASES:
        raise ValueError(f"BrainScript library: {path} is defined twice")
    _ALIASES[path] = target


def library_paths() -> dict[str, str]:
    """Every name the library defines: path -> "builtin", "refused", "value", "alias" or
    "prelude" (for the tests and the docs)."""
    out = {p: ("refused" if p in REFUSED else "builtin" if isinstance(f, Function) else "value")
           for p, f in _LIB.items()}
    out.update({a: "alias" for a in _ALIASES})
    for ns, m in _prelude_members():
        out[f"{ns}.{m.name}" if ns else m.name] = "prelude"
    return out


# --- the scopes of an evaluation -----------------------------------------------------------------
_PRELUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prelude.bs")


@lru_cache(maxsize=1)
def _prelude() -> RecordLit:
    with open(_PRELUDE, encoding="utf-8") as f:
        return parse_record_body(f.read(), _PRELUDE)


def _prelude_members(items: list | None = None, ns: str = ""):
    """(namespace, member) of prelude.bs; a member ``BS = [ ... ]`` is a namespace."""
    for m in (_prelude().members if items is None else items):
        if isinstance(m, Assign) and m.params is None and m.index is None and isinstance(m.expr, RecordLit) \
                and _is_namespace(f"{ns}.{m.name}" if ns else m.name):
            yield from _prelude_members(m.expr.members, f"{ns}.{m.name}" if ns else m.name)
        else:
            yield ns, m


_NAMESPACES = ("BS", "CNTK2", "BS.Constants", "BS.Boolean", "BS.Sequences", "BS.Loop", "BS.Parameters", "BS.RNNs",
               "BS.Seq2Seq", "BS.Network", "BS.Network.Editing")


def _is_namespace(path: str) -> bool:
    return path in _NAMESPACES


def install(ev) -> None:
    """Give the evaluator ``ev`` the library: its global scope (the top-level names) and the
    scopes of the namespaces, each seeing its parent's names (as CNTK.core.bs's records do)."""
    from .evaluator import Scope
    members: dict[str, dict[str, Thunk]] = {ns: {} for ns in ("",) + _NAMESPACES}
    for path, f in _LIB.items():
        ns, _, leaf = path.rpartition(".")
        members[ns][leaf] = Thunk.of(f, path)
    scopes: dict[str, Any] = {}
    for ns in ("",) + _NAMESPACES:
        parent = ns.rpartition(".")[0]
        scopes[ns] = Scope(members[ns], scopes[parent] if ns else None)
        if ns:
            owner, _, leaf = ns.rpartition(".")
            members[owner][leaf] = Thunk.of(Record(members[ns], ns), ns)
    for ns, m in _prelude_members():
        path = f"{ns}.{m.name}" if ns else m.name
        if m.name in members[ns]:
            raise ValueError(f"BrainScript library: {path} is defined twice (prelude.bs and Python)")
        one: dict[str, Thunk] = {}
        ev.define_members([m], scopes[ns], one, ns)
        members[ns].update(one)
    todo = dict(_ALIASES)
    while todo:                         # an alias may name another alias
        done = False
        for name, target in list(todo.items()):
            tns, _, tleaf = target.rpartition(".")
            if tleaf in members[tns]:
                ns, _, leaf = name.rpartition(".")
                members[ns][leaf] = members[tns][tleaf]
                del todo[name]
                done = True
        if not done:
            raise ValueError(f"BrainScript library: aliases of nothing: {todo}")
    ev.globals = scopes[""]
    ev.namespaces = scopes


# --- helpers for the built-ins ----------------------------------------------------------------
def dims_of(v, loc, what: str) -> list[int]:
    """A tensor shape: a number or an array of numbers (``(a:b:c)``); 0 = inferred; None: no axes."""
    if is_none(v):
        return []
    if isinstance(v, Array):
        items = [t.value if t.state == 2 else None for t in v.items]
        if any(not num(i) or not math.isfinite(i) for i in items):
            raise BrainScriptError(f"{what}: expected dimensions (numbers), found {items}", loc)
        return [int(i) for i in items]
    if num(v):
        if not math.isfinite(v):
            raise BrainScriptError(f"{what}: expected a dimension, found {v}", loc)
        return [int(v)]
    raise BrainScriptError(f"{what}: expected a dimension or (a:b:...) dimensions, found {type_name(v)}", loc)


def as_node(ev, v, loc, what) -> BNode:
    if isinstance(v, bool):
        return ev.constant(1.0 if v else 0.0, loc)
    return ev.as_node(v, loc, what)


def apply(ev, fn, x, loc):
    if not isinstance(fn, Function):
        raise BrainScriptError(f"expected a function, found {type_name(fn)}", loc)
    return ev.call(fn, [Thunk.of(x)], {}, loc)


def function_of(name: str, f: Callable, params: tuple = ("x",)) -> Function:
    """A function made by a built-in (a layer's apply): ``f(ev, *values, loc)`` of positional
    arguments."""
    def call(ev, pos, named, loc):
        if len(pos) != len(params) or named:
            raise BrainScriptError(f"{name} takes {len(params)} argument{'s' if len(params) > 1 else ''} "
                                   f"({', '.join(params)}), found {len(pos)}"
                                   + (f" and {', '.join(named)}" if named else ""), loc,
                                   hint=f"{name}{{...}} makes the layer; apply it as layer(x)")
        return f(ev, *[t.force(ev) for t in pos], loc)
    return Function(name, list(params), builtin=call)


_INITS = ("uniform", "uniform1", "gaussian", "normal", "xavier", "glorotuniform", "glorotnormal", "heuniform",
          "henormal", "truncnormal", "bilinear", "zero", "fixedvalue", "fromfile", "fromliteral", "constant")


def param(ev, dims: list[int], loc, *, init: str = "", scale: float = 1.0, value: Any = "", lr_mult: float = 1.0,
          path: str = "", literal: str = "", filter_rank: int = 0, output_rank: int = 1,
          seed: int = -1, shape: tuple[int, int] | None = None) -> BNode:
    """A learnable parameter of CNTK's tensor shape ``dims`` (0 = inferred from its first use),
    initialised as CNTK's LearnableParameter does (Source/ComputationNetworkLib/InputAndParamNodes.cpp):
    ``init`` names the kind (empty: from ``value``, ``path`` or ``literal`` when given, else
    uniform); the random kinds take their fan-in and fan-out from ``dims`` with ``filter_rank`` and
    ``output_rank``. It is held as ``[rows, cols]``: ``dims[0]`` and the product of the others
    (``shape`` when the caller lays it out otherwise)."""
    low = str(init).lower()
    if not low:
        if path:
            low = "fromfile"
        elif num(value):
            low = "fixedvalue"
        elif value not in ("", None):
            raise BrainScriptError(f"initValue: expected a number, found {type_name(value)}", loc)
        elif literal:
            low = "fromliteral"
        else:
            low = "uniform"
    if low not in _INITS:
        raise BrainScriptError(f"init: expected one of uniform, gaussian, normal, xavier, glorotUniform, glorotNormal, "
                               f"heUniform, heNormal, TruncNormal, bilinear, zero, fixedValue, fromFile, fromLiteral; "
                               f"found {init!r}", loc)
    if not dims:
        dims = [1]
    if shape is None:
        rows, cols = dims[0], (0 if any(d == 0 for d in dims[1:]) else math.prod(dims[1:]))
    else:
        rows, cols = shape
    attrs = {"rows": rows, "cols": cols, "init": low, "initValueScale": float(scale),
             "value": float(value) if num(value) else 0.0, "cntkDims": list(dims), "initFilterRank": int(filter_rank),
             "initOutputRank": int(output_rank), "randomSeed": int(seed)}
    if path:
        attrs["initFromFilePath"] = str(path)
    if literal:
        attrs["initFromLiteral"] = str(literal)
    n = ev.node("Parameter", [], attrs, loc)
    n.grad, n.lr_mult = float(lr_mult) != 0, float(lr_mult)
    return n
