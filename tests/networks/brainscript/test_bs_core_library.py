"""The names cntkio's BrainScript library defines are exactly CNTK.core.bs's
(tests/data/brainscript/cntk_core_names.txt, written from CNTK 2.7's CNTK.core.bs by
make_core_names.py beside it), each in its namespace with CNTK's parameters and defaults; an alias
names the same function; a refused function is an error naming it and why, before any data is
read."""
from __future__ import annotations

import importlib.util
import os
import re

import pytest

from cntkio.actions.runner import run
from cntkio.errors import ConfigError, NotImplementedInCntkio
from cntkio.networks.brainscript.builder import evaluate_network
from cntkio.networks.brainscript.library import REFUSED, library_paths
from cntkio.networks.brainscript.syntax import BrainScriptRefusal, parse_record_body
from cntkio.networks.brainscript.values import Function, Record

HERE = os.path.join(os.path.dirname(__file__), "..", "..", "data", "brainscript")
_spec = importlib.util.spec_from_file_location("make_core_names", os.path.join(HERE, "make_core_names.py"))
make_core_names = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_core_names)


def _fixture() -> dict[str, tuple[str, str]]:
    """path -> (kind, rest): kind "function" (rest: the parameter list), "alias" (the target) or
    "value"."""
    out = {}
    with open(os.path.join(HERE, "cntk_core_names.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            m = re.match(r"(\S+) (:?=) (.*)$", line.rstrip("\n"))
            if m:
                out[m.group(1)] = ("alias" if m.group(2) == "=" else "value", m.group(3))
            else:
                path, sig = line.rstrip("\n").split(" ", 1)
                out[path] = ("function", sig)
    return out


CORE = _fixture()


@pytest.fixture(scope="module")
def library():
    ev, _ = evaluate_network("x = 1\n")
    return ev


def _resolve(ev, path: str):
    ns, _, leaf = path.rpartition(".")
    t = ev.namespaces[ns].names.get(leaf)
    assert t is not None, f"{path} is not defined"
    return t.force(ev)


def _signature(fn: Function) -> str:
    ps = [p if p not in fn.defaults else f"{p}={make_core_names.show(fn.defaults[p])}" for p in fn.params]
    return ", ".join(ps)


def test_the_fixture_holds_cntk_core_bs():
    assert len(CORE) == 297
    assert CORE["LinearLayer"] == ("function", "{outDim, bias=true, init='glorotUniform', initValueScale=1, "
                                               "inputRank=None, mapRank=None, initBias=0}")
    assert CORE["Less"] == ("alias", "CNTK2.Less") and CORE["BS.Constants.True"] == ("value", "1")


def test_every_name_of_cntk_core_bs_is_defined_with_its_parameters_and_defaults(library):
    for path, (kind, rest) in CORE.items():
        v = _resolve(library, path)
        if kind == "function":
            assert isinstance(v, Function), path
            assert _signature(v) == rest[1:-1], path
        elif kind == "alias":
            ns = path.rpartition(".")[0]
            target = library.namespaces[ns].find(rest.split(".")[0])
            for part in rest.split(".")[1:]:
                target = target.force(library).members[part]
            assert v is target.force(library), f"{path} = {rest}"
        else:
            assert v is not None, path


def test_cntkio_defines_no_name_cntk_core_bs_does_not(library):
    extra = sorted(set(library_paths()) - set(CORE))
    assert extra == []
    top = {k for k in library.globals.names if k not in ("BS", "CNTK2")}
    assert top == {p for p in CORE if "." not in p}
    for ns in ("BS.Constants", "BS.Loop", "BS.RNNs", "CNTK2"):
        record = _resolve(library, ns)
        assert isinstance(record, Record)
        assert set(record.members) == {p[len(ns) + 1:] for p in CORE if p.rpartition(".")[0] == ns}, ns


def test_each_name_is_written_once_in_one_of_the_three_ways():
    kinds = library_paths()
    assert {k for k, v in kinds.items() if v == "refused"} == set(REFUSED)
    assert all(REFUSED[p] for p in REFUSED)                 # each with its reason
    prelude = {k for k, v in kinds.items() if v == "prelude"}
    assert {"BFF", "SBFF", "MeanVarNorm", "BS.Loop.IsFirst", "BS.RNNs.LSTMP"} <= prelude
    assert "Convolution" not in prelude and kinds["Convolution"] == "builtin"


@pytest.mark.parametrize("call, name", [
    ("ROIPooling(x, x, (7:7))", "ROIPooling"),
    ("BS.Sequences.Last(x)", "BS.Sequences.Last"),
    ("LambdaRank(x, x, x)", "LambdaRank"),
])
def test_a_refused_function_names_itself_and_why_where_it_is_called(call, name):
    ev, rec = evaluate_network(f"x = Input{{3}}\ny = {call}\nz = y\n", file="net.bs")
    with pytest.raises(BrainScriptRefusal) as e:
        rec.get("y", ev, None)
    assert isinstance(e.value, NotImplementedInCntkio)
    assert str(e.value).startswith("net.bs:2:") and f"{name} is not supported by cntkio: " in str(e.value)
    assert REFUSED[name] in str(e.value)


def test_a_refusal_comes_before_any_data_is_read(tmp_path):
    cfg = tmp_path / "t.cntk"
    cfg.write_text(f"""command = train
deviceId = cpu
train = [
    action = train
    modelPath = {tmp_path}/m.dnn
    BrainScriptNetworkBuilder = {{
        features = Input {{4}} ; labels = Input {{2}}
        z = LinearLayer {{2}} (features)
        rank = LambdaRank (labels, z, features)
        ce = CrossEntropyWithSoftmax (labels, z)
        criterionNodes = (ce) ; evaluationNodes = (rank)
    }}
    SGD = [ minibatchSize = 4 ; learningRatesPerMB = 0.1 ; maxEpochs = 1 ]
    reader = [ readerType = CNTKTextFormatReader ; file = {tmp_path}/absent.ctf
               input = [ features = [ dim = 4 ; format = dense ] ; labels = [ dim = 2 ; format = dense ] ] ]
]
""")
    with pytest.raises(ConfigError) as e:           # the validation before any work finds it
        run([f"configFile={cfg}"])
    assert "before any work" in str(e.value) and re.search(r"t.cntk:9:\d+: LambdaRank is not supported by cntkio: ranking",
                                                           str(e.value))


def test_the_prelude_parses_with_the_library_signatures():
    # every definition of prelude.bs is a member the library registers (none shadows a Python one)
    from cntkio.networks.brainscript import library as lib
    body = parse_record_body(open(lib._PRELUDE, encoding="utf-8").read(), "prelude.bs")
    assert body.members and {k for k, v in library_paths().items() if v == "prelude"} <= set(CORE)
