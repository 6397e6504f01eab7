"""BrainScript networks through the config actions: examples/brainscript trains and tests on the
shipped digits (inline network, and include "net.bs"), show-network prints them, and the model
file loads back."""
from __future__ import annotations

import io
import os

import pytest

from cntkio.networks import load_model
from cntkio.actions.runner import run
from cntkio.tools.show_network import main as show_network
import paths

EX = os.path.join(str(paths.REPO), "examples", "brainscript")
DATA = os.path.join(str(paths.REPO), "examples", "digits")


@pytest.mark.parametrize("name", ["digits_inline", "digits_include"])
def test_examples_train_under_5_percent(tmp_path, name):
    results = run([f"configFile={EX}/{name}.cntk", f"dataDir={DATA}", f"outputDir={tmp_path}",
                   "progressBar=false"])
    (_, _, train), (_, _, test) = results
    assert [e.samples for e in train.epochs] == [1437] * 8
    assert test.samples == 360
    assert test.averages["errs"] < 0.05
    model = load_model(str(tmp_path / f"{name}.dnn")).network
    assert model.spec.criterion_nodes == ["ce"] and model.spec.eval_nodes == ["errs"]


def test_dropout_rate_comes_from_sgd():
    out = io.StringIO()
    show_network([f"configFile={EX}/digits_include.cntk", f"dataDir={DATA}"], out=out)
    text = out.getvalue()
    assert "== trainNetwork: BrainScriptNetworkBuilder" in text
    assert "Convolution(model.W, " in text and "[16x8x8] per sample" in text


def test_inline_network_errors_name_the_config_line(tmp_path):
    cfg = tmp_path / "bad.cntk"
    cfg.write_text("command = t\nt = {\n  action = train\n  BrainScriptNetworkBuilder = {\n"
                   "    x = Input{4}\n    z = DenseLayr{3}(x)\n  }\n}\n")
    from cntkio.actions.network import build_brainscript_network
    from cntkio.config import load_config_file
    import torch
    cmd = load_config_file(str(cfg))("t")
    with pytest.raises(Exception) as e:
        build_brainscript_network(cmd, device=torch.device("cpu"), dtype=torch.float32)
    assert f"{cfg}:6:9: undefined name 'DenseLayr'" in str(e.value)
    assert "DenseLayer" in e.value.hint


def test_mel_edits_a_trained_brainscript_model(tmp_path):
    from cntkio.ndl import run_mel
    import torch
    run([f"configFile={EX}/digits_inline.cntk", f"dataDir={DATA}", f"outputDir={tmp_path}", "progressBar=false",
         "command=trainNetwork", "trainNetwork=[SGD=[maxEpochs=1]]"])
    src, dst = tmp_path / "digits_inline.dnn", tmp_path / "edited.dnn"
    run_mel(f'm = LoadModel("{src}", format=cntk)\nP = Softmax(out.z)\nSetProperty(P, output, true)\n'
            f'SaveModel(m, "{dst}")\n')
    before, after = load_model(str(src)).network, load_model(str(dst)).network
    assert "P" in after.graph.groups["output"]
    torch.testing.assert_close(after.tensor("out.h1.W"), before.tensor("out.h1.W"))   # trained values kept
    x = torch.rand(3, 64)
    p = after.evaluate({"features": x}, ["P"])["P"]
    torch.testing.assert_close(p, torch.softmax(before(x), -1))


def test_network_load_builds_on_a_trained_model(tmp_path):
    import torch
    from cntkio.networks.modelfile import save_model
    from cntkio.brainscript import build
    first = build("features = Input{6}\nlabels = Input{3}\nout = { h1 = DenseLayer{5, activation=Tanh}(features) }\n"
                  "z = LinearLayer{3}(out.h1)\nce = CrossEntropyWithSoftmax(labels, z)\ncriterionNodes = (ce)")
    save_model(str(tmp_path / "model.1.dnn"), first, epoch=1)
    text = (f'inModel = BS.Network.Load ("{tmp_path}/model.1.dnn")\n'
            "h1 = inModel.out.h1\n"
            "h2 = DenseLayer{4, activation=Sigmoid}(h1)\n"
            "z = LinearLayer{3}(h2)\n"
            "ce = CrossEntropyWithSoftmax(inModel.labels, z)\n"
            "criterionNodes = (ce)\n")
    second = build(text)
    assert second.graph.groups["feature"] == ["features"] and second.graph.groups["label"] == ["labels"]
    torch.testing.assert_close(second.tensor("out.h1.W"), first.tensor("out.h1.W"))     # trained values
    x = torch.randn(4, 6)
    want = first.evaluate({"features": x}, ["out.h1"])["out.h1"]
    torch.testing.assert_close(second.evaluate({"features": x}, ["out.h1"])["out.h1"], want)  # its model name
    assert second.shapes["h2.W"] == (4, 5)
    with pytest.raises(Exception) as e:
        build('m = BS.Network.Load ("nope.dnn")\nz = m.z\nce = SquareError(z, z)\ncriterionNodes = (ce)')
    assert "BS.Network.Load" in str(e.value) and "nope.dnn" in str(e.value) and ":1:" in str(e.value)


