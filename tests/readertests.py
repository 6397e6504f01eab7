"""CNTK's reader unit tests (``Tests/UnitTests/ReaderTests``) run on cntkio: the harness.

CNTK's C++ tests (``ImageReaderTests.cpp``, ``HTKLMFReaderTests.cpp``, ``CNTKTextFormatReaderTests.cpp``,
``CNTKBinaryReaderTests.cpp``, and ``UCIFastReaderTests.cpp`` before its deletion) call the helpers of
``Common/ReaderTestHelper.h``. This module does what they do, on cntkio:

* ``GetDataReader``: the config is parsed as the command line ``configFile=<Config/...>`` plus the
  case's extra arguments, from the fixture's working directory (``Data``, ``Data/CNTKTextFormatReader``,
  ...); the reader is built from ``<section>.reader``;
* ``HelperWriteReaderContentToFile``: per epoch ``StartMinibatchLoop`` (or the distributed one),
  at most 10 minibatches dumped (an 11th fetched and thrown away), each minibatch writing the inputs
  ``features`` / ``features1..N`` then ``labels`` / ``labels1..M``, one text line per sample
  (:func:`cntkio.actions.dump.dump_epochs`);
* ``CheckFilesEquivalent``: both files as streams of whitespace-separated tokens, equal token by
  token, or with ``allowTolerance`` (the HTK tests) every token a number within relative 1e-5 and the
  counts equal; a control that does not exist reads as empty. Controls written by MSVC <= 2013 have
  3-digit exponents (``1e+020``): they are compared with 2-digit ones (the harness set
  ``_TWO_DIGIT_EXPONENT`` on those builds);
* ``BOOST_REQUIRE_EXCEPTION``: the read must fail; cntkio must raise one of its own error classes
  (or an ``OSError``) whose message names what CNTK's names (:attr:`Case.names`), CNTK's text being
  quoted in the case.

The cases are in :mod:`readertests_cases`; the data in ``tests/data/cntk_reader_tests``
(``SOURCES.md`` there says where each file came from) is laid out in CNTK's folders by
:func:`materialize`. ``python tests/readertests.py [--root DIR] [--keep DIR] [NAME ...]`` runs the
cases from the command line (``--root``: a CNTK checkout's ``Tests/UnitTests/ReaderTests`` with the
HTK data beside it, instead of the vendored copy).
"""
from __future__ import annotations

import contextlib
import hashlib
import lzma
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

VENDORED = Path(__file__).resolve().parent / "data" / "cntk_reader_tests"

_EXP3 = re.compile(r"(\de[+-])0(\d\d)(?=\s|$)")


@dataclass(frozen=True)
class Case:
    """One call of CNTK's test helpers (the arguments of ``HelperRunReaderTest``, in its order).

    ``mode``: ``compare`` (``HelperRunReaderTest``), ``sorted`` (``HelperReadInAndWriteOut`` +
    ``SortLinesInFile`` + compare), ``error`` (``BOOST_REQUIRE_EXCEPTION`` around a read),
    ``construct_error`` (``HelperRunReaderTestWithException``: building the reader throws),
    ``composite`` (run ``section``, then ``then_section``: the second dump must equal the first),
    ``keys`` (``Base64WithWriteIds``: the keys of the sequences read, as a multiset).
    """

    name: str
    suite: str
    cpp: str                      # the C++ test file and case
    cwd: str                      # the fixture's working directory, relative to the root
    config: str
    section: str
    control: str = ""
    epoch_size: int = 0
    mb_size: int = 1
    epochs: int = 1
    features: int = 1
    labels: int = 0
    subset: int = 0
    subsets: int = 1
    sparse_features: bool = False
    sparse_labels: bool = False
    shared_layout: bool = True
    params: tuple[str, ...] = ()
    elem: str = "float"
    tolerance: bool = False
    mode: str = "compare"
    error: str = ""               # CNTK's exception text (what()), for the record
    names: tuple[str, ...] = ()   # what cntkio's message must contain
    then_section: str = ""
    keys: tuple[str, ...] = ()

    @property
    def inputs(self) -> list[str]:
        """The harness's input names: ``features`` or ``features1..N``, then the labels."""
        f = ["features"] if self.features == 1 else [f"features{i + 1}" for i in range(self.features)]
        lab = ["labels"] if self.labels == 1 else [f"labels{i + 1}" for i in range(self.labels)]
        return f + lab


@dataclass
class Result:
    """What running a case gave: ``ok``, and a line saying why not."""

    case: Case
    ok: bool
    detail: str = ""
    output: str = ""
    error: BaseException | None = field(default=None, repr=False)


# --- the control comparison (CheckFilesEquivalent) --------------------------------------------------

def tokens(text: str) -> list[str]:
    """The whitespace-separated tokens, 3-digit exponents written with 2 digits."""
    if "e+0" in text or "e-0" in text:
        text = _EXP3.sub(r"\1\2", text)
    return text.split()


