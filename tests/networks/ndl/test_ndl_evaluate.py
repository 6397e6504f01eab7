"""NDL evaluation: the reference's examples build with CNTK's node names and shapes; macros, dot
names, tags and node arrays, forward references through delays; initial values; node values
against plain torch; every bad input a located ConfigError."""
from __future__ import annotations

import pytest
import torch

from cntkio.networks.ndl import NDLError, build, build_graph
from cntkio.errors import ConfigError

# the first example of CNTK's "Network Description Language" page
SIMPLE = """
SDim=784
HDim=256
LDim=10
B0=Parameter(HDim)
W0=Parameter(HDim, SDim)
features=Input(SDim)
labels=Input(LDim)
Times1=Times(W0, features)
Plus1=Plus(Times1, B0)
RL1=RectifiedLinear(Plus1)
B1=Parameter(LDim, 1)
W1=Parameter(LDim, HDim)
Times2=Times(W1, RL1)
Plus2=Plus(Times2, B1)
CrossEntropy=CrossEntropyWithSoftmax(labels, Plus2)
ErrPredict=ErrorPrediction(labels, Plus2)
FeatureNodes=(features)
LabelNodes=(labels)
CriteriaNodes=(CrossEntropy)
EvalNodes=(ErrPredict)
OutputNodes=(Plus2)
"""

# the same network with macros and tags (the reference's "Tagging special values" example)
MACROS = """
RBFF(x, r, c) = [
    B = Parameter(r, init=fixedValue, value=0)
    W = Parameter(r, c)
    z = Plus(Times(W, x), B)
    y = RectifiedLinear(z)
]
SMBFF(x, r, c, labels) = [
    B = Parameter(r, init=fixedValue, value=0)
    W = Parameter(r, c)
    F = Plus(Times(W, x), B)
    CE = CrossEntropyWithSoftmax(labels, F)
]
SDim = 784
HDim = 256
LDim = 10
features = Input(SDim, tag="feature")
labels = Input(LDim, tag="label")
L1 = RBFF(features, HDim, SDim)
L2 = RBFF(L1, HDim, HDim)
L3 = RBFF(L2, HDim, HDim)
CE = SMBFF(L3, LDim, HDim, labels, tag="criterion")
Err = ErrorPrediction(labels, CE.F, tag="eval")
OutputNodes = (CE.F)
"""


def test_the_reference_example_builds_with_its_names_and_shapes():
    net = build(SIMPLE)
    g = net.graph
    assert list(g.nodes) == ["B0", "W0", "features", "labels", "Times1", "Plus1", "RL1", "B1", "W1", "Times2",
                             "Plus2", "CrossEntropy", "ErrPredict"]
    assert g.groups == {"feature": ["features"], "label": ["labels"], "criterion": ["CrossEntropy"],
                        "eval": ["ErrPredict"], "output": ["Plus2"]}
    assert net.shapes["W0"] == (256, 784) and net.shapes["B0"] == (256, 1) and net.shapes["Plus2"] == (10,)
    assert dict((k, tuple(v.shape)) for k, v in net.named_parameters()) == {
        "B0": (256, 1), "W0": (256, 784), "B1": (10, 1), "W1": (10, 256)}
    x, y = torch.rand(7, 784), torch.eye(10)[torch.arange(7)]
    out = net.evaluate({"features": x, "labels": y}, ["Plus2", "CrossEntropy", "ErrPredict"])
    h = torch.relu(x @ net.W0.T + net.B0.T)
    z = h @ net.W1.T + net.B1.T
    assert torch.allclose(out["Plus2"], z, atol=1e-6)
    assert torch.allclose(out["CrossEntropy"].reshape(()), -(y * torch.log_softmax(z, -1)).sum(), atol=1e-5)
    assert out["ErrPredict"].item() == (z.argmax(1) != y.argmax(1)).sum().item()


def test_macros_dot_names_and_tags():
    net = build(MACROS)
    names = list(net.graph.nodes)
    assert names[:7] == ["features", "labels", "L1.B", "L1.W", "L1.z", "L1.z.Times", "L1.y"]
    assert "CE.F" in names and "CE.CE" in names
    assert net.graph.groups["criterion"] == ["CE.CE"]       # tag= on a macro call tags its value
    assert net.graph.groups["eval"] == ["Err"] and net.graph.groups["output"] == ["CE.F"]
    assert net.spec.training_criterion == "CE.CE" and net.eval_node_name == "Err"
    # parameters live at their dot paths (nested modules)
    assert sorted(k for k, _ in net.named_parameters()) == sorted(
        f"{p}.{w}" for p in ("L1", "L2", "L3", "CE") for w in ("B", "W"))
    assert torch.count_nonzero(net.get_parameter("L2.B")) == 0


