"""NDLNetworkBuilder configs train unchanged: the spec's first example (networkDescription file
with run overriding the file's, ndlMacros at the root) and inline NDL (run/load naming config
sections) train the digits under 5% test error; the model files serve test and write."""
from __future__ import annotations

import os

import pytest
import torch

from cntkio.networks import load_model
from cntkio.networks.ndl import NDLNetwork
from cntkio.actions.runner import run
from cntkio.errors import ConfigError
import paths

DIGITS = paths.REPO / "examples" / "digits"

MACROS = """
ndlMacroDefine = [
    SBFF(x, r, c) = [           # sigmoid layer
        B = Parameter(r, init=fixedValue, value=0)
        W = Parameter(r, c)
        z = Plus(Times(W, x), B)
        y = Sigmoid(z)
    ]
    BFF(x, r, c) = [
        B = Parameter(r, init=fixedValue, value=0)
        W = Parameter(r, c)
        z = Plus(Times(W, x), B)
    ]
    MeanVarNorm(x) {
        xMean = Mean(x)
        xStdDev = InvStdDev(x)
        xNorm = PerDimMeanVarNormalization(x, xMean, xStdDev)
    }
]
"""

SAMPLE_NDL = """
run = notThisOne               # the NDLNetworkBuilder's run overrides it

notThisOne = [
    x = Input(1)
]

ndlMacroUse = [
    SDim = 64
    HDim = 128
    LDim = 10
    features = Input(SDim, tag=feature)
    labels = Input(LDim, tag=label)
    featNorm = MeanVarNorm(features)
    L1 = SBFF(featNorm, HDim, SDim)
    CE = BFF(L1, LDim, HDim)
    CrossEntropy = CrossEntropyWithSoftmax(labels, CE.z, tag=Criteria)
    ErrPredict = ErrorPrediction(labels, CE.z, tag=Eval)
    OutputNodes = (CE.z)
]
"""

READER = """[
    readerType = CNTKTextFormatReader
    file = {file}
    randomize = {rnd}
    input = [
        features = [ dim = 64 ; format = dense ]
        labels = [ dim = 10 ; format = dense ]
    ]
]"""


def _config(tmp_path, builder: str, extra: str = "") -> str:
    text = f"""
command = mnistTrain:mnistTest
precision = float
deviceId = cpu
numCPUThreads = 1
progressBar = false
ndlMacros = {tmp_path}/DefaultMacros.ndl
modelPath = {tmp_path}/model/sample.dnn
mnistTrain = [
    action = train
    minibatchSize = 16:32
    epochSize = 0
    NDLNetworkBuilder = [
        {builder}
    ]
    SGD = [
        learningRatesPerMB = 1.0*3:0.5
        momentumPerMB = 0.9
        maxEpochs = 6
    ]
    reader = {READER.format(file=DIGITS / 'digits_train.ctf', rnd='true')}
]
mnistTest = [
    action = eval
    minibatchSize = 360
    reader = {READER.format(file=DIGITS / 'digits_test.ctf', rnd='false')}
]
{extra}
"""
    (tmp_path / "DefaultMacros.ndl").write_text(MACROS)
    p = tmp_path / "sample.cntk"
    p.write_text(text)
    return str(p)


def test_the_spec_example_trains_the_digits_under_5_percent(tmp_path, capsys):
    (tmp_path / "sample.ndl").write_text(SAMPLE_NDL)
    cfg = _config(tmp_path, f"networkDescription = {tmp_path}/sample.ndl\n        run = ndlMacroUse")
    (_, _, train), (_, _, test) = run([f"configFile={cfg}"])
    assert [e.samples for e in train.epochs] == [1437] * 6
    assert test.samples == 360 and test.averages["ErrPredict"] < 0.05
    assert "CrossEntropy" in test.totals
    net = load_model(str(tmp_path / "model" / "sample.dnn")).network
    assert isinstance(net, NDLNetwork)
    assert net.graph.groups["criterion"] == ["CrossEntropy"] and net.graph.groups["output"] == ["CE.z"]
    # the pre-computed statistics are the training data's, saved in the model
    x = torch.tensor([[float(v) for v in ln.split("|features")[1].split("|")[0].split()]
                      for ln in open(DIGITS / "digits_train.ctf") if "|features" in ln])
    assert torch.allclose(net.tensor("featNorm.xMean"), x.mean(0), atol=1e-4)
    assert bool(net.precomputed_.all())


def test_inline_ndl_with_load_and_run_sections_and_write(tmp_path):
    extra = """
macroSection = [
    Layer(x, r, c) = Tanh(Plus(Times(Parameter(r, c), x), Parameter(r)))
]
netSection = [
    features = Input(64, tag=feature)
    labels = Input(10, tag=label)
    h = Layer(features, 64, 64)
    z = Plus(Times(W, h), b)
    W = Parameter(10, 64)          # used above: statements are evaluated when first needed
    b = Parameter(10)
    ce = CrossEntropyWithSoftmax(labels, z, tag=criterion)
    err = ErrorPrediction(labels, z, tag=eval)
]
writeOut = [
    action = write
    outputPath = OUT/out
    outputNodeNames = z:h
    reader = READER
]
""".replace("OUT", str(tmp_path)).replace("READER", READER.format(file=DIGITS / "digits_test.ctf", rnd="false"))
    cfg = _config(tmp_path, "run = netSection\n        load = macroSection", extra)
    results = run([f"configFile={cfg}", "command=mnistTrain:mnistTest:writeOut"])
    test = results[1][2]
    assert test.averages["err"] < 0.06
    written = results[2][2]
    assert written == {f"{tmp_path}/out.z": 360, f"{tmp_path}/out.h": 360}
    rows = [ln.split() for ln in open(tmp_path / "out.z")]
    assert len(rows) == 360 and {len(r) for r in rows} == {10}


