"""Warnings about what the user wrote reach the user at every traceLevel, each once (issue 31,
item 1): a misspelt key and a key accepted without effect in a copy of the shipped digits example,
which sets traceLevel = 0."""
import logging
import re

import paths

from cntkio.cli import main

EXAMPLE = paths.REPO / "examples" / "digits" / "digits.cntk"


def _copy_with(tmp_path, **subs):
    text = EXAMPLE.read_text()
    for old, new in subs.items():
        assert old in text
        text = text.replace(old, new)
    cfg = tmp_path / "digits.cntk"
    cfg.write_text(text)
    return cfg


def test_example_warnings_show_at_trace_level_0_once(tmp_path, caplog, capsys):
    text = EXAMPLE.read_text()
    assert re.search(r"^traceLevel = 0", text, re.M)        # the example as shipped
    cfg = _copy_with(tmp_path, **{"maxEpochs = 6": "maxEpochs = 1\n        keepCheckPointFiles = true",
                                  "minibatchSize = 360": "minibatchSzie = 360"})
    with caplog.at_level(logging.DEBUG, logger="cntkio"):
        rc = main([f"configFile={cfg}", f"dataDir={paths.REPO / 'examples' / 'digits'}",
                   f"outDir={tmp_path / 'out'}", "numCPUThreads=1"])
    assert rc == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    typo = [w for w in warnings if "minibatchSzie" in w]
    keep = [w for w in warnings if "keepCheckPointFiles" in w]
    assert len(typo) == 1 and "not used \N{EM DASH} did you mean `minibatchSize`?" in typo[0]
    assert len(keep) == 1 and "has no effect" in keep[0]
    assert len(warnings) == len(set(warnings))
    assert "Final Results" in capsys.readouterr().out
