"""Devices: ``deviceId = 0`` without CUDA is a clear error, ``deviceId = auto`` falls back to the
CPU (CNTK's ``auto``), and the graph's computations run where the network's tensors are (checked
on torch's ``meta`` device: any tensor made on the CPU behind the network's back would be an error
there, as it would be on a GPU; only element-wise mixing is caught: meta lets a matrix product take
a CPU operand). No GPU was available when this was written: the CUDA path itself is not
exercised here."""
from __future__ import annotations

import pytest
import torch

from cntkio.networks import load_model
from cntkio.networks.ndl import build
from cntkio.networks.nodes import lookup
from cntkio.actions.runner import run
from cntkio.errors import ConfigError

NET = """
x = Input(16, tag=feature)
img = ImageInput(4, 4, 1)
labels = Input(3, tag=label)
m = Mean(x)
s = InvStdDev(x)
xn = PerDimMeanVarNormalization(x, m, s)
W = Parameter(8, 16)
b = Parameter(8, init=zero)
h = RectifiedLinear(Plus(Times(W, xn), b))
d = PastValue(8, h, timeStep=1)
h2 = Tanh(Plus(h, Scale(0.5, d)))
K = Parameter(2, 9)
c = Convolution(K, img, 3, 3, 2, 1, 1, zeroPadding=true)
p = MaxPooling(c, 2, 2, 2, 2)
a = AveragePooling(c, 2, 2, 2, 2)
bs = Parameter(2, 1, init=fixedValue, value=1)
bb = Parameter(2, 1, init=zero)
rm = Parameter(2, 1, init=zero)
rv = Parameter(2, 1, init=fixedValue, value=1)
bn = BatchNormalization(c, bs, bb, rm, rv, spatial=true)
r = Reshape(bn, 32)
all = RowStack(h2, RowSlice(0, 8, r), Reshape(p, 8), Reshape(a, 8))
V = Parameter(3, 32)
z = Times(V, Dropout(all))
ce = CrossEntropyWithSoftmax(labels, z, tag=criterion)
err = ErrorPrediction(labels, z, tag=eval)
se = SquareError(labels, Softmax(z))
cos = CosDistance(z, labels)
"""


@pytest.mark.parametrize("training", [False, True])
def test_the_graph_computes_on_the_networks_device(training):
    net = build(NET).to("meta")
    net.train(training)
    n = 5
    feeds = {k: torch.zeros(n, *net.shapes[k], device="meta") for k, node in net.graph.nodes.items()
             if lookup(node.op).kind == "input"}
    wanted = [k for k in net.order if k not in feeds]
    out = net.evaluate(feeds, wanted, positions=torch.zeros(n, dtype=torch.long, device="meta"),
                       lengths=torch.ones(n, dtype=torch.long, device="meta"))
    assert {out[k].device.type for k in wanted} == {"meta"}
    assert {t.device.type for t in [*net.parameters(), *net.buffers()]} == {"meta"}


CONFIG = """
command = train
deviceId = {device}
progressBar = false
modelPath = {tmp}/m.dnn
train = [
    action = train
    NDLNetworkBuilder = [ run = n ]
    SGD = [ minibatchSize = 4 ; learningRatesPerSample = 0.1 ; maxEpochs = 1 ]
    reader = [ readerType = CNTKTextFormatReader ; file = {tmp}/d.ctf
               input = [ features = [ dim = 2 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ]
]
n = [
    features = Input(2, tag=feature)
    labels = Input(2, tag=label)
    W = Parameter(2, 2)
    z = Times(W, features)
    ce = CrossEntropyWithSoftmax(labels, z, tag=criterion)
]
"""


@pytest.fixture()
def no_cuda(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    (tmp_path / "d.ctf").write_text("".join(f"|features {i % 2} 1 |labels {i % 2} {1 - i % 2}\n" for i in range(8)))
    return tmp_path


def test_device_id_0_without_cuda_is_an_error(no_cuda):
    cfg = no_cuda / "c.cntk"
    cfg.write_text(CONFIG.format(device=0, tmp=no_cuda))
    with pytest.raises(ConfigError, match=r"deviceId.*GPU 0 is not available to torch \(CUDA available: False"):
        run([f"configFile={cfg}"])
    assert not (no_cuda / "m.dnn").exists()


@pytest.mark.parametrize("device", ["auto", "cpu"])
def test_auto_falls_back_to_the_cpu(no_cuda, device):
    cfg = no_cuda / "c.cntk"
    cfg.write_text(CONFIG.format(device=device, tmp=no_cuda))
    (_, _, res), = run([f"configFile={cfg}"])
    assert res.epochs[0].samples == 8
    net = load_model(str(no_cuda / "m.dnn")).network
    assert {t.device.type for t in net.state_dict().values()} == {"cpu"}
