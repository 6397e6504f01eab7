"""``$name$`` in NDL and MEL files: the config's variables replaced before parsing, by CNTK's rules
(ConfigParameters::ResolveVariables, Source/Common/Include/Config.h:1046-1141: comments left out,
a name starts with a letter or '_' and ends at the next '$', looked up from the builder's or the
edit command's section outwards); errors name the file, line and column of the '$'."""
from __future__ import annotations

import pytest

from cntkio.actions.runner import run
from cntkio.config import load_config
from cntkio.networks import load_model
from cntkio.networks.ndl import NDLError, build, build_from_config
from cntkio.networks.ndl.variables import config_variables, resolve_variables

TABLE = {"imageLayout": "cudnn", "n": "3", "newLayer": "2", "a": "x y"}.get


@pytest.mark.parametrize("text, want", [
    ("c = Conv(w, x, imageLayout = $imageLayout$)", "c = Conv(w, x, imageLayout = cudnn)"),
    ("L$newLayer$ = Layer(L1.y)  # adds L$newLayer$", "L2 = Layer(L1.y)  # adds L$newLayer$"),
    ("# $undefined$ in a comment line", "# $undefined$ in a comment line"),
    ("x = $n$#$n$ is not a comment (no blank before #)", "x = 3#3 is not a comment (no blank before #)"),
    ("cost = 5$ and $1 and $ n$ and $n", "cost = 5$ and $1 and $ n$ and $n"),   # not names: left alone
    ("p = $a$$n$", "p = x y3"),
])
def test_the_rules_of_cntks_resolve_variables(text, want):
    assert resolve_variables(text, TABLE, "f.ndl") == want


def test_an_undefined_variable_is_located():
    with pytest.raises(NDLError) as e:
        resolve_variables("a = 1\n  b = Input($dim$)\n", TABLE, "net.ndl")
    assert str(e.value).startswith("net.ndl:2:13: undefined variable $dim$") and "define dim" in e.value.hint


def test_variables_come_from_the_builder_section_outwards(tmp_path):
    (tmp_path / "macros.ndl").write_text("Conv(x) = [ c = ImageInput(4, 4, 1, imageLayout = $imageLayout$) ]\n")
    (tmp_path / "net.ndl").write_text("""run = net
net = [
    hdim = $hiddenDim$                      # the command's value, not the root's
    f = Conv(0)
    h = Times(Parameter(hdim, 16), f.c)
    out = Plus(h, Parameter(hdim, 1), tag = output)
]
""")
    cfg = load_config([f"""
imageLayout = "cudnn"
hiddenDim = 99
train = [
    hiddenDim = 7
    NDLNetworkBuilder = [ networkDescription = {tmp_path}/net.ndl ; ndlMacros = {tmp_path}/macros.ndl ]
]
"""])
    net = build_from_config(cfg("train")("NDLNetworkBuilder"))
    assert net.shapes["out"] == (7,) and net.graph.nodes["f.c"].attrs["imageLayout"] == "cudnn"
    look = config_variables(cfg("train")("NDLNetworkBuilder"))
    assert look("hiddenDim") == "7" and look("nothing") is None


def test_a_section_is_not_a_value(tmp_path):
    (tmp_path / "net.ndl").write_text("x = Input($SGD$)\n")
    cfg = load_config([f"SGD = [ a = 1 ]\nt = [ NDLNetworkBuilder = [ networkDescription = {tmp_path}/net.ndl ] ]\n"])
    with pytest.raises(NDLError, match=r"net.ndl:1:11: \$SGD\$: SGD is a config section"):
        build_from_config(cfg("t")("NDLNetworkBuilder"))


def test_build_takes_variables_from_python():
    net = build("x = Input($d$)\ny = Times(Parameter(2, $d$), x, tag = output)\n", variables={"d": 5})
    assert net.shapes["y"] == (2,)


def test_mel_loads_and_names_with_the_edit_commands_variables(tmp_path):
    ndl = tmp_path / "one.ndl"
    ndl.write_text("features = Input(4, tag = feature)\nLay(x) = [ y = Tanh(Times(Parameter(5, 4), x)) ]\n"
                   "L1 = Lay(features)\nout = Times(Parameter(3, 5), L1.y, tag = output)\n")
    model = tmp_path / "m.dnn"
    from cntkio.networks import save_model
    save_model(str(model), build(str(ndl)), epoch=1)
    (tmp_path / "add.mel").write_text("""m = LoadModel("$currModel$", format = cntk)
SetDefaultModel(m)
L$newLayer$ = [ y = Sigmoid(Times(Parameter(5, 5), L1.y)) ]     # L2
SetInput(out, 1, L$newLayer$.y)
SaveModel(m, "$newModel$")
""")
    cfg = tmp_path / "e.cntk"
    cfg.write_text(f"""command = addLayer
deviceId = cpu
currModel = "{model}"
addLayer = [ action = edit ; newLayer = 2 ; newModel = "{tmp_path}/deeper.dnn" ; editPath = {tmp_path}/add.mel ]
""")
    ((_, _, script),) = run([f"configFile={cfg}"])
    assert script.saved == [f"{tmp_path}/deeper.dnn"]
    assert load_model(f"{tmp_path}/deeper.dnn").network.graph.nodes["out"].inputs[1] == "L2.y"
    (tmp_path / "add.mel").write_text('m = LoadModel("$currModel$")\nSaveModel(m, "$nowhere$")\n')
    with pytest.raises(NDLError, match=r"add.mel:2:15: undefined variable \$nowhere\$"):
        run([f"configFile={cfg}"])
