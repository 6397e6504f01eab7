"""MEL and the edit action: a trained model edited (a layer added with inline NDL and SetInput,
renamed, copied, deleted, properties set) is saved and used by test and adapt; every bad command
is a located ConfigError."""
from __future__ import annotations

import pytest
import torch

from cntkio.networks import SimpleNetwork, NetworkSpec, load_model, save_model
from cntkio.networks.mel import run_mel
from cntkio.networks.ndl import NDLError, build
from cntkio.actions.runner import run
from cntkio.errors import ConfigError

NET = """
features = Input(4, tag=feature)
labels = Input(3, tag=label)
Hidden(x) = [
    W = Parameter(5, 4)
    b = Parameter(5, init=fixedValue, value=0.5)
    y = Tanh(Plus(Times(W, x), b))
]
L1 = Hidden(features)
out = Plus(Times(Wo, L1.y), bo)
Wo = Parameter(3, 5)
bo = Parameter(3)
ce = CrossEntropyWithSoftmax(labels, out, tag=criterion)
err = ErrorPrediction(labels, out, tag=eval)
"""


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "m.dnn"
    save_model(str(path), build(NET), epoch=3)
    return path


def _mel(tmp_path, text, **kw):
    p = tmp_path / "edit.mel"
    p.write_text(text)
    return run_mel(str(p), **kw)


def test_add_a_layer_with_inline_ndl_and_set_input(tmp_path, model):
    (tmp_path / "macros.ndl").write_text("defs = [\n Layer(x, r, c) = [ W = Parameter(r, c)\n y = Sigmoid(Times(W, x)) ]\n]\n")
    _mel(tmp_path, f"""
    m = LoadModel("{model}", format=cntk)
    SetDefaultModel(m)
    L2 = Layer(L1.y, 5, 5)              # inline NDL with a macro of ndlMacros
    SetInput(out.Times, 1, L2.y)         # the output layer reads the new layer
    SaveModel(m, "{tmp_path}/deeper.dnn")
    """, macros=[str(tmp_path / "macros.ndl")])
    old, new = load_model(str(model)).network, load_model(str(tmp_path / "deeper.dnn")).network
    assert new.graph.nodes["out.Times"].inputs == ["Wo", "L2.y"]
    assert torch.equal(new.get_parameter("L1.W"), old.get_parameter("L1.W"))       # trained values kept
    x = torch.randn(6, 4)
    h1 = torch.tanh(x @ old.get_parameter("L1.W").T + 0.5)
    h2 = torch.sigmoid(h1 @ new.get_parameter("L2.W").T)
    want = h2 @ new.Wo.T + new.bo.T
    assert torch.allclose(new.evaluate({"features": x}, ["out"])["out"], want, atol=1e-6)


def test_rename_copy_delete_and_properties(tmp_path, model):
    s = _mel(tmp_path, f"""
    m = LoadModel("{model}")
    Rename(L1.*, H1.*)
    CopyNode(H1.W, H1.Wcopy, copy=all)
    SetProperty(Wo, computeGradient, false)
    SetPropertyForSubTree(H1.y, computeGradient, false)
    SetProperty(out, output, true)
    DeleteNode(err)
    Dump(m, "{tmp_path}/dump.txt", includeData=true)
    SaveDefaultModel("{tmp_path}/edited.dnn")
    """)
    net = load_model(str(tmp_path / "edited.dnn")).network
    names = list(net.graph.nodes)
    assert "H1.W" in names and "L1.W" not in names and "err" not in names
    assert torch.equal(net.get_parameter("H1.Wcopy"), net.get_parameter("H1.W"))
    assert not net.Wo.requires_grad and not net.get_parameter("H1.W").requires_grad and net.bo.requires_grad
    assert net.graph.groups["output"] == ["out"] and net.graph.groups["eval"] == []
    dump = (tmp_path / "dump.txt").read_text()
    assert "H1.y=Tanh(H1.y.Plus)" in dump and "out=Plus(out.Times, bo) tags=output" in dump
    assert s.saved == [f"{tmp_path}/edited.dnn"]


def test_simple_network_models_edit_like_ndl(tmp_path):
    spec = NetworkSpec(layer_sizes=[4, 6, 3], layer_types=["Sigmoid"])
    simple = SimpleNetwork(spec)
    save_model(str(tmp_path / "s.dnn"), simple, epoch=1)
    _mel(tmp_path, f'm = LoadModel("{tmp_path}/s.dnn")\nSaveModel(m, "{tmp_path}/n.dnn")')
    net = load_model(str(tmp_path / "n.dnn")).network
    x = torch.randn(5, 4)
    assert torch.allclose(net.evaluate({"features": x}, ["HLast"])["HLast"], simple(x), atol=1e-6)
    assert net.spec.training_criterion == "CrossEntropyWithSoftmax"


@pytest.mark.parametrize("script, line, message", [
    ('m = LoadModel("MODEL")\nSetInput(nothere, 0, out)', 2, "no node of model .* matches 'nothere'"),
    ('m = LoadModel("MODEL")\nSetInput(out, 7, bo)', 2, r"has inputs 0..1, found index 7"),
    ('m = LoadModel("MODEL")\nFrobnicate(out)', 2, "unknown MEL command 'Frobnicate'"),
    ('m = LoadModel("/no/such.dnn")', 1, "model file /no/such.dnn does not exist"),
    ('SetInput(out, 0, bo)', 1, "no default model"),
    ('m = LoadModel("MODEL")\nx = Sigmoid(nope)', 2, "undefined symbol 'nope'"),
    ('m = LoadModel("MODEL")\nRename(L1.*, bo)', 2, "needs one '\\*'|both names need one"),
])
def test_bad_commands_are_located(tmp_path, model, script, line, message):
    with pytest.raises(NDLError, match=message) as info:
        _mel(tmp_path, script.replace("MODEL", str(model)))
    assert info.value.line == line and info.value.file == str(tmp_path / "edit.mel")


