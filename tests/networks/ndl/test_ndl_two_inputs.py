"""NDL networks with more than one feature (and label) input: train, test, eval and write feed
every Input node from the reader stream of its name, as CNTK mapped streams to inputs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from cntkio.networks import load_model
from cntkio.actions.runner import run
from cntkio.errors import ConfigError

# class 0 and 1 differ only in x1, class 2 only in x2: both inputs are needed
CENTERS1 = np.array([[2.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
CENTERS2 = np.array([[0.0, 0.0], [0.0, 0.0], [2.0, 2.0]])

NET = """
two = [
    x1 = Input(2, tag=feature)
    x2 = Input(2, tag=feature)
    labels = Input(3, tag=label)
    W1 = Parameter(8, 2)
    W2 = Parameter(8, 2)
    b = Parameter(8, init=zero)
    h = Tanh(Plus(Plus(Times(W1, x1), Times(W2, x2)), b))
    V = Parameter(3, 8)
    z = Times(V, h)
    ce = CrossEntropyWithSoftmax(labels, z, tag=criterion)
    err = ErrorPrediction(labels, z, tag=eval)
    miss = Minus(labels, Softmax(z))
    OutputNodes = (z)
]
"""


def _data(path, n, seed):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    x1 = CENTERS1[y] + 0.3 * rng.standard_normal((n, 2))
    x2 = CENTERS2[y] + 0.3 * rng.standard_normal((n, 2))
    with open(path, "w") as f:
        for a, b, c in zip(x1, x2, y):
            f.write(f"|x1 {a[0]:.4f} {a[1]:.4f} |x2 {b[0]:.4f} {b[1]:.4f} |labels "
                    + " ".join("1" if k == c else "0" for k in range(3)) + "\n")
    return x1, x2, y


def _config(tmp_path, streams="x1:x2"):
    inputs = " ; ".join(f"{s} = [ dim = 2 ; format = dense ]" for s in streams.split(":"))
    reader = ("[ readerType = CNTKTextFormatReader ; file = {} ; randomize = {}\n"
              f"  input = [ {inputs} ; labels = [ dim = 3 ; format = dense ] ] ]")
    cfg = tmp_path / "two.cntk"
    cfg.write_text(f"""command = train:test:ev:write
deviceId = cpu
precision = double
progressBar = false
modelPath = {tmp_path}/two.dnn
train = [
    action = train
    NDLNetworkBuilder = [ run = two ]
    SGD = [ minibatchSize = 16 ; learningRatesPerSample = 0.05 ; momentumPerMB = 0.9 ; maxEpochs = 5 ]
    reader = {reader.format(tmp_path / 'train.ctf', 'true')}
]
test = [ action = test ; reader = {reader.format(tmp_path / 'test.ctf', 'false')} ]
ev = [ action = eval ; reader = {reader.format(tmp_path / 'test.ctf', 'false')} ]
write = [ action = write ; outputPath = {tmp_path}/out ; outputNodeNames = z:x2
          reader = {reader.format(tmp_path / 'test.ctf', 'false')} ]
{NET}
""")
    return cfg


def test_two_feature_inputs_train_test_eval_and_write(tmp_path):
    _data(tmp_path / "train.ctf", 300, 1)
    x1, x2, y = _data(tmp_path / "test.ctf", 60, 2)
    (_, _, tr), (_, _, te), (_, _, ev), _ = run([f"configFile={_config(tmp_path)}"])
    assert te.samples == ev.samples == 60
    assert te.averages["err"] < 0.05 and ev.averages["err"] == te.averages["err"]
    # write: the output from both inputs, and the second input as read
    net = load_model(str(tmp_path / "two.dnn")).network
    with torch.no_grad():
        z = net.evaluate({"x1": torch.tensor(x1).round(decimals=4), "x2": torch.tensor(x2).round(decimals=4)},
                         ["z"])["z"]
    assert np.allclose(np.loadtxt(tmp_path / "out.z"), z.numpy(), atol=1e-6)
    assert np.allclose(np.loadtxt(tmp_path / "out.x2"), np.round(x2, 4))
    # class 2 is told from x2 alone: the trained network reads it
    assert (np.loadtxt(tmp_path / "out.z").argmax(1) == y).mean() > 0.95


def test_a_feature_input_without_its_stream_is_an_error(tmp_path):
    _data(tmp_path / "train.ctf", 30, 1)
    cfg = _config(tmp_path, streams="x1:x3")
    with pytest.raises(ConfigError, match="stream named 'x2' but the reader delivers labels, x1, x3"):
        run([f"configFile={cfg}", "command=train"])



def test_write_of_a_node_whose_input_has_no_stream(tmp_path):
    _data(tmp_path / "train.ctf", 30, 1)
    _data(tmp_path / "test.ctf", 6, 2)
    cfg = _config(tmp_path)
    run([f"configFile={cfg}", "command=train"])
    # a writer's reader without labels: z is written, the node reading the labels is an error
    reader = (f"[ readerType = CNTKTextFormatReader ; file = {tmp_path / 'test.ctf'} ; randomize = false\n"
              "  input = [ x1 = [ dim = 2 ; format = dense ] ; x2 = [ dim = 2 ; format = dense ] ] ]")
    (tmp_path / "w.cntk").write_text(f"w = [ action = write ; outputPath = {tmp_path}/w ; reader = {reader} ]\n")
    run([f"configFile={cfg}+{tmp_path / 'w.cntk'}", "command=w", "w=[outputNodeNames=z]"])
    assert np.loadtxt(tmp_path / "w.z").shape == (6, 3)
    with pytest.raises(ConfigError, match="node 'miss' reads an input node that no reader stream feeds "
                                          r"\(the reader delivers x1, x2\)"):
        run([f"configFile={cfg}+{tmp_path / 'w.cntk'}", "command=w", "w=[outputNodeNames=miss]"])
