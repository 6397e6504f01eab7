"""BrainScript input that broke the error rule (issue 30), and what it gives now."""
from __future__ import annotations

import pytest
import torch

from cntkio.networks.brainscript import BrainScriptError, build, build_graph


def _ops(g) -> dict:
    return {k: (n.op, [getattr(i, "name", i) for i in n.inputs]) for k, n in g.nodes.items()}


@pytest.mark.parametrize("text, col", [("features = Input {1e999}\n", 18), ("features = Input {(2:1e999)}\n", 18)])
def test_an_infinite_dimension_is_a_located_error(text, col):
    """Was OverflowError (int(inf)) in the Input built-in."""
    with pytest.raises(BrainScriptError) as e:
        build_graph(text)
    assert e.value.line == 1 and e.value.column == col and "Input: expected" in str(e.value)


def test_comparing_nodes_makes_a_comparison_node():
    """``Times(W, x) > Constant(1)`` was TypeError; CNTK makes a Greater node
    (BrainScriptEvaluator.cpp:357-363), and so for every comparison."""
    g = build_graph("x = Input {3}\nW = ParameterTensor {(2:3)}\nz = Times(W, x) > Constant(1)\n"
                    "e = (x == 1) + (x != 1) + (x < 1) + (x <= 1) + (x >= 1)\n")
    ops = _ops(g)
    assert ops["z"][0] == "Greater" and ops["z"][1][0] == "z.Times"
    assert sorted(op for op, _ in ops.values() if op in ("Equal", "NotEqual", "Less", "LessEqual",
                                                          "GreaterEqual")) == \
        ["Equal", "GreaterEqual", "Less", "LessEqual", "NotEqual"]
    net = build("x = Input {3}\nz = x > Constant(1)\n")
    out = net.evaluate({"x": torch.tensor([[0.0, 1.0, 2.0]])}, ["z"])["z"]
    assert out.flatten().tolist() == [0.0, 0.0, 1.0]


def test_ordering_records_is_a_located_error():
    with pytest.raises(BrainScriptError, match=r"<brainscript>:3:7: '<' orders numbers or strings, found a record"):
        build_graph("a = {x=1}\nb = {x=2}\nz = a < b\n")


def test_a_builtin_given_an_argument_it_cannot_use_keeps_the_cause():
    with pytest.raises(BrainScriptError) as e:
        build_graph('z = Chr(1e300)\n')
    assert "Chr: an argument it cannot use (OverflowError" in str(e.value) and e.value.line == 1
    assert isinstance(e.value.__cause__, OverflowError)
    # a parameter of the wrong kind is named before the built-in runs
    with pytest.raises(BrainScriptError, match=r"<brainscript>:1:15: outputDim: expected a number, found a string"):
        build_graph('W = Parameter {"x", 3}\n')


def test_an_array_past_the_limit_is_refused_before_it_is_built():
    """``array[1..4e40]`` made a thunk per element (a hang, then the machine's memory)."""
    with pytest.raises(BrainScriptError, match=r"<brainscript>:2:5: array\[1\.\.65537\] would have 65537 elements"):
        build_graph("x = Input {3}\na = array[1..65537] (i => i)\nz = a[1] * x\n")
    build_graph("x = Input {3}\na = array[1..65536] (i => i)\nz = a[65536] * x\n")


def test_a_file_that_is_not_utf8_names_itself(tmp_path):
    p = tmp_path / "net.bs"
    p.write_bytes(b"x = Input {3}\n# caf\xe9\nz = x\n")
    with pytest.raises(BrainScriptError) as e:
        build_graph(str(p))
    assert str(p) in str(e.value) and "not UTF-8 text" in str(e.value)
    assert isinstance(e.value.__cause__, UnicodeDecodeError)
