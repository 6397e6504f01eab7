"""Issue 19's frictions 2-6: unused/misspelled keys, validation before work (all problems at once,
``cntkio validate``), makeMode that notices a changed network, early and clear failures."""
from __future__ import annotations

import logging
import os

import pytest

from cntkio.actions.fingerprint import FINGERPRINT_KEY
from cntkio.networks import load_model
from cntkio.actions.runner import run
from cntkio.actions.validate import ValidationError, validate_commands
from cntkio.cli import main
from cntkio.config import load_config
from cntkio.errors import CntkioError, ConfigError

import paths
from train_config import line_of as _line

EXAMPLES = paths.REPO / "examples"


# --- friction 2: unused and misspelled keys --------------------------------------------------------------

def test_a_misspelt_optional_key_is_a_warning_with_the_closest_known_key(setup, caplog):
    tmp, write = setup
    cfg = write(**{"minibatchSize = 8": "minibatchSzie = 8"})
    report = validate_commands(load_config([f"configFile={cfg}"]), raise_errors=False)
    assert report.ok
    [u] = report.unused
    assert u.path == "train.SGD.minibatchSzie" and u.suggestion == "minibatchSize"
    assert u.file == str(cfg) and u.line == _line(cfg, "minibatchSzie")
    assert str(u).endswith("`train.SGD.minibatchSzie`: not used \N{EM DASH} did you mean `minibatchSize`?")
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        run([f"configFile={cfg}", "train=[SGD=[maxEpochs=1]]"])
    assert any("minibatchSzie`: not used" in r.getMessage() and "`minibatchSize`" in r.getMessage()
               for r in caplog.records)


def test_strict_makes_unused_keys_errors_before_any_work(setup, capsys):
    tmp, write = setup
    cfg = write(**{"minibatchSize = 8": "minibatchSize = 8\n        learningRatesPerMb2 = 3",
                   "format = dense ]\n            labels = [ dim = 3 ; format = dense ]\n        ]\n    ]\n]\ntest":
                   "format = dense ; alais = f ]\n            labels = [ dim = 3 ; format = dense ]\n        ]\n    ]\n]\ntest"})
    with pytest.raises(ValidationError) as err:
        run([f"configFile={cfg}"], strict=True)
    text = str(err.value)
    assert "`train.SGD.learningRatesPerMb2`: not used" in text
    assert "`train.reader.input.features.alais`: not used \N{EM DASH} did you mean `alias`?" in text
    assert not (tmp / "out").exists()          # nothing trained
    assert main(["--strict", f"configFile={cfg}"]) == 1
    assert "learningRatesPerMb2" in capsys.readouterr().err


def test_keys_read_through_variables_parents_and_readers_count_as_used(setup):
    tmp, write = setup
    cfg = write(**{"command = train:test": "command = train:test\nmb = 8\nlr = 0.1\nrandomize = false",
                   "minibatchSize = 8": "minibatchSize = $mb$", "learningRatesPerMB = 0.1": "learningRatesPerMB = $lr$",
                   "        randomize = false\n": ""})
    report = validate_commands(load_config([f"configFile={cfg}"]), raise_errors=False)
    assert report.ok and report.unused == []


@pytest.mark.parametrize("config", sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.glob("*/*.cntk")))
def test_the_shipped_examples_validate_without_a_warning(config):
    cwd = os.getcwd()
    os.chdir(paths.REPO)
    try:
        report = validate_commands(load_config([f"configFile=examples/{config}"]), strict=True, raise_errors=False)
    finally:
        os.chdir(cwd)
    assert report.unused == [] and report.problems == []


# --- friction 3/4/5: validation before work, all problems at once --------------------------------------

