"""Issue 19, friction 5/6 in the actions that run a trained network on reader data (test, eval,
cv, write, testUnroll; adapt through train): a reader dim that does not match the network is a
ConfigError naming the stream, the node, both dims and the file/line of the reader's ``dim`` key
(from validation and from the action itself); torch's own errors are wrapped with the streams and
nodes involved; a missing or corrupt model file names the config key and line that named it."""
from __future__ import annotations

import pytest

from fakes import write_classes_ctf

from cntkio.networks import SimpleNetwork
from cntkio.actions.runner import run
from cntkio.actions.validate import validate_commands
from cntkio.config import load_config
from cntkio.errors import CntkioError, ConfigError


TRAIN = """command = train
deviceId = cpu
train = [
    action = train
    modelPath = {model}
    SimpleNetworkBuilder = [
        layerSizes = 4:8:3
        trainingCriterion = CrossEntropyWithSoftmax
        evalCriterion = ClassificationError
    ]
    SGD = [ minibatchSize = 8 ; learningRatesPerMB = 0.1 ; maxEpochs = 1 ]
    reader = [
        readerType = CNTKTextFormatReader
        file = {data}
        randomize = false
        input = [
            features = [ dim = 4 ; format = dense ]
            labels = [ dim = 3 ; format = dense ]
        ]
    ]
]
"""

# one command section per action; {extra} adds the action's own keys
COMMAND = """command = run
deviceId = cpu
run = [
    action = {action}
    modelPath = {model}
    minibatchSize = 8
{extra}
    reader = [
        readerType = CNTKTextFormatReader
        file = {data}
        randomize = false
        input = [
            features = [ dim = {dim} ; format = dense ]
            labels = [ dim = 3 ; format = dense ]
        ]
    ]
]
"""

ACTIONS = {
    "test": "",
    "eval": "",
    "cv": "    crossValidationInterval = 1:1:1",
    "write": "    outputPath = {out}/w\n    outputNodeNames = HLast",
    "testUnroll": "",
}

