"""makeMode with an existing final model: a config whose network or training settings differ from
those the model was trained with stops, saying what differs, instead of testing the old model; a
file at modelPath that is not a cntkio model is a clear error (issue 31, item 5)."""
from __future__ import annotations

import pytest

from cntkio.actions.runner import run
from cntkio.actions.validate import validate_commands
from cntkio.cli import main
from cntkio.config import load_config
from cntkio.errors import ConfigError

from train_config import line_of


@pytest.fixture
def trained(setup):
    tmp, write = setup
    cfg = write(epochs=1)
    run([f"configFile={cfg}"])
    assert (tmp / "out" / "m.dnn").exists()
    return tmp, write


def test_a_changed_network_stops_before_testing_the_old_model(trained, capsys):
    tmp, write = trained
    capsys.readouterr()
    cfg = write(epochs=1, **{"layerSizes = 4:8:3": "layerSizes = 4:16:3"})
    with pytest.raises(ConfigError) as err:
        run([f"configFile={cfg}"])
    text = str(err.value)
    assert "the final model" in text and str(tmp / "out" / "m.dnn") in text
    assert "train.SimpleNetworkBuilder.layerSizes: 4:8:3 in the model, 4:16:3 in the configuration" in text
    assert "makeMode=false" in text and "another modelPath" in text
    assert "Final Results" not in capsys.readouterr().out          # the old model was not tested
    assert err.value.line == line_of(cfg, "layerSizes")
    # validate finds it too, before any work
    report = validate_commands(load_config([f"configFile={cfg}"]), raise_errors=False)
    assert [p for p in report.problems if "layerSizes" in str(p)]
    assert main([f"configFile={cfg}", "makeMode=false"]) == 0       # the way out it names


def test_changed_training_settings_stop_and_unchanged_ones_test_the_model(trained, capsys):
    tmp, write = trained
    cfg = write(epochs=1, **{"learningRatesPerMB = 0.1": "learningRatesPerMB = 0.5"})
    with pytest.raises(ConfigError, match=r"train.SGD.learningRatesPerMB: 0.1 in the model, 0.5 in the configuration"):
        run([f"configFile={cfg}"])
    capsys.readouterr()
    # output-only settings (numMBsToShowResult) change nothing: the model is tested as before
    run([f"configFile={write(epochs=1, **{'learningRatesPerMB = 0.1': 'learningRatesPerMB = 0.1 ; numMBsToShowResult = 3'})}"])
    out = capsys.readouterr().out
    assert "no further training is necessary" in out and "Final Results" in out


@pytest.mark.parametrize("kind", ["text", "torch"])
def test_a_file_at_model_path_that_is_not_a_cntkio_model_is_a_clear_error(setup, kind):
    import torch
    tmp, write = setup
    model = tmp / "foreign.dnn"
    if kind == "text":
        model.write_text("not a model\n")
    else:
        torch.save(torch.nn.Linear(2, 2), model)        # a pickled module, as torch users save them
    cfg = write(model=model, **{"command = train:test": "command = test"})
    with pytest.raises(ConfigError) as err:
        run([f"configFile={cfg}"])
    text = str(err.value)
    assert f"model file {model} is not a cntkio model file" in text
    assert "weights_only" not in text and "WeightsUnpickler" not in text
    assert err.value.line == line_of(cfg, "modelPath")
