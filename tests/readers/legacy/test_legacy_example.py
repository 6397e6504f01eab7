"""examples/legacy/mnist.cntk: the configuration spec's MNIST train/test pair with readerType =
UCIFastReader, on the shipped digits in UCI format, trains to under 5% test error; the UCI files
are the digits CTF files, record for record."""
from __future__ import annotations

import os

import numpy as np

from cntkio.actions.runner import run
import paths

LEGACY = os.path.join(str(paths.REPO), "examples", "legacy")
DIGITS = os.path.join(str(paths.REPO), "examples", "digits")


def test_uci_files_hold_the_digits():
    uci = np.loadtxt(os.path.join(LEGACY, "digits_test.txt"))
    rows = []
    for line in open(os.path.join(DIGITS, "digits_test.ctf")):
        lab, feat = line.split("|features")
        onehot = np.array(lab.split()[1:], float)
        rows.append([onehot.argmax(), *map(float, feat.split())])
    np.testing.assert_array_equal(uci, np.array(rows))


def test_mnist_config_with_ucifastreader_trains_under_5_percent(tmp_path):
    results = run([f"configFile={LEGACY}/mnist.cntk", f"dataDir={LEGACY}", f"outDir={tmp_path}",
                   "progressBar=false"])
    (train_name, _, train), (test_name, _, test) = results
    assert (train_name, test_name) == ("mnistTrain", "mnistTest")
    assert [e.samples for e in train.epochs] == [1437] * 8
    assert test.samples == 360
    assert test.averages["EvalClassificationError"] < 0.05
