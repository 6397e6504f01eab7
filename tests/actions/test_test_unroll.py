"""testUnroll: a recurrent NDL network evaluated frame by frame gives the test action's results
(a PastValue network cannot see later frames, so unrolling changes nothing); a FutureValue
network's unrolled outputs are those of its sequences' prefixes; path2EvalResults holds the result."""
from __future__ import annotations

import torch

from cntkio.networks.ndl import build
from cntkio.actions.runner import run
from cntkio.actions.unroll import unrolled_outputs

RNN = """
x = Input(4, tag=feature)
y = Input(5, tag=label)
W = Parameter(8, 4)
R = Parameter(8, 8)
b = Parameter(8, init=fixedValue, value=0)
hPrev = PastValue(8, h, timeStep=1, defaultHiddenActivity=0.1)
h = Tanh(Plus(Plus(Times(W, x), Times(R, hPrev)), b))
V = Parameter(5, 8)
z = Times(V, h, tag=output)
ce = CrossEntropyWithSoftmax(y, z, tag=criterion)
err = ErrorPrediction(y, z, tag=eval)
"""


def _write_sequences(path, n, seed):
    gen = torch.Generator().manual_seed(seed)
    lines = []
    for s in range(n):
        length = int(torch.randint(2, 7, (1,), generator=gen))
        sym = torch.randint(0, 4, (length,), generator=gen).tolist()
        for t in range(length):
            prev = 4 if t == 0 else sym[t - 1]
            lines.append(f"{s} |x {' '.join('1' if k == sym[t] else '0' for k in range(4))} "
                         f"|y {' '.join('1' if k == prev else '0' for k in range(5))}")
    path.write_text("\n".join(lines) + "\n")


def test_unrolled_evaluation_equals_test_for_a_past_value_network(tmp_path):
    _write_sequences(tmp_path / "train.ctf", 120, 1)
    _write_sequences(tmp_path / "test.ctf", 30, 2)
    reader = ("[ readerType = CNTKTextFormatReader ; file = {} ; randomize = false\n"
              "  input = [ x = [ dim = 4 ; format = dense ] ; y = [ dim = 5 ; format = dense ] ] ]")
    body = "\n".join("    " + ln for ln in RNN.strip().splitlines())
    cfg = tmp_path / "rnn.cntk"
    cfg.write_text(f"""command = train:test:unroll
deviceId = cpu
precision = double
progressBar = false
modelPath = {tmp_path}/rnn.dnn
train = [
    action = train
    NDLNetworkBuilder = [ run = rnn ]
    SGD = [ minibatchSize = 64 ; learningRatesPerSample = 0.05 ; momentumPerMB = 0.9 ; maxEpochs = 2 ]
    reader = {reader.format(tmp_path / 'train.ctf')}
]
test = [ action = test ; minibatchSize = 50 ; reader = {reader.format(tmp_path / 'test.ctf')} ]
unroll = [ action = testUnroll ; minibatchSize = 50 ; path2EvalResults = {tmp_path}/out/results.txt
           reader = {reader.format(tmp_path / 'test.ctf')} ]
rnn = [
{body}
]
""")
    (_, _, _), (_, _, test), (_, _, unrolled) = run([f"configFile={cfg}"])
    assert unrolled.samples == test.samples == sum(1 for _ in open(tmp_path / "test.ctf"))
    for k in test.totals:
        assert abs(unrolled.totals[k] - test.totals[k]) < 1e-9 * max(1.0, abs(test.totals[k]))
    text = (tmp_path / "out" / "results.txt").read_text()
    assert text.startswith("Final Results: Minibatch[1-") and "ce = " in text and "err = " in text


def test_future_value_outputs_are_those_of_the_prefixes():
    net = build("x = Input(1)\nf = FutureValue(1, x, timeStep=1, defaultHiddenActivity=-1)\nOutputNodes = (f)",
                dtype=torch.float64)
    x = torch.tensor([[1.0], [2.0], [3.0], [10.0], [20.0]], dtype=torch.float64)
    positions = torch.tensor([0, 1, 2, 0, 1])

    class Wrap(torch.nn.Module):            # the action's net(x) protocol over a GraphNetwork
        def __init__(self):
            super().__init__()
            self.layout = (None, None)

        def set_layout(self, p, n):
            self.layout = (p, n)

        def forward(self, v):
            return net.evaluate({"x": v}, ["f"], positions=self.layout[0], lengths=self.layout[1])["f"]

    out = unrolled_outputs(Wrap(), x, positions)
    assert out[:, 0].tolist() == [-1.0] * 5                     # the next frame is never there yet
    full = net.evaluate({"x": x}, ["f"], positions=positions, lengths=torch.tensor([3, 3, 3, 2, 2]))["f"]
    assert full[:, 0].tolist() == [2.0, 3.0, -1.0, 20.0, -1.0]
