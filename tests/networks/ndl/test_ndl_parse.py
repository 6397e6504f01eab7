"""NDL parsing on the config lexer: statements, macros (both forms), calls, lists, commands,
comments, and located syntax errors (file, line, column)."""
from __future__ import annotations

import pytest

from cntkio.networks.ndl.parser import (Assign, Block, Call, ExprStmt, ListExpr, MacroDef, NDLError, Num,
                                              Ref, Str, parse_ndl)
from cntkio.errors import ConfigError


def test_statements_calls_and_named_parameters():
    sts = parse_ndl("SDim=784  # pixels\nW0 = Parameter(HDim, SDim, init=\"uniform\", initValueScale=0.5)\n"
                    "f = Input(SDim, tag=feature); x=-1.5e-3", file="a.ndl")
    assert [type(s) for s in sts] == [Assign, Assign, Assign, Assign]
    assert sts[0].name == "SDim" and sts[0].expr == Num(784.0, sts[0].expr.loc)
    call = sts[1].expr
    assert isinstance(call, Call) and call.fn == "Parameter"
    assert [a.name for a in call.args] == ["HDim", "SDim"]
    assert isinstance(call.kwargs["init"], Str) and call.kwargs["init"].value == "uniform"
    assert call.kwargs["initValueScale"].value == 0.5
    assert isinstance(sts[2].expr.kwargs["tag"], Ref)
    assert sts[3].expr.value == -1.5e-3
    assert (sts[1].loc.file, sts[1].loc.line, sts[1].loc.col) == ("a.ndl", 2, 1)
    assert (call.args[1].loc.line, call.args[1].loc.col) == (2, 22)
    assert (sts[3].loc.line, sts[3].loc.col) == (3, 31)


def test_macro_definitions_in_every_form():
    sts = parse_ndl("""
RFF(x1, w1, b1)=RectifiedLinear(Plus(Times(w1,x1),b1))
DNN(x, o, i) = [
    W = Parameter(o, i)
    y = Sigmoid(Times(W, x))
]
LogPrior(labels)
{
    Prior=Mean(labels)
    LogPrior=Log(Prior)
}
One(x) { y = Exp(x) }
""")
    assert [type(s) for s in sts] == [MacroDef] * 4
    rff, dnn, lp, one = sts
    assert rff.params == ["x1", "w1", "b1"] and isinstance(rff.body, Call)
    assert isinstance(dnn.body, Block) and [s.name for s in dnn.body.statements] == ["W", "y"]
    assert lp.name == "LogPrior" and [s.name for s in lp.body.statements] == ["Prior", "LogPrior"]
    assert lp.loc.line == 7 and lp.body.statements[1].loc.line == 10
    assert [s.name for s in one.body.statements] == ["y"]


def test_lists_sections_and_commands():
    sts = parse_ndl("OutputNodes = (L3, CE.F)\nsec = [ a = 1 ; b = Input(a) ]\nSetInput(L4.*.T, 1, L3.RL)")
    assert isinstance(sts[0].expr, ListExpr) and [r.name for r in sts[0].expr.items] == ["L3", "CE.F"]
    assert isinstance(sts[1].expr, Block) and [s.name for s in sts[1].expr.statements] == ["a", "b"]
    assert isinstance(sts[2], ExprStmt) and sts[2].expr.args[0].name == "L4.*.T"


@pytest.mark.parametrize("text, line, col, message", [
    ("a = 1\nb = Times(W, x", 2, 10, "never closed"),
    ("a = 1\n  b = Plus(x, y])", 2, 16, "expected '\\)'"),
    ("x = 1\ny = 2 3", 2, 5, "expected a number, a name"),
    ("x = \ny = 1", 1, 3, "expected a value after 'x ='"),
    ("f = Plus(a, tag=x, b)", 1, 20, "positional argument after the optional parameters"),
    ("q = Plus(a, 1x=2)", 1, 13, "expected 'name=value'"),
    ("1a = 2", 1, 1, "expected a name before '='"),
    ("just words here", 1, 1, "expected 'name = value'"),
    ("f = Plus(a, k=1, k=2)", 1, 18, "given twice"),
])
def test_syntax_errors_are_located(text, line, col, message):
    with pytest.raises(NDLError, match=message) as info:
        parse_ndl(text, file="net.ndl")
    e = info.value
    assert isinstance(e, ConfigError)
    assert (e.file, e.line) == ("net.ndl", line)
    if "never closed" not in message and "to close" not in str(e):
        assert e.column == col and str(e).startswith(f"net.ndl:{line}:{col}: ")
