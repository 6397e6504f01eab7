"""autoAdjustMinibatch=true (CNTK's minibatch-size search) is refused before training, naming the
key, the file and the line, and saying what to write instead; false (CNTK's default) trains."""
from __future__ import annotations

import pytest

from cntkio.actions.runner import run
from cntkio.errors import NotImplementedInCntkio

CONFIG = """\
command = train
deviceId = cpu
progressBar = false
modelPath = {out}/model.dnn
train = [
    action = train
    SimpleNetworkBuilder = [ layerSizes = 2:4:2 ]
    SGD = [ maxEpochs = 1 ; learningRatesPerSample = 0.1 ; minibatchSize = 4
            AutoAdjust = [
                autoAdjustMinibatch = {value}
                minibatchSizeTuningMax = 64
            ]
    ]
    reader = [ readerType = CNTKTextFormatReader ; file = {data} ; randomize = false
               input = [ features = [ dim = 2 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ]
]
"""


def _config(tmp_path, value):
    data = tmp_path / "d.ctf"
    data.write_text("".join(f"|features {i % 2} {1 - i % 2} |labels {i % 2} {1 - i % 2}\n" for i in range(8)))
    cfg = tmp_path / f"{value}.cntk"
    cfg.write_text(CONFIG.format(out=tmp_path / value, data=data, value=value))
    return cfg


def test_true_is_refused_with_file_line_and_key(tmp_path):
    cfg = _config(tmp_path, "true")
    with pytest.raises(NotImplementedInCntkio) as e:
        run([f"configFile={cfg}"])
    text = str(e.value)
    assert text.startswith(f"{cfg}:10: ") and "train.SGD.AutoAdjust.autoAdjustMinibatch=true" in text
    assert "minibatchSize = 256:512*2:1024" in text
    assert not (tmp_path / "true").exists()                       # refused before anything is written


def test_false_trains(tmp_path):
    cfg = _config(tmp_path, "false")
    (_, _, result), = run([f"configFile={cfg}"])
    assert len(result.epochs) == 1 and (tmp_path / "false" / "model.dnn").exists()
