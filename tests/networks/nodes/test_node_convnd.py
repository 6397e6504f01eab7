"""CNTK's N-dimensional convolution geometry (Source/Math/ConvolveGeometry.h: output sizes,
auto-padding split before/after, explicit lower/upper pads, strides, dilation) and the
convolution, transposed convolution, pooling and max-unpooling computed with it, against torch
written by hand; in NDL's forms (``{kW, kH, inMap}`` arrays, MNIST's Macros.ndl) and BrainScript's
layers."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from cntkio.networks.brainscript import build as bs_build
from cntkio.networks.ndl import NDLError, build as ndl_build
from cntkio.networks.nodes.base import NodeError
from cntkio.networks.nodes.convnd import geometry

HEAD = "labels = Input{3}\nce = CrossEntropyWithSoftmax(labels, z)\ncriterionNodes = (ce)\n"


@pytest.mark.parametrize("size, k, s, out, lo, hi", [
    (32, 3, 1, 32, 1, 1),      # odd kernel: centred
    (32, 3, 2, 16, 1, 0),      # stride 2: the last cell needs no padding after
    (8, 4, 1, 8, 1, 2),        # even kernel: one before, two after
    (7, 2, 3, 3, 0, 1),
    (7, 1, 4, 2, -1, -1),      # a 1x1 kernel with a large stride: centred by cropping
])
def test_auto_padding_as_cntk_centres_the_kernel(size, k, s, out, lo, hi):
    g = geometry("t", (1, size, size), [k, k], s, True)
    assert g.out == (out, out) and g.lo == (lo, lo) and g.hi == (hi, hi)


def test_explicit_pads_must_fill_the_axis_and_kernels_must_fit():
    g = geometry("t", (2, 6, 6), [3, 3, 2], [1, 1, 2], [True, False, False], 0, 0)
    assert g.out == (4, 6) and g.channels == 2      # (height, width): the width padded
    g = geometry("t", (1, 5, 5), [3, 3], 2, False, 1, 1)
    assert g.out == (3, 3) and g.lo == (1, 1)
    with pytest.raises(NodeError, match="must fill the whole padded axis"):
        geometry("t", (1, 6, 6), [3, 3], 2, False, 1, 1)
    with pytest.raises(NodeError, match="does not fit"):
        geometry("t", (1, 2, 2), [3, 3], 1, False)
    with pytest.raises(NodeError, match="spanning all channels"):
        geometry("t", (4, 6, 6), [3, 3, 2], 1, True)


MNIST_MACROS = """
ConvND(w, inp, kW, kH, inMap, outMap, hStride, vStride) = [
    c = Convolution(w, inp, {kW, kH, inMap}, mapCount=outMap, stride={hStride, vStride, inMap}, sharing={true, true, true},
                    autoPadding={true, true, false}, lowerPad=0, upperPad=0, imageLayout=$imageLayout$)
]
MaxNDPooling(inp, kW, kH, hStride, vStride) = [
    p = Pooling(inp, "max", {kW, kH, 1}, stride={hStride, vStride, 1}, autoPadding={true, true, false}, lowerPad=0,
                upperPad=0, imageLayout=$imageLayout$)
]
MaxUnpool(inp, poolInp, kW, kH, hStride, vStride) = [
    up = MaxUnpooling(inp, poolInp, {kW, kH, 1}, stride={hStride, vStride, 1}, autoPadding={false, false, false},
                      lowerPad=0, upperPad=0, imageLayout=$imageLayout$)
]
DeConv(w, inp, kW, kH, inMap, outMap, hStride, vStride, lpad, upad) = [
    c = Convolution(w, inp, {kW, kH, inMap}, mapCount=outMap, stride={hStride, vStride, inMap}, sharing={true, true, true},
                    autoPadding=false, lowerPad={lpad, lpad, 0}, upperPad={upad, upad, 0}, transpose=1, imageLayout=$imageLayout$)
]
"""


def test_ndl_arrays_for_convolution_pooling_unpooling_and_deconvolution(tmp_path):
    (tmp_path / "macros.ndl").write_text(MNIST_MACROS)
    net = ndl_build("""x = ImageInput(6, 6, 2, imageLayout=$imageLayout$)
