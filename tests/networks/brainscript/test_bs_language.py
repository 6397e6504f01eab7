"""BrainScript the language: records, lazy members, scopes, arrays, functions, lambdas, include,
errors naming file, line and column."""
from __future__ import annotations

import pytest

from cntkio.networks.brainscript import BrainScriptError, build_graph
from cntkio.networks.brainscript.builder import evaluate_network


def value(text: str, name: str = "r"):
    ev, rec = evaluate_network(text, file="t.bs")
    v = rec.get(name, ev, None)
    return v.values(ev) if hasattr(v, "values") and not isinstance(v, dict) else v


def test_members_refer_to_each_other_in_any_order():
    assert value("r = a * b + c\nc = 1\na = b - 1\nb = 3") == 7


def test_arithmetic_boolean_string_if():
    assert value("r = 1/4 + 2 * 3 - 7 % 4") == 3.25
    assert value("r = if 2 > 1 && !(3 == 4) then 'yes' + \"!\" else 'no'") == "yes!"
    assert value("r = (if false then 1 else 2) ** 3") == 8


def test_nested_records_dot_access_and_outer_scope():
    text = "k = 10\nrec = { a = 1; inner = { b = a + k } }\nr = rec.inner.b"
    assert value(text) == 11
    text = "rec = [ a = 2 ]\nr = rec.a"          # the deprecated [ ] record
    assert value(text) == 2


def test_arrays_colon_index_and_generators():
    assert value("r = 28:28:1") == [28, 28, 1]
    assert value("a = (1:2:3)\nr = a[2] + Length(a)") == 6
    assert value("r = array[1..4](i => i * i)") == [1, 4, 9, 16]
    assert value("sq[i:0..3] = i + 1\nr = sq[3]") == 4


def test_functions_defaults_named_arguments_lambdas_closures():
    text = "f(x, y=10) = x + y\nr = f(1) * 100 + f(1, y=2)"
    assert value(text) == 1103
    text = "adder{n} = x => x + n\nadd5 = adder{5}\nr = add5(2)"
    assert value(text) == 7
    text = "compose(f, g) = x => g(f(x))\nr = compose(x => x * 2, x => x + 1)(5)"
    assert value(text) == 11
    text = "fact(n) = if n <= 1 then 1 else n * fact(n - 1)\nr = fact(5)"
    assert value(text) == 120


def test_function_returning_a_record():
    assert value("m(x) = { a = x; b = a * 2 }.b\nr = m(4)") == 8


def test_bs_namespaces_resolve_the_library_as_cntk_core_bs_does():
    assert value("r = BS.Constants.False + Max(1, 2)") == 2
    assert value("r = BS.Constants.IsNone(None) && IsSameObject(BS.Constants.None, None)") is True
    assert value("r = Length(_ConcatArrays(Repeat(2, 7), 1:2))") == 4
    assert value("r = IsSameObject(CNTK2.Identity, CNTK2.Pass) && IsSameObject(Less, CNTK2.Less)") is True
    e = _error("r = IsFirst(Input{3})")          # BS.Loop.IsFirst: not a top-level name in CNTK
    assert "undefined name 'IsFirst'" in str(e)


def test_include_is_read_beside_the_including_file(tmp_path):
    (tmp_path / "lib.bs").write_text("Twice(x) = 2 * x\nbase = 20\n")
    (tmp_path / "main.bs").write_text('include "lib.bs"\nr = Twice(base) + 1\n')
    ev, rec = evaluate_network((tmp_path / "main.bs").read_text(), file=str(tmp_path / "main.bs"))
    assert rec.get("r", ev, None) == 41


def _error(text: str) -> BrainScriptError:
    with pytest.raises(BrainScriptError) as e:
        value(text)
    return e.value


def test_undefined_name_names_the_near_one_and_the_place():
    e = _error("labelDim = 10\nr = labelDims + 1")
    assert str(e).startswith("t.bs:2:5: undefined name 'labelDims'")
    assert "labelDim" in e.hint


def test_wrong_argument_counts_and_unknown_parameters():
    e = _error("f(x, y) = x\nr = f(1, 2, 3)")
    assert "f takes 2 positional arguments (x, y), found 3" in str(e) and str(e).startswith("t.bs:2:")
    # optional parameters are passed by name only (CNTK's ConfigLambda), and may stand between positional ones
    e = _error("f(x, y=1) = x + y\nr = f(1, 2)")
    assert "f takes 1 positional arguments (x), found 2" in str(e) and "optional parameters are named: y" in e.hint
    assert value("f(x, y=10, z) = x + y + z\nr = f(1, 2)") == 13
    assert value("f(x, y=10, z) = x + y + z\nr = f(1, y=0, 2)") == 3
    e = _error("f(x, y) = x\nr = f(1)")
    assert "needs its parameter 'y'" in str(e)
    e = _error("r = DenseLayer{10, activaton=ReLU}")
    assert "DenseLayer has no parameter 'activaton'" in str(e) and "activation" in e.hint


def test_cycle_without_delay_and_infinite_recursion():
    e = _error("a = b + 1\nb = a + 1\nr = a")
    assert "refers to itself" in str(e) and "PastValue" in e.hint
    e = _error("f(n) = f(n + 1)\nr = f(0)")
    assert "infinite recursion" in str(e)


def test_missing_include_and_syntax_errors_are_located(tmp_path):
    with pytest.raises(BrainScriptError) as e:
        evaluate_network('include "nope.bs"\n', file=str(tmp_path / "main.bs"))
    assert "include 'nope.bs': the file does not exist" in str(e.value) and ":1:1:" in str(e.value)
    e = _error("r = (1 + \n")
    assert "expected an expression" in str(e) and "t.bs:2:" in str(e)


def test_parameter_whose_shape_cannot_be_inferred():
    with pytest.raises(BrainScriptError) as e:
        build_graph("W = ParameterTensor{(10:0)}\nx = Input{5}\nz = Plus(W, x)\n"
                    "c = SquareError(x, z)\ncriterionNodes = (c)")
    assert "Plus" in str(e.value) or "cannot be inferred" in str(e.value)


def test_dimension_mismatch_names_the_node():
    with pytest.raises(BrainScriptError) as e:
        build_graph("x = Input{5}\ny = Input{3}\nz = x + y\nce = SquareError(y, z)\ncriterionNodes = (ce)",
                    file="n.bs")
    assert "n.bs:3:7" in str(e.value) and "do not match" in str(e.value)


def test_deep_but_finite_recursion_evaluates():
    assert value("count(n) = if n == 0 then 0 else 1 + count(n - 1)\nr = count(250)") == 250


def test_nodes_are_named_by_the_members_that_hold_them():
    g = build_graph("model (features) = {\n  W0 = ParameterTensor {(4:3)} ; b0 = ParameterTensor {4}\n"
                    "  r = ReLU (W0 * features + b0)\n}.r\nfeatures = Input {3}\nz = model (features)\n"
                    "out = { h = z .* 2 }\nlabels = Input {4}\nce = SquareError (labels, out.h)\ncriterionNodes = (ce)")
    names = set(g.nodes)
    assert {"features", "z", "z.W0", "z.b0", "out.h", "ce", "labels"} <= names
    assert g.nodes["z"].op == "RectifiedLinear" and g.nodes["out.h"].op == "ElementTimes"
