"""Every initializer CNTK names (InputAndParamNodes.h:17-28, InputAndParamNodes.cpp
ParseRandomizationType/InitRandom/InitBilinear), with CNTK's fan-in and fan-out: the spread of the
values drawn, the fixed and file forms, the bilinear kernel; in NDL, BrainScript and an NDL
LookupTable's parameter."""
from __future__ import annotations

import math

import pytest
import torch

from cntkio.networks.brainscript import build as bs_build
from cntkio.networks.ndl import NDLError, build as ndl_build
from cntkio.networks.nodes.base import NodeError
from cntkio.networks.nodes.init import fans, initial_value


def test_fans_follow_cntk_init_random():
    assert fans([10, 20]) == (20, 10)                                  # Parameter(10, 20): [rows, cols]
    assert fans([5, 5, 3, 16], filter_rank=2, output_rank=-1) == (75, 400)   # a (5:5) kernel, 3 -> 16 maps
    assert fans([7, 4, 2], output_rank=2) == (2, 28)
    with pytest.raises(NodeError, match="exceed the rank"):
        fans([3], filter_rank=1, output_rank=1)


@pytest.mark.parametrize("kind, uniform, bound", [
    ("uniform", True, 0.05), ("uniform1", True, 1.0), ("xavier", True, math.sqrt(3 / 400)),
    ("glorotUniform", True, math.sqrt(6 / 600)), ("heUniform", True, math.sqrt(6 / 400)),
    ("gaussian", False, 0.2 / math.sqrt(400)), ("normal", False, 1.0),
    ("glorotNormal", False, math.sqrt(2 / 600)), ("heNormal", False, math.sqrt(2 / 400)),
])
def test_random_kinds_draw_with_cntks_spread(kind, uniform, bound):
    v = initial_value({"init": kind, "initValueScale": 2.0}, (200, 400), seed=3)
    assert v.shape == (200, 400)
    if uniform:          # uniform in ±bound·scale: its extremes close to the bound, its std bound/sqrt(3)
        assert v.abs().max() <= 2 * bound and v.abs().max() > 1.99 * bound
        assert abs(float(v.std()) - 2 * bound / math.sqrt(3)) < 0.02 * 2 * bound
    else:
        assert abs(float(v.std()) - 2 * bound) < 0.02 * 2 * bound
    assert torch.equal(v, initial_value({"init": kind, "initValueScale": 2.0}, (200, 400), seed=3))
    assert not torch.equal(v, initial_value({"init": kind, "initValueScale": 2.0}, (200, 400), seed=4))


def test_trunc_normal_stays_within_two_deviations():
    v = initial_value({"init": "TruncNormal"}, (300, 300), seed=1)
    assert float(v.abs().max()) <= 2.0 and abs(float(v.std()) - 0.88) < 0.02     # std of N(0,1) cut at ±2


def test_fixed_file_literal_and_bilinear(tmp_path):
    assert torch.equal(initial_value({"init": "fixedValue", "value": 0.5}, (2, 3), 1), torch.full((2, 3), 0.5))
    assert torch.equal(initial_value({"init": "zero"}, (2,), 1), torch.zeros(2))
    (tmp_path / "m.txt").write_text("1 2 3\n4 5 6\n")
    got = initial_value({"init": "fromFile", "initFromFilePath": "m.txt"}, (2, 3), 1, str(tmp_path))
    assert got.tolist() == [[1, 2, 3], [4, 5, 6]]
    with pytest.raises(NodeError, match="holds a 2x3 matrix, the parameter needs 3 rows of 2 values"):
        initial_value({"init": "fromFile", "initFromFilePath": str(tmp_path / "m.txt")}, (3, 2), 1)
    assert initial_value({"init": "fromLiteral", "initFromLiteral": "1 2\n3 4"}, (2, 2), 1).tolist() == [[1, 2], [3, 4]]
    # CNTK's bilinear kernel of a 3x3 upsampling of 2 channels: 1/4 1/2 1/4 outer product, per channel
    k = initial_value({"init": "bilinear", "cntkDims": [3, 3, 2, 2]}, (2, 2, 3, 3), 1)
    want = torch.tensor([0.5, 1.0, 0.5])
    torch.testing.assert_close(k[0, 0], want[:, None] * want[None, :], check_dtype=False)
    assert not k[0, 1].any() and torch.equal(k[1, 1], k[0, 0])
    with pytest.raises(NodeError, match="init: expected one of"):
        initial_value({"init": "orthogonal"}, (2, 2), 1)


def test_initializers_in_ndl_brainscript_and_a_lookup_table():
    net = ndl_build("W = Parameter(300, 200, init=heNormal, initValueScale=1)\n"
                    "V = Parameter(300, 200, init=Gaussian)\nx = Input(200)\ny = Times(W, x)\nz = Times(V, x)\n")
    assert abs(float(net.W.detach().std()) - math.sqrt(2 / 200)) < 0.003
    assert abs(float(net.V.detach().std()) - 0.2 / math.sqrt(200)) < 0.001
    bs = bs_build("x = Input{200}\nz = LinearLayer{300, init='normal', initValueScale=0.01}(x)\n"
                  "e = EmbeddingLayer{50, init='uniform'}(x)\ny = z\n")
    assert abs(float(bs.tensor("z.W").detach().std()) - 0.01) < 0.001
    assert float(bs.tensor("e.W").detach().abs().max()) <= 0.05
    with pytest.raises(NDLError, match="init: expected one of"):
        ndl_build("W = Parameter(3, 2, init=bogus)\n")
