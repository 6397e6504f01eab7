"""The LSTM loops of RecurrentLSTMLayer run as one torch.lstm over packed sequences: the same
values and gradients as the step-by-step loop, and the step loop wherever the fused one cannot
give what is asked (another node of the loop read, a projection to more dimensions, truncated
BPTT's carried state)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from cntkio.networks.brainscript import build
from cntkio.networks.ndl.carry import SequenceCarry

HEAD = "labels = Input{3}\nce = CrossEntropyWithSoftmax(labels, z)\ncriterionNodes = (ce)\n"
POS = torch.tensor([0, 1, 2, 0, 1, 0, 1, 2, 3, 0])
LENS = torch.tensor([3, 3, 3, 2, 2, 4, 4, 4, 4, 1])


def _fused_loops(net, wanted) -> int:
    plan = net._plan(frozenset(["x", "labels"]), tuple(wanted))
    return sum(1 for step in plan if step[0] == 4 and step[4] is not None)


def _run(net, fuse: bool, wanted):
    torch.manual_seed(0)
    x = torch.randn(10, 5)
    y = F.one_hot(torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2, 0]), 3).float()
    net.fuse_lstm = fuse
    net.zero_grad()
    v = net.evaluate({"x": x, "labels": y}, wanted, positions=POS, lengths=LENS)
    v["ce"].sum().backward()
    return {k: v[k].detach().clone() for k in wanted}, {n: p.grad.clone() for n, p in net.named_parameters()}


@pytest.mark.parametrize("layer, loops", [
    ("RecurrentLSTMLayer{4}", 1),
    ("RecurrentLSTMLayer{4, goBackwards=true}", 1),
    ("RecurrentLSTMLayer{3, cellShape=6}", 1),            # projected to fewer dimensions
    ("RecurrentLSTMLayerStack{(4:6)}", 2),
    ("RecurrentLSTMLayer{5, cellShape=3}", 0),            # more output than cell: torch has no such LSTM
])
def test_fused_lstm_equals_the_step_loop(layer, loops):
    net = build(f"x = Input{{5}}\nf = {layer}(x)\nz = DenseLayer{{3}}(f)\n" + HEAD)
    net.fuse_lstm = True
    assert _fused_loops(net, ("f", "ce")) == loops
    (fv, fg), (sv, sg) = _run(net, True, ("f", "ce")), _run(net, False, ("f", "ce"))
    torch.testing.assert_close(fv["f"], sv["f"], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(fv["ce"], sv["ce"], rtol=1e-5, atol=1e-5)
    assert fg.keys() == sg.keys()
    for name in fg:
        torch.testing.assert_close(fg[name], sg[name], rtol=1e-4, atol=1e-6, msg=name)


def test_fused_lstm_equals_nn_lstm_with_cntk_gate_order():
    net = build("x = Input{5}\nf = RecurrentLSTMLayer{4}(x)\nz = DenseLayer{3}(f)\n" + HEAD)
    x = torch.randn(10, 5)
    got = net.evaluate({"x": x}, ["f"], positions=POS, lengths=LENS)["f"]
    lstm = torch.nn.LSTM(5, 4)
    W, b, H = net.tensor("f.W"), net.tensor("f.b").reshape(-1), net.tensor("f.W_2")
    wi, bi, wh = W.detach().chunk(4), b.detach().chunk(4), H.detach().chunk(4)
    with torch.no_grad():                   # CNTK's rows: input, cell, forget, output gates
        lstm.weight_ih_l0.copy_(torch.cat([wi[0], wi[2], wi[1], wi[3]]))
        lstm.bias_ih_l0.copy_(torch.cat([bi[0], bi[2], bi[1], bi[3]]))
        lstm.weight_hh_l0.copy_(torch.cat([wh[0], wh[2], wh[1], wh[3]]))
        lstm.bias_hh_l0.zero_()
    starts = [0, 3, 5, 9]
    for s, e in zip(starts, starts[1:] + [10]):
        state = (torch.full((1, 1, 4), 0.1), torch.full((1, 1, 4), 0.1))   # CNTK's state before a sequence
        want = lstm(x[s:e].unsqueeze(1), state)[0].squeeze(1)
        torch.testing.assert_close(got[s:e], want, rtol=1e-5, atol=1e-6)


#: CNTK's LSTMBlock in a recurrence written out, as RecurrentLSTMLayer builds it in CNTK.core.bs
BLOCK = ("x = Input{5}\nlstm = BS.RNNs.LSTMBlock{4}\n"
         "r = { prev = BS.RNNs.PreviousHC(state) ; state = lstm(x, prev) }.state\n")


def test_a_loop_whose_cell_is_read_runs_step_by_step():
    net = build(BLOCK + "z = DenseLayer{3}(Splice(r.h : r.c))\n" + HEAD)
    net.fuse_lstm = True
    assert _fused_loops(net, ("ce",)) == 0
    only_h = build(BLOCK + "z = DenseLayer{3}(r.h)\n" + HEAD)
    assert _fused_loops(only_h, ("ce",)) == 1
    # asking for a node inside the loop also takes the step loop
    inner = [n for n in only_h.loops[0] if only_h.graph.nodes[n].op == "Sigmoid"][0]
    assert _fused_loops(only_h, ("ce", inner)) == 0


def test_carried_state_of_truncated_bptt_is_kept_with_fusion_on():
    net = build("x = Input{5}\nf = RecurrentLSTMLayer{4}(x)\nz = DenseLayer{3}(f)\n" + HEAD)
    net.fuse_lstm = True
    x = torch.randn(5, 5)
    whole = net.evaluate({"x": x}, ["f"], positions=torch.arange(5), lengths=torch.full((5,), 5))["f"]
    carry = SequenceCarry()
    carry.next_minibatch(torch.zeros(3, dtype=torch.long), torch.zeros(3), 1)
    first = net.evaluate({"x": x[:3]}, ["f"], positions=torch.arange(3), lengths=torch.full((3,), 3), carry=carry)
    carry.next_minibatch(torch.zeros(2, dtype=torch.long), torch.ones(2), 1)
    second = net.evaluate({"x": x[3:]}, ["f"], positions=torch.arange(2), lengths=torch.full((2,), 2), carry=carry)
    torch.testing.assert_close(torch.cat([first["f"], second["f"]]), whole, rtol=1e-5, atol=1e-6)