def _close(a: np.ndarray, b: np.ndarray, tol: float) -> np.ndarray:
    """``BOOST_REQUIRE_CLOSE_FRACTION(a, b, tol)`` per element: |a-b| within tol of both."""
    d = np.abs(a - b)
    with np.errstate(invalid="ignore"):
        return (a == b) | ((d <= tol * np.abs(a)) & (d <= tol * np.abs(b)))


def files_equivalent(control: str, output: str, allow_tolerance: bool = False, tol: float = 1e-5) -> str:
    """CNTK's ``CheckFilesEquivalent`` on two texts: '' when equivalent, else where they differ."""
    a, b = tokens(control), tokens(output)
    if allow_tolerance:
        n = min(len(a), len(b))
        try:
            x, y = np.array(a[:n], np.float64), np.array(b[:n], np.float64)
        except ValueError as e:
            return f"a token is not a number: {e}"
        bad = np.flatnonzero(~_close(x, y, tol))
        if len(bad):
            i = int(bad[0])
            return f"token {i}: control {a[i]} != output {b[i]} (relative tolerance {tol})"
        if len(a) != len(b):
            return f"different number of elements: control {len(a)}, output {len(b)}"
        return ""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"token {i} (line {_line_of(control, i)} of the control): control {x!r} != output {y!r}"
    if len(a) != len(b):
        return f"different number of elements: control {len(a)}, output {len(b)}"
    return ""


def _line_of(text: str, token: int) -> int:
    seen = 0
    for n, line in enumerate(text.splitlines(), 1):
        seen += len(line.split())
        if seen > token:
            return n
    return 0


# --- running a case ----------------------------------------------------------------------------------

@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)
        for p in Path(path).glob("*.cache"):      # RemoveIndexCacheFiles
            p.unlink()


def build_reader(case: Case, root: Path, section: str | None = None):
    """``GetDataReader``: the source of ``<section>.reader`` of the case's config (call it from the
    fixture's working directory)."""
    from cntkio.config.loader import load_config
    from cntkio.readers import as_section
    from cntkio.readers import build_reader as build

    name = section or case.section
    params = [p.replace("{root}", str(root)) for p in case.params]
    # the harness hands epochSize and the minibatch size to StartMinibatchLoop; cntkio's readers see
    # them in the command section, as cntkio's dumpReader and train actions put them (UCIFastReader's
    # randomize = Auto randomizes in blocks of epochSize records)
    epoch = f"{name}=[epochSize={case.epoch_size}; minibatchSize={case.mb_size}]" if case.epoch_size else None
    cfg = load_config([f"configFile={root / case.config}", *params, *([epoch] if epoch else [])])
    sec = as_section(cfg, "").section(name)
    return build(sec.section("reader", inherit=True), f"{name}.reader")


def read_and_write(case: Case, root: Path, out: Path, section: str | None = None) -> str:
    """``HelperReadInAndWriteOut``: the dump text of the case's reader."""
    from cntkio.actions.dump import dump_epochs

    with _cwd(root / case.cwd):
        source = build_reader(case, root, section)
        try:
            dump_epochs(source, case.inputs, str(out), mb_size=case.mb_size, epoch_size=case.epoch_size,
                        max_epochs=case.epochs, num_subsets=case.subsets, subset_num=case.subset,
                        sort_output=case.mode == "sorted")
        finally:
            source.close()
    return out.read_text(encoding="ascii")


def _control_text(root: Path, control: str) -> str:
    p = root / control
    return p.read_text(encoding="ascii") if p.exists() else ""     # a missing control reads as empty


def _named(case: Case, e: BaseException) -> str:
    from cntkio.errors import CntkioError

    if not isinstance(e, (CntkioError, OSError)):
        return f"{type(e).__name__} is not one of cntkio's error classes: {e}"
    text = str(e)
    missing = [n for n in case.names if n not in text]
    if missing:
        return f"the message does not name {missing}: {text}"
    return ""


def read_keys(case: Case, root: Path) -> list[str]:
    """``Base64WithWriteIds``: the key of every sequence of one epoch, read in minibatches."""
    from cntkio.readers.epochs import EpochReader

    with _cwd(root / case.cwd):
        source = build_reader(case, root)
        try:
            keys: list[str] = []
            for mb in EpochReader(source, case.mb_size, case.epoch_size).epoch(0):
                keys += [str(k) for k in mb.sequence_keys]
        finally:
            source.close()
    return keys


def run_case(case: Case, root: Path, out_dir: Path) -> Result:
    """Run one case on the tree ``root`` (laid out as CNTK's ``Tests/UnitTests/ReaderTests``),
    writing outputs below ``out_dir``."""
    out = out_dir / f"{case.name}_Output.txt"
    if case.mode in ("error", "construct_error"):
        try:
            if case.mode == "construct_error":
                with _cwd(root / case.cwd):
                    build_reader(case, root).close()
            else:
                read_and_write(case, root, out)
        except Exception as e:      # noqa: BLE001 - the case says which errors count
            detail = _named(case, e)
            return Result(case, not detail, detail, error=e)
        return Result(case, False, "no error was raised (CNTK raises: " + case.error + ")")
    if case.mode == "keys":
        try:
            got = sorted(read_keys(case, root))
        except Exception as e:      # noqa: BLE001 - a failing case reports what failed
            return Result(case, False, f"{type(e).__name__}: {e}", error=e)
        want = sorted(case.keys)
        return Result(case, got == want, "" if got == want else f"keys {got} != {want}")
    try:
        text = read_and_write(case, root, out)
        if case.mode == "composite":
            control = text
            text = read_and_write(case, root, out_dir / f"{case.name}_composite_Output.txt", case.then_section)
        else:
            control = _control_text(root, case.control)
    except Exception as e:          # noqa: BLE001 - a failing case reports what failed
        return Result(case, False, f"{type(e).__name__}: {e}", error=e)
    detail = files_equivalent(control, text, case.tolerance)
    return Result(case, not detail, detail, output=text)


