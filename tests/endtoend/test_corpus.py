"""CNTK's own configurations (Examples/ and Tests/EndToEndTests/) run unchanged on generated data.

One test per case of cases.py (a CNTK run-test, or an Example no run-test runs): the run-test's
command lines run in this process on small generated data (harness.py), and what ran is compared
with the facts of CNTK's baseline log (corpus/baseline_facts.json): the commands and actions, the
criterion and evaluation node names, the epochs of each train command. A case that cannot run
must end in cntkio's own error, matching its expectation. The long cases are marked ``slow``
(run by hand, not in CI: ``pytest -m slow tests/endtoend``; .ci/run says why).
"""
from __future__ import annotations

import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cases import CASES, JOINED, NOT_CONFIGS, RUNS  # noqa: E402
from harness import CORPUS, baseline_facts, facts_of, run_case  # noqa: E402

from cntkio.config import command_sections, load_config  # noqa: E402
from cntkio.errors import CntkioError  # noqa: E402

FACTS = baseline_facts()


def _param(case):
    return pytest.param(case, id=case.id, marks=[pytest.mark.slow] if case.slow else [])


def _lower(names):
    return [str(n).lower() for n in names]


def _check_against_baseline(case, outcomes, facts, baseline_runs):
    assert len(outcomes) == len(baseline_runs), "the run-test ran cntk as many times as the baseline shows"
    for i, (ours, theirs) in enumerate(zip(facts, baseline_runs)):
        where = f"run {i + 1} ({case.runs[i].config} {case.runs[i].args})"
        if theirs["commands"]:
            assert _lower(ours.commands) == _lower(theirs["commands"]), where
        if theirs["actions"]:
            assert _lower(ours.actions) == _lower(theirs["actions"]), where
        if theirs["training_criteria"] and any(done for _, done in ours.epochs):   # a resumed run may train none
            want = ((theirs["training_criteria"], theirs["evaluation_criteria"]) if case.criteria_gap is None
                    else case.criteria_gap[:2])       # a known naming gap: its names until it is closed
            assert ours.training_criteria == want[0], where
            assert sorted(ours.evaluation_criteria) == sorted(want[1]), where
        if case.max_epochs is not None:     # the case overrides maxEpochs (a size): its own count holds
            assert all(n == case.max_epochs and done <= n for n, done in ours.epochs), where
            continue
        assert [e[0] for e in ours.epochs] == [e[0] for e in theirs["epochs"]], f"{where}: maxEpochs of each train"
        resumed = "makemode=true" in case.runs[i].args.lower() and i > 0
        for (n, done), (_, base_done) in zip(ours.epochs, theirs["epochs"]):
            if resumed or base_done < n:        # a resumed run, or CNTK stopped early (learning rate)
                assert done <= n, where
            elif base_done > n:                 # CNTK trained an epoch again after cutting the learning
                assert done <= base_done, where  # rate (AutoAdjust): Examples/Text/PennTreebank/RNN's 5 of 3
            else:
                assert done == base_done, f"{where}: epochs trained"


def _check_without_baseline(case, outcomes, facts, argvs):
    for ours, argv in zip(facts, argvs):
        expected = [c.name for c in command_sections(load_config(argv))]
        assert _lower(ours.commands) == _lower(expected)
        if case.max_epochs is not None:
            assert all(e == [case.max_epochs, case.max_epochs] for e in ours.epochs), ours.epochs


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_corpus_case(case, tmp_path):
    outcomes, dirs = run_case(case, str(tmp_path))
    error = next((o.error for o in outcomes if o.error is not None), None)
    if case.expect != RUNS:
        assert error is not None, f"expected to stop ({case.expect.reason}), but every command ran"
        assert isinstance(error, CntkioError)
        assert re.search(case.expect.match, str(error)), str(error)
        if case.expect.kind == "invalid":     # a config CNTK rejects too: the error says where
            assert getattr(error, "file", None) or getattr(error, "path", None) or "cntk" in str(error)
        return
    assert error is None, f"{type(error).__name__}: {error}\n--- output ---\n{outcomes[-1].output[-3000:]}"
    facts = facts_of(outcomes)
    entry = FACTS.get(case.runtest.rsplit("/", 1)[0]) if case.runtest else None
    if entry is not None and entry["runs"]:
        _check_against_baseline(case, outcomes, facts, entry["runs"])
    else:
        _check_without_baseline(case, outcomes, facts, [o.argv for o in outcomes])


def test_every_config_of_the_corpus_has_a_case():
    # the 121 .cntk files of Examples/ and Tests/EndToEndTests/: each run by a case, joined to
    # another config by one, or an MLF label file named .cntk
    with open(os.path.join(CORPUS, "SOURCES.md")) as f:
        vendored = re.findall(r"^- `(.+\.cntk)`$", f.read(), re.M)
    covered = {c for case in CASES for c in case.configs}
    missing = [p for p in vendored if p not in covered and p not in JOINED]
    assert missing == []
    assert len(vendored) + len(NOT_CONFIGS) == 121
    assert set(JOINED.values()) <= {c.id for c in CASES}
