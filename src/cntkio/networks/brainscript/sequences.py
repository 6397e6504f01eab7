"""``BS.Sequences.*`` and ``BS.Constants.ZeroSequenceLike`` on the reader's sequence layout.

``IsFirst (x)``/``IsLast (x)`` are 1 at the first/last sample of each sequence of ``x`` and 0
elsewhere: a ``PastValue``/``FutureValue`` (default 1) of ``ZeroSequenceLike (x)``, computed over
the whole minibatch at once. ``BS.Loop.Previous``/``Next`` are ``Previous``/``Next`` (library.py).

The functions that make sequences of other lengths (a new dynamic axis: ``First``, ``Last``,
``Gather``, ``Scatter``, ``BroadcastSequenceAs``, ``ReconcileDynamicAxis``) are refused with a
located error: every sequence node of a cntkio network is computed on the reader's layout.
"""
from __future__ import annotations

from .library import _node, define
from .syntax import BrainScriptError

__all__: list[str] = []


def _zeros(ev, x, loc, what):
    return ev.node("ConstantLike", [_node(ev, x, loc, what)], {"value": 0.0, "rows": 1}, loc)


@define("ZeroSequenceLike", ("x",))
def _ZeroSequenceLike(ev, a, loc):
    return _zeros(ev, a["x"], loc, "ZeroSequenceLike")


def _mark(op, what):
    def f(ev, a, loc):
        return ev.node(op, [_zeros(ev, a["x"], loc, what)], {"rows": 1, "timeStep": 1, "defaultHiddenActivity": 1.0},
                       loc)
    return f


define("IsFirst", ("x",))(_mark("PastValue", "IsFirst"))
define("IsLast", ("x",))(_mark("FutureValue", "IsLast"))


def _refuse(name):
    def f(ev, a, loc):
        raise BrainScriptError(f"BS.Sequences.{name} makes sequences of another length (a new dynamic axis), "
                               "which cntkio does not support: every sequence node is computed on the reader's "
                               "sequence layout (IsFirst, IsLast, Previous and Next are)", loc)
    return f


for _name, _params in (("First", ("x",)), ("Last", ("x",)), ("Gather", ("where", "x")),
                       ("Scatter", ("where", "y")), ("BroadcastSequenceAs", ("type", "data1")),
                       ("ReconcileDynamicAxis", ("dataInput", "layoutInput"))):
    define(_name, _params)(_refuse(_name))
