"""``cntkio plot-log LOG [--output PNG] [--json]``: the epochs of a training log drawn to a PNG, for
people without TensorBoard.

What it must never do: need matplotlib anywhere else (it is the ``plot`` extra, imported here only),
or leave a partial PNG (written to a temporary name, then renamed).

A log is what ``cntkio configFile=...`` (or CNTK itself) printed: its ``Finished Epoch[N of M]:
[Training] ...`` and ``[Validate] ...`` lines give, per epoch, each criterion (``name = value *
samples``, a percentage for classification errors), the learning rate, the epoch time and the
throughput. One panel per criterion (training and validation), and one for the learning rate.
"""
from __future__ import annotations

import argparse
import os
import re
import tempfile
from typing import Sequence

from ..errors import FormatError, MissingDependency
from ._common import emit, fail

__all__ = ["main", "parse_log", "plot_epochs"]

_EPOCH = re.compile(r"Finished Epoch\[\s*(\d+) of (\d+)\]:\s*\[(Training|Validate)\]\s*(.*)")
_CRITERION = re.compile(r"^\s*(\S+)\s*=\s*([-+0-9.eEnaNinf]+)(%?)\s*\*\s*(\d+)\s*$")
_VALUE = re.compile(r"^\s*(\w+)\s*=\s*([-+0-9.eE]+)\s*(s|samples/s)?\s*$")


def parse_log(text: str, name: str = "log") -> list[dict]:
    """The epochs of a log: ``{"epoch", "of", "phase", "criteria": {name: value}, "percent": [names],
    "samples", "learningRatePerSample", "epochTime", "throughput"}`` per ``Finished Epoch`` line."""
    out = []
    for line in text.splitlines():
        m = _EPOCH.search(line)
        if not m:
            continue
        rec: dict = {"epoch": int(m.group(1)), "of": int(m.group(2)), "phase": m.group(3), "criteria": {},
                     "percent": []}
        for item in m.group(4).split(";"):
            c = _CRITERION.match(item)
            if c:
                rec["criteria"][c.group(1)] = float(c.group(2))
                if c.group(3):
                    rec["percent"].append(c.group(1))
                rec["samples"] = int(c.group(4))
                continue
            v = _VALUE.match(item.replace("=", " = ", 1) if "=" in item and " = " not in item else item)
            if v:
                rec[v.group(1)] = float(v.group(2))
        out.append(rec)
    if not out:
        raise FormatError("no 'Finished Epoch[N of M]: [Training] ...' line: not a training log of cntkio "
                          "configFile=... or of CNTK", file=name)
    return out


def plot_epochs(epochs: list[dict], output: str, title: str = "") -> None:
    """Draw the criteria (training and validation) and the learning rate per epoch to ``output``."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise MissingDependency("plot-log needs matplotlib, which is not installed: pip install 'cntkio[plot]'") from e
    names = list(dict.fromkeys(k for e in epochs for k in e["criteria"]))
    lr = [(e["epoch"], e["learningRatePerSample"]) for e in epochs
          if e["phase"] == "Training" and "learningRatePerSample" in e]
    panels = len(names) + (1 if lr else 0)
    fig, axes = plt.subplots(panels, 1, figsize=(7, 2.6 * panels), sharex=True, squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        pct = any(name in e["percent"] for e in epochs)
        for phase, style in (("Training", "o-"), ("Validate", "s--")):
            pts = [(e["epoch"], e["criteria"][name]) for e in epochs if e["phase"] == phase and name in e["criteria"]]
            if pts:
                ax.plot(*zip(*pts), style, label="training" if phase == "Training" else "validation")
        ax.set_ylabel(name + (" (%)" if pct else ""))
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    if lr:
        ax = axes[-1, 0]
        ax.plot(*zip(*lr), "o-", color="gray")
        ax.set_ylabel("learningRatePerSample")
        ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel("epoch")
    if title:
        axes[0, 0].set_title(title)
    fig.tight_layout()
    folder = os.path.dirname(os.path.abspath(output))
    fd, tmp = tempfile.mkstemp(prefix=".plot-", suffix=".png", dir=folder)
    os.close(fd)
    try:
        fig.savefig(tmp, format="png", dpi=100)
        os.replace(tmp, output)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cntkio plot-log", description="Draw the epochs of a training log (the "
                                "'Finished Epoch' lines of cntkio configFile=... or CNTK: each criterion, "
                                "training and validation, and the learning rate) to a PNG. Needs matplotlib "
                                "(pip install 'cntkio[plot]').")
    p.add_argument("log", help="the log file (stdout of a run, or its stderr=PREFIX log)")
    p.add_argument("--output", "-o", help="the PNG to write (default: LOG with .png)")
    p.add_argument("--json", action="store_true", help="also print the epochs read, as JSON")
    return p


def main(argv: Sequence[str]) -> int:
    from ._common import output_problem
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as e:
        return int(e.code or 0)
    output = args.output or os.path.splitext(args.log)[0] + ".png"
    why = output_problem(output)
    if why is not None:
        return fail("plot-log", why)
    try:
        with open(args.log, encoding="utf-8", errors="replace") as f:
            epochs = parse_log(f.read(), args.log)
        plot_epochs(epochs, output, os.path.basename(args.log))
    except FileNotFoundError:
        from .._paths import missing_file_text
        return fail("plot-log", missing_file_text("log file", args.log))
    except (FormatError, MissingDependency, OSError) as e:
        return fail("plot-log", str(e))
    trained = sum(1 for e in epochs if e["phase"] == "Training")
    emit({"output": output, "epochs": epochs}, args.json,
         f"{output}: {trained} training epochs, {len(epochs) - trained} validations")
    return 0
