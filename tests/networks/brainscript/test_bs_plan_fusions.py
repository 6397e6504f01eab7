"""The evaluation plan runs ``Plus(Convolution(W, x), b)`` as one conv2d with its bias and
``Plus(Times(W, x), b)`` as one linear, with the values of the separate nodes."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from cntkio.networks.brainscript import build

NET = ("x = Input{6:5:2}\nc = ConvolutionalLayer{3, (3:3), pad=true}(x)\nd = DenseLayer{4}(c)\n"
       "z = LinearLayer{3}(d)\nlabels = Input{3}\nce = CrossEntropyWithSoftmax(labels, z)\ncriterionNodes = (ce)\n")


def _steps(net, wanted):
    return {step[1]: getattr(step[2], "__name__", "") for step in net._plan(frozenset(["x", "labels"]), wanted)}


def test_convolution_and_bias_run_as_one_conv2d():
    net = build(NET)
    conv = [n for n, node in net.graph.nodes.items() if node.op == "Convolution"][0]
    fused = _steps(net, ("ce",))
    assert conv not in fused and fused["c"] == "biased"
    x = torch.randn(4, 60)
    img = x.reshape(4, 2, 5, 6)
    W, b = net.tensor("c.W").reshape(3, 2, 3, 3), net.tensor("c.b").reshape(-1)
    got = net.evaluate({"x": x}, ["c", "z"])
    torch.testing.assert_close(got["c"], F.conv2d(img, W, b, padding=1))
    # with the convolution's own value asked for, the two nodes run apart and agree
    apart = net.evaluate({"x": x}, [conv, "z"])
    assert conv in _steps(net, (conv, "z"))
    torch.testing.assert_close(apart["c"], got["c"])
    torch.testing.assert_close(apart["z"], got["z"])
    d = F.linear(got["c"].reshape(4, -1), net.tensor("d.W"), net.tensor("d.b").reshape(-1))
    torch.testing.assert_close(got["d"], d)
