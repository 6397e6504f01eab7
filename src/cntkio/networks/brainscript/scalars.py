"""The functions of CNTK's BrainScript library that compute no node: strings (``Format``,
``Replace``, ``Substr``, ``Chr``), numbers (``Mod``, ``IntDiv``, ``Length``), tests (``IsArray``,
``IsSameObject``...), ``Fail``, ``Print`` and ``Trace``. They never touch the graph (``Trace``
passes its node through).
"""
from __future__ import annotations

import math

from ..._log import get_logger
from .library import builtin, num
from .syntax import BrainScriptError
from .values import Array, BNode, Record, type_name

__all__: list[str] = []

_log = get_logger("networks.brainscript")


def _string(v, loc, what) -> str:
    if not isinstance(v, str):
        raise BrainScriptError(f"{what}: expected a string, found {type_name(v)}", loc)
    return v


def _integer(v, loc, what) -> int:
    if not num(v) or not float(v).is_integer():
        raise BrainScriptError(f"{what}: expected an integer, found {v!r}" if num(v) else
                               f"{what}: expected an integer, found {type_name(v)}", loc)
    return int(v)


@builtin("Fail (what)")
def _Fail(ev, a, loc):
    raise BrainScriptError(str(a["what"]), loc)


def _show(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (str, int, float)):
        return str(v)
    if isinstance(v, BNode):
        return f"{v.op} node"
    return type_name(v)


@builtin("Print (value, format='')")
def _Print(ev, a, loc):
    """Writes the value to the log (CNTK printed it to stderr when the network was built)."""
    _log.warning("%s: Print: %s", loc, _show(a["value"]))
    return a["value"]


@builtin("Format (value, format)")
def _Format(ev, a, loc):
    """``Format (3.14159, ".2")``: a number or string formatted with a printf-like format."""
    v, f = a["value"], _string(a["format"], loc, "Format format")
    try:
        if num(v):
            return ("%" + f + ("f" if f and f[-1].isdigit() else "")) % v if f else _show(v)
        return ("%" + f + "s") % v if f else _show(v)
    except (TypeError, ValueError) as e:
        raise BrainScriptError(f"Format: {f!r} is not a format for {_show(v)} ({e})", loc) from e


@builtin("Replace (s, from, to)")
def _Replace(ev, a, loc):
    return _string(a["s"], loc, "Replace").replace(_string(a["from"], loc, "Replace from"),
                                                   _string(a["to"], loc, "Replace to"))


@builtin("Substr (s, begin, num)")
def _Substr(ev, a, loc):
    s = _string(a["s"], loc, "Substr")
    b, n = _integer(a["begin"], loc, "Substr begin"), _integer(a["num"], loc, "Substr num")
    return s[b:b + n] if n >= 0 else s[b:]


@builtin("Chr (c)")
def _Chr(ev, a, loc):
    return chr(_integer(a["c"], loc, "Chr"))


@builtin("Length (x)")
def _Length(ev, a, loc):
    v = a["x"]
    if isinstance(v, Array):
        return len(v.items)
    if isinstance(v, str):
        return len(v)
    raise BrainScriptError(f"Length: expected an array or a string, found {type_name(v)}", loc)


@builtin("IsSameObject (a, b)")
def _IsSameObject(ev, a, loc):
    return a["a"] is a["b"]


@builtin("IsArray (a)")
def _IsArray(ev, a, loc):
    return isinstance(a["a"], Array)


@builtin("IsDouble (a)")
def _IsDouble(ev, a, loc):
    return num(a["a"])


@builtin("IsBool (a)")
def _IsBool(ev, a, loc):
    return isinstance(a["a"], bool)


@builtin("Mod (x, y)")
def _Mod(ev, a, loc):
    x, y = a["x"], a["y"]
    if not (num(x) and num(y)) or y == 0:
        raise BrainScriptError(f"Mod: expected two numbers, the second not 0, found {_show(x)} and {_show(y)}", loc)
    return math.fmod(x, y)


@builtin("IntDiv (x, y)")
def _IntDiv(ev, a, loc):
    x, y = _integer(a["x"], loc, "IntDiv"), _integer(a["y"], loc, "IntDiv")
    if y == 0:
        raise BrainScriptError("IntDiv: division by zero", loc)
    return int(x / y)


@builtin("Trace (node, say='', logFrequency=100, logFirst=10, logGradientToo=false, onlyUpToRow=100000000, "
         "onlyUpToT=100000000, format=[], tag='')")
def _Trace(ev, a, loc):
    """The node itself: CNTK printed its values while training; cntkio does not (said once)."""
    if not isinstance(a["node"], BNode):
        raise BrainScriptError(f"Trace: expected a node, found {type_name(a['node'])}", loc)
    if not isinstance(a["format"], Record):
        raise BrainScriptError("Trace: format must be a record [ ... ]", loc)
    _log.warning("%s: Trace(%s): cntkio does not print node values while training; the node is used as it is",
                 loc, a["say"] or "")
    return a["node"]
