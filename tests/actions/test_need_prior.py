"""SimpleNetworkBuilder ``needPrior=true``: the label prior computed over the training data before
the first epoch, saved in the model, and the ``ScaledLogLikelihood`` output node (``HLast -
log(Prior)``) that ``write`` writes by default."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from cntkio.actions.dumpnode import describe_nodes
from cntkio.networks import load_model
from cntkio.networks.mel import MelModel
from cntkio.actions.runner import run

#: unbalanced classes: the prior is 0.5, 0.3, 0.2
CLASSES = np.array([0] * 5 + [1] * 3 + [2] * 2)

CONFIG = """
command = train:write
precision = double
deviceId = cpu
modelPath = {out}/model.dnn
reader = [
    readerType = CNTKTextFormatReader
    file = {data}
    randomize = false
    input = [ features = [ dim = 4 ; format = dense ] ; labels = [ dim = 3 ; format = dense ] ]
]
train = [
    action = train
    SimpleNetworkBuilder = [ layerSizes = 4:6:3 ; layerTypes = Tanh ; needPrior = true ]
    SGD = [ minibatchSize = 10 ; learningRatesPerMB = 0.2 ; maxEpochs = 2 ]
]
write = [
    action = write
    outputPath = {out}/written
    minibatchSize = 7
]
"""


@pytest.fixture()
def workdir(tmp_path):
    rng = np.random.default_rng(3)
    y = np.tile(CLASSES, 6)
    x = np.round(np.eye(3, 4)[y] * 2 + 0.3 * rng.standard_normal((len(y), 4)), 4)
    with open(tmp_path / "data.ctf", "w") as f:
        for xi, yi in zip(x, y):
            f.write(f"|features {' '.join(format(v, 'g') for v in xi)} |labels "
                    + " ".join("1" if k == yi else "0" for k in range(3)) + "\n")
    (tmp_path / "c.cntk").write_text(CONFIG.format(out=tmp_path / "out", data=tmp_path / "data.ctf"))
    return tmp_path


def test_prior_is_the_label_mean_and_write_gives_scaled_log_likelihood(workdir):
    run([f"configFile={workdir / 'c.cntk'}"])
    net = load_model(str(workdir / "out" / "model.dnn")).network
    assert torch.allclose(net.Prior, torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64))
    assert net.output_nodes == ["ScaledLogLikelihood"]
    # the prior is computed before epoch 1: the epoch-1 model already holds it
    assert torch.allclose(load_model(str(workdir / "out" / "model.dnn.1")).network.Prior, net.Prior)
    # write's default output node is ScaledLogLikelihood = HLast - log(Prior)
    sll = np.loadtxt(workdir / "out" / "written.ScaledLogLikelihood")
    assert sll.shape == (60, 3)
    run([f"configFile={workdir / 'c.cntk'}", "command=write", "write=[outputNodeNames=HLast]"])
    hlast = np.loadtxt(workdir / "out" / "written.HLast")
    assert np.allclose(sll, hlast - np.log([0.5, 0.3, 0.2]), atol=1e-12)


def test_prior_nodes_in_dumpnode_and_mel(workdir):
    run([f"configFile={workdir / 'c.cntk'}", "command=train"])
    net = load_model(str(workdir / "out" / "model.dnn")).network
    nodes = describe_nodes(net)
    assert nodes["Prior"][0] == "Mean" and np.allclose(nodes["Prior"][2][:, 0], [0.5, 0.3, 0.2])
    assert nodes["ScaledLogLikelihood"][:2] == ("Minus", "( HLast , LogOfPrior )")
    # a MEL edit keeps the prior as a computed statistic and the output node
    edited = MelModel.from_network("m", net).network()
    assert edited.pending_precompute() == [] and edited.output_nodes == ["ScaledLogLikelihood"]
    x = torch.randn(5, 4, dtype=torch.float64)
    assert torch.allclose(edited.nodes(x)["ScaledLogLikelihood"].reshape(5, 3),
                          net.nodes(x)["ScaledLogLikelihood"])


def test_need_prior_false_is_the_plain_network(workdir):
    run([f"configFile={workdir / 'c.cntk'}", "command=train",
         "train=[SimpleNetworkBuilder=[needPrior=false]]"])
    net = load_model(str(workdir / "out" / "model.dnn")).network
    assert net.output_nodes == ["HLast"] and "Prior" not in dict(net.named_buffers())


def test_the_prior_written_in_ndl(workdir):
    """The same in NDL: ``Prior = Mean(labels)`` is computed over the training labels before epoch
    1, and the scaled log-likelihood output is what write writes."""
    ndl = ("n = [\n features = Input(4, tag=feature)\n labels = Input(3, tag=label)\n W = Parameter(3, 4)\n"
           " z = Times(W, features)\n ce = CrossEntropyWithSoftmax(labels, z, tag=criterion)\n"
           " Prior = Mean(labels)\n sll = Minus(z, Log(Prior), tag=output)\n]\n")
    cfg = (workdir / "c.cntk").read_text().replace(
        "SimpleNetworkBuilder = [ layerSizes = 4:6:3 ; layerTypes = Tanh ; needPrior = true ]",
        "NDLNetworkBuilder = [ run = n ]")
    assert "NDLNetworkBuilder" in cfg
    (workdir / "ndl.cntk").write_text(cfg + ndl)
    run([f"configFile={workdir / 'ndl.cntk'}", f"modelPath={workdir}/ndl/model.dnn",
         f"write=[outputPath={workdir}/ndl/written]"])
    net = load_model(str(workdir / "ndl" / "model.dnn")).network
    assert torch.allclose(net.Prior.reshape(-1), torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64))
    sll = np.loadtxt(workdir / "ndl" / "written.sll")
    run([f"configFile={workdir / 'ndl.cntk'}", f"modelPath={workdir}/ndl/model.dnn", "command=write",
         f"write=[outputPath={workdir}/ndl/written; outputNodeNames=z]"])
    assert np.allclose(sll, np.loadtxt(workdir / "ndl" / "written.z") - np.log([0.5, 0.3, 0.2]))
