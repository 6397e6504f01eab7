"""BrainScript layers and node functions against hand-written PyTorch, and recurrence over
variable-length sequences."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from cntkio.networks.brainscript import build

HEAD = "labels = Input{3}\nce = CrossEntropyWithSoftmax(labels, z)\ncriterionNodes = (ce)\noutputNodes = (z)\n"


def test_dense_and_linear_layers_equal_torch():
    net = build("x = Input{4}\nmodel = Sequential(DenseLayer{5, activation=Tanh} : LinearLayer{3})\n"
                "z = model(x)\n" + HEAD)
    x = torch.randn(7, 4)
    W1, b1 = net.tensor("model.W"), net.tensor("model.b")
    W2, b2 = net.tensor("model.W_2"), net.tensor("model.b_2")
    assert W1.shape == (5, 4) and W2.shape == (3, 5)        # the input dimensions were inferred
    want = torch.tanh(x @ W1.T + b1.reshape(-1)) @ W2.T + b2.reshape(-1)
    torch.testing.assert_close(net(x), want)
    y = F.one_hot(torch.tensor([0, 1, 2, 0, 1, 2, 0]), 3).float()
    ce = net.criterion(net(x), y)
    torch.testing.assert_close(ce, F.cross_entropy(want, y.argmax(1), reduction="sum"))


def test_glorot_uniform_bounds_and_layer_sharing():
    net = build("x = Input{40}\nL = DenseLayer{60}\nh = L(x)\nz0 = L(x * 2)\n"
                "z = LinearLayer{3}(h)\n" + HEAD)
    W = net.tensor("L.W")
    lim = (6 / (40 + 60)) ** 0.5
    assert W.abs().max() <= lim and W.abs().max() > 0.8 * lim
    assert [n for n in net.graph.nodes if net.graph.nodes[n].op == "Parameter"].count("L.W") == 1


def test_convolution_pooling_batchnorm_equal_torch():
    net = build("x = Input{(6:5:2)}\n"          # width 6, height 5, 2 channels
                "c = ConvolutionalLayer{4, (3:3), pad=true, activation=ReLU}(x)\n"
                "p = MaxPoolingLayer{(2:2), stride=(2:2)}(c)\n"
                "bn = BatchNormalizationLayer{spatialRank=2}(p)\n"
                "z = LinearLayer{3}(bn)\n" + HEAD)
    assert net.shapes["x"] == (2, 5, 6) and net.shapes["c"] == (4, 5, 6) and net.shapes["p"] == (4, 2, 3)
    net.eval()
    x = torch.randn(3, 2 * 5 * 6)
    W = net.tensor("c.W").reshape(4, 2, 3, 3)
    b = net.tensor("c.b").reshape(-1)
    img = x.reshape(3, 2, 5, 6)
    c = torch.relu(F.conv2d(img, W, b, padding=1))
    p = F.max_pool2d(c, 2, 2)
    bn = p / (0 + 1e-5) ** 0.5                    # CNTK's running mean and variance start at 0
    want = bn.reshape(3, -1) @ net.tensor("z.W").T + net.tensor("z.b").reshape(-1)
    torch.testing.assert_close(net(x), want, rtol=1e-4, atol=1e-5)


def test_scale_lambda_and_element_times_with_a_number():
    net = build("Scale{f} = x => Constant(f) .* x\nx = Input{3}\nz = Scale{0.5}(x) + x * 2 - x / 4\n" + HEAD)
    x = torch.tensor([[1.0, 2.0, 4.0]])
    torch.testing.assert_close(net(x), x * (0.5 + 2 - 0.25))


def test_recurrence_through_past_value_respects_sequences():
    # s_t = x_t + s_{t-1}: a running sum inside each sequence (the loop closes through PastValue)
    net = build("x = Input{2}\ns = x + PastValue(2, s, defaultHiddenActivation=0)\nz = s\n"
                "labels = Input{2}\nce = SquareError(labels, z)\ncriterionNodes = (ce)\noutputNodes = (z)")
    x = torch.arange(10.0).reshape(5, 2)          # two sequences: 3 and 2 samples, concatenated
    net.set_layout(torch.tensor([0, 1, 2, 0, 1]), torch.tensor([3, 3, 3, 2, 2]))
    want = torch.stack([x[0], x[0] + x[1], x[0] + x[1] + x[2], x[3], x[3] + x[4]])
    torch.testing.assert_close(net(x), want)


def test_top_n_classification_error():
    net = build("x = Input{4}\nz = x\nlabels = Input{4}\nce = SquareError(labels, z)\n"
                "e2 = ClassificationError(labels, z, topN=2)\ncriterionNodes = (ce)\nevaluationNodes = (e2)")
    z = torch.tensor([[0.1, 0.5, 0.3, 0.0], [0.9, 0.0, 0.8, 0.1]])
    y = torch.tensor([[0.0, 0, 1, 0], [0, 1, 0, 0]])
    out = net.evaluate({"x": z, "labels": y}, ["e2"])["e2"]
    assert float(out) == 1.0


def _lstm_reference(seq, W, b, H, n):
    h, c, out = torch.full((n,), 0.1), torch.full((n,), 0.1), []     # CNTK's state before a sequence
    for t in range(seq.shape[0]):
        z = W @ seq[t] + b + H @ h
        i, g, f, o = torch.sigmoid(z[:n]), torch.tanh(z[n:2 * n]), torch.sigmoid(z[2 * n:3 * n]), torch.sigmoid(z[3 * n:])
        c = f * c + i * g
        h = o * torch.tanh(c)
        out.append(h)
    return torch.stack(out)


def test_recurrent_lstm_layer_equals_a_hand_written_lstm_per_sequence():
    net = build("x = Input{5}\nf = RecurrentLSTMLayer{4}(x)\nb = RecurrentLSTMLayer{4, goBackwards=true}(x)\n"
                "z = DenseLayer{3}(Splice(f : b))\n" + HEAD)
    x = torch.randn(5, 5)
    pos, lens = torch.tensor([0, 1, 2, 0, 1]), torch.tensor([3, 3, 3, 2, 2])
    v = net.evaluate({"x": x}, ["f", "b"], positions=pos, lengths=lens)
    for name, flip in (("f", False), ("b", True)):
        W, bias, H = net.tensor(f"{name}.W"), net.tensor(f"{name}.b").reshape(-1), net.tensor(f"{name}.W_2")
        parts = []
        for seq in (x[:3], x[3:]):
            s = seq.flip(0) if flip else seq
            r = _lstm_reference(s, W, bias, H, 4)
            parts.append(r.flip(0) if flip else r)
        torch.testing.assert_close(v[name], torch.cat(parts), rtol=1e-5, atol=1e-6)


def test_layer_normalization_stabilizer_reductions_hardmax():
    net = build("x = Input{6}\nln = LayerNormalizationLayer{}(x)\nst = StabilizerLayer{}(ln)\nhm = Hardmax(x)\n"
                "r = ReduceMax(x) + ReduceMean(x) / 2\nq = x / ReduceSum(x)\nz = DenseLayer{3}(st)\n" + HEAD)
    x = torch.tensor([[1.0, 5.0, 2.0, 0.5, 3.0, 4.0], [2.0, 1.0, 1.0, 1.0, 1.0, 6.0]])
    v = net.evaluate({"x": x}, ["ln", "st", "hm", "r", "q"])
    torch.testing.assert_close(v["ln"], F.layer_norm(x, (6,), eps=0.0))     # no epsilon, as CNTK.core.bs
    torch.testing.assert_close(v["st"], v["ln"])            # the stabilizer starts at 1
    assert v["hm"].tolist() == [[0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1]]
    torch.testing.assert_close(v["r"].reshape(-1), torch.tensor([5 + 15.5 / 12, 6 + 1.0]))
    torch.testing.assert_close(v["q"], x / x.sum(1, keepdim=True))


def test_feature_mvn_layer_uses_statistics_of_the_data():
    net = build("x = Input{2}\nn = FeatureMVNLayer{}(x)\nz = DenseLayer{3}(n)\n" + HEAD)
    data = torch.tensor([[1.0, 10.0], [3.0, 30.0], [5.0, 20.0]])
    net.precompute(lambda: [({"x": data}, None, None)])
    v = net.evaluate({"x": data}, ["n"])["n"]
    torch.testing.assert_close(v, (data - data.mean(0)) / data.std(0, unbiased=False))


def test_element_wise_functions_of_the_reference():
    net = build("x = Input{4}\ny = Input{4}\nc = Clip(-1, 1, x)\nf = Floor(x) + Ceil(x) + Round(x)\n"
                "lp = LogPlus(x, y)\ng = Greater(x, y)\nsel = BS.Boolean.If(Less(x, 0), -x, x)\n"
                "b = BS.Boolean.And(BS.Boolean.Not(g), NotEqual(x, y))\nr = Reciprocal(y)\n"
                "k = BS.Boolean.If(true, 1, 2) + Floor(2.5)\n"
                "z = x\nlabels = Input{4}\nce = SquareError(labels, z)\ncriterionNodes = (ce)")
    x = torch.tensor([[-1.5, 0.2, 2.7, 0.5]])
    y = torch.tensor([[1.0, 0.2, -2.0, 4.0]])
    v = net.evaluate({"x": x, "y": y}, ["c", "f", "lp", "g", "sel", "b", "r"])
    torch.testing.assert_close(v["c"], x.clamp(-1, 1))
    torch.testing.assert_close(v["f"], x.floor() + x.ceil() + x.round())
    torch.testing.assert_close(v["lp"], torch.logaddexp(x, y))
    assert v["g"].tolist() == [[0, 0, 1, 0]] and v["b"].tolist() == [[1, 0, 0, 1]]
    torch.testing.assert_close(v["sel"], x.abs())
    torch.testing.assert_close(v["r"], 1 / y)


def test_generated_array_as_a_shape_and_reshape():
    net = build("d[i:0..1] = 3 + i\nx = Input{d[1]}\nW = ParameterTensor{d, init='fixedValue', initValue=0.5}\n"
                "img = NewReshape(x, (2:2:1))\nz = Times(W, Reshape(img, 4))\nl = Input{3}\nce = SquareError(l, z)\n"
                "criterionNodes = (ce)")
    assert net.shapes["W"] == (3, 4) and net.shapes["img"] == (1, 2, 2)
    x = torch.arange(8.0).reshape(2, 4)
    torch.testing.assert_close(net(x), x.sum(1, keepdim=True).repeat(1, 3) * 0.5)


def test_dim_of_a_node_is_its_inferred_dimension():
    net = build("x = Input{(4:3:2)}\nh = DenseLayer{7}(x)\nH = h.dim\nW2 = Parameter(5, H)\nz = W2 * h\n"
                "k = Constant(x.dim)\nl = Input{5}\nce = SquareError(l, z)\ncriterionNodes = (ce)")
    assert net.shapes["W2"] == (5, 7) and float(net.tensor("k")) == 24.0


def test_padded_pooling_keeps_ceil_of_size_over_stride():
    net = build("x = Input{(5:5:2)}\nm = MaxPoolingLayer{(3:3), stride=(2:2), pad=true}(x)\n"
                "a = AveragePoolingLayer{(3:3), pad=true}(x)\nz = LinearLayer{3}(m)\n" + HEAD)
    assert net.shapes["m"] == (2, 3, 3) and net.shapes["a"] == (2, 5, 5)
    x = torch.randn(2, 50)
    v = net.evaluate({"x": x}, ["m", "a"])
    img = x.reshape(2, 2, 5, 5)
    torch.testing.assert_close(v["m"], F.max_pool2d(img, 3, 2, padding=1))
    torch.testing.assert_close(v["a"], F.avg_pool2d(img, 3, 1, padding=1, count_include_pad=False))