def test_a_dangling_input_is_found_when_saving(tmp_path, model):
    with pytest.raises(ConfigError, match="node out.Times .*input 'Wo' is not a node"):
        _mel(tmp_path, f'm = LoadModel("{model}")\nDeleteNode(Wo)\nSaveModel(m, "{tmp_path}/x.dnn")')
    assert not (tmp_path / "x.dnn").exists()


def test_the_edit_action_with_ndl_macros_then_adapt(tmp_path, model):
    (tmp_path / "macros.ndl").write_text("TanhL(x, r, c) = [ W = Parameter(r, c)\n y = Tanh(Times(W, x)) ]\n")
    (tmp_path / "add.mel").write_text(f"""m = LoadModel("{model}")
    L2 = TanhL(L1.y, 5, 5)
    SetInput(out.Times, 1, L2.y)
    SaveModel(m, "{tmp_path}/deeper.dnn")
    """)
    rows = "\n".join(f"|features {' '.join(str((i * j) % 5 / 5) for j in range(4))} |labels "
                     + " ".join("1" if k == i % 3 else "0" for k in range(3)) for i in range(30))
    (tmp_path / "d.ctf").write_text(rows + "\n")
    cfg = tmp_path / "e.cntk"
    cfg.write_text(f"""command = ed:ad
ndlMacros = {tmp_path}/macros.ndl
deviceId = cpu
progressBar = false
ed = [ action = edit ; editPath = {tmp_path}/add.mel ]
ad = [
    action = adapt
    originalModelFileName = {tmp_path}/deeper.dnn
    modelPath = {tmp_path}/adapted.dnn
    SGD = [ learningRatesPerMB = 0.1 ; minibatchSize = 10 ; maxEpochs = 1 ]
    reader = [ readerType = CNTKTextFormatReader ; file = {tmp_path}/d.ctf
               input = [ features = [ dim = 4 ; format = dense ] ; labels = [ dim = 3 ; format = dense ] ] ]
]
""")
    (_, _, script), (_, _, res) = run([f"configFile={cfg}"])
    assert script.saved == [f"{tmp_path}/deeper.dnn"] and res.epochs[0].samples == 30
    adapted = load_model(str(tmp_path / "adapted.dnn")).network
    assert "L2.W" in adapted.graph.nodes
    with pytest.raises(ConfigError, match="MEL script .* does not exist"):
        run([f"configFile={cfg}", "command=ed", "ed=[editPath=/no/such.mel]"])


def test_wildcard_copy_subtree_snippets_dumps_and_two_models(tmp_path, model):
    (tmp_path / "snip.ndl").write_text("extra = [\n  g = Sigmoid(out)\n]\n")
    s = _mel(tmp_path, f"""
    a = LoadModel("{model}")
    b = LoadModelWithName(second, "{model}")
    SetDefaultModel(a)
    Copy(L1.*, L9.*, copy=all)                  # a copy of the layer: inputs inside the set follow
    CopySubTree(out, new_, copy=all)            # out and everything it reads, prefixed
    LoadNDLSnippet("{tmp_path}/snip.ndl", extra)
    DumpNode(L9.*, "{tmp_path}/l9.txt", includeData=true)
    SetInputs(second.ce, labels, L1.y.Plus)     # a model-prefixed name edits the other model
    UnloadModel(second)
    SaveModel(a, "{tmp_path}/a.dnn")
    """)
    assert list(s.models) == ["a"]
    net = load_model(str(tmp_path / "a.dnn")).network
    g = net.graph.nodes
    assert g["L9.y"].inputs == ["L9.y.Plus"] and g["L9.y.Plus.Times"].inputs == ["L9.W", "features"]
    assert torch.equal(net.get_parameter("L9.W"), net.get_parameter("L1.W"))
    assert g["new_out"].inputs == ["new_out.Times", "new_bo"] and g["new_out.Times"].inputs == ["new_Wo", "new_L1.y"]
    assert "new_features" in g and g["g"].inputs == ["out"]
    dump = (tmp_path / "l9.txt").read_text()
    assert dump.startswith("L9.W=Parameter()") and "L9.y=Tanh(L9.y.Plus)" in dump
    assert len(dump.splitlines()) == 5 + 5 + 5           # 5 node headers, the 5 rows of W and of b


def test_create_model_with_inline_ndl(tmp_path):
    _mel(tmp_path, f"""m = CreateModel()
    x = Input(3, tag=feature)
    y = Input(2, tag=label)
    W = Parameter(2, 3)
    ce = CrossEntropyWithSoftmax(y, Times(W, x), tag=criterion)
    SaveModel(m, "{tmp_path}/new.dnn")
    """)
    net = load_model(str(tmp_path / "new.dnn")).network
    assert list(net.graph.nodes) == ["x", "y", "W", "ce", "ce.Times"]
    assert net.graph.groups["criterion"] == ["ce"] and net.graph.groups["feature"] == ["x"]
