"""CNTK's ATIS slot-tagging config (tests/data/brainscript/atis.cntk: Train with three sparse word
inputs and BS.RNNs.RecurrentLSTMPStack, Output writing Hardmax of BS.Network.Load's model, Test
evaluating it) through the actions, on generated sentences in the example's format: the
previous, current and next word of each word, and a label that depends on the previous word."""
from __future__ import annotations

import os
import random

import numpy as np

from cntkio.actions.runner import run
import paths

CONFIG = os.path.join(str(paths.DATA), "brainscript", "atis.cntk")
WORDS, LABELS, EDGE = 21, 5, 20        # word 20 stands before the first and after the last word


def _sentences(path, count: int, seed: int) -> list[int]:
    rnd = random.Random(seed)
    lines, labels = [], []
    for s in range(count):
        ws = [rnd.randrange(20) for _ in range(rnd.randint(2, 8))]
        for t, w in enumerate(ws):
            label = w % 3 if w < 10 else (3 if t and ws[t - 1] < 10 else 4)
            pw = ws[t - 1] if t else EDGE
            nw = ws[t + 1] if t + 1 < len(ws) else EDGE
            lines.append(f"{s} |PW {pw}:1 |CW {w}:1 |NW {nw}:1 |L {label}:1")
            labels.append(label)
    path.write_text("\n".join(lines) + "\n")
    return labels


def test_atis_config_trains_writes_and_tests(tmp_path):
    _sentences(tmp_path / "ATIS.train.cntk.sparse", 300, 1)
    test_labels = _sentences(tmp_path / "ATIS.test.cntk.sparse", 80, 2)
    results = run([f"configFile={CONFIG}", f"DataDir={tmp_path}", f"OutputDir={tmp_path}/work",
                   f"wordCount={WORDS}", f"labelCount={LABELS}", "Train=[SGD=[maxEpochs=2;epochSize=0]]",
                   "progressBar=false"])
    assert [r[0] for r in results] == ["Train", "Output", "Test"]
    test = results[2][2]
    assert test.samples == len(test_labels)
    assert test.averages["errorRate"] < 0.1                       # chance: about 0.7
    written = np.loadtxt(tmp_path / "work" / "model.writeaction.final")
    assert written.shape == (len(test_labels), LABELS)
    assert (written.sum(1) == 1).all()                            # Hardmax: one 1 per word
    assert (written.argmax(1) == np.array(test_labels)).mean() > 0.9
