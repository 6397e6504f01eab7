"""examples/speech/speech.cntk: a frame classifier trained through the legacy HTKMLFReader (HTK
archives listed in SCP files, MLF labels over 24 states, a 5-frame context window) ends under 8%
frame error on its test set; the committed data is what make_data.py writes."""
from __future__ import annotations

import filecmp
import os
import sys

from cntkio.actions.runner import run
import paths

SPEECH = os.path.join(str(paths.REPO), "examples", "speech")


def test_speech_config_trains_a_frame_classifier(tmp_path):
    data = os.path.join(SPEECH, "data")
    results = run([f"configFile={SPEECH}/speech.cntk", f"dataDir={data}", f"outDir={tmp_path}",
                   "progressBar=false"])
    (train_name, _, train), (test_name, _, test) = results
    assert (train_name, test_name) == ("speechTrain", "speechTest")
    frames = sum(int(ln.rsplit(",", 1)[1].rstrip("]\n")) - int(ln.rsplit("[", 1)[1].split(",")[0]) + 1
                 for ln in open(os.path.join(data, "train.scp")))
    assert [e.samples for e in train.epochs] == [frames] * 10          # frame mode: every frame once
    assert test.samples == 1231
    assert test.averages["EvalClassificationError"] < 0.08


def test_the_committed_data_is_what_make_data_writes(tmp_path):
    sys.path.insert(0, SPEECH)
    try:
        import make_data
    finally:
        sys.path.remove(SPEECH)
    make_data.main(str(tmp_path))
    names = sorted(os.listdir(os.path.join(SPEECH, "data")))
    assert names == sorted(os.listdir(tmp_path))
    match, mismatch, errors = filecmp.cmpfiles(os.path.join(SPEECH, "data"), tmp_path, names, shallow=False)
    assert mismatch == [] and errors == []