# --- the data: the vendored tree laid out as CNTK's -------------------------------------------------

def git_blob_id(data: bytes) -> str:
    """The git object id of a file with these bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def materialize(dest: Path, source: Path = VENDORED) -> Path:
    """Lay the vendored data out below ``dest`` as CNTK's ``Tests/UnitTests/ReaderTests``:
    files are copied, ``*.xz`` files decompressed, the HTK stand-in corpus and controls written
    (:mod:`readertests_an4`) and ``MNIST_dense.bin`` converted from ``MNIST_dense.txt`` (CNTK's was
    never published); every file that ``SOURCES.md`` gives a git blob id is checked against it.
    Returns ``dest``."""
    import readertests_an4

    blobs = _blob_table(source / "SOURCES.md")
    for p in sorted(source.rglob("*")):
        if p.is_dir() or p.suffix in (".md", ".py", ".pyc"):
            continue
        rel = p.relative_to(source)
        if rel.parts[0] in ("an4", "__pycache__"):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if p.suffix == ".xz":
            data = lzma.decompress(p.read_bytes())
            target = target.with_suffix("")
            target.write_bytes(data)
        else:
            shutil.copyfile(p, target)
    readertests_an4.write_corpus(source / "an4", dest)
    _mnist_bin(dest / "Data")
    bad = []
    for rel, blob in blobs.items():
        f = dest / rel
        if not f.exists():
            bad.append(f"{rel}: missing")
        elif git_blob_id(f.read_bytes()) != blob:
            bad.append(f"{rel}: not CNTK's file (git blob {git_blob_id(f.read_bytes())}, expected {blob})")
    if bad:
        raise RuntimeError("the vendored reader-test data is not CNTK's:\n  " + "\n  ".join(bad))
    return dest


def _mnist_bin(data: Path) -> None:
    """``CNTKBinaryReader/MNIST_dense.bin``, which CNTK never published, converted by cntkio from
    the CTF test's ``MNIST_dense.txt`` as the config describes it (streams ``features`` = F, 784,
    and ``labels`` = L, 10, both dense; double precision; chunks of about 400 kB, "half a dozen
    chunks with ca. 400 KB in each", Config/CNTKBinaryReader/test.cntk)."""
    from cntkio.deserializers.cbf.convert import ctf2bin

    src = data / "CNTKTextFormatReader" / "MNIST_dense.txt"
    if src.exists():
        ctf2bin(str(src), str(data / "CNTKBinaryReader" / "MNIST_dense.bin"),
                [("features", "F", False, 784), ("labels", "L", False, 10)], chunk_size=400_000,
                precision="double", progress=False)


def _blob_table(sources: Path) -> dict[str, str]:
    """``{path: git blob id}`` from the table rows of SOURCES.md (``| path | bytes | blob | ...``)."""
    out = {}
    for line in sources.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.fullmatch(r"[0-9a-f]{40}", cells[2]) and cells[0].startswith("`"):
            out[cells[0].strip("`")] = cells[2]
    return out


def main(argv: list[str] | None = None) -> int:
    """``python tests/readertests.py [--root DIR] [--keep DIR] [NAME ...]``: run the cases (those
    whose name contains one of the NAMEs), print one line per case, return 1 if any failed."""
    import argparse
    import logging

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from readertests_cases import CASES

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="run the cases whose name contains one of these")
    ap.add_argument("--root", help="a CNTK Tests/UnitTests/ReaderTests tree (default: the vendored copy)")
    ap.add_argument("--keep", help="write the tree and the outputs here (default: a temporary folder)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    cases = [c for c in CASES if not args.names or any(n in c.name for n in args.names)]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep or tmp)
        root = Path(args.root).resolve() if args.root else materialize(work / "ReaderTests")
        out_dir = work / "outputs"
        out_dir.mkdir(parents=True, exist_ok=True)
        failed = 0
        for c in cases:
            r = run_case(c, root, out_dir)
            failed += not r.ok
            print(f"{'ok  ' if r.ok else 'FAIL'} {c.suite:6} {c.name}{'' if r.ok else ': ' + r.detail}")
        print(f"{len(cases) - failed} of {len(cases)} cases pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["Case", "Result", "VENDORED", "files_equivalent", "materialize", "run_case", "tokens", "git_blob_id",
           "build_reader", "read_and_write", "read_keys"]