w = Parameter(4, 18)
c = ConvND(w, x, 3, 3, 2, 4, 1, 1)
b = ImageParameter(1, 1, 4, init=fixedValue, value=0.5, imageLayout=$imageLayout$)
r = RectifiedLinear(Plus(c.c, b))
p = MaxNDPooling(r, 2, 2, 2, 2)
u = MaxUnpool(p.p, r, 2, 2, 2, 2)
wd = Parameter(4, 18)
d = DeConv(wd, u.up, 3, 3, 2, 4, 1, 1, 1, 1)
""", macros=[str(tmp_path / "macros.ndl")], variables={"imageLayout": "cudnn"})
    assert net.shapes["c.c"] == (4, 6, 6) and net.shapes["b"] == (4, 1) and net.shapes["p.p"] == (4, 3, 3)
    assert net.shapes["u.up"] == (4, 6, 6) and net.shapes["d.c"] == (2, 6, 6)
    x = torch.randn(2, 2 * 36)
    v = net.evaluate({"x": x}, ["r", "p.p", "u.up", "d.c"])
    img = x.reshape(2, 2, 6, 6)
    W = net.tensor("w").reshape(4, 2, 3, 3)
    r = torch.relu(F.conv2d(img, W, padding=1) + 0.5)
    torch.testing.assert_close(v["r"], r)
    pooled, idx = F.max_pool2d(r, 2, 2, return_indices=True)
    torch.testing.assert_close(v["p.p"], pooled)
    up = F.max_unpool2d(pooled, idx, 2, 2, output_size=(6, 6))
    torch.testing.assert_close(v["u.up"], up)
    torch.testing.assert_close(v["d.c"], F.conv_transpose2d(up, net.tensor("wd").reshape(4, 2, 3, 3), padding=1),
                               rtol=1e-5, atol=1e-5)


def test_ndl_legacy_and_nd_forms_are_told_apart_and_checked():
    with pytest.raises(NDLError, match="3 positional arguments .* or 7"):
        ndl_build("x = ImageInput(4, 4, 1)\nw = Parameter(2, 9)\nc = Convolution(w, x, 3, 3)\n")
    with pytest.raises(NDLError, match=r"mapCount \(the number of output maps\) must be > 0"):
        ndl_build("x = ImageInput(4, 4, 1)\nw = Parameter(2, 9)\nc = Convolution(w, x, {3, 3, 1})\n")


def test_brainscript_deconvolution_example_layers():
    # Examples/Image/GettingStarted/07_Deconvolution_BS.cntk's network, on 8x8 images
    net = bs_build("""x = Input{8:8:1}
conv1 = ConvolutionalLayer {3, (5:5), pad=true, activation=ReLU}(x)
pool1 = MaxPoolingLayer {(4:4), stride=(4:4)}(conv1)
unpool1 = MaxUnpoolingLayer {(4:4), stride=(4:4)}(pool1, conv1)
deconv1 = ConvolutionTransposeLayer {1, (5:5), 3, pad=true, bias=false}(unpool1)
up = BilinearUpsamplingLayer {1, 4, 2}(deconv1)
err = SquareError(x, deconv1)
criterionNodes = (err)
""")
    assert net.shapes["conv1"] == (3, 8, 8) and net.shapes["pool1"] == (3, 2, 2)
    assert net.shapes["unpool1"] == (3, 8, 8) and net.shapes["deconv1"] == (1, 8, 8)
    x = torch.randn(2, 64)
    v = net.evaluate({"x": x}, ["conv1", "unpool1", "deconv1", "up"])
    c = F.relu(F.conv2d(x.reshape(2, 1, 8, 8), net.tensor("conv1.W").reshape(3, 1, 5, 5), padding=2)
               + net.tensor("conv1.b").reshape(1, 3, 1, 1))
    torch.testing.assert_close(v["conv1"], c, rtol=1e-5, atol=1e-6)
    p, idx = F.max_pool2d(c, 4, 4, return_indices=True)
    torch.testing.assert_close(v["unpool1"], F.max_unpool2d(p, idx, 4, 4, output_size=(8, 8)))
    d = F.conv_transpose2d(v["unpool1"], net.tensor("deconv1.W").reshape(3, 1, 5, 5), padding=2)
    torch.testing.assert_close(v["deconv1"], d, rtol=1e-5, atol=1e-5)
    # bilinear upsampling by 2 with a 4x4 kernel: CNTK's geometry without padding, (8-1)·2 + 4 = 18
    assert v["up"].shape == (2, 1, 18, 18)
    k = torch.tensor([0.25, 0.75, 0.75, 0.25])
    torch.testing.assert_close(v["up"], F.conv_transpose2d(d, (k[:, None] * k[None, :]).reshape(1, 1, 4, 4),
                                                           stride=2), rtol=1e-5, atol=1e-5)


def test_raw_convolution_and_pooling_of_the_core_library():
    # Tests/EndToEndTests/Image/QuickE2E's convolution (kernel over all channels, no padding) and
    # Pooling with an even window padded as CNTK centres it, averages not counting the padding
    net = bs_build("""x = Input{7:6:2}