def test_every_problem_of_every_command_is_reported_at_once_before_training(setup, capsys):
    tmp, write = setup
    (tmp / "blocker").write_text("a file, not a directory")
    cfg = write(model=tmp / "blocker" / "m.dnn",
                **{"file = " + str(tmp / "test.ctf"): "file = " + str(tmp / "missing.ctf"),
                   "layerSizes = 4:8:3": "layerSizes = 5:8:3"})
    with pytest.raises(ValidationError) as err:
        run([f"configFile={cfg}"])
    problems = err.value.problems
    text = str(err.value)
    assert len(problems) == 4, text
    # the unwritable modelPath, naming the key and where it was written
    assert f"{cfg}:{_line(cfg, 'modelPath')}: modelPath: the model file cannot be written" in text
    # the test section's missing file, before any training
    assert f"{cfg}:{_line(cfg, 'missing.ctf')}: test.reader.file: input file {tmp / 'missing.ctf'} does not exist" in text
    # the reader's dim against the network's input, in train and in test
    assert "train.reader.input.features.dim: stream 'features' has dim 4 but the network's input node " \
           "'features' has dim 5 (train.SimpleNetworkBuilder.layerSizes = 5:8:3 at" in text
    assert "test.reader.input.features.dim" in text
    assert not (tmp / "blocker").is_dir()
    # cntkio validate: the same problems, exit status 1, nothing run
    assert main(["validate", f"configFile={cfg}"]) == 1
    err_text = capsys.readouterr().err
    assert "4 problems found" in err_text and "does not exist" in err_text


def test_validate_passes_a_good_config_and_runs_nothing(setup, capsys):
    tmp, write = setup
    cfg = write()
    assert main(["validate", f"configFile={cfg}"]) == 0
    assert "no problems found" in capsys.readouterr().out
    assert not (tmp / "out").exists()


def test_an_unwritable_model_path_fails_before_the_first_epoch(setup):
    from cntkio.actions.train import train
    tmp, write = setup
    (tmp / "blocker").write_text("x")
    cfg = load_config([f"configFile={write(model=tmp / 'blocker' / 'm.dnn')}"])
    with pytest.raises(ConfigError, match=r"modelPath: the model file cannot be written: .*blocker is not a directory") as err:
        train(cfg("train"), "train")          # the action alone, without the runner's validation
    assert err.value.line == _line(tmp / "c.cntk", "modelPath")


# --- friction 4: makeMode and the configuration fingerprint ---------------------------------------------

def test_make_mode_stops_when_the_network_changed_and_force_resume_goes_on(setup, caplog):
    tmp, write = setup
    cfg = write(epochs=3)
    run([f"configFile={cfg}", "command=train", "train=[SGD=[maxEpochs=1]]", "train=[SGD=[modelPath=" +
         str(tmp / "out" / "m.dnn") + "]]"])
    # an interrupted 3-epoch run: epoch 1's file exists under its 3-epoch name
    os.replace(tmp / "out" / "m.dnn", tmp / "out" / "m.dnn.1")
    saved = load_model(str(tmp / "out" / "m.dnn.1")).info[FINGERPRINT_KEY]
    assert set(saved) == {"network", "reader"}
    changed = write(epochs=3, **{"layerSizes = 4:8:3": "layerSizes = 4:16:3"})
    with pytest.raises(ConfigError, match=r"makeMode would resume from .*m\.dnn\.1 \(epoch 1 of 3\), but the network "
                                          r"description changed since it was written.*forceResume=true"):
        run([f"configFile={changed}", "command=train"])
    assert not (tmp / "out" / "m.dnn.2").exists()
    # a changed reader stream is noticed too
    reader = write(epochs=3, **{"labels = [ dim = 3 ; format = dense ]\n        ]\n    ]\n]\ntest":
                                "labels = [ dim = 3 ; format = dense ; alias = y ]\n        ]\n    ]\n]\ntest"})
    with pytest.raises(ConfigError, match="the reader's streams changed"):
        run([f"configFile={reader}", "command=train"])
    # forceResume=true: resumes with the saved network (the old architecture), with a warning
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        result = run([f"configFile={changed}", "command=train", "forceResume=true"])
    assert result[0][2].start_epoch == 2 and (tmp / "out" / "m.dnn").exists()
    assert any("resuming anyway (forceResume=true)" in r.getMessage() for r in caplog.records)
    # the unchanged configuration resumes silently
    os.remove(tmp / "out" / "m.dnn")
    os.remove(tmp / "out" / "m.dnn.2")
    assert run([f"configFile={cfg}", "command=train"])[0][2].start_epoch == 2


# --- friction 6: dims and torch errors named -------------------------------------------------------------

def test_a_reader_dim_that_does_not_match_the_network_is_a_config_error_not_a_torch_traceback(setup):
    from cntkio.actions.train import train
    tmp, write = setup
    cfg = write(**{"layerSizes = 4:8:3": "layerSizes = 6:8:3"})
    section = load_config([f"configFile={cfg}"])("train")
    with pytest.raises(ConfigError) as err:
        train(section, "train")               # the action itself, past validation
    text = str(err.value)
    assert "stream 'features' delivers samples of dim 4 but the network's input node 'features' has dim 6" in text
    assert err.value.path == "train.reader.input.features.dim"
    with pytest.raises(ValidationError):   # two commands, two problems, through the runner
        run([f"configFile={cfg}"])


