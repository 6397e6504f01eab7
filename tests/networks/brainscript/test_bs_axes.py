"""Operations on axes other than the first: Splice/Slice with axis=, ReduceSum/Mean/Max/Min/LogSum
over one axis, Reshape of a range of axes, against hand-written torch (a (w:h:c) sample is held as
[c, h, w]: CNTK's axis 1 is the last dimension held)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from cntkio.networks.brainscript import build
from cntkio.networks.brainscript.syntax import BrainScriptError

HEAD = "labels = Input{3}\nce = CrossEntropyWithSoftmax(labels, z)\ncriterionNodes = (ce)\n"


def test_slice_and_splice_on_axes_two_and_three():
    net = build("x = Input{4:3:2}\ny = Input{4:3:2}\n"
                "s2 = Slice(1, 3, x, axis=2)\ns3 = Slice(-1, 0, x, axis=3)\ns1 = Slice(-2, 0, x, axis=1)\n"
                "j2 = Splice(x : y, axis=2)\nj3 = Splice(x : y, axis=3)\nj4 = Splice(x : y, axis=4)\n"
                "z = DenseLayer{3}(s2)\n" + HEAD)
    x, y = torch.randn(5, 24), torch.randn(5, 24)
    v = net.evaluate({"x": x, "y": y}, ["s1", "s2", "s3", "j2", "j3", "j4"])
    X, Y = x.reshape(5, 2, 3, 4), y.reshape(5, 2, 3, 4)           # [c, h, w]
    torch.testing.assert_close(v["s1"], X[:, :, :, 2:])
    torch.testing.assert_close(v["s2"], X[:, :, 1:3, :])
    torch.testing.assert_close(v["s3"], X[:, 1:, :, :])
    torch.testing.assert_close(v["j2"], torch.cat([X, Y], dim=2))
    torch.testing.assert_close(v["j3"], torch.cat([X, Y], dim=1))
    torch.testing.assert_close(v["j4"], torch.stack([X, Y], dim=1))
    assert net.shapes["j2"] == (2, 6, 4) and net.shapes["j4"] == (2, 2, 3, 4)


def test_splice_of_vectors_on_axis_two_stacks_columns_and_slices_back():
    net = build("a = Input{3}\nb = Input{3}\nm = Splice(a : b, axis=2)\nc = Slice(1, 2, m, axis=2)\n"
                "z = DenseLayer{3}(m)\n" + HEAD)
    a, b = torch.randn(4, 3), torch.randn(4, 3)
    v = net.evaluate({"a": a, "b": b}, ["m", "c"])
    torch.testing.assert_close(v["m"], torch.stack([a, b], dim=1))          # (3:2) held [2, 3]
    torch.testing.assert_close(v["c"].reshape(4, 3), b)


@pytest.mark.parametrize("fn, ref", [("ReduceSum", lambda t, d: t.sum(d, keepdim=True)),
                                     ("ReduceMean", lambda t, d: t.mean(d, keepdim=True)),
                                     ("ReduceMax", lambda t, d: t.amax(d, keepdim=True)),
                                     ("ReduceMin", lambda t, d: t.amin(d, keepdim=True)),
                                     ("ReduceLogSum", lambda t, d: t.logsumexp(d, keepdim=True))])
def test_reductions_over_one_axis(fn, ref):
    net = build(f"x = Input{{4:3:2}}\nr1 = {fn}(x, axis=1)\nr2 = {fn}(x, axis=2)\nr3 = {fn}(x, axis=3)\n"
                f"ra = {fn}(x)\nz = DenseLayer{{3}}(r1)\n" + HEAD)
    x = torch.randn(5, 24)
    X = x.reshape(5, 2, 3, 4)
    v = net.evaluate({"x": x}, ["r1", "r2", "r3", "ra"])
    torch.testing.assert_close(v["r1"], ref(X, 3))
    torch.testing.assert_close(v["r2"], ref(X, 2))
    torch.testing.assert_close(v["r3"], ref(X, 1))
    torch.testing.assert_close(v["ra"].reshape(-1), ref(x, 1).reshape(-1))
    assert net.shapes["r2"] == (2, 1, 4)


def test_reshape_of_a_range_of_axes():
    net = build("x = Input{6:5:1}\nr = NewReshape(x, (2:3), beginAxis=1, endAxis=2)\n"
                "q = NewReshape(x, (0:2), beginAxis=1, endAxis=2)\nw = NewReshape(x, (5:3:2))\nf = CNTK2.Reshape(x, 0)\n"
                "z = DenseLayer{3}(r)\n" + HEAD)
    x = torch.randn(4, 30)
    v = net.evaluate({"x": x}, ["r", "q", "w", "f"])
    assert net.shapes["r"] == (1, 5, 3, 2) and net.shapes["q"] == (1, 5, 2, 3) and net.shapes["w"] == (2, 3, 5)
    assert net.shapes["f"] == (30,)
    torch.testing.assert_close(v["r"], x.reshape(4, 1, 5, 3, 2))    # the values keep their order
    torch.testing.assert_close(v["q"], x.reshape(4, 1, 5, 2, 3))
    torch.testing.assert_close(v["f"], x)


@pytest.mark.parametrize("text, what", [
    ("g = Slice(0, 9, x, axis=2)", "outside axis 2"),
    ("g = Splice(x : Input{5:2:1}, axis=2)", "differ on axes other than 2"),
    ("g = NewReshape(x, (7:0), beginAxis=1, endAxis=2)", "do not fill"),
    ("g = Slice(1, 0, x, axis=-1)", "new dynamic axis"),
])
def test_bad_axes_are_located_errors(text, what):
    with pytest.raises(BrainScriptError) as e:
        build("x = Input{6:5:1}\n" + text + "\nz = DenseLayer{3}(g)\n" + HEAD)
    assert what in str(e.value) and ":2:" in str(e.value)


def test_per_axis_padding_of_convolution_and_pooling():
    net = build("x = Input{7:6:2}\nc = ConvolutionalLayer{3, (3:5), pad=(true:false)}(x)\n"
                "d = ConvolutionalLayer{3, (3:3), pad=(false:true:false)}(x)\n"
                "p = MaxPoolingLayer{(3:3), stride=(2:2), pad=(false:true)}(x)\n"
                "a = AveragePoolingLayer{(3:3), pad=(true:false)}(x)\nz = DenseLayer{3}(c)\n" + HEAD)
    x = torch.randn(3, 84)
    img = x.reshape(3, 2, 6, 7)
    v = net.evaluate({"x": x}, ["c", "d", "p", "a"])
    F = torch.nn.functional
    Wc, bc = net.tensor("c.W").reshape(3, 2, 5, 3), net.tensor("c.b").reshape(-1)
    torch.testing.assert_close(v["c"], F.conv2d(img, Wc, bc, padding=(0, 1)))      # width padded only
    Wd, bd = net.tensor("d.W").reshape(3, 2, 3, 3), net.tensor("d.b").reshape(-1)
    torch.testing.assert_close(v["d"], F.conv2d(img, Wd, bd, padding=(1, 0)))      # height padded only
    torch.testing.assert_close(v["p"], F.max_pool2d(img, 3, stride=2, padding=(1, 0)))
    torch.testing.assert_close(v["a"], F.avg_pool2d(img, 3, stride=1, padding=(0, 1), count_include_pad=False))
    assert net.shapes["c"] == (3, 2, 7) and net.shapes["d"] == (3, 6, 5) and net.shapes["p"] == (2, 3, 3)


def test_an_even_filter_padded_as_cntk_centres_it():
    # CNTK's geometry (ConvolveGeometry.h): width 7, filter 4 padded: output 7, one column of padding
    # before and two after; height 6, filter 3 not padded: output 4
    net = build("x = Input{7:6:2}\nc = ConvolutionalLayer{3, (4:3), pad=(true:false), bias=false}(x)\n"
                "z = DenseLayer{3}(c)\n" + HEAD)
    assert net.shapes["c"] == (3, 4, 7)
    x = torch.randn(2, 2 * 6 * 7)
    W = net.tensor("c.W").reshape(3, 2, 3, 4)
    want = F.conv2d(F.pad(x.reshape(2, 2, 6, 7), (1, 2, 0, 0)), W)
    torch.testing.assert_close(net.evaluate({"x": x}, ["c"])["c"], want, rtol=1e-5, atol=1e-6)