W = Parameter(4, 18)
c = Convolution(W, x, (3:3:2), mapDims=4, stride=(1:1:2), autoPadding=false, imageLayout="cudnn")
p = Pooling(c, "average", (2:2), stride=1)
m = MaxPooling(c, 2, 2, 2, 2)
z = Times(Parameter(3, 0), p)
""" + HEAD)
    assert net.shapes["c"] == (4, 4, 5) and net.shapes["p"] == (4, 4, 5) and net.shapes["m"] == (4, 2, 2)
    x = torch.randn(2, 84)
    v = net.evaluate({"x": x}, ["c", "p", "m"])
    c = F.conv2d(x.reshape(2, 2, 6, 7), net.tensor("W").reshape(4, 2, 3, 3))
    torch.testing.assert_close(v["c"], c, rtol=1e-5, atol=1e-6)
    padded = F.pad(c, (0, 1, 0, 1))                     # kernel 2: nothing before, one after
    count = F.avg_pool2d(F.pad(torch.ones(1, 1, 4, 5), (0, 1, 0, 1)), 2, 1) * 4
    torch.testing.assert_close(v["p"], F.avg_pool2d(padded, 2, 1) * 4 / count, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(v["m"], F.max_pool2d(c, 2, 2))


def test_a_convolution_without_sharing_has_a_kernel_per_position():
    # Tests/EndToEndTests/Examples/Image/Deprecated/CIFAR-10/Macros.ndl:14 (ConvLocalReLULayer): sharing = {false, false,
    # false}, W [outMap·outW·outH, kW·kH·inMap]; output (m, i, j) = W[m, i·w + j] · the padded 3x3 patch at (i, j)
    net = ndl_build("x = ImageInput(4, 4, 2, imageLayout=cudnn)\nW = Parameter(48, 18)\n"
                    "c = Convolution(W, x, {3, 3, 2}, mapCount=3, stride={1, 1, 2}, sharing={false, false, false}, "
                    "imageLayout=cudnn)\n")
    assert net.shapes["c"] == (3, 4, 4)
    x = torch.rand(2, 2, 4, 4)
    c = net.evaluate({"x": x}, ["c"])["c"]
    W, xp = net.tensor("W").reshape(3, 16, 18), F.pad(x, (1, 1, 1, 1))
    want = torch.stack([torch.stack([torch.stack([xp[:, :, i:i + 3, j:j + 3].reshape(2, -1) @ W[m, i * 4 + j]
                                                  for j in range(4)], -1) for i in range(4)], -2) for m in range(3)], 1)
    torch.testing.assert_close(c, want)
    with pytest.raises(NDLError, match="sharing=false: the weights must hold 864 values"):
        ndl_build("x = ImageInput(4, 4, 2, imageLayout=cudnn)\nW = Parameter(3, 18)\n"
                  "c = Convolution(W, x, {3, 3, 2}, mapCount=3, stride={1, 1, 2}, sharing={false, false, false})\n")


def test_the_lrn_of_convnetlrn_is_a_convolution_of_a_rank_4_input():
    # Examples/Image/Classification/ConvNet/BrainScript/ConvNetLRN_CIFAR10_DataAug.cntk:28-40: a (1:1:2n+1) kernel over
    # SplitDimension (x2, 3, 1) sums the squares of 2n+1 neighbouring channels (zero-padded at the ends)
    net = bs_build("""x = ImageInput(5, 4, 6, imageLayout="cudnn")
LRN {k, n, alpha, beta} = {
    apply (x) = {
        x2 = x .* x
        x2s = SplitDimension(x2, 3, 1)
        W = ParameterTensor{(1:1:2*n+1:1), learningRateMultiplier = 0, initValue = alpha/(2*n+1)}
        y = Convolution (W, x2s, (1:1:2*n+1), mapDims = 1, stride = 1, sharing = true, autoPadding = true, lowerPad = 0, upperPad = 0, maxTempMemSizeInSamples = 0)
        b = FlattenDimensions(y, 3, 2)
        den = Exp (beta .* Log(k + b))
        r = x .* Reciprocal(den)
    }.r
}.apply
z = LRN {1.0, 2, 0.001, 0.75} (x)
""")
    x = torch.rand(2, 6, 4, 5)
    z = net.evaluate({"x": x}, ["z"])["z"]
    sq = F.pad(x * x, (0, 0, 0, 0, 2, 2))
    s = sum(sq[:, i:i + 6] for i in range(5)) * (0.001 / 5)
    torch.testing.assert_close(z, x / (1.0 + s) ** 0.75)


@pytest.mark.parametrize("sharing", ["true", "false"])
def test_a_bias_added_to_a_convolution_with_or_without_its_fused_form(sharing):
    # Plus(Convolution(W, x), b) runs as one conv2d with bias where the convolution has that form; a kernel
    # per position (Deprecated CIFAR-10 05_ConvLocal: p = Plus(c, b)) adds the bias after it
    w = 3 * 18 * (16 if sharing == "false" else 1)
    net = ndl_build(f"x = ImageInput(4, 4, 2, imageLayout=cudnn)\nW = Parameter({w // 18}, 18)\n"
                    "b = ImageParameter(1, 1, 3, init=fixedValue, value=0, imageLayout=cudnn)\n"
                    f"c = Convolution(W, x, {{3, 3, 2}}, mapCount=3, stride={{1, 1, 2}}, sharing={sharing})\n"
                    "p = Plus(c, b, tag=output)\n")
    with torch.no_grad():
        net.tensor("b").copy_(torch.tensor([1.0, 2.0, 3.0]).reshape(net.tensor("b").shape))
    x = torch.rand(2, 2, 4, 4)
    v = net.evaluate({"x": x}, ["c"])["c"]
    p = net.evaluate({"x": x}, ["p"])["p"]
    torch.testing.assert_close(p - v, torch.tensor([1.0, 2.0, 3.0]).reshape(1, 3, 1, 1).expand(2, 3, 4, 4))
