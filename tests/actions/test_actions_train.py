"""The train action's resume rule: a run interrupted after epoch 1 and rerun ends with exactly the
parameters of an uninterrupted run (makeMode, model files with SGD state and reader checkpoint)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import cntkio
from cntkio.actions.runner import run
from cntkio.actions.train import first_missing_epoch
from cntkio.networks import load_model

SRC = os.path.dirname(os.path.dirname(os.path.abspath(cntkio.__file__)))

CONFIG = """
command = train
precision = double
deviceId = cpu
numCPUThreads = 1
progressBar = false
train = [
    action = train
    modelPath = {out}/model.dnn
    SimpleNetworkBuilder = [ layerSizes = 4:16:3 ; layerTypes = Sigmoid ]
    SGD = [
        epochSize = 900                 # ten sweeps of the 90 samples per epoch
        minibatchSize = 10:20
        learningRatesPerMB = 0.4*2:0.1
        momentumPerMB = 0.9
        L2RegWeight = 0.001
        maxEpochs = 4
        numMBsToShowResult = 0
    ]
    reader = [
        readerType = CNTKTextFormatReader
        file = {data}
        randomize = true
        input = [ features = [ dim = 4 ; format = dense ] ; labels = [ dim = 3 ; format = dense ] ]
    ]
]
"""


def _data(path) -> None:
    rng = np.random.default_rng(7)
    y = np.arange(90) % 3
    x = np.eye(3, 4)[y] * 2 + 0.5 * rng.standard_normal((90, 4))
    with open(path, "w") as f:
        for xi, yi in zip(x, y):
            f.write(f"|features {' '.join('%.4f' % v for v in xi)} |labels {' '.join('1' if k == yi else '0' for k in range(3))}\n")


@pytest.fixture()
def setup(tmp_path):
    _data(tmp_path / "data.ctf")

    def make(name):
        cfg = tmp_path / f"{name}.cntk"
        cfg.write_text(CONFIG.format(out=tmp_path / name, data=tmp_path / "data.ctf"))
        return cfg, tmp_path / name
    return make


def _params(path):
    mf = load_model(str(path))
    return [p.detach().clone() for p in mf.network.parameters()], mf.optimizer["smoothed"]


def _assert_same(a, b):
    for x, y in zip(a[0] + a[1], b[0] + b[1]):
        assert torch.equal(x, y)


def test_first_missing_epoch(tmp_path):
    m = str(tmp_path / "m")
    assert first_missing_epoch(m, 3) == 0
    open(m + ".1", "w").close()
    open(m + ".2", "w").close()
    assert first_missing_epoch(m, 3) == 2
    open(m, "w").close()
    assert first_missing_epoch(m, 3) == 3


@pytest.mark.parametrize("done", [1, 2, 3])
def test_resume_from_epoch_file_matches_uninterrupted(setup, done):
    cfg_a, out_a = setup("a")
    (_, _, full), = run([f"configFile={cfg_a}"])
    assert [len(full.epochs), full.start_epoch] == [4, 1]
    cfg_b, out_b = setup("b")
    run([f"configFile={cfg_b}"])
    later = [f"model.dnn.{e}" for e in range(done + 1, 4)] + ["model.dnn"]
    for f in later:
        os.remove(out_b / f)                               # as if killed during epoch done+1
    (_, _, resumed), = run([f"configFile={cfg_b}"])
    assert resumed.start_epoch == done + 1 and len(resumed.epochs) == 4 - done
    # the resumed epochs read the same data and computed the same criteria
    assert [e.totals for e in resumed.epochs] == [e.totals for e in full.epochs[done:]]
    for f in later:
        _assert_same(_params(out_a / f), _params(out_b / f))
    # the reader checkpoint stored with an epoch is the timeline position at its end
    ckpt = load_model(str(out_a / f"model.dnn.{done}")).reader_checkpoint
    assert ckpt["world_size"] == 1 and ckpt["ranks"][0]["minibatchSourcePosition"] == 900 * done


def test_killed_run_resumes_exactly(setup):
    # longer epochs (40 sweeps), so that the kill lands well before the last epoch ends
    longer = "train=[SGD=[epochSize=3600]]"
    cfg_a, out_a = setup("a")
    run([f"configFile={cfg_a}", longer])
    cfg_b, out_b = setup("b")
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "cntkio", f"configFile={cfg_b}", longer], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    try:
        while not os.path.exists(out_b / "model.dnn.1"):
            if proc.poll() is not None:
                pytest.fail(f"training exited before epoch 1 ended: {proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail("epoch 1 did not end within 120 s")
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stderr.close()
    assert not os.path.exists(out_b / "model.dnn"), "the run finished before it could be killed"
    done = first_missing_epoch(str(out_b / "model.dnn"), 4)
    assert 1 <= done < 4
    (_, _, resumed), = run([f"configFile={cfg_b}", longer])
    assert resumed.start_epoch == done + 1
    _assert_same(_params(out_a / "model.dnn"), _params(out_b / "model.dnn"))


def test_resume_keeps_going_after_a_partial_temp_file(setup):
    """A kill while saving leaves at most a temp file, never a truncated epoch file."""
    cfg, out = setup("c")
    run([f"configFile={cfg}"])
    shutil.copy(out / "model.dnn.1", out / "model.dnn.2.tmp-12345")
    with open(out / "model.dnn.2.tmp-12345", "r+b") as f:
        f.truncate(100)
    for f in ("model.dnn.2", "model.dnn.3", "model.dnn"):
        os.remove(out / f)
    (_, _, resumed), = run([f"configFile={cfg}"])
    assert resumed.start_epoch == 2
    assert load_model(str(out / "model.dnn")).epoch == 4
