"""cntkio.endtoend.runner: CNTK's run-test command line, run in this process."""
import os

import pytest

from cntkio.endtoend import cntk_arguments, cntkrun
from cntkio.endtoend.runner import split_arguments, working_directory
from cntkio.errors import ConfigError

TINY = """
command = train:test
deviceId = $DeviceId$
modelPath = "$RunDir$/Models/m.dnn"
train = [
    action = train
    SimpleNetworkBuilder = [ layerSizes = 2:3:2 ; trainingCriterion = CrossEntropyWithSoftmax ; evalCriterion = ClassificationError ]
    SGD = [ epochSize = 0 ; minibatchSize = 4 ; learningRatesPerMB = 0.1 ; maxEpochs = 2 ]
    reader = [ readerType = CNTKTextFormatReader ; file = data.ctf ; input = [ features = [ dim = 2 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ]
]
test = [
    action = test
    reader = [ readerType = CNTKTextFormatReader ; file = data.ctf ; input = [ features = [ dim = 2 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ]
]
"""


def test_the_command_line_is_run_test_commons():
    argv = cntk_arguments("a.cntk+b.cntk", 'x=[y=1] imageLayout="cudnn"', config_dir="/c", run_dir="/r",
                          data_dir="/d", device_id=0)
    assert argv == ["configFile=/c/a.cntk+/c/b.cntk", "currentDirectory=/d", "RunDir=/r", "DataDir=/d",
                    "ConfigDir=/c", "OutputDir=/r", "DeviceId=0", "timestamping=true", "x=[y=1]",
                    'imageLayout="cudnn"']


def test_arguments_split_at_white_space_only_as_an_unquoted_shell_variable():
    assert split_arguments('a=1  b="x y" c=[d=2]') == ["a=1", 'b="x', 'y"', "c=[d=2]"]
    assert split_arguments(["a=1", "b=x y"]) == ["a=1", "b=x y"]


def test_working_directory_comes_back_after_an_error(tmp_path):
    before = os.getcwd()
    with pytest.raises(RuntimeError):
        with working_directory(str(tmp_path)):
            assert os.getcwd() == str(tmp_path)
            raise RuntimeError("boom")
    assert os.getcwd() == before


def _tiny(tmp_path, text=TINY):
    cfg, data, run = tmp_path / "cfg", tmp_path / "data", tmp_path / "run"
    for d in (cfg, data, run):
        d.mkdir()
    (cfg / "t.cntk").write_text(text)
    rows = [f"|features {a} {b} |labels {int(a > b)} {int(a <= b)}" for a, b in ((0.1, 0.9), (0.8, 0.2)) * 4]
    (data / "data.ctf").write_text("\n".join(rows) + "\n")
    return cfg, data, run


def test_cntkrun_runs_in_the_data_directory_and_reports_what_ran(tmp_path):
    cfg, data, run = _tiny(tmp_path)
    before = os.getcwd()
    out = cntkrun("t.cntk", "", config_dir=str(cfg), run_dir=str(run), data_dir=str(data))
    assert os.getcwd() == before                      # the process's directory is given back
    assert out.completed and out.error is None
    assert out.commands == ["train", "test"] and out.actions == ["train", "test"]
    train = out.results[0][2]
    assert [e.samples for e in train.epochs] == [8, 8]
    assert (run / "Models" / "m.dnn").exists()         # $RunDir$ and the relative data file resolved
    assert "Finished Epoch[2 of 2]" in out.output


def test_cntkrun_returns_cntkios_error_and_what_ran_before_it(tmp_path):
    cfg, data, run = _tiny(tmp_path, TINY.replace("test = [\n    action = test", "test = [\n    action = tset"))
    out = cntkrun("t.cntk", "", config_dir=str(cfg), run_dir=str(run), data_dir=str(data))
    assert not out.completed and isinstance(out.error, ConfigError)
    assert "unknown action 'tset'" in str(out.error) and out.results == []   # refused before any work
    assert "cntkio: error:" in out.output


def test_overrides_come_after_the_run_tests_arguments(tmp_path):
    cfg, data, run = _tiny(tmp_path)
    out = cntkrun("t.cntk", "train=[SGD=[maxEpochs=3]]", config_dir=str(cfg), run_dir=str(run), data_dir=str(data),
                  overrides=["train=[SGD=[maxEpochs=1]]", "command=train"])
    assert out.commands == ["train"] and out.results[0][2].max_epochs == 1