def test_config_errors_name_the_config_file_and_line(tmp_path):
    extra = "netSection = [\n    features = Input(64, tag=feature)\n    h = Sigmod(features)\n]\n"
    cfg = _config(tmp_path, "run = netSection", extra)
    with pytest.raises(ConfigError) as info:
        run([f"configFile={cfg}", "command=mnistTrain"])
    e = info.value
    assert e.file == cfg and "unknown function 'Sigmod'" in str(e) and "Sigmoid" in str(e)
    row = open(cfg).read().splitlines()[e.line - 1]
    assert row.strip() == "h = Sigmod(features)" and row.index("Sigmod") + 1 == e.column


@pytest.mark.parametrize("builder, message", [
    ("networkDescription = /nonexistent/x.ndl", "networkDescription file /nonexistent/x.ndl does not exist"),
    ("run = noSuchSection", "section 'noSuchSection'"),
    ("load = x", "needs networkDescription=<file> or run=<section>"),
])
def test_builder_errors(tmp_path, builder, message):
    cfg = _config(tmp_path, builder)
    with pytest.raises(ConfigError, match=message):
        run([f"configFile={cfg}", "command=mnistTrain"])


def test_networks_the_train_action_cannot_feed_are_errors(tmp_path):
    cfg = _config(tmp_path, "run = n1", "n1 = [\n features = Input(64, tag=feature)\n labels = Input(10, tag=label)\n]\n")
    with pytest.raises(ConfigError, match="no criterion node"):
        run([f"configFile={cfg}", "command=mnistTrain"])
    cfg = _config(tmp_path, "run = n2", "n2 = [\n features = Input(64, tag=feature)\n f2 = Input(3, tag=feature)\n"
                  " labels = Input(10, tag=label)\n W = Parameter(10, 64)\n z = Times(W, features)\n"
                  " ce = CrossEntropyWithSoftmax(labels, z, tag=criterion)\n]\n")
    # a second feature node is fed from the reader stream of its name: the digits reader has none
    with pytest.raises(ConfigError, match="stream named 'f2' but the reader delivers features, labels"):
        run([f"configFile={cfg}", "command=mnistTrain"])
    assert not os.path.exists(tmp_path / "model")


def test_dumpnode_of_an_ndl_model(tmp_path):
    from cntkio.networks import save_model
    from cntkio.networks.ndl import build
    net = build("x = Input(2, tag=feature)\nW = Parameter(3, 2, init=fixedValue, value=0.5)\n"
                "h = Tanh(Times(W, x))\nm = Mean(x)")
    save_model(str(tmp_path / "m.dnn"), net, epoch=1)
    cfg = tmp_path / "d.cntk"
    cfg.write_text(f"command=d\nd=[action=dumpnode; modelPath={tmp_path}/m.dnn]\n")
    (_, _, path), = run([f"configFile={cfg}"])
    text = open(path).read()
    assert "W=LearnableParameter [3,2]" in text and "0.5 0.5" in text
    assert "h=Tanh ( W.Times )" not in text and "h=Tanh ( h.Times )" in text
    assert "h.Times=Times ( W , x )" in text and "x=InputValue [2]" in text and "m=Mean [2]" in text


def test_columns_of_inline_ndl_are_the_config_files(tmp_path):
    extra = ("netSection = [\n    ab = Input(64, tag=feature) ; b = Plus(ab, zz)\n"
             "    M(x) = Tanh(Plus(x, qq))\n    c = M(ab)\n]\n")
    cfg = _config(tmp_path, "run = netSection", extra)
    rows = open(cfg).read().splitlines()
    with pytest.raises(ConfigError, match="undefined symbol 'zz'") as info:
        run([f"configFile={cfg}", "command=mnistTrain"])
    assert rows[info.value.line - 1].index("zz") + 1 == info.value.column
    cfg = _config(tmp_path, "run = netSection", extra.replace("zz", "ab"))
    with pytest.raises(ConfigError, match="undefined symbol 'qq'") as info:
        run([f"configFile={cfg}", "command=mnistTrain"])
    assert rows[info.value.line - 1].index("qq") + 1 == info.value.column


def test_an_interrupted_ndl_training_resumes_exactly(tmp_path):
    (tmp_path / "sample.ndl").write_text(SAMPLE_NDL)
    cfg = _config(tmp_path, f"networkDescription = {tmp_path}/sample.ndl\n        run = ndlMacroUse")
    args = [f"configFile={cfg}", "command=mnistTrain", "mnistTrain=[SGD=[maxEpochs=3]]"]
    run(args)
    final = load_model(str(tmp_path / "model" / "sample.dnn")).network.state_dict()
    os.remove(tmp_path / "model" / "sample.dnn")              # as if killed during epoch 3
    (_, _, res), = run(args)
    assert res.start_epoch == 3 and len(res.epochs) == 1
    again = load_model(str(tmp_path / "model" / "sample.dnn")).network.state_dict()
    assert again.keys() == final.keys()
    assert all(torch.equal(again[k], final[k]) for k in final)
