"""The native cores under AddressSanitizer and UndefinedBehaviorSanitizer: the CI smoke of the fuzz
targets (the long campaign is ``python tests/fuzz/run_fuzz.py --runs 10000000``, docs/reliability.md).

Each target (tests/fuzz/fuzz_<format>.c over src/cntkio/_native/<format>_core.h) is built with the
C compiler the extensions are built with (gcc here) and ``-fsanitize=address,undefined``, linked to
the mutation driver (tests/fuzz/fuzz_driver.c), and run for about a second over its seed corpus
(tests/fuzz/corpus_<format>/, made by cntkio's own writers) and mutations of it. A sanitizer
report, a failed consistency check, a hang or a crash fails the test; a deliberately broken input
proves that a memory error is caught and its input saved.
"""
from __future__ import annotations

import concurrent.futures as cf
import os
import pathlib
import shutil
import subprocess
import sysconfig

import pytest

import paths

FUZZ = paths.TESTS / "fuzz"
NATIVE = paths.SRC / "cntkio" / "_native"
FORMATS = ("cbf", "htk", "uci", "tok", "rand")
FLAGS = ["-std=c11", "-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
         "-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror"]
ENV = dict(os.environ, ASAN_OPTIONS="abort_on_error=0:detect_leaks=1:exitcode=23",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer", "check failed", "HANG")


def compiler() -> str:
    cc = os.environ.get("CC") or (sysconfig.get_config_var("CC") or "cc").split()[0]
    path = shutil.which(cc) or shutil.which("gcc") or shutil.which("cc")
    assert path, "no C compiler found; the C extensions cannot be built without one either"
    return path


def _build(fmt: str, out: pathlib.Path, *extra: str) -> pathlib.Path:
    exe = out / f"fuzz_{fmt}"
    cmd = [compiler(), *FLAGS, *extra, f'-DFUZZ_NAME="{fmt}"', "-I", str(NATIVE), str(FUZZ / f"fuzz_{fmt}.c"),
           str(FUZZ / "fuzz_driver.c"), "-o", str(exe), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"build failed: {' '.join(cmd)}\n{res.stderr[-3000:]}"
    return exe


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    out = tmp_path_factory.mktemp("fuzz")
    with cf.ThreadPoolExecutor(2) as pool:          # the compiles are most of the time
        return dict(zip(FORMATS, pool.map(lambda f: _build(f, out), FORMATS)))


@pytest.mark.parametrize("fmt", FORMATS)
def test_target_runs_clean_on_its_corpus_and_mutations(targets, tmp_path, fmt):
    corpus = FUZZ / f"corpus_{fmt}"
    assert len(list(corpus.iterdir())) >= 4
    res = subprocess.run([str(targets[fmt]), "--seconds", "1", "--seed", "7", "--crash-dir", str(tmp_path),
                          str(corpus)], capture_output=True, text=True, env=ENV, timeout=120)
    report = res.stderr[-6000:]
    assert not any(m in res.stderr for m in MARKS), report
    assert res.returncode == 0 and "no problem found" in res.stdout, report
    assert not list(tmp_path.iterdir())


def test_regression_inputs_are_in_their_corpus():
    for p in (FUZZ / "regressions").iterdir():
        fmt = p.name.split("_", 1)[0]
        assert (FUZZ / f"corpus_{fmt}" / ("regression_" + p.name)).read_bytes() == p.read_bytes()


def test_a_memory_error_fails_the_run_and_saves_its_input(tmp_path):
    src = tmp_path / "fuzz_broken.c"              # reads one byte past every input
    src.write_text("#include <stdint.h>\n#include <stddef.h>\n"
                   "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {\n"
                   "    volatile uint8_t x = d[n];\n    (void)x;\n    return 0;\n}\n")
    exe = tmp_path / "broken"
    res = subprocess.run([compiler(), *FLAGS, '-DFUZZ_NAME="broken"', str(src), str(FUZZ / "fuzz_driver.c"),
                          "-o", str(exe)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    seed = tmp_path / "seed"
    seed.write_bytes(b"abc")
    res = subprocess.run([str(exe), "--runs", "10", "--crash-dir", str(tmp_path), str(seed)], capture_output=True,
                         text=True, env=ENV, timeout=60)
    assert res.returncode != 0 and "ERROR: AddressSanitizer" in res.stderr
    assert (tmp_path / "crash-broken-1").read_bytes() == b"abc"
