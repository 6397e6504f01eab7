"""The node library against plain torch: every NDL function's value for concrete inputs."""
from __future__ import annotations

import pytest
import torch

from cntkio.networks.ndl import build
from cntkio.networks.nodes import lookup, op_names

torch.manual_seed(0)
X = torch.randn(5, 6)
Y = torch.randn(5, 6)
P = torch.softmax(torch.randn(5, 6), -1)
L = torch.eye(6)[torch.tensor([0, 3, 1, 5, 3])]


def _value(expr: str, **extra):
    net = build("x = Input(6)\ny = Input(6)\nv = " + expr + "\n" + "\n".join(f"{k} = {e}" for k, e in extra.items()))
    net.eval()
    return net, net.evaluate({"x": X, "y": Y}, ["v"])["v"]


@pytest.mark.parametrize("fn, ref", [
    ("Negate", torch.neg), ("Abs", torch.abs), ("Exp", torch.exp), ("Cos", torch.cos), ("Sigmoid", torch.sigmoid),
    ("Tanh", torch.tanh), ("RectifiedLinear", torch.relu), ("Softmax", lambda t: torch.softmax(t, -1)),
    ("LogSoftmax", lambda t: torch.log_softmax(t, -1)), ("Dropout", lambda t: t),
    ("SumColumnElements", lambda t: t.sum(1, keepdim=True)),
])
def test_unary(fn, ref):
    assert torch.allclose(_value(f"{fn}(x)")[1], ref(X), atol=1e-6)


def test_log_of_positive_values():
    net = build("x = Input(6)\nv = Log(Exp(x))")
    assert torch.allclose(net.evaluate({"x": X}, ["v"])["v"], X, atol=1e-5)


@pytest.mark.parametrize("fn, ref", [("Plus", torch.add), ("Minus", torch.sub), ("ElementTimes", torch.mul)])
def test_binary(fn, ref):
    assert torch.allclose(_value(f"{fn}(x, y)")[1], ref(X, Y))


def test_matrix_nodes():
    net, v = _value("TransposeTimes(W, x)", W="Parameter(6, 3)")
    assert torch.allclose(v, X @ net.W, atol=1e-6)
    net, v = _value("DiagTimes(d, x)", d="Parameter(6, 1)")
    assert torch.allclose(v, X * net.d.reshape(-1))
    net, v = _value("Scale(s, x)", s="Parameter(1, 1)")
    assert torch.allclose(v, X * net.s.item())
    net, v = _value("Scale(0.5, x)")                   # a number becomes a Constant node
    assert torch.allclose(v, X * 0.5) and net.graph.nodes["v.Constant"].op == "Constant"
    net, v = _value("Times(Transpose(W), Times(W, x))", W="Parameter(4, 6)")
    assert torch.allclose(v, X @ net.W.T @ net.W, atol=1e-5)
    assert net.shapes["v.Transpose"] == (6, 4)


def test_row_nodes():
    assert torch.equal(_value("RowSlice(2, 3, x)")[1], X[:, 2:5])
    assert torch.equal(_value("RowStack(x, y, x)")[1], torch.cat([X, Y, X], 1))
    assert torch.equal(_value("RowRepeat(x, 2)")[1], torch.cat([X, X], 1))
    net, v = _value("Reshape(x, 6, imageWidth=3, imageHeight=2, imageChannels=1)")
    assert net.shapes["v"] == (1, 2, 3) and torch.equal(v.reshape(5, 6), X)
    net, v = _value("SumElements(x)")
    assert net.shapes["v"] == (1, 1) and torch.allclose(v.reshape(()), X.sum())


def test_normalisation_nodes():
    net, v = _value("PerDimMeanVarDeNormalization(PerDimMeanVarNormalization(x, m, s), m, s)",
                    m="Parameter(6, init=uniform)", s="Parameter(6, init=fixedValue, value=2)")
    assert torch.allclose(v, X, atol=1e-6)


@pytest.mark.parametrize("expr, ref", [
    ("SquareError(x, y)", lambda: ((X - Y) ** 2).sum()),
    ("CrossEntropy(l, p)", lambda: -(L * torch.log(P)).sum()),
    ("CrossEntropyWithSoftmax(l, x)", lambda: -(L * torch.log_softmax(X, -1)).sum()),
    ("ClassificationError(l, x)", lambda: (X.argmax(1) != L.argmax(1)).sum().float()),
    ("Logistic(l, p)", lambda: -(L * torch.log(P) + (1 - L) * torch.log(1 - P)).sum()),
    ("MatrixL1Reg(x)", lambda: X.abs().sum()),
    ("MatrixL2Reg(x)", lambda: X.norm()),
])
def test_criteria_sum_over_the_samples(expr, ref):
    net = build("x = Input(6)\ny = Input(6)\nl = Input(6)\np = Input(6)\nv = " + expr)
    got = net.evaluate({"x": X, "y": Y, "l": L, "p": P}, ["v"])["v"]
    assert got.shape == (1, 1) and torch.allclose(got.reshape(()), ref(), atol=1e-5)