@pytest.mark.parametrize("body, expected", [
    ("x = Input{4}\nz = DenseLayer{3}(x) + y\n", "undefined name 'y'"),
    ("x = Input{4}\nz = DenseLayer{3, 4}(x)\n", "DenseLayer takes 1 positional arguments"),
    ("x = Input{4}\nz = x + PastValue(0, z) * 0 + q\nq = z\n", "refers to itself"),
    ('include "missing.bs"\n', "include 'missing.bs': the file does not exist"),
])
def test_command_line_reports_bad_networks_without_traceback(tmp_path, capsys, body, expected):
    from cntkio.cli import main
    cfg = tmp_path / "bad.cntk"
    net = "".join("    " + line + "\n" for line in body.splitlines())
    cfg.write_text(f"command = t\nt = [\n  action = train\n  modelPath = {tmp_path}/m.dnn\n"
                   f"  SGD = [ learningRatesPerSample = 0.1 ; maxEpochs = 1 ]\n"
                   f"  reader = [ readerType = CNTKTextFormatReader ; file = {DATA}/digits_test.ctf\n"
                   f"    input = [ x = [ alias = features ; dim = 64 ; format = dense ] ] ]\n"
                   f"  BrainScriptNetworkBuilder = [\n{net}  ]\n]\n")
    assert main([f"configFile={cfg}"]) == 1
    err = capsys.readouterr().err
    assert expected in err and f"{cfg}:" in err and "Traceback" not in err


def test_include_inside_an_inline_builder_section(tmp_path):
    (tmp_path / "net.bs").write_text((paths.REPO / "examples" / "brainscript" / "net.bs").read_text())
    cfg = tmp_path / "inc.cntk"
    cfg.write_text("command = t\nt = [\n  action = train\n  BrainScriptNetworkBuilder = {\n"
                   '    include "net.bs"\n    extra = Softmax (z)\n  }\n]\n')
    out = io.StringIO()
    show_network([f"configFile={cfg}"], out=out)
    assert "Softmax(z)" in out.getvalue()
    assert "Convolution(model.W, " in out.getvalue()


def test_write_action_writes_a_node_of_a_brainscript_model(tmp_path):
    import numpy as np
    import torch
    reader = (f"reader=[readerType=CNTKTextFormatReader;randomize=false;file={DATA}/digits_test.ctf;"
              "input=[features=[dim=64;format=dense];labels=[dim=10;format=dense]]]")
    run([f"configFile={EX}/digits_inline.cntk", f"dataDir={DATA}", f"outputDir={tmp_path}", "progressBar=false",
         "command=trainNetwork:writeOut", "trainNetwork=[SGD=[maxEpochs=1]]",
         f"writeOut=[action=write;outputPath={tmp_path}/out;outputNodeNames=out.z;{reader}]"])
    written = np.loadtxt(tmp_path / "out.out.z")
    net = load_model(str(tmp_path / "digits_inline.dnn")).network
    feats = np.array([[float(v) for v in line.split("|features")[1].split()]
                      for line in open(f"{DATA}/digits_test.ctf")], np.float32)
    with torch.no_grad():
        want = net(torch.from_numpy(feats)).numpy()
    assert written.shape == (360, 10)
    np.testing.assert_allclose(written, want, rtol=1e-5, atol=1e-5)


def test_a_network_that_is_a_loaded_model_keeps_its_groups(tmp_path):
    # Tests/EndToEndTests/Speech/LSTM/cntk.cntk:191: BrainScriptNetworkBuilder = (BS.Network.Load ("$modelPath$.initial"))
    import torch
    from cntkio.networks.modelfile import save_model
    from cntkio.brainscript import build
    first = build("features = Input{6}\nlabels = Input{3}\nz = LinearLayer{3}(features)\n"
                  "ce = CrossEntropyWithSoftmax(labels, z)\nerrs = ClassificationError(labels, z)\n"
                  "featureNodes = (features) ; labelNodes = (labels) ; criterionNodes = (ce) ; evaluationNodes = (errs) ;"
                  " outputNodes = (z)")
    save_model(str(tmp_path / "m.dnn"), first, epoch=0)
    again = build(f'(BS.Network.Load ("{tmp_path}/m.dnn"))')
    assert {g: list(v) for g, v in again.graph.groups.items()} == \
        {"feature": ["features"], "label": ["labels"], "criterion": ["ce"], "eval": ["errs"], "output": ["z"]}
    x = torch.randn(2, 6)
    torch.testing.assert_close(again.evaluate({"features": x}, ["z"])["z"], first.evaluate({"features": x}, ["z"])["z"])
