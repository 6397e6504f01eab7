"""CI's share of the text parsers' fuzzing (issue 30): a short mutation run per parser, and every
input a campaign found (tests/fuzz/text_findings/<target>/) replayed against the error rule.

The long campaign is ``nice -n 10 python tests/fuzz/text_fuzz.py --inputs 100000`` (docs/reliability.md).
"""
from __future__ import annotations

import logging
import os
import pathlib
import tempfile

import pytest

from text_fuzz import check, names_place, run_mutate
from text_targets import TARGETS

#: mutated inputs per parser in CI (a fixed count and seed: the same inputs on every run, about a
#: second each on a quiet machine)
SMOKE_INPUTS = {"brainscript": 100, "mel": 150, "ndl": 150}
SMOKE_DEFAULT = 300
FINDINGS = pathlib.Path(__file__).parent / "text_findings"


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_mutated_inputs_keep_the_error_rule(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)           # a MEL script may write its Dump files
    n = SMOKE_INPUTS.get(name, SMOKE_DEFAULT)
    logging.disable(logging.WARNING)      # the parsers' warnings about the inputs: thousands, not the rule
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None    # a file per input: in memory where it can
    try:
        with tempfile.TemporaryDirectory(prefix="cntkio-smoke-", dir=shm) as work:
            res = run_mutate(TARGETS[name], work, inputs=n, seconds=600, seed=30, findings_dir=None)
    finally:
        logging.disable(logging.NOTSET)
    assert res["inputs"] == n, res
    bad = res["findings"]
    report = "\n\n".join(f"{f['kind']}\ninput: {f['input']}\n{f['detail']}" for f in bad)
    assert not bad, report.encode("utf-8", "backslashreplace").decode("utf-8")   # texts of undecodable bytes


def _found() -> list:
    if not FINDINGS.is_dir():
        return []
    return [pytest.param(p.parent.name, p, id=f"{p.parent.name}/{p.name}")
            for p in sorted(FINDINGS.glob("*/*")) if p.suffix != ".txt"]


@pytest.mark.parametrize("name,path", _found())
def test_found_inputs_keep_the_error_rule(name, path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = TARGETS[name]
    assert check(target.run, path.read_bytes(), str(tmp_path / ("input" + target.suffix))) is None


def test_the_rule_checker_catches_what_breaks_it(tmp_path):
    """The checker itself: a bare exception, an unnamed error and a hang are findings."""
    import time

    from cntkio.errors import FormatError
    import text_fuzz
    p = str(tmp_path / "x.txt")

    def bare(path):
        raise IndexError("index 0 is out of bounds")

    def unnamed(path):
        raise FormatError("bad")

    def named(path):
        raise FormatError("bad", file=path)

    def slow(path):                        # CPU time is what the checker's timer counts
        t = time.process_time()
        while time.process_time() - t < 3:
            pass
    assert check(bare, b"", p)[0].startswith("IndexError at tests/fuzz/test_text_fuzz.py")
    assert check(unnamed, b"", p)[0] == "unnamed"
    assert check(named, b"", p) is None and names_place(FormatError("x", file=p), p)
    old = text_fuzz.HANG_SECONDS
    text_fuzz.HANG_SECONDS = 0.2
    import signal
    prev = signal.signal(signal.SIGPROF, text_fuzz._on_alarm)
    try:
        assert check(slow, b"", p)[0] == "hang"
    finally:
        text_fuzz.HANG_SECONDS = old
        signal.signal(signal.SIGPROF, prev)
    assert os.path.exists(p)
