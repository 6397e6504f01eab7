"""Runs a corpus case (cases.py) as its run-test did: a copy of its files, generated data, cntkrun.

The case's folder of the corpus is copied below a temporary directory (``src/<corpus path>``),
``DataDir`` and ``RunDir`` are empty folders beside it, the data is generated for each run
(:func:`cntkio.endtoend.generate_data`), and each ``cntkrun`` line runs in this process with the
run-test's arguments, then the case's size overrides, then :func:`small_epochs`.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil

import numpy as np
from dataclasses import dataclass

from cntkio.endtoend import cntk_arguments, cntkrun, generate_data
from cntkio.errors import CntkioError
from cntkio.endtoend.baseline import RunFacts, run_facts

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
#: the largest epochSize kept as the run-test wrote it; a larger one becomes 0 (one sweep of the
#: generated data), so that an epoch reads the small data once instead of many times
MAX_EPOCH_SIZE = 512


@dataclass
class Dirs:
    config: str
    data: str
    run: str
    root: str

    def fill(self, text: str) -> str:
        return (text.replace("{ConfigDir}", self.config).replace("{DataDir}", self.data)
                .replace("{RunDir}", self.run).replace("{OutputDir}", self.run))


def baseline_facts() -> dict:
    with open(os.path.join(CORPUS, "baseline_facts.json")) as f:
        return json.load(f)


def prepare(case, tmp: str) -> Dirs:
    tree = case.tree or case.config_dir
    shutil.copytree(os.path.join(CORPUS, tree), os.path.join(tmp, "src", tree))
    dirs = Dirs(config=os.path.join(tmp, "src", case.config_dir), data=os.path.join(tmp, "data"),
                run=os.path.join(tmp, "run"), root=tmp)
    os.makedirs(dirs.data)
    os.makedirs(dirs.run)
    rng = np.random.default_rng(7)
    for rel, (rows, cols) in getattr(case, "matrices", {}).items():      # positive: means, variances, priors
        path = os.path.join(dirs.data, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        values = rng.uniform(0.1, 1.0, size=(rows, cols))
        with open(path, "w") as f:
            f.write("\n".join(" ".join(f"{v:.6f}" for v in row) for row in values) + "\n")
    for source, dest in getattr(case, "copies", []):
        dest = dirs.fill(dest)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(dirs.fill(source), dest)
    return dirs


def small_epochs(argv: list[str]) -> list[str]:
    """Overrides setting ``epochSize=0`` (one sweep of the small data) wherever a command sees an
    epochSize larger than :data:`MAX_EPOCH_SIZE`: in its SGD section (its own or the root's) and in
    the command itself (a write or test command reads ``epochSize`` samples; CNTK's own epochs
    would read the few generated sequences hundreds of times)."""
    from cntkio.config import command_sections, load_config

    def too_big(cfg) -> bool:
        if cfg is None or not hasattr(cfg, "exists") or not cfg.exists("epochSize"):
            return False
        first = re.split(r"[:*]", str(cfg("epochSize")).strip())[0]
        try:
            return int(float(first)) > MAX_EPOCH_SIZE
        except ValueError:
            return False

    cfg = load_config(argv)
    out = []
    for cmd in command_sections(cfg):
        sec = cmd.section
        owner = sec
        while owner is not None and not owner.exists_current("SGD"):
            owner = owner.parent
        sgd = owner("SGD") if owner is not None else None
        if too_big(sgd if hasattr(sgd, "exists") else None):
            out.append(f"{cmd.name}=[SGD=[epochSize=0]]" if owner is sec else "SGD=[epochSize=0]")
        if too_big(sec):
            out.append(f"{cmd.name}=[epochSize=0]")
    return list(dict.fromkeys(out))


def run_case(case, tmp: str, device_id: int | str = -1):
    """Run every ``cntkrun`` of the case; returns ``(outcomes, dirs)``. A run that ends in an
    error ends the case (the run-tests' ``|| exit $?``)."""
    dirs = prepare(case, tmp)
    outcomes = []
    for run in case.runs:
        for pattern in run.remove:          # the run-test's "rm ... || exit $?" before this run
            found = glob.glob(dirs.fill(pattern))
            assert found, f"the run-test removes {pattern}, which the run before did not write"
            for path in found:
                os.remove(path)
        args = dirs.fill(run.args)
        base = cntk_arguments(run.config, args, config_dir=dirs.config, run_dir=dirs.run, data_dir=dirs.data,
                              device_id=device_id)
        extra = [dirs.fill(s) for s in case.sizes]
        try:
            extra += small_epochs(base + extra)
            generate_data(base + extra, root=tmp, cwd=dirs.data, shapes=case.shapes)
        except CntkioError:
            pass        # a configuration that does not load: the run reports it
        outcome = cntkrun(run.config, args, config_dir=dirs.config, run_dir=dirs.run, data_dir=dirs.data,
                          device_id=device_id, overrides=extra)
        outcomes.append(outcome)
        if outcome.error is not None:
            break
    return outcomes, dirs


def facts_of(outcomes) -> list[RunFacts]:
    return [run_facts(o) for o in outcomes]
