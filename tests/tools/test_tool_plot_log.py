"""``cntkio plot-log LOG``: a training log's epochs drawn to a PNG (issue 31, beyond CNTK)."""
from __future__ import annotations

import json
import sys

from cntkio.cli import main
from cntkio.tools.plot_log import parse_log

LOG = """\
Finished Epoch[1 of 3]: [Training] CrossEntropyWithSoftmax = 0.55531538 * 1437; EvalClassificationError = 14.475% * 1437; learningRatePerSample = 0.03125; epochTime = 0.155s; throughput = 9261.2 samples/s
Finished Epoch[1 of 3]: [Validate] CrossEntropyWithSoftmax = 0.60000000 * 360; EvalClassificationError = 15.000% * 360
Finished Epoch[2 of 3]: [Training] CrossEntropyWithSoftmax = 0.09932922 * 1437; EvalClassificationError = 2.923% * 1437; learningRatePerSample = 0.015625; epochTime = 0.110s; throughput = 13102.8 samples/s
Finished Epoch[ 3 of 3]: [Training] CrossEntropyWithSoftmax = 0.05443628 * 1437; EvalClassificationError = 0.765% * 1437; totalSamplesSeen = 4311; learningRatePerSample = 0.015625; epochTime=0.12s
Final Results: Minibatch[1-1]: EvalClassificationError = 3.056% * 360; CrossEntropyWithSoftmax = 0.10841803 * 360
"""


def test_the_epochs_of_cntkio_and_cntk_lines_are_read():
    e = parse_log(LOG)
    assert [(r["epoch"], r["phase"]) for r in e] == [(1, "Training"), (1, "Validate"), (2, "Training"), (3, "Training")]
    assert e[0]["criteria"] == {"CrossEntropyWithSoftmax": 0.55531538, "EvalClassificationError": 14.475}
    assert e[0]["percent"] == ["EvalClassificationError"] and e[0]["samples"] == 1437
    assert e[0]["learningRatePerSample"] == 0.03125 and e[0]["epochTime"] == 0.155 and e[0]["throughput"] == 9261.2
    assert e[3]["epochTime"] == 0.12 and e[3]["totalSamplesSeen"] == 4311


def test_plot_log_writes_a_png(tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_text(LOG)
    assert main(["plot-log", str(log), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["output"] == str(tmp_path / "train.png") and len(out["epochs"]) == 4
    assert (tmp_path / "train.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.log", "train.png"]   # no temporary left


def test_not_a_log_and_no_matplotlib_are_one_line_errors(tmp_path, capsys, monkeypatch):
    log = tmp_path / "x.log"
    log.write_text("hello\n")
    assert main(["plot-log", str(log)]) == 1
    assert capsys.readouterr().err.startswith(f"cntkio plot-log: error: {log}: no 'Finished Epoch")
    log.write_text(LOG)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["plot-log", str(log)]) == 1
    assert capsys.readouterr().err == ("cntkio plot-log: error: plot-log needs matplotlib, which is not "
                                       "installed: pip install 'cntkio[plot]'\n")
