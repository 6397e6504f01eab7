"""Classification error is printed the same way, as a percentage, whatever builder made the network
(issue 31, item 9): CNTK printed a ClassificationError node's value as a percentage by its
operation, not by its name (the NDL and BrainScript examples name it Err and errs)."""
from __future__ import annotations

import os

import pytest
import torch

from cntkio.actions._common import fmt_criteria
from cntkio.actions.eval import EvalResult, percent_nodes
from cntkio.actions.network import build_network
from cntkio.config import load_config

import paths

EX = paths.REPO / "examples"


@pytest.mark.parametrize("config,section,error_node", [
    ("digits/digits.cntk", "digitsTrain", "EvalClassificationError"),
    ("ndl/digits_ndl.cntk", "digitsTrain", "Err"),
    ("brainscript/digits_inline.cntk", "trainNetwork", "errs"),
])
def test_the_classification_error_node_of_every_builder_is_a_percentage(config, section, error_node, monkeypatch):
    monkeypatch.chdir(paths.REPO)
    cfg = load_config([f"configFile={EX / config}"])
    net = build_network(cfg(section), device=torch.device("cpu"), dtype=torch.float32)
    assert percent_nodes(net) == {error_node}
    line = str(EvalResult(totals={error_node: 9.0, "ce": 36.0}, samples=360, percent=percent_nodes(net)))
    assert line == f"{error_node} = 2.500% * 360; ce = 0.10000000 * 360"
    assert os.getcwd() == str(paths.REPO)


def test_without_the_network_a_name_still_decides():
    assert fmt_criteria({"EvalClassificationError": 1.0, "SquareError": 2.0}, 4) == \
        "EvalClassificationError = 25.000% * 4; SquareError = 0.50000000 * 4"
    assert fmt_criteria({"Err": 1.0}, 4, percent={"Err"}) == "Err = 25.000% * 4"