def test_torch_errors_inside_training_name_the_nodes_and_streams(setup, monkeypatch):
    from cntkio.actions import train as train_mod
    from cntkio.networks import SimpleNetwork
    tmp, write = setup
    cfg = write()

    def broken(self, x):
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (8x4 and 5x8)")
    monkeypatch.setattr(SimpleNetwork, "forward", broken)
    with pytest.raises(CntkioError) as err:
        train_mod.train(load_config([f"configFile={cfg}"])("train"), "train")
    text = str(err.value)
    assert "stream 'features' (node 'features', tensor (8, 4))" in text
    assert "stream 'labels' (node 'labels', tensor (8, 3))" in text
    assert "mat1 and mat2 shapes cannot be multiplied" in text


# --- friction 1 in training: streams of one minibatch that are not aligned --------------------------------

def test_an_undeclared_alias_is_a_clear_error_in_training_not_a_torch_shape_error(setup):
    from cntkio.actions.train import train
    tmp, write = setup
    # the file writes |labels; the reader declares alias lbl, so the labels stream reads no sample
    cfg = write(**{"labels = [ dim = 3 ; format = dense ]\n        ]\n    ]\n]\ntest":
                   "labels = [ dim = 3 ; format = dense ; alias = lbl ]\n        ]\n    ]\n]\ntest"})
    with pytest.raises(ConfigError, match=r"the streams of one minibatch have different numbers of samples "
                                          r"\('features': 8 samples, 'labels': 0 samples\)") as err:
        train(load_config([f"configFile={cfg}"])("train"), "train")
    assert err.value.path == "train.reader"


def test_a_file_error_names_the_key_and_line_that_named_the_file_and_the_path_once(tmp_path):
    from cntkio.readers import build_reader
    cfg = tmp_path / "r.cntk"
    missing = tmp_path / "nope.ctf"
    cfg.write_text(f"r = [\n    readerType = CNTKTextFormatReader\n    file = {missing}\n"
                   "    input = [ x = [ dim = 2 ; format = dense ] ]\n]\n")
    with pytest.raises(FileNotFoundError) as err:
        build_reader(load_config([f"configFile={cfg}"])("r"))
    text = str(err.value)
    assert text.startswith(f"{cfg}:3: r.file: CTF input file does not exist (the 'file' of a "
                           "CNTKTextFormatDeserializer): ")
    assert text.count(str(missing)) == 1


def test_a_misspelt_top_level_setting_is_reported_and_other_commands_variables_are_not(tmp_path):
    from cntkio.config import parse_config
    data = paths.REPO / "examples" / "digits" / "digits_test.ctf"
    root = parse_config(f"command = s\ntraceLevle = 2\nModelDir = models\noutputNodeNames = z\n"
                        f"s = [action = dumpReader ; outputFile = {tmp_path / 'o.txt'}\n"
                        f"     reader = [readerType = CNTKTextFormatReader ; file = {data}\n"
                        f"               input = [features = [dim = 64 ; format = dense]]]]\n", file="t.cntk")
    assert [str(u) for u in validate_commands(root, raise_errors=False).unused] == [
        "t.cntk:2: `traceLevle`: not used \N{EM DASH} did you mean `traceLevel`?"]


@paths.needs_shared
def test_the_conformance_configs_give_no_unused_key_warning(tmp_path, monkeypatch):
    monkeypatch.chdir(paths.CONFORMANCE / "Data")
    checked = 0
    for cfg in sorted((paths.CONFORMANCE / "Config").rglob("*.cntk")):
        root = load_config([f"configFile={cfg}"])
        for sec in [k for k, v in root.items() if hasattr(v, "keys")]:
            run_cfg = load_config([f"configFile={cfg}", f"command={sec}",
                                   f"{sec}=[action=dumpReader; outputFile={tmp_path / 'o.txt'}; epochSize=10; "
                                   "minibatchSize=10; maxEpochs=1]"])
            assert validate_commands(run_cfg, raise_errors=False).unused == [], (cfg, sec)
            checked += 1
    assert checked >= 40


def test_validate_help(capsys):
    assert main(["validate", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: cntkio validate ")
    assert main(["validate"]) == 2