def test_names_are_case_insensitive_and_one_line_macros_work():
    net = build("rff(x1, w1, b1)=RectifiedLinear(Plus(Times(w1,x1),b1))\nsdim=4\n"
                "F = Input(SDIM, tag=feature)\nW = Parameter(3, SDim)\nb = Parameter(3)\nh = RFF(f, w, B)")
    assert net.graph.nodes["h"].op == "RectifiedLinear" and net.graph.nodes["h"].inputs == ["h.Plus"]
    assert net.graph.nodes["h.Plus"].inputs == ["h.Plus.Times", "b"]


def test_forward_reference_through_pastvalue_builds_a_recurrent_loop():
    net = build("""
    x = Input(2, tag=feature)
    hPrev = PastValue(3, h, timeStep=1, defaultHiddenActivity=0.5)   # h is defined below
    W = Parameter(3, 2); U = Parameter(3, 3)
    h = Tanh(Plus(Times(W, x), Times(U, hPrev)))
    """)
    assert net.graph.nodes["hPrev"].inputs == ["h"]
    assert len(net.loops) == 1 and sorted(net.loops[0])[0] == "h"
    # two sequences of lengths 3 and 2, concatenated
    x = torch.randn(5, 2)
    pos = torch.tensor([0, 1, 2, 0, 1])
    lens = torch.tensor([3, 3, 3, 2, 2])
    got = net.evaluate({"x": x}, ["h"], positions=pos, lengths=lens)["h"]
    W, U = net.W, net.U
    want = []
    for seq in (x[:3], x[3:]):
        h = torch.full((3,), 0.5)
        for t in range(seq.shape[0]):
            h = torch.tanh(W @ seq[t] + U @ h)
            want.append(h)
    assert torch.allclose(got, torch.stack(want), atol=1e-6)


def test_future_value_and_a_delay_outside_a_loop():
    net = build("x = Input(1)\nf = FutureValue(1, x, timeStep=1, defaultHiddenActivity=-1)\n"
                "p = PastValue(1, x, timeStep=2, defaultHiddenActivity=9)")
    x = torch.arange(1.0, 6.0).reshape(5, 1)
    out = net.evaluate({"x": x}, ["f", "p"], positions=torch.tensor([0, 1, 2, 0, 1]),
                       lengths=torch.tensor([3, 3, 3, 2, 2]))
    assert out["f"].reshape(-1).tolist() == [2, 3, -1, 5, -1]
    assert out["p"].reshape(-1).tolist() == [9, 9, 1, 9, 9]


def test_initial_values(tmp_path):
    (tmp_path / "w.txt").write_text("1 2 3\n4 5 6\n")
    net = build(f"""
    a = Parameter(2, 3, init=fromFile, initFromFilePath="{tmp_path / 'w.txt'}")
    b = Parameter(2, 3, init=fixedValue, value=0.25)
    c = Parameter(2, init=zero)
    u = Parameter(100, 50, init=uniform, initValueScale=2)
    g = Parameter(100, 50, init=gaussian, initValueScale=1)
    k = Constant(3, rows=2, cols=2)
    """)
    assert net.a.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert torch.all(net.b == 0.25) and torch.all(net.c == 0)
    assert net.u.abs().max() <= 0.1 and net.u.abs().max() > 0.09         # ±0.05·initValueScale
    assert abs(net.g.std().item() - 0.2 / 50 ** 0.5) < 0.003              # 0.2·scale/sqrt(cols)
    assert torch.all(net.k == 3) and not any(n == "k" for n, _ in net.named_parameters())
    again = build("u = Parameter(100, 50, init=uniform, initValueScale=2)")
    assert not torch.equal(again.u, net.u)                                  # seeds follow the order ...
    first = build("u0 = Parameter(100, 50, init=uniform, initValueScale=2)")
    assert torch.equal(first.u0, build("u0 = Parameter(100, 50, init=uniform, initValueScale=2)").u0)  # ... fixed


