"""End to end: each config action on small CTF data, through the command runner
(``cntkio.actions.runner.run``, what ``cntkio configFile=...`` does)."""
from __future__ import annotations

import io
import os
import re
import sys

import numpy as np
import pytest
import torch

from cntkio.actions.runner import run
from cntkio.errors import ConfigError
from cntkio.networks import load_model

N_TRAIN, N_TEST = 90, 30


def _blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Three well separated classes in 4 dimensions."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    centers = np.array([[2.0, 0, 0, 1], [0, 2.0, 0, -1], [0, 0, 2.0, 0]])
    x = centers[y] + 0.3 * rng.standard_normal((n, 4))
    return np.round(x, 4), y


def _write_ctf(path, x, y) -> None:
    with open(path, "w") as f:
        for xi, yi in zip(x, y):
            onehot = " ".join("1" if k == yi else "0" for k in range(3))
            f.write(f"|features {' '.join(format(v, 'g') for v in xi)} |labels {onehot}\n")


CONFIG = """
command = train:test
precision = double
deviceId = cpu
numCPUThreads = 1
modelPath = {out}/model.dnn
labelMappingFile = {out}/labels.map

reader = [
    readerType = CNTKTextFormatReader
    file = {train}
    randomize = true
    input = [ features = [ dim = 4 ; format = dense ] ; labels = [ dim = 3 ; format = dense ] ]
]
testReader = [
    readerType = CNTKTextFormatReader
    file = {test}
    randomize = false
    input = [ features = [ dim = 4 ; format = dense ] ; labels = [ dim = 3 ; format = dense ] ]
]

train = [
    action = train
    SimpleNetworkBuilder = [ layerSizes = 4:8:3 ; layerTypes = Tanh ; applyMeanVarNorm = true ]
    SGD = [
        minibatchSize = 10:15
        learningRatesPerMB = 0.5*2:0.25
        momentumPerMB = 0.5
        maxEpochs = 3
        numMBsToShowResult = 3
    ]
]
test = [
    action = test
    minibatchSize = 7
    reader = $testReader$
]
"""


@pytest.fixture()
def workdir(tmp_path):
    x, y = _blobs(N_TRAIN, 1)
    _write_ctf(tmp_path / "train.ctf", x, y)
    xt, yt = _blobs(N_TEST, 2)
    _write_ctf(tmp_path / "test.ctf", xt, yt)
    out = tmp_path / "out"
    cfg = tmp_path / "small.cntk"
    cfg.write_text(CONFIG.format(out=out, train=tmp_path / "train.ctf", test=tmp_path / "test.ctf"))
    return tmp_path


def _run(workdir, *extra):
    return run([f"configFile={workdir / 'small.cntk'}", *extra])


def test_train_and_test(workdir, capsys):
    results = _run(workdir)
    (name, action, tr), (tname, taction, te) = results
    assert (name, action, tname, taction) == ("train", "train", "test", "test")
    out = workdir / "out"
    assert sorted(os.listdir(out)) == ["model.dnn", "model.dnn.1", "model.dnn.2"]
    assert [e.samples for e in tr.epochs] == [N_TRAIN] * 3          # epochSize 0 = one sweep
    assert tr.epochs[-1].averages["CrossEntropyWithSoftmax"] < tr.epochs[0].averages["CrossEntropyWithSoftmax"]
    assert te.samples == N_TEST
    assert te.averages["EvalClassificationError"] <= 0.1
    text = capsys.readouterr().out
    assert "Finished Epoch[1 of 3]: [Training] CrossEntropyWithSoftmax = " in text
    assert re.search(r"Finished Epoch\[1 of 3\]: .*; epochTime = [0-9.]+s; throughput = [0-9.]+ samples/s\n", text)
    assert "Final Results: Minibatch[1-5]: EvalClassificationError = " in text          # 30 samples / 7
    assert " Epoch[1 of 3]-Minibatch[   1-   3]: " in text
    # the model files record their epoch; the final model is the last epoch
    assert [load_model(str(out / f)).epoch for f in ("model.dnn.1", "model.dnn.2", "model.dnn")] == [1, 2, 3]
    # the mean/variance statistics come from the training data
    net = load_model(str(out / "model.dnn")).network
    x, _ = _blobs(N_TRAIN, 1)
    assert np.allclose(net.MeanOfFeatures.numpy(), x.mean(0))
    assert np.allclose(net.InvStdOfFeatures.numpy(), 1 / x.std(0))


def test_rerun_with_final_model_trains_nothing(workdir, capsys):
    _run(workdir)
    before = os.path.getmtime(workdir / "out" / "model.dnn")
    (_, _, tr), _ = _run(workdir)
    assert not tr.trained
    assert os.path.getmtime(workdir / "out" / "model.dnn") == before
    assert "no further training is necessary" in capsys.readouterr().out


