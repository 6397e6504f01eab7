"""A BrainScript network runs the ATen operations of the same network written by hand with
``nn.Linear``/``nn.Conv2d`` (no parameter reshapes, the bias inside ``linear``/``conv2d``, the
criterion's ``[1, 1]`` value without a reshape): on a GPU, where these small networks are bound by
the work per operation, that is what keeps them within 10% of the hand-written ones. Its
parameters are held in the kernels' shapes (``ndl/layout.py``) while the state dict keeps CNTK's
dimensions: the hand-written network's weights load into it and give the same loss and gradients."""
from __future__ import annotations

import importlib.util

import torch
import torch.nn.functional as F

import paths
from cntkio.networks.brainscript import build


def _bench():
    """``bench/brainscript_vs_torch.py``: the hand-written networks the bench times, its BrainScript
    texts and its operation counter (so this test checks the very comparison the bench makes)."""
    spec = importlib.util.spec_from_file_location("brainscript_vs_torch", paths.REPO / "bench" / "brainscript_vs_torch.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


B = _bench()
WIDTHS = (4, 3, 5, 8)                   # the ConvNet's channels and dense width, small
MLP_BS = B.MLP_BS.replace("{H", "{16") + B.TAIL.replace("SHAPE", "784")
CONV_BS = B.conv_text(WIDTHS)


def _step_ops(net, loss_of) -> tuple[list[str], list[str]]:
    """The ATen operations of a training step's forward and backward passes (gradients unset)."""
    loss_of().backward()                        # the plan is made on the first call
    for p in net.parameters():
        p.grad = None
    with B.CountOps() as f:
        loss = loss_of()
    with B.CountOps() as b:
        loss.backward()
    return f.ops, b.ops


def _data(n=3):
    gen = torch.Generator().manual_seed(5)
    x = torch.rand(n, 784, generator=gen)
    return x, F.one_hot(torch.randint(0, 10, (n,), generator=gen), 10).float()


def _compare(text, hand, fwd_count, bwd_count) -> list[str]:
    """The BrainScript network's forward operations, checked against the hand-written network's."""
    x, y = _data()
    net = build(text)
    bs_f, bs_b = _step_ops(net, lambda: net.evaluate({"features": x, "labels": y}, ("ce",))["ce"])
    hd_f, hd_b = _step_ops(hand, lambda: hand(x, y))
    assert (len(bs_f), len(bs_b)) == (len(hd_f), len(hd_b)) == (fwd_count, bwd_count)
    # the same operations in the same order (the criterion's sum keeps its two axes: [1, 1])
    assert bs_f == hd_f and sorted(bs_b) == sorted(hd_b)
    return [op for op in bs_f if op != "detach"]


def test_mlp_step_runs_the_hand_written_operations():
    # forward: t, addmm, relu per layer (relu's output saved: a detach); log_softmax, mul, sum, neg
    assert _compare(MLP_BS, B.MLP(784, 16), 15, 38) == ["t", "addmm", "relu", "t", "addmm", "relu", "t", "addmm",
                                                "_log_softmax", "mul", "sum", "neg"]


def test_convnet_step_runs_the_hand_written_operations():
    fwd = _compare(CONV_BS, B.Conv(WIDTHS), 24, 46)
    # one view of the input into images, one flattening them for the dense layer; no bias add
    assert fwd.count("convolution") == 3 and fwd.count("view") == 2 and "add" not in fwd


def test_parameters_in_kernel_shapes_state_dict_in_cntk_dimensions():
    net, hand = build(CONV_BS), B.Conv(WIDTHS)
    held = {n: tuple(p.shape) for n, p in net.named_parameters()}
    assert held["model.W"] == (4, 1, 5, 5) and held["model.b"] == (4,) and held["model.W_4"] == (8, 45)
    sd = net.state_dict()
    assert tuple(sd["model.W"].shape) == (4, 25) and tuple(sd["model.b"].shape) == (4, 1)
    assert tuple(sd["model.W_2"].shape) == (3, 36) and tuple(sd["model.b_5"].shape) == (10, 1)
    # the hand-written weights, in CNTK's dimensions, load into the BrainScript network
    pairs = [("model.W", hand.c1.weight), ("model.b", hand.c1.bias), ("model.W_2", hand.c2.weight),
             ("model.b_2", hand.c2.bias), ("model.W_3", hand.c3.weight), ("model.b_3", hand.c3.bias),
             ("model.W_4", hand.d.weight), ("model.b_4", hand.d.bias), ("model.W_5", hand.o.weight),
             ("model.b_5", hand.o.bias)]
    net.load_state_dict({**sd, **{n: t.detach().reshape(sd[n].shape) for n, t in pairs}})
    x, y = _data(4)
    loss = net.evaluate({"features": x, "labels": y}, ("ce",))["ce"]
    want = hand(x, y)
    assert loss.shape == (1, 1)
    torch.testing.assert_close(loss.reshape(()), want)
    loss.backward()
    want.backward()
    params = dict(net.named_parameters())
    for n, t in pairs:
        torch.testing.assert_close(params[n].grad.reshape(t.shape), t.grad, rtol=1e-4, atol=1e-5)
    # and a state dict in the held shapes loads too
    copy = build(CONV_BS)
    copy.load_state_dict({n: p.detach().clone() for n, p in net.named_parameters()}, strict=False)
    torch.testing.assert_close(copy.evaluate({"features": x, "labels": y}, ("ce",))["ce"], loss.detach())