def test_conv_pool_and_batchnorm_match_torch():
    net = build("""
    img = ImageInput(8, 6, 2, imageLayout="cudnn", tag=feature)
    W = Parameter(4, 18)
    c = Convolution(W, img, 3, 3, 4, 1, 1, zeroPadding=true)
    p = MaxPooling(c, 2, 2, 2, 2)
    a = AveragePooling(c, 2, 3, 2, 3)
    sc = Parameter(4, 1, init=fixedValue, value=1); bi = Parameter(4, 1, init=zero)
    m = Parameter(4, 1, init=zero, needGradient=false); v = Parameter(4, 1, init=fixedValue, value=1, needGradient=false)
    bn = BatchNormalization(p, sc, bi, m, v, spatial=true, normalizationTimeConstant=0)
    """)
    assert net.shapes["c"] == (4, 6, 8) and net.shapes["p"] == (4, 3, 4) and net.shapes["a"] == (4, 2, 4)
    x = torch.randn(3, 2 * 6 * 8)
    out = net.evaluate({"img": x}, ["p", "a"])
    c = torch.nn.functional.conv2d(x.reshape(3, 2, 6, 8), net.W.reshape(4, 2, 3, 3), padding=1)
    assert torch.allclose(out["p"], torch.nn.functional.max_pool2d(c, 2), atol=1e-6)
    assert torch.allclose(out["a"], torch.nn.functional.avg_pool2d(c, (3, 2), stride=(3, 2)), atol=1e-6)
    net.eval()                  # the running statistics: mean 0, variance 1
    out = net.evaluate({"img": x}, ["p", "bn"])
    assert torch.allclose(out["bn"], out["p"] / (1 + 1e-5) ** 0.5, atol=1e-5)
    net.train()                 # batch statistics, and (time constant 0) running ones = this batch's
    out = net.evaluate({"img": x}, ["p", "bn"])
    want = torch.nn.functional.batch_norm(out["p"].detach(), None, None, training=True, eps=1e-5)
    assert torch.allclose(out["bn"], want, atol=1e-5)
    assert torch.allclose(net.m.reshape(-1), out["p"].detach().mean((0, 2, 3)), atol=1e-6)
    assert not net.m.requires_grad and net.W.requires_grad


def _err(text, **kw):
    with pytest.raises(ConfigError) as info:
        build(text, **kw)
    return info.value


@pytest.mark.parametrize("text, line, col, message", [
    ("x = Input(4)\ny = Sigmoidd(x)", 2, 5, "unknown function 'Sigmoidd'.*did you mean Sigmoid"),
    ("x = Input(4)\ny = Plus(x, z)", 2, 13, "undefined symbol 'z'"),
    ("x = Input(4)\ny = Plus(x)", 2, 5, "Plus takes 2 positional arguments"),
    ("M(a, b) = Plus(a, b)\nx = Input(4)\ny = M(x)", 3, 5, "macro M takes 2 arguments"),
    ("x = Input(4)\nW = Parameter(3, 5)\ny = Times(W, x)", 3, 5, r"the matrix is \[3, 5\] but its input has 4 rows"),
    ("x = Input(4)\na = Plus(x, b)\nb = Tanh(a)", 3, 10, "a depends on itself without a delay node"),
    ("x = Input(4)\nx = Input(5)", 2, 1, "defined twice"),
    ("x = Input(4, tag=featur)", 1, 5, "unknown tag 'featur'"),
    ("M(a) = Exp(a)\nM(b) = Log(b)", 2, 1, "function already exists"),
    ("x = Input(4)\ny = x.W", 2, 5, "x is not a macro instance"),
])
def test_bad_input_is_a_located_config_error(text, line, col, message):
    e = _err(text)
    assert e.line == line and e.column == col, str(e)
    assert e.file == "<string>"
    import re
    assert re.search(message, str(e)), str(e)


def test_an_optional_parameter_a_function_does_not_read_is_ignored_with_a_warning(caplog):
    # CNTK's NDL reads the optional parameters a function knows by name and ignores the others
    # (CNTK's SLU lstm.ndl: LookupTable(Wlookup, features, init="uniform", initValueScale=6))
    net = build("x = Input(4)\nE = Parameter(4, 2)\ny = LookupTable(E, x, init=\"uniform\", initValueScale=6)\n"
                "z = Sigmoid(x, bogus=1)")
    plain = build("x = Input(4)\nE = Parameter(4, 2)\ny = LookupTable(E, x)")
    assert net.shapes["y"] == plain.shapes["y"] and net.shapes["z"] == (4,)
    said = [r.getMessage() for r in caplog.records]
    assert any("3:23: LookupTable has no optional parameter 'init'; ignored" in m for m in said)
    assert any("Sigmoid has no optional parameter 'bogus'" in m for m in said)


