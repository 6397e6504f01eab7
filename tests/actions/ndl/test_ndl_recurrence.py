"""A recurrent NDL network (a forward reference through PastValue) trained in a plain PyTorch
loop on a generated sequence task: output the previous symbol of the sequence (``start`` at the
first step). Only the loop through PastValue can carry that memory."""
from __future__ import annotations

import torch

import cntkio.ndl

RNN = """
SDim = 4
HDim = 16
LDim = 5
x = Input(SDim, tag=feature)
labels = Input(LDim, tag=label)
hPrev = PastValue(HDim, h, timeStep=1, defaultHiddenActivity=0.1)
W = Parameter(HDim, SDim, init=uniform, initValueScale=10)
U = Parameter(HDim, HDim, init=uniform, initValueScale=10)
b = Parameter(HDim, init=zero)
h = Tanh(Plus(Plus(Times(W, x), Times(U, hPrev)), b))
V = Parameter(LDim, HDim, init=uniform, initValueScale=10)
z = Times(V, h)
ce = CrossEntropyWithSoftmax(labels, z, tag=criterion)
err = ErrorPrediction(labels, z, tag=eval)
"""


def _batch(gen, n_seq):
    lengths = torch.randint(3, 9, (n_seq,), generator=gen)
    sym = [torch.randint(0, 4, (int(n),), generator=gen) for n in lengths]
    x = torch.cat([torch.nn.functional.one_hot(s, 4) for s in sym]).float()
    prev = torch.cat([torch.cat([torch.tensor([4]), s[:-1]]) for s in sym])
    y = torch.nn.functional.one_hot(prev, 5).float()
    positions = torch.cat([torch.arange(int(n)) for n in lengths])
    lens = torch.cat([torch.full((int(n),), int(n)) for n in lengths])
    return x, y, positions, lens


def test_pastvalue_recurrence_learns_the_previous_symbol():
    torch.manual_seed(0)
    net = cntkio.ndl.build(RNN)
    assert len(net.loops) == 1
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    gen = torch.Generator().manual_seed(1)
    for _ in range(150):
        x, y, pos, lens = _batch(gen, 16)
        out = net.evaluate({"x": x, "labels": y}, ["ce"], positions=pos, lengths=lens)
        opt.zero_grad()
        (out["ce"].sum() / x.shape[0]).backward()
        opt.step()
    x, y, pos, lens = _batch(torch.Generator().manual_seed(99), 200)
    with torch.no_grad():
        out = net.evaluate({"x": x, "labels": y}, ["err"], positions=pos, lengths=lens)
    assert out["err"].item() / x.shape[0] < 0.02
    # without the sequence layout each sample is its own sequence: the memory is gone
    with torch.no_grad():
        frame = net.evaluate({"x": x, "labels": y}, ["err"])["err"].item() / x.shape[0]
    assert frame > 0.5