def test_make_mode_false_starts_over(workdir):
    _run(workdir)
    (_, _, tr), _ = _run(workdir, "train=[makeMode=false]")
    assert tr.start_epoch == 1 and len(tr.epochs) == 3


def test_eval_node_names_and_errors(workdir):
    _run(workdir)
    (_, _, res), = _run(workdir, "command=test", "test=[evalNodeNames=CrossEntropyWithSoftmax]")
    assert list(res.totals) == ["CrossEntropyWithSoftmax"]
    with pytest.raises(ConfigError, match="not a criterion node"):
        _run(workdir, "command=test", "test=[evalNodeNames=HLast]")


def test_cv_over_epoch_files(workdir, capsys):
    _run(workdir)
    extra = ["command=crossval", "crossval=[action=cv; crossValidationInterval=1:1:4; reader=$testReader$; minibatchSize=30]"]
    (_, action, res), = _run(workdir, *extra)
    out = workdir / "out"
    # epochs 1 and 2 from their files, the missing .3 replaced once by the final model, .4 skipped
    assert action == "cv" and list(res) == [f"{out}/model.dnn.1", f"{out}/model.dnn.2", f"{out}/model.dnn"]
    assert all(r.samples == N_TEST for r in res.values())
    text = capsys.readouterr().out
    assert f"Model {out}/model.dnn.4 does not exist." in text and "Best models:" in text


def test_write_outputs(workdir):
    _run(workdir)
    extra = ["command=out", "out=[action=write; reader=$testReader$; minibatchSize=8; "
             f"outputPath={workdir}/w/out; outputNodeNames=HLast:PosteriorProb:labels]"]
    (_, _, files), = _run(workdir, *extra)
    assert files == {f"{workdir}/w/out.HLast": N_TEST, f"{workdir}/w/out.PosteriorProb": N_TEST,
                     f"{workdir}/w/out.labels": N_TEST}
    hlast = np.loadtxt(workdir / "w" / "out.HLast")
    post = np.loadtxt(workdir / "w" / "out.PosteriorProb")
    labels = np.loadtxt(workdir / "w" / "out.labels")
    xt, yt = _blobs(N_TEST, 2)
    net = load_model(str(workdir / "out" / "model.dnn")).network
    with torch.no_grad():
        expected = net(torch.from_numpy(xt)).numpy()
    assert hlast.shape == (N_TEST, 3) and np.allclose(hlast, expected, atol=1e-12)   # %.17g round-trips
    assert np.allclose(post.sum(1), 1.0)
    assert (labels.argmax(1) == yt).all()                        # not randomized: file order
    with pytest.raises(ConfigError, match="not a node with a value per sample"):
        _run(workdir, "command=out", "out=[action=write; reader=$testReader$; outputPath=x; outputNodeNames=W0]")


def test_dumpnode(workdir):
    _run(workdir)
    (_, _, path), = _run(workdir, "command=d", "d=[action=dumpnode; nodeName=W0]")
    assert path == f"{workdir}/out/model.dnn.W0.txt"
    lines = open(path).read().splitlines()
    assert lines[0] == "W0=LearnableParameter [8,4]  learningRateMultiplier=1.000000  NeedsGradient=true"
    w0 = load_model(str(workdir / "out" / "model.dnn")).network.W0.detach().numpy()
    assert np.allclose(np.array([[float(v) for v in ln.split()] for ln in lines[1:9]]), w0, rtol=1e-9)
    assert lines[9] == "#" * 68 and len(lines) == 10
    (_, _, allpath), = _run(workdir, "command=d", "d=[action=dumpnode; printValues=false]")
    text = open(allpath).read()
    assert allpath.endswith("model.dnn.__AllNodes__.txt")
    assert "H1=Tanh ( W0*MVNormalizedFeatures + B0 )" in text and "B1=LearnableParameter [3,1]" in text
    with pytest.raises(ConfigError, match="node 'W9' is not in"):
        _run(workdir, "command=d", "d=[action=dumpnode; nodeName=W9]")


def test_create_label_map(workdir):
    (_, action, path), = _run(workdir, "command=lm", "lm=[action=createLabelMap; section=train; minibatchSize=16]")
    assert action == "createLabelMap" and path == f"{workdir}/out/labels.map"
    assert open(path).read() == "0\n1\n2\n"


