"""``validate`` checks every section a command list runs, every value, the data files and the model
paths, and reports all problems before any work, each once, with no follow-on warning (issue 31,
item 4); ``cntkio configFile=...`` runs the same checks first."""
from __future__ import annotations

import logging

import pytest

from cntkio.actions.runner import run
from cntkio.actions.validate import ValidationError, validate_commands
from cntkio.cli import main
from cntkio.config import load_config

from train_config import line_of

BAD = {"learningRatesPerMB = 0.1": "learningRatesPerMB = fast\n        momentumPerMB = 0.9x\n"
                                     "        epochSize = 0\n        L2RegWeight = 0.0001",
       "maxEpochs = {epochs}": "maxEpochs = two",
       "minibatchSize = 16": "minibatchSize = abc"}


def _bad(setup):
    tmp, write = setup
    text_bad = {k.replace("{epochs}", "2"): v for k, v in BAD.items()}
    return tmp, write(**text_bad)


def test_every_bad_value_of_every_section_is_reported_with_file_and_line(setup):
    tmp, cfg = _bad(setup)
    report = validate_commands(load_config([f"configFile={cfg}"]), raise_errors=False)
    lines = sorted(str(p) for p in report.problems)
    assert lines == sorted([
        f"{cfg}:{line_of(cfg, 'learningRatesPerMB = fast')}: train.SGD.learningRatesPerMB: "
        "expected a floating-point number, found 'fast'",
        f"{cfg}:{line_of(cfg, 'momentumPerMB = 0.9x')}: train.SGD.momentumPerMB: "
        "expected a floating-point number, found '0.9x'",
        f"{cfg}:{line_of(cfg, 'maxEpochs = two')}: train.SGD.maxEpochs: expected an integer, found 'two'",
        f"{cfg}:{line_of(cfg, 'minibatchSize = abc')}: test.minibatchSize: "
        "expected a floating-point number, found 'abc'",
    ]), "\n".join(lines)
    # the SGD section's good keys are not "not used" (its bad value stopped nothing from reading them)
    assert report.unused == []


def test_validate_prints_each_problem_once_and_no_follow_on_problem(setup, capsys, caplog):
    tmp, cfg = _bad(setup)
    with caplog.at_level(logging.DEBUG, logger="cntkio"):
        assert main(["validate", f"configFile={cfg}"]) == 1
    err = capsys.readouterr().err
    text = err + caplog.text
    assert "does not exist" not in text           # the test command's model: train writes it
    assert "not used" not in text and "did you mean" not in text
    for needle in ("'fast'", "'0.9x'", "'two'", "'abc'"):
        assert text.count(needle) == 1, (needle, text)
    assert err.rstrip().endswith("cntkio validate: 4 problems found")


def test_a_run_reports_the_same_problems_before_any_work(setup, capsys):
    tmp, cfg = _bad(setup)
    with pytest.raises(ValidationError) as e:
        run([f"configFile={cfg}"])
    assert len(e.value.problems) == 4
    assert not (tmp / "out").exists()
    assert main([f"configFile={cfg}"]) == 1
    err = capsys.readouterr().err
    assert "4 problems found before any work" in err and err.count("'abc'") == 1


def test_a_bad_value_in_the_test_section_stops_the_run_before_training(setup):
    tmp, write = setup
    cfg = write(**{"minibatchSize = 16": "minibatchSize = -3"})
    with pytest.raises(Exception, match=r"test.minibatchSize: expected a positive integer, found -3"):
        run([f"configFile={cfg}"])
    assert not (tmp / "out").exists()


def test_legacy_reader_data_files_are_checked(tmp_path):
    import paths
    src = (paths.REPO / "examples" / "legacy" / "mnist.cntk").read_text()
    cfg = tmp_path / "mnist.cntk"
    cfg.write_text(src.replace("digits_test.txt", "missing_test.txt"))
    report = validate_commands(load_config([f"configFile={cfg}", f"dataDir={paths.REPO / 'examples' / 'legacy'}",
                                            f"outDir={tmp_path}"]), raise_errors=False)
    [p] = report.problems
    assert "missing_test.txt does not exist" in str(p) and "mnistTest.reader" in str(p)
