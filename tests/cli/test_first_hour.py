"""A new user's first hour, as one walk-through (issue 31): the README's main job and first read,
then each guide's first example, then a typo in a copied example, then a changed network.

Everything runs from a fresh working folder that sees the repository's ``examples/`` (a symbolic
link), so the relative paths of the README and the guides work as written and nothing is written
inside the repository."""
from __future__ import annotations

import logging
import re
import shlex

import pytest

from cntkio.cli import main

import paths

# the pages whose first Python example a newcomer copies, in the README's order
GUIDES = ["guide.md", "ctf.md", "config.md", "binary.md", "images.md", "speech.md", "legacy-readers.md",
          "ndl.md", "brainscript.md", "from-cntk.md", "from-pytorch.md"]


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """The newcomer's working folder: ``examples`` links to the repository's."""
    d = tmp_path_factory.mktemp("newcomer")
    (d / "examples").symlink_to(paths.REPO / "examples")
    return d


@pytest.fixture
def cwd(home, monkeypatch):
    monkeypatch.chdir(home)
    return home


def test_1_the_readme_main_job_trains_then_only_tests(cwd, capsys):
    readme = (paths.REPO / "README.md").read_text()
    [command] = re.findall(r"&& (cntkio configFile=examples/digits/digits\.cntk)\n", readme)
    args = shlex.split(command)[1:] + ["outDir=out/digits"]    # the example's output folder, here
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.count("Finished Epoch[") == 6
    [error] = re.findall(r"Final Results: Minibatch\[1-1\]: EvalClassificationError = ([\d.]+)% \* 360", out)
    assert float(error) < 6.0                                     # the README's ~3 %
    assert main(args) == 0                                        # run again: makeMode tests the final model
    again = capsys.readouterr().out
    assert "no further training is necessary" in again and "Finished Epoch[" not in again
    assert re.search(r"EvalClassificationError = [\d.]+% \* 360", again)


def test_2_the_readme_first_read_runs(cwd):
    [block] = _python_blocks((paths.REPO / "README.md").read_text())[:1]
    scope: dict = {}
    exec(compile(block, "README.md", "exec"), scope)
    assert scope["x"].shape[1:] == (1, 64)


@pytest.mark.parametrize("page", GUIDES)
def test_3_each_guides_first_example_runs_as_written(page, cwd, capsys):
    text = (paths.DOCS / page).read_text()
    block = _python_blocks(text)[0]
    for first in re.findall(r"^# first: (cntkio .*)$", block, re.M):   # a step the example names
        assert main(shlex.split(first)[1:]) == 0
    exec(compile(block, f"docs/{page}", "exec"), {})


def test_4_a_typo_in_a_copied_example_is_said_once(cwd, capsys, caplog):
    text = (paths.REPO / "examples" / "digits" / "digits.cntk").read_text()
    assert "\ntraceLevel = 0" in text
    (cwd / "mine.cntk").write_text(text.replace("minibatchSize = 360", "minibatchSzie = 360"))
    assert main(["validate", "configFile=mine.cntk", "outDir=out/mine"]) == 0
    err = capsys.readouterr().err
    assert err.count("`digitsTest.minibatchSzie`: not used \N{EM DASH} did you mean `minibatchSize`?") == 1
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        assert main(["configFile=mine.cntk", "outDir=out/mine", "digitsTrain=[SGD=[maxEpochs=1]]"]) == 0
    said = [r.getMessage() for r in caplog.records if "minibatchSzie" in r.getMessage()]
    assert len(said) == 1


def test_5_a_changed_network_is_not_tested_with_the_old_model(cwd, capsys):
    # the main job (one epoch here, as test_1 may run elsewhere), then the hidden layer widened
    job = ["configFile=examples/digits/digits.cntk", "outDir=out/changed", "digitsTrain=[SGD=[maxEpochs=1]]"]
    assert main(job) == 0
    capsys.readouterr()
    wider = job + ["digitsTrain=[SimpleNetworkBuilder=[layerSizes=64:256:10]]"]
    assert main(wider) == 1
    err = capsys.readouterr().err
    assert "makeMode: the final model out/changed/digits.dnn exists but was trained with other settings" in err
    assert "digitsTrain.SimpleNetworkBuilder.layerSizes: 64:128:10 in the model, 64:256:10 in the configuration" in err
    assert "makeMode=false" in err
    assert main(wider + ["makeMode=false"]) == 0                  # the way it names
    assert "Final Results" in capsys.readouterr().out
