"""Every case of CNTK's reader unit tests (``Tests/UnitTests/ReaderTests``), run on cntkio as
CNTK's C++ harness runs it and compared as its ``CheckFilesEquivalent`` compares
(``tests/readertests.py``; the cases in ``tests/readertests_cases.py``; docs/conformance.md).

A case passes when cntkio's dump equals CNTK's control (token by token, or within relative 1e-5
where CNTK's test allows a tolerance), or, for CNTK's error cases, when cntkio raises one of its
own error classes naming what CNTK's message names. The cases in ``DIFFERENCES`` differ from CNTK
on purpose (docs/differences.md, "CNTK's reader unit tests"): their tests state cntkio's behaviour.
"""
from __future__ import annotations

import numpy as np
import pytest

import readertests
from readertests_cases import CASES, UNAVAILABLE, by_name

#: cases whose difference from CNTK is deliberate (docs/differences.md) -> why
DIFFERENCES = {
    "ImageReaderColorTransform": "random transforms drawn per image from (seed, sweep, position)",
    "ImageReaderIntensityTransform": "random transforms drawn per image from (seed, sweep, position)",
    "blank_lines": "blank CTF lines are skipped, not errors",
    "blank_lines_ignored": "blank CTF lines are skipped, not errors",
}

pytest.importorskip("cv2")
RUN = [c for c in CASES if c.name not in DIFFERENCES]


@pytest.mark.parametrize("case", RUN, ids=[c.name for c in RUN])
def test_case_as_cntk(reader_tests_root, tmp_path, case):
    result = readertests.run_case(case, reader_tests_root, tmp_path)
    assert result.ok, f"{case.cpp}: {result.detail}"


def test_the_table_holds_every_cpp_case():
    # one row per call of CNTK's helpers: 27 image, 23 HTK, 1 UCI, 53 CTF reader runs, 6 CBF
    count = {s: sum(c.suite == s for c in CASES) for s in ("images", "htk", "uci", "ctf", "cbf")}
    assert count == {"images": 27, "htk": 23, "uci": 1, "ctf": 53, "cbf": 6}
    assert len({c.name for c in CASES}) == len(CASES)
    assert set(DIFFERENCES) <= {c.name for c in CASES}
    assert all(why for why in UNAVAILABLE.values())


# --- the deliberate differences: what cntkio does instead ------------------------------------------

def _lines(text: str) -> list[np.ndarray]:
    return [np.array(line.split(), np.float64) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("name", ["ImageReaderColorTransform", "ImageReaderIntensityTransform"])
def test_random_colour_and_intensity_draw_per_image(reader_tests_root, tmp_path, name):
    # CNTK draws from one mt19937 per batch slot, seeded with the slot number and kept across
    # minibatches (ImageTransformers.cpp:649 and 720), so its pixels depend on the minibatch
    # layout; cntkio draws per image from (seed, sweep, position): the same image of the map comes
    # out the same in any minibatch, thread count or checkpoint restore. The rest is CNTK's: the
    # shape, two epochs of one image, values clamped to [0, 255], and the un-jittered pixels
    # (the 4x4 scale of multi.png) where the transform moves nothing.
    case = by_name(name)
    text = readertests.run_case(case, reader_tests_root, tmp_path).output or readertests.read_and_write(
        case, reader_tests_root, tmp_path / "o.txt")
    control = (reader_tests_root / case.control).read_text()
    got, want = _lines(text), _lines(control)
    assert [g.size for g in got] == [w.size for w in want] == [48, 48]
    for g in got:
        assert g.min() >= 0 and g.max() <= 255
    # the second epoch reads the same image again: a new draw (sweep 1), as CNTK's draws go on
    assert not np.array_equal(got[0], got[1])
    again = readertests.read_and_write(case, reader_tests_root, tmp_path / "again.txt")
    assert again == text                       # reproducible


def test_blank_lines_are_skipped_not_counted(reader_tests_root, tmp_path):
    # CNTK 2.7 counts a blank line as an error (maxErrors 0: CNTK's test expects "Reached the
    # maximum number of allowed errors while reading the input file (contains_blank_lines.txt).");
    # cntkio skips blank lines (docs/ctf.md): both rows are read, one sequence each
    case = by_name("blank_lines")
    text = readertests.read_and_write(case, reader_tests_root, tmp_path / "o.txt")
    assert text == "1\n2\n"


def test_blank_lines_ignored_reads_into_the_next_sweep(reader_tests_root, tmp_path):
    # CNTK's control (2016) holds the 2 samples of the file for an epoch of 3 in minibatches of 3;
    # cntkio reads the sweep's 2 samples (a minibatch stops at the sweep end) and then the first
    # sample of the next sweep, as for every other file (an epoch runs on across sweeps:
    # 1x1_2_dense, 10x1_MI_2_dense)
    case = by_name("blank_lines_ignored")
    text = readertests.read_and_write(case, reader_tests_root, tmp_path / "o.txt")
    assert text == "1\n2\n1\n"


# --- the command line gives the harness's dump ----------------------------------------------------

@pytest.mark.parametrize("name", ["10x10_dense", "UCIFastReaderSimpleDataLoop"])
def test_dump_reader_action_on_the_command_line_matches_the_control(reader_tests_root, tmp_path, name):
    # ``cntkio configFile=... command=S S=[action=dumpReader ...]`` from the fixture's folder, as
    # a user runs CNTK's cases (docs/conformance.md)
    import os
    import subprocess
    import sys

    import paths
    case = by_name(name)
    out = tmp_path / "out.txt"
    env = dict(os.environ, PYTHONPATH=str(paths.SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    args = [sys.executable, "-m", "cntkio", f"configFile={reader_tests_root / case.config}",
            f"command={case.section}",
            f"{case.section}=[action=dumpReader; outputFile={out}; epochSize={case.epoch_size}; "
            f"minibatchSize={case.mb_size}; maxEpochs={case.epochs}; streams=({':'.join(case.inputs)})]"]
    proc = subprocess.run(args, cwd=reader_tests_root / case.cwd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    control = (reader_tests_root / case.control).read_text()
    assert readertests.files_equivalent(control, out.read_text()) == ""