def test_adapt_continues_from_original_model(workdir):
    _run(workdir)
    extra = ["command=ad", f"ad=[action=adapt; originalModelFileName={workdir}/out/model.dnn; "
             f"modelPath={workdir}/adapted/model.dnn; SGD=[learningRatesPerMB=0.1; minibatchSize=30; maxEpochs=1]]"]
    (_, _, res), = _run(workdir, *extra)
    assert len(res.epochs) == 1
    original = load_model(str(workdir / "out" / "model.dnn")).network
    adapted = load_model(str(workdir / "adapted" / "model.dnn")).network
    assert adapted.spec == original.spec
    assert torch.equal(adapted.MeanOfFeatures, original.MeanOfFeatures)   # statistics kept, not recomputed
    assert not torch.equal(adapted.W0, original.W0)
    with pytest.raises(ConfigError, match="refNodeName"):      # KL adaptation without its reference node
        _run(workdir, *extra[:1], extra[1][:-1] + "; adaptationRegType=KL]")


def test_missing_streams_are_named(workdir, tmp_path):
    extra = ["command=t", "t=[action=train; reader=[readerType=CNTKTextFormatReader; file=" + str(workdir / "train.ctf")
             + "; input=[x=[alias=features; dim=4; format=dense]; labels=[dim=3; format=dense]]]; "
             "SimpleNetworkBuilder=[layerSizes=4:3]; SGD=[learningRatesPerMB=1; maxEpochs=1]; modelPath=" + str(tmp_path / "m")
             + "]"]
    with pytest.raises(ConfigError, match="stream named 'features'"):
        _run(workdir, *extra)


def test_cv_reader_validates_after_every_epoch(workdir, capsys):
    (_, _, tr), _ = _run(workdir, "train=[cvReader=$testReader$]")
    assert len(tr.validation) == 3 and all(v.samples == N_TEST for v in tr.validation)
    text = capsys.readouterr().out
    assert [ln.split(":")[0] for ln in text.splitlines() if "[Validate]" in ln] == \
        [f"Finished Epoch[{e} of 3]" for e in (1, 2, 3)]
    # validation does not change what training reads: same criteria as a run without cvReader
    (_, _, plain), _ = _run(workdir, "train=[makeMode=false]")
    assert [e.totals for e in plain.epochs] == [e.totals for e in tr.epochs]


def test_eval_takes_the_first_value_of_an_inherited_minibatch_size_array(workdir):
    _run(workdir)
    (_, _, res), = _run(workdir, "command=ev", "minibatchSize=8:16", "ev=[action=test; reader=$testReader$]")
    assert res.minibatches == 4 and res.samples == N_TEST              # 30 samples in 8, 8, 8, 6
    with pytest.raises(ConfigError, match="minibatchSize"):
        _run(workdir, "command=test", "test=[minibatchSize=0]")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bars_on_a_terminal_only(workdir, monkeypatch, capsys):
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    _run(workdir)
    bars = term.getvalue()
    assert "Epoch[1 of 3]" in bars and "Epoch[3 of 3]" in bars and "/90" in bars    # total = one sweep
    assert "test:" in bars
    monkeypatch.setattr(sys, "stderr", io.StringIO())                  # not a terminal: no bars
    _run(workdir, "train=[makeMode=false]")
    assert "Epoch[1 of 3]" not in sys.stderr.getvalue()
    forced = io.StringIO()
    monkeypatch.setattr(sys, "stderr", forced)
    _run(workdir, "train=[makeMode=false]", "progressBar=true")         # forced on
    assert "Epoch[1 of 3]" in forced.getvalue()
    monkeypatch.setattr(sys, "stderr", _Terminal())
    _run(workdir, "train=[makeMode=false]", "progressBar=false")        # forced off
    assert "Epoch[" not in sys.stderr.getvalue()


def test_sparse_labels_and_sequences(workdir, tmp_path):
    """Labels written sparse (``|labels 2:1``) and samples grouped in multi-sample sequences train
    the same per-sample network: every valid sample counts once."""
    x, y = _blobs(N_TRAIN, 1)
    with open(tmp_path / "seq.ctf", "w") as f:
        for i, (xi, yi) in enumerate(zip(x, y)):
            f.write(f"{i // 3} |features {' '.join(format(v, 'g') for v in xi)} |labels {yi}:1\n")
    extra = ["command=t", "t=[action=train; modelPath=" + str(tmp_path / "m" / "model") + "; "
             "reader=[readerType=CNTKTextFormatReader; file=" + str(tmp_path / "seq.ctf") + "; randomize=true; "
             "input=[features=[dim=4; format=dense]; labels=[dim=3; format=sparse]]]; "
             "SimpleNetworkBuilder=[layerSizes=4:8:3; layerTypes=Tanh]; "
             "SGD=[minibatchSize=12; learningRatesPerMB=0.3; maxEpochs=4; numMBsToShowResult=0]]"]
    (_, _, tr), = _run(workdir, *extra)
    assert [e.samples for e in tr.epochs] == [N_TRAIN] * 4
    assert tr.epochs[-1].averages["EvalClassificationError"] < 0.1
