"""Data-parallel training: two processes on localhost (torch.distributed, gloo), each reading its own
part of every minibatch through cntkio, end with the parameters of single-process training on the
same data (up to the summation order of the all-reduced gradients)."""
from __future__ import annotations

import numpy as np
import torch

import torchrun

from cntkio.actions.runner import run
from cntkio.networks import load_model


CONFIG = """
command = train:test
precision = double
deviceId = cpu
numCPUThreads = 1
progressBar = false
modelPath = {out}/model.dnn
reader = [
    readerType = CNTKTextFormatReader
    file = {data}
    randomize = false               # NoRandomizer: worker r takes the sequences at positions p % 2 == r
    input = [ features = [ dim = 4 ; format = dense ] ; labels = [ dim = 3 ; format = dense ] ]
]
train = [
    action = train
    SimpleNetworkBuilder = [ layerSizes = 4:8:3 ; layerTypes = Tanh ; applyMeanVarNorm = true ]
    # epochs of 96 = 6 global minibatches of 16 consecutive samples: process 0 takes the even
    # positions, process 1 the odd ones, together exactly the minibatch of a single process
    SGD = [ epochSize = 96 ; minibatchSize = 16 ; learningRatesPerMB = 0.5 ; momentumPerMB = 0.9 ; maxEpochs = 3
            numMBsToShowResult = 0 ]
]
test = [ action = test ; minibatchSize = 25 ]
"""


def _data(path) -> None:
    rng = np.random.default_rng(3)
    y = np.arange(100) % 3
    x = np.eye(3, 4)[y] * 2 + 0.4 * rng.standard_normal((100, 4))
    with open(path, "w") as f:
        for xi, yi in zip(x, y):
            f.write(f"|features {' '.join('%.4f' % v for v in xi)} |labels {' '.join('1' if k == yi else '0' for k in range(3))}\n")


def _launch(config, *extra):
    """Run ``cntkio configFile=config`` in two processes on localhost; return (rc, stdout, stderr)
    per process, asserting that both succeeded."""
    return torchrun.launch(["-m", "cntkio", f"configFile={config}", *extra], what="a training process")


def test_two_processes_match_single_process(tmp_path):
    _data(tmp_path / "data.ctf")
    for name in ("single", "dist"):
        (tmp_path / f"{name}.cntk").write_text(CONFIG.format(out=tmp_path / name, data=tmp_path / "data.ctf"))
    (_, _, single), (_, _, single_test) = run([f"configFile={tmp_path / 'single.cntk'}"])

    outputs = _launch(tmp_path / "dist.cntk")
    rank0, rank1 = outputs[0][1], outputs[1][1]
    assert "Finished Epoch[3 of 3]" in rank0 and "Final Results" in rank0
    assert rank1.strip() == ""                               # only process 0 prints
    # every epoch saw its 96 samples, split between the processes; the test read the 100 once
    assert rank0.count("* 96;") == 3 * 2 and "* 100;" in rank0
    a = load_model(str(tmp_path / "single" / "model.dnn")).network
    b = load_model(str(tmp_path / "dist" / "model.dnn")).network
    assert torch.allclose(a.MeanOfFeatures, b.MeanOfFeatures, rtol=1e-12, atol=1e-14)
    for (name, x), y in zip(a.named_parameters(), b.parameters()):
        assert torch.allclose(x, y, rtol=1e-9, atol=1e-11), name
    ckpt = load_model(str(tmp_path / "dist" / "model.dnn.1")).reader_checkpoint
    assert ckpt["world_size"] == 2 and len(ckpt["ranks"]) == 2


def test_randomized_one_chunk_file_trains_on_two_processes(tmp_path):
    """Randomized, a small file is one chunk and process 1 reads nothing (cntk-io-semantics 2.6):
    it still takes part in every step, and each epoch still covers its samples."""
    _data(tmp_path / "data.ctf")
    (tmp_path / "r.cntk").write_text(CONFIG.format(out=tmp_path / "r", data=tmp_path / "data.ctf"))
    outputs = _launch(tmp_path / "r.cntk", "reader=[randomize=true]", "train=[SGD=[epochSize=0]]")
    rank0 = outputs[0][1]
    assert [ln.split(":")[0] for ln in rank0.splitlines() if ln.startswith("Finished")] == \
        [f"Finished Epoch[{e} of 3]" for e in (1, 2, 3)]
    assert rank0.count("% * 100;") == 4          # 3 epochs of one sweep, and the test
    assert load_model(str(tmp_path / "r" / "model.dnn")).epoch == 3