def test_cos_distance_per_sample():
    v = _value("CosDistance(x, y)")[1]
    assert v.shape == (5, 1) and torch.allclose(v[:, 0], torch.nn.functional.cosine_similarity(X, Y), atol=1e-6)


def test_dropout_drops_while_training_only():
    net = build("x = Input(1000)\nv = Dropout(x, dropoutRate=0.5)")
    ones = torch.ones(4, 1000)
    net.train()
    v = net.evaluate({"x": ones}, ["v"])["v"]
    assert set(v.unique().tolist()) == {0.0, 2.0} and 0.4 < (v == 0).float().mean() < 0.6
    net.eval()
    assert torch.equal(net.evaluate({"x": ones}, ["v"])["v"], ones)


def test_the_library_names_cntks_functions():
    for name in ("Input", "InputValue", "SparseInput", "ImageInput", "Parameter", "LearnableParameter", "Constant",
                 "Times", "TransposeTimes", "Plus", "Minus", "Scale", "ElementTimes", "DiagTimes", "Negate", "Abs",
                 "Exp", "Log", "Cos", "Sigmoid", "Tanh", "RectifiedLinear", "Softmax", "LogSoftmax", "Dropout",
                 "Reshape", "RowSlice", "RowStack", "RowRepeat", "Transpose", "SumElements", "Mean", "InvStdDev",
                 "PerDimMeanVarNormalization", "PerDimMVNorm", "PerDimMeanVarDeNormalization", "Convolution",
                 "MaxPooling", "AveragePooling", "BatchNormalization", "PastValue", "FutureValue", "Delay",
                 "SquareError", "CrossEntropy", "CrossEntropyWithSoftmax", "CEWithSM", "ClassificationError",
                 "ErrorPrediction", "CosDistance", "Logistic", "MatrixL1Reg", "MatrixL2Reg"):
        assert lookup(name) is not None and lookup(name.lower()) is lookup(name), name
    assert len(op_names()) >= 55


def test_image_input_layouts():
    x = torch.arange(12.0).reshape(1, 12)
    hwc = build('img = ImageInput(3, 2, 2, imageLayout="HWC")').evaluate({"img": x}, ["img"])["img"]
    chw = build('img = ImageInput(3, 2, 2)').evaluate({"img": x}, ["img"])["img"]
    assert hwc.shape == chw.shape == (1, 2, 2, 3)
    assert hwc[0, 0].tolist() == [[0, 2, 4], [6, 8, 10]] and hwc[0, 1].tolist() == [[1, 3, 5], [7, 9, 11]]
    assert chw[0, 0].tolist() == [[0, 1, 2], [3, 4, 5]]


def test_lookup_table_hardmax_reciprocal_divide():
    net = build("w = Input(8)\nE = Parameter(3, 4)\nv = LookupTable(E, w)")
    ids = torch.tensor([[1, 3], [0, 0]])
    w = torch.nn.functional.one_hot(ids, 4).float().reshape(2, 8)       # two words per sample
    got = net.evaluate({"w": w}, ["v"])["v"]
    assert net.shapes["v"] == (6,) and torch.allclose(got, net.E.T[ids].reshape(2, 6))
    assert torch.equal(_value("Hardmax(x)")[1], torch.nn.functional.one_hot(X.argmax(1), 6).float())
    assert torch.allclose(_value("Reciprocal(x)")[1], 1 / X)
    assert torch.allclose(_value("ElementDivide(x, y)")[1], X / Y)


def test_sgd_sets_the_dropout_rate():
    net = build("x = Input(1000)\nv = Dropout(x, dropoutRate=0.5)\nw = Dropout(v)")
    assert net.set_dropout_rate(0.0) == 2
    net.train()
    ones = torch.ones(4, 1000)
    assert torch.equal(net.evaluate({"x": ones}, ["w"])["w"], ones)
    net.set_dropout_rate(0.75)
    assert set(net.evaluate({"x": ones}, ["v"])["v"].unique().tolist()) == {0.0, 4.0}