def test_cycles_without_delay_in_the_graph_are_named():
    # a cycle closed through dot names is found when the graph is validated
    e = _err("x = Input(2)\nA(i) = [ y = Plus(i, i) ]\na = A(x)\nb = Plus(a.y, c)\nc = Tanh(b)")
    assert "cycle" in str(e)


def test_macro_files_load_once(tmp_path):
    f = tmp_path / "m.ndl"
    f.write_text("defs = [\n  Sq(x) = ElementTimes(x, x)\n]\n")
    g = build_graph("x = Input(3)\ny = Sq(x)", macros=[str(f)])
    assert g.nodes["y"].op == "ElementTimes"
    with pytest.raises(NDLError, match="function already exists: macro Sq is already defined at .*m.ndl:2"):
        build_graph("x = Input(3)", macros=[str(f), str(f)])
    with pytest.raises(ConfigError, match="ndlMacros file .*missing.ndl does not exist"):
        build_graph("x = Input(3)", macros=[str(tmp_path / "missing.ndl")])


def test_priors_and_scaled_log_likelihood_are_precomputed():
    net = build("""
    features = Input(3, tag=feature)
    labels = Input(4, tag=label)
    W = Parameter(4, 3)
    z = Times(W, features)
    Prior = Mean(labels)
    LogPrior = Log(Prior)
    ScaledLogLikelihood = Minus(LogSoftmax(z), LogPrior, tag=output)
    fMean = Mean(features)
    fStd = InvStdDev(features)
    """)
    assert net.pending_precompute() == ["Prior", "fMean", "fStd"]
    x = torch.randn(10, 3)
    y = torch.eye(4)[torch.tensor([0, 0, 1, 2, 3, 3, 3, 3, 1, 0])]
    n = net.precompute(lambda: iter([({"features": x[:6], "labels": y[:6]}, None, None),
                                     ({"features": x[6:], "labels": y[6:]}, None, None)]))
    assert n == 10 and net.pending_precompute() == []
    assert torch.allclose(net.Prior, torch.tensor([0.3, 0.2, 0.1, 0.4]))
    assert torch.allclose(net.fMean, x.mean(0), atol=1e-6)
    assert torch.allclose(net.fStd, 1 / x.double().var(0, unbiased=False).sqrt().float(), atol=1e-4)
    out = net.evaluate({"features": x}, ["ScaledLogLikelihood"])["ScaledLogLikelihood"]
    assert torch.allclose(out, torch.log_softmax(x @ net.W.T, -1) - torch.log(net.Prior), atol=1e-5)
    # what the write action computes without labels: the output, not what reads the labels
    assert "ScaledLogLikelihood" in net.nodes(x) and "labels" not in net.nodes(x)


def test_learning_rate_multiplier_and_need_gradient():
    net = build("x = Input(2)\nA = Parameter(1, 2, learningRateMultiplier=0.5)\nB = Parameter(1, 2)\n"
                "C = Parameter(1, 2, needGradient=false)\nD = Parameter(1, 2, learningRateMultiplier=0)\n"
                "v = SumElements(Plus(Plus(Times(A, x), Times(B, x)), Plus(Times(C, x), Times(D, x))))")
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    net.evaluate({"x": x}, ["v"])["v"].sum().backward()
    assert net.B.grad.tolist() == [[4.0, 6.0]] and net.A.grad.tolist() == [[2.0, 3.0]]
    assert not net.C.requires_grad and not net.D.requires_grad


def test_sections_of_a_file_see_its_top_level_variables(tmp_path):
    f = tmp_path / "net.ndl"
    f.write_text("run = main\nSDim = 5\nunused = Input(9)\nmain = [\n  x = Input(SDim)\n  y = Tanh(x)\n]\n")
    net = build(str(f))
    assert net.shapes["x"] == (5,) and "unused" not in net.graph.nodes


@pytest.mark.parametrize("text, message", [
    ("W = Parameter(2, learningRateMultiplier=abc)", "learningRateMultiplier: expected a floating-point number"),
    ("W = Parameter(2, needGradient=maybe)", "needGradient: expected a boolean"),
    ("W = Parameter(2.5)", r"node W \(Parameter\): expected an integer, found 2.5"),
    ("x = Input(3)\nW = RowSlice(x, 1, 2)", r"argument 1 \(startIndex\) must be a number \(or a list of numbers\), found node x"),
    ("W = Parameter(2, init=bogus)", "init: expected one of uniform, uniform1, gaussian, normal, xavier"),
])
def test_bad_optional_values(text, message):
    import re
    e = _err(text)
    assert re.search(message, str(e)) and e.column is not None, str(e)
