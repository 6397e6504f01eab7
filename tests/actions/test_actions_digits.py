"""The main job: examples/digits/digits.cntk trains an MLP on the 8x8 digits and its test command
ends under 5% error; train_torch.py runs the same data through the Python API and plain PyTorch."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import cntkio
from cntkio.actions.runner import run
import paths

ROOT = str(paths.REPO)
DIGITS = os.path.join(ROOT, "examples", "digits")
SRC = os.path.dirname(os.path.dirname(os.path.abspath(cntkio.__file__)))


def test_digits_config_trains_under_5_percent(tmp_path, capsys):
    results = run([f"configFile={DIGITS}/digits.cntk", f"dataDir={DIGITS}", f"outDir={tmp_path}",
                   "progressBar=false"])
    (train_name, _, train), (test_name, _, test) = results
    assert (train_name, test_name) == ("digitsTrain", "digitsTest")
    assert sorted(os.listdir(tmp_path)) == ["digits.dnn"] + [f"digits.dnn.{i}" for i in range(1, 6)]
    assert [e.samples for e in train.epochs] == [1437] * 6
    assert test.samples == 360
    assert test.averages["EvalClassificationError"] < 0.05
    out = capsys.readouterr().out
    assert re.search(r"Final Results: Minibatch\[1-1\]: EvalClassificationError = \d\.\d{3}% \* 360", out)


def test_train_torch_example_under_5_percent():
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, os.path.join(DIGITS, "train_torch.py"), "--epochs", "4"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert [ln.split(":")[0] for ln in lines[:4]] == [f"epoch {i}" for i in range(1, 5)]
    error = float(re.search(r"test error: ([\d.]+)% of 360 samples", proc.stdout).group(1))
    assert error < 5.0
