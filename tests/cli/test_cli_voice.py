"""The command line speaks with one voice (issue 31, item 9): every tool has ``--help`` and, where
it reports, ``--json``; docs/tools.md covers every tool; ``convert`` into a missing folder names the
folder; Ctrl-C prints one line."""
from __future__ import annotations

import json
import re

import pytest

from cntkio.actions import register_action
from cntkio.cli import TOOLS, main

import paths

DIGITS = paths.REPO / "examples" / "digits"


def test_the_tool_table_is_complete():
    assert sorted(TOOLS) == ["bench", "convert", "inspect", "plot-log", "show-config", "show-network", "validate"]


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_every_tool_has_help(tool, capsys):
    assert main([tool, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: cntkio {tool}")


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_docs_tools_md_covers_every_tool(tool):
    text = (paths.DOCS / "tools.md").read_text()
    assert re.search(rf"^## {re.escape(tool)}$", text, re.M), tool


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_every_reporting_tool_prints_json(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(paths.REPO)
    cfg = "configFile=examples/digits/digits.cntk"
    assert _json(capsys, ["inspect", str(DIGITS / "digits_test.ctf"), "--json"])
    net = _json(capsys, ["show-network", cfg, "--json"])
    assert net["digitsTrain"]["builder"] == "SimpleNetworkBuilder"
    assert net["digitsTrain"]["parameters"] == 64 * 128 + 128 + 128 * 10 + 10
    assert {"name": "H1", "operation": "Tanh", "inputs": ["W0*H0+B0"], "shape": [128], "per_sample": True,
            "values": 0, "learnable": False} in net["digitsTrain"]["nodes"]
    assert _json(capsys, ["show-config", cfg, "--json"])["command"] == "digitsTrain:digitsTest"
    v = _json(capsys, ["validate", cfg, f"outDir={tmp_path}", "--json"])
    assert v == {"ok": True, "problems": [], "unused": []}
    out = _json(capsys, ["convert", "ctf2bin", str(DIGITS / "digits_test.ctf"), str(tmp_path / "t.cbf"), "--json"])
    assert out["sequences"] == 360 and out["output"] == str(tmp_path / "t.cbf")
    out = _json(capsys, ["convert", "bin2ctf", str(tmp_path / "t.cbf"), str(tmp_path / "t.ctf"), "--json"])
    assert out["sequences"] == 360


def test_validate_json_lists_the_problems(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(paths.REPO)
    assert main(["validate", "configFile=examples/digits/digits.cntk", f"outDir={tmp_path}",
                 "digitsTest=[minibatchSize=abc ; minibatchSzie=3]", "--json"]) == 1
    v = json.loads(capsys.readouterr().out)
    assert v["ok"] is False
    [p] = v["problems"]
    assert p["path"] == "digitsTest.minibatchSize" and p["message"] == "expected a floating-point number, found 'abc'"
    [u] = v["unused"]
    assert u["path"] == "digitsTest.minibatchSzie" and u["suggestion"] == "minibatchSize"


@pytest.mark.parametrize("direction,name", [("csv2ctf", "a.csv"), ("ctf2bin", "a.ctf"), ("ctf2npz", "a.ctf")])
def test_convert_into_a_missing_folder_names_the_folder(tmp_path, capsys, direction, name):
    src = tmp_path / name
    src.write_text("a,b\n1,2\n" if name.endswith(".csv") else "|x 1 2\n")
    assert main(["convert", direction, str(src), str(tmp_path / "nodir" / "out.x")]) == 1
    err = capsys.readouterr().err
    assert err == f"cntkio convert: error: the output folder {tmp_path / 'nodir'} does not exist\n"


def _interrupt(section, name):
    raise KeyboardInterrupt


register_action("interruptTest", _interrupt)


def test_ctrl_c_prints_one_line(tmp_path, capsys):
    cfg = tmp_path / "c.cntk"
    cfg.write_text("command = s\ns = [ action = interruptTest ]\n")
    assert main([f"configFile={cfg}"]) == 130
    err = capsys.readouterr().err
    assert err == "cntkio: interrupted\n"
