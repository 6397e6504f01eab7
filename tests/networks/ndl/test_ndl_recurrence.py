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


def _write_sequences(path, n, seed):
    gen = torch.Generator().manual_seed(seed)
    lines = []
    for s in range(n):
        length = int(torch.randint(3, 9, (1,), generator=gen))
        sym = torch.randint(0, 4, (length,), generator=gen).tolist()
        for t in range(length):
            prev = 4 if t == 0 else sym[t - 1]
            x = " ".join("1" if k == sym[t] else "0" for k in range(4))
            y = " ".join("1" if k == prev else "0" for k in range(5))
            lines.append(f"{s} |x {x} |y {y}")
    path.write_text("\n".join(lines) + "\n")


def test_the_train_action_feeds_the_sequence_layout(tmp_path):
    from cntkio.actions.runner import run
    _write_sequences(tmp_path / "train.ctf", 400, 1)
    _write_sequences(tmp_path / "test.ctf", 100, 2)
    reader = ("[ readerType = CNTKTextFormatReader ; file = {} ; randomize = {}\n"
              "  input = [ x = [ dim = 4 ; format = dense ] ; y = [ dim = 5 ; format = dense ] ] ]")
    net = RNN.replace("tag=feature", "tag=feature").replace("labels", "y").replace("x = Input", "x = Input")
    body = "\n".join("    " + ln for ln in net.strip().splitlines())
    cfg = tmp_path / "rnn.cntk"
    cfg.write_text(f"""command = train:test
deviceId = cpu
progressBar = false
modelPath = {tmp_path}/rnn.dnn
train = [
    action = train
    NDLNetworkBuilder = [ run = rnn ]
    SGD = [ minibatchSize = 64 ; learningRatesPerSample = 0.05 ; momentumPerMB = 0.9 ; maxEpochs = 6 ]
    reader = {reader.format(tmp_path / 'train.ctf', 'true')}
]
test = [ action = test ; reader = {reader.format(tmp_path / 'test.ctf', 'false')} ]
rnn = [
{body}
]
""")
    (_, _, train), (_, _, test) = run([f"configFile={cfg}"])
    assert test.samples == sum(1 for _ in open(tmp_path / "test.ctf"))
    assert test.averages["err"] < 0.02
    # without the layout every sample is a sequence of its own: the memory is gone
    from cntkio.networks import load_model
    net = load_model(str(tmp_path / "rnn.dnn")).network
    rows = [ln.split("|") for ln in open(tmp_path / "test.ctf")]
    x = torch.tensor([[float(v) for v in r[1].split()[1:]] for r in rows])
    y = torch.tensor([[float(v) for v in r[2].split()[1:]] for r in rows])
    with torch.no_grad():
        assert net.evaluate({"x": x, "y": y}, ["err"])["err"].item() / len(rows) > 0.5
