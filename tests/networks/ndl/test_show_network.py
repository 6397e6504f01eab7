"""``cntkio show-network``: the networks of a config's commands, without training."""
from __future__ import annotations

from cntkio.cli import main
import paths


def test_show_network_prints_nodes_dimensions_and_counts(tmp_path, capsys):
    cfg = paths.REPO / "examples" / "ndl" / "digits_ndl.cntk"
    assert main(["show-network", f"configFile={cfg}", "command=digitsTrain", "ndlMacros=" +
                 str(paths.REPO / "examples" / "ndl" / "macros.ndl"),
                 f"digitsTrain=[NDLNetworkBuilder=[networkDescription={paths.REPO}/examples/ndl/digits.ndl]]"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("== digitsTrain: NDLNetworkBuilder\n")
    lines = out.splitlines()
    l1w = next(ln for ln in lines if ln.startswith("L1.W "))
    assert "[128x64]" in l1w and "8192 learnable" in l1w
    assert any(ln.startswith("L1.t ") and "Times(L1.W, norm.xNorm)" in ln and "[128] per sample" in ln for ln in lines)
    assert "16 nodes, 9610 parameters (9610 learnable)" in out
    assert "criterion nodes: CE" in out


def test_show_network_of_a_simple_network_builder(capsys):
    cfg = paths.REPO / "examples" / "digits" / "digits.cntk"
    assert main(["show-network", f"configFile={cfg}", "command=digitsTrain"]) == 0
    out = capsys.readouterr().out
    assert "W0            Parameter()" in out or any(ln.startswith("W0 ") for ln in out.splitlines())
    assert "HLast" in out and f"{64 * 128 + 128 + 128 * 10 + 10} parameters" in out


def test_show_network_without_networks_is_an_error(tmp_path, capsys):
    cfg = tmp_path / "c.cntk"
    cfg.write_text("command=x\nx=[action=dumpReader]\n")
    assert main(["show-network", f"configFile={cfg}"]) == 1
    assert "no command of this config has a network" in capsys.readouterr().err
