"""The C CTF parser core under AddressSanitizer and UndefinedBehaviorSanitizer.

Builds ``tests/fuzz/ctf_fuzz_main.c`` (which includes ``ctf_core.h``, the parser without the
Python glue) with ``-fsanitize=address,undefined`` into a temporary directory and runs it over
``tests/fuzz/corpus/`` plus deterministic random mutations of every file. Every input sits in a heap
block of exactly its size, so any read past it is reported. The test fails on a sanitizer report, a
failed consistency check in the harness, or a non-zero exit; a deliberately broken build proves that
reports are caught. ``make asan-test`` runs the same harness by hand.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sysconfig

import pytest
import paths

ROOT = paths.REPO
HARNESS = ROOT / "tests" / "fuzz" / "ctf_fuzz_main.c"
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
NATIVE = ROOT / "src" / "cntkio" / "_native"
FLAGS = ["-std=c11", "-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
         "-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror"]
ENV = dict(os.environ, ASAN_OPTIONS="abort_on_error=0:detect_leaks=1:exitcode=23",
           UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")


def compiler() -> str:
    cc = os.environ.get("CC") or (sysconfig.get_config_var("CC") or "cc").split()[0]
    path = shutil.which(cc) or shutil.which("gcc") or shutil.which("cc")
    assert path, "no C compiler found; the C extensions cannot be built without one either"
    return path


def build(tmp_path: pathlib.Path, *extra: str) -> pathlib.Path:
    exe = tmp_path / "ctf_fuzz"
    cmd = [compiler(), *FLAGS, *extra, "-I", str(NATIVE), str(HARNESS), "-o", str(exe), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"build failed: {' '.join(cmd)}\n{res.stderr}"
    return exe


def test_corpus_and_mutations_run_clean_under_sanitizers(tmp_path):
    files = sorted(str(p) for p in CORPUS.iterdir())
    assert len(files) >= 50
    exe = build(tmp_path)
    res = subprocess.run([str(exe), "--mutations", "12", "--seed", "7", *files], capture_output=True,
                         text=True, env=ENV, timeout=300)
    report = res.stderr[-6000:]
    assert not any(m in res.stderr for m in SANITIZER_MARKS), report
    assert res.returncode == 0, report
    assert f"{len(files)} files" in res.stdout and "no problem found" in res.stdout


def test_a_memory_error_fails_the_run(tmp_path):
    exe = build(tmp_path, "-DCTF_FUZZ_SELFTEST")
    res = subprocess.run([str(exe), str(CORPUS / "empty.txt")], capture_output=True, text=True,
                         env=ENV, timeout=60)
    assert res.returncode != 0
    assert any(m in res.stderr for m in SANITIZER_MARKS), res.stderr[-3000:]


@pytest.mark.parametrize("name", ["empty.txt", "long_mantissas.txt", "utf16le.txt", "bar_eof.txt"])
def test_corpus_has_the_pathological_files(name):
    assert (CORPUS / name).is_file()