EXTRA = {**ACTIONS, "dumpnode": "    outputFile = {out}/nodes.txt"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("named")
    write_classes_ctf(tmp / "train.ctf", 24, 4)
    write_classes_ctf(tmp / "four.ctf", 12, 4, seed=1)
    write_classes_ctf(tmp / "five.ctf", 12, 5, seed=2)
    cfg = tmp / "train.cntk"
    cfg.write_text(TRAIN.format(model=tmp / "m.dnn", data=tmp / "train.ctf"))
    run([f"configFile={cfg}"])
    (tmp / "m.dnn.1").write_bytes((tmp / "m.dnn").read_bytes())       # cv reads modelPath.N
    return tmp


def _config(tmp, action, *, dim=4, data="four.ctf", model="m.dnn"):
    p = tmp / f"{action}-{dim}-{model.replace('/', '_')}.cntk"
    p.write_text(COMMAND.format(action=action, model=tmp / model, data=tmp / data, dim=dim,
                                extra=EXTRA[action].format(out=tmp / "out")))
    return p


def _line(path, text: str) -> int:
    return next(i for i, line in enumerate(open(path).read().splitlines(), 1) if text in line)


def _action(name):
    from cntkio.actions import get_action
    return get_action(name)


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_a_reader_dim_that_does_not_match_the_model_is_named_by_validation_and_by_the_action(trained, action):
    cfg = _config(trained, action, dim=5, data="five.ctf")
    line = _line(cfg, "dim = 5")
    # validation (what the runner does first): the reader's dim key against the model's input
    problems = [str(p) for p in validate_commands(load_config([f"configFile={cfg}"]), raise_errors=False).problems]
    assert problems == [f"{cfg}:{line}: run.reader.input.features.dim: stream 'features' has dim 5 but the network's "
                        f"input node 'features' has dim 4 (the model {trained / 'm.dnn'}) (make the reader's dim "
                        "and the network's size agree)"]
    # the action itself, past validation: a ConfigError, not torch's "mat1 and mat2 shapes" error
    section = load_config([f"configFile={cfg}"])("run")
    with pytest.raises(ConfigError) as err:
        _action(action)(section, "run")
    e = err.value
    assert e.reason == "stream 'features' delivers samples of dim 5 but the network's input node 'features' has dim 4"
    assert (e.path, e.file, e.line) == ("run.reader.input.features.dim", str(cfg), line)
    assert str(e).startswith(f"{cfg}:{line}: run.reader.input.features.dim: stream 'features' delivers")
    assert not isinstance(e.__cause__, RuntimeError)


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_torch_errors_inside_the_action_name_the_streams_and_nodes(trained, action, monkeypatch):
    cfg = _config(trained, action)

    def broken(self, *args, **kwargs):
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (8x4 and 5x8)")
    monkeypatch.setattr(SimpleNetwork, "forward", broken)
    monkeypatch.setattr(SimpleNetwork, "nodes", broken)
    with pytest.raises(CntkioError) as err:
        _action(action)(load_config([f"configFile={cfg}"])("run"), "run")
    text = str(err.value)
    desc = "m.dnn.1" if action == "cv" else "run"        # cv names the epoch file it evaluates
    assert text.startswith(f"{desc}: computing the network from stream 'features' (node 'features', tensor (8, 4))")
    if action != "write":                                 # write feeds the features only
        assert "against stream 'labels' (node 'labels', tensor (8, 3))" in text
    assert text.endswith("of run.reader failed: mat1 and mat2 shapes cannot be multiplied (8x4 and 5x8)")
    assert isinstance(err.value.__cause__, RuntimeError)


@pytest.mark.parametrize("action", sorted(ACTIONS) + ["dumpnode"])
def test_a_missing_or_corrupt_model_file_names_the_key_and_line_that_named_it(trained, action):
    (trained / "corrupt.dnn").write_bytes(b"this is not a model")
    (trained / "corrupt.dnn.1").write_bytes(b"this is not a model")
    for model, reason in (("missing.dnn", "model file {} does not exist"),
                          ("corrupt.dnn", "model file {} is not a cntkio model file")):
        cfg = _config(trained, action, model=model)
        line = _line(cfg, "modelPath")
        file = trained / (f"{model}.1" if action == "cv" else model)
        with pytest.raises(ConfigError) as err:
            _action(action)(load_config([f"configFile={cfg}"])("run"), "run")
        text = str(err.value)
        if action == "cv" and model == "missing.dnn":
            assert "no model file found for crossValidationInterval" in text       # cv skips missing files
            continue
        assert text.startswith(f"{cfg}:{line}: run.modelPath: " + reason.format(file)), text
        assert text.count(str(file)) == 1
        # validation says the same before any work (a missing file: its own words, same key and line)
        if action != "cv":
            problems = [str(p) for p in validate_commands(load_config([f"configFile={cfg}"]),
                                                          raise_errors=False).problems]
            assert problems and problems[0].startswith(f"{cfg}:{line}: run.modelPath: model file {file}"), problems


def test_adapt_names_original_model_file_name_when_the_file_is_corrupt(trained):
    (trained / "corrupt.dnn").write_bytes(b"this is not a model")
    cfg = trained / "adapt.cntk"
    text = TRAIN.format(model=trained / "adapted.dnn", data=trained / "train.ctf").replace(
        "action = train", f"action = adapt\n    originalModelFileName = {trained / 'corrupt.dnn'}")
    cfg.write_text(text)
    line = _line(cfg, "originalModelFileName")
    with pytest.raises(ConfigError) as err:
        _action("adapt")(load_config([f"configFile={cfg}"])("train"), "train")
    assert str(err.value).startswith(f"{cfg}:{line}: train.originalModelFileName: model file "
                                     f"{trained / 'corrupt.dnn'} is not a cntkio model file")
    assert not (trained / "adapted.dnn").exists()


def test_a_corrupt_model_in_a_mel_script_is_located_at_the_load_model_line(trained):
    from cntkio.networks.ndl.parser import NDLError
    (trained / "corrupt.dnn").write_bytes(b"this is not a model")
    mel = trained / "edit.mel"
    mel.write_text(f'# edit\nm = LoadModel("{trained / "corrupt.dnn"}")\n')
    cfg = trained / "edit.cntk"
    cfg.write_text(f"command = e\ne = [ action = edit ; editPath = {mel} ]\n")
    with pytest.raises(NDLError) as err:
        _action("edit")(load_config([f"configFile={cfg}"])("e"), "e")
    assert (err.value.file, err.value.line) == (str(mel), 2)
    assert f"LoadModel: model file {trained / 'corrupt.dnn'} is not a cntkio model file" in str(err.value)


def test_through_the_runner_validation_reports_the_dim_first_and_the_action_says_it_without_validation(trained):
    from cntkio.actions.runner import run_config
    cfg = _config(trained, "test", dim=5, data="five.ctf")
    line = _line(cfg, "dim = 5")
    # (one problem: validation raises it as it is; several: a ValidationError listing them)
    with pytest.raises(CntkioError, match=rf"{cfg}:{line}: run.reader.input.features.dim: stream 'features' "
                                              "has dim 5 but the network's input node 'features' has dim 4"):
        run([f"configFile={cfg}"])
    with pytest.raises(ConfigError, match=rf"^{cfg}:{line}: run.reader.input.features.dim: stream 'features' "
                                          "delivers samples of dim 5 but the network's input node 'features' has dim 4"):
        run_config(load_config([f"configFile={cfg}"]), validate=False)


def test_a_corrupt_epoch_file_met_by_make_mode_names_model_path(trained):
    out = trained / "resume"
    out.mkdir()
    (out / "m.dnn.1").write_bytes(b"half a model")         # epoch 1 of 2 "written", then corrupted
    cfg = trained / "resume.cntk"
    cfg.write_text(TRAIN.format(model=out / "m.dnn", data=trained / "train.ctf").replace("maxEpochs = 1", "maxEpochs = 2"))
    line = _line(cfg, "modelPath")
    expected = f"{cfg}:{line}: train.modelPath: model file {out / 'm.dnn.1'} is not a cntkio model file"
    with pytest.raises(CntkioError, match=expected.replace(".", r"\.")):
        run([f"configFile={cfg}"])
    with pytest.raises(ConfigError) as err:
        _action("train")(load_config([f"configFile={cfg}"])("train"), "train")
    assert str(err.value).startswith(expected)
    assert not (out / "m.dnn").exists()
