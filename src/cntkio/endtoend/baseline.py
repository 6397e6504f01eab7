"""The facts of a CNTK ``baseline.txt`` log that do not depend on data or hardware, and a run's.

What it must never do: compare numbers that depend on the data, the random draws or the
hardware (losses, timings, sample counts): only what ran and under which names.

A CNTK end-to-end test's ``baseline.txt`` is the log of its ``run-test``: one or more runs of
``cntk``, each opening with ``=== Running <cntk> configFile=...``. Per run, :func:`read_baseline`
keeps

* ``commands``: the ``Commands:`` line (the sections ``command=`` named), else the command banners';
* ``actions``: the actions of the command banners (``# speechTrain command (train action)``,
  ``# Action "train"``), in order, else of the ``Action "x" complete.`` lines;
* ``training_criteria`` / ``evaluation_criteria``: the node names of ``Training criterion:`` and
  ``Evaluation criterion:``, and of the lines under ``Evaluation criteria:`` (CNTK 2.x, several
  evaluation nodes) and ``Training criterion node(s):`` (older logs), in order of appearance, once
  each;
* ``epochs``: per train command, the number ``N`` of ``Finished Epoch[k of N]: [Training]`` and
  how many such lines there were;
* ``completed``: ``__COMPLETED__`` was written.

Lines of parallel runs (``MPI Rank r: ...``) count for rank 0 only. :func:`run_facts` gives the
same facts for a cntkio run (:class:`~cntkio.endtoend.runner.RunOutcome`).
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["RunFacts", "read_baseline", "run_facts"]

_STAMP = re.compile(r"^(?:MPI Rank (\d+): )?(?:\d\d/\d\d/\d{4} \d\d:\d\d:\d\d: )?")
_CRITERION = re.compile(r"^(Training|Evaluation) criterion:\s+(\S+) = (\S+)")
#: a heading over a list of criterion lines: "Training criterion node(s):" (older logs) and
#: "Evaluation criteria:" (CNTK 2.x, each node on a line of its own beginning with a TAB)
_CRITERIA_HEAD = re.compile(r"^(Training|Evaluation) (?:criterion node\(s\)|criteria):\s*$")
_CRITERIA_ITEM = re.compile(r"^\s+(\S+) = (\S+)\s*$")
_FINISHED = re.compile(r"^Finished Epoch\[\s*(\d+) of (\d+)\]: \[Training\]")
_ACTION = re.compile(r'^Action "(\w+)" complete\.')
#: the banner CNTK writes before each command: "# speechTrain command (train action)" (older logs:
#: '# Action "train"')
_BANNER = re.compile(r'^# (?:(\S+) command \((\w+) action\)|Action "(\w+)")\s')


@dataclass
class RunFacts:
    """What one ``cntk`` run did, by names (see the module docstring)."""

    configs: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    training_criteria: list[str] = field(default_factory=list)
    evaluation_criteria: list[str] = field(default_factory=list)
    epochs: list[list[int]] = field(default_factory=list)   # [max_epochs, epochs finished] per train
    completed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RunFacts":
        return cls(**d)


def _configs(line: str) -> list[str]:
    m = re.search(r"configFile=(\S+)", line)
    if m is None:
        return []
    return [re.split(r"[\\/]", p)[-1] for p in m.group(1).split("+")]


def read_baseline(text: str) -> list[RunFacts]:
    """The runs of a baseline log, each as :class:`RunFacts`."""
    runs: list[RunFacts] = []
    # the lines before the first "=== Running" (hardware info) belong to no run, unless the log
    # has no such line (a log of one run written by cntk itself)
    cur: RunFacts | None = None if "=== Running " in text else RunFacts()
    if cur is not None:
        runs.append(cur)
    heading: str | None = None
    epoch_of: dict[int, int] = {}
    banners: list[tuple] = []           # (command or None, action) of the command banners
    completed_actions: list[str] = []   # the actions of the "complete" lines
    for raw in text.splitlines():
        if raw.startswith("=== Running "):
            _actions(cur, banners, completed_actions)
            cur = RunFacts(configs=_configs(raw))
            runs.append(cur)
            heading, epoch_of, banners, completed_actions = None, {}, [], []
            continue
        m = _STAMP.match(raw)
        if m.group(1) not in (None, "0"):
            continue
        line = raw[m.end():]
        if cur is None:
            continue
        if heading is not None:
            item = _CRITERIA_ITEM.match(line)
            if item is not None:
                _add(cur, heading, item.group(1))
                continue
            if not line.strip():        # the list may go on after a blank line
                continue
            heading = None
        if line.startswith("Commands:"):
            cur.commands = line[len("Commands:"):].split()
        elif (b := _BANNER.match(line)) is not None:
            banners.append((b.group(1), b.group(2) or b.group(3)))
            epoch_of = {}
        elif (a := _ACTION.match(line)) is not None:
            completed_actions.append(a.group(1))
            epoch_of = {}
        elif (c := _CRITERION.match(line)) is not None:
            _add(cur, c.group(1), c.group(2))
        elif (h := _CRITERIA_HEAD.match(line)) is not None:
            heading = h.group(1)
        elif (f := _FINISHED.match(line)) is not None:
            n = int(f.group(2))
            if n not in epoch_of:
                epoch_of[n] = len(cur.epochs)
                cur.epochs.append([n, 0])
            cur.epochs[epoch_of[n]][1] += 1
        elif line.startswith("__COMPLETED__"):
            cur.completed = True
    _actions(cur, banners, completed_actions)
    return runs


def _actions(run: RunFacts | None, banners: list[tuple], completed: list[str]) -> None:
    """A run's actions: those of its command banners (every command has one; an SVD command
    writes no "complete" line), else those of its "complete" lines; its commands from the banners
    when the log has no ``Commands:`` line and the banners name them."""
    if run is None:
        return
    run.actions = [a for _, a in banners] if banners else list(completed)
    if not run.commands and banners and all(c for c, _ in banners):
        run.commands = list(dict.fromkeys(c for c, _ in banners))


def _add(facts: RunFacts, kind: str, name: str) -> None:
    names = facts.training_criteria if kind == "Training" else facts.evaluation_criteria
    if name not in names:
        names.append(name)


def run_facts(outcome: Any) -> RunFacts:
    """The facts of a cntkio run (a :class:`~cntkio.endtoend.runner.RunOutcome`): the commands
    and actions it ran, the criterion nodes its train commands reported, its epochs."""
    facts = RunFacts(configs=_configs(outcome.argv[0]) if outcome.argv else [], commands=list(outcome.commands),
                     actions=list(outcome.actions), completed=outcome.completed)
    for _, _, result in outcome.results:
        epochs = getattr(result, "epochs", None)
        if epochs is None or not hasattr(result, "max_epochs"):
            continue
        for r in epochs:
            names = list(getattr(r, "totals", {}))
            for i, name in enumerate(names):      # the training criterion first, then the evaluation nodes
                _add(facts, "Training" if i == 0 else "Evaluation", name)
        facts.epochs.append([int(result.max_epochs), len(epochs)])
    return facts
