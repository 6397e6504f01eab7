"""CNTK's ``run-test`` scripts, done by cntkio: one ``cntkrun`` of a configuration in a test's directories.

What it must never do: change anything in the configuration beyond the arguments a run-test gave
(and the caller's own ``name=value`` overrides of sizes, epochs and the device), or leave the
process in another working directory.

CNTK's end-to-end tests (``Tests/EndToEndTests/run-test-common`` in CNTK's repository) ran each
configuration as::

    cntk configFile=$ConfigDir/<file> currentDirectory=$DataDir RunDir=$RunDir DataDir=$DataDir \\
         ConfigDir=$ConfigDir OutputDir=$OutputDir DeviceId=$CNTKDeviceId timestamping=true <args>

with ``<args>`` split at white space as the shell splits an unquoted variable (quotes inside the
arguments are kept: ``imageLayout="cudnn"``), ``$RunDir/Models`` made empty before the run, and
``currentDirectory`` changing the process's directory while the command line is read
(``Source/Common/Config.cpp``, ``ConfigParameters::ParseCommandLine``). :func:`cntkrun` does the
same in this process and returns what ran (:class:`RunOutcome`): the ``(section, action, result)``
of every action, the text written to stdout and to the log, and the cntkio error that ended the
run, if one did.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from ..errors import CntkioError

__all__ = ["RunOutcome", "cntk_arguments", "cntkrun", "split_arguments", "working_directory"]


@dataclass
class RunOutcome:
    """What one ``cntkrun`` did: the arguments, every ``(section, action, result)`` run, stdout
    and the log as text, and the error that stopped it (None when every command ran)."""

    argv: list[str]
    results: list[tuple[str, str, Any]] = field(default_factory=list)
    output: str = ""
    error: CntkioError | None = None

    @property
    def completed(self) -> bool:
        """Every command ran (CNTK's ``__COMPLETED__``)."""
        return self.error is None

    @property
    def commands(self) -> list[str]:
        """The sections run, in order, once each (a section with two actions counts once)."""
        return list(dict.fromkeys(name for name, _, _ in self.results))

    @property
    def actions(self) -> list[str]:
        """The actions run, in order (CNTK's ``Action "train" complete.`` lines)."""
        return [action for _, action, _ in self.results]


def split_arguments(args: str | Sequence[str]) -> list[str]:
    """A run-test's extra arguments as CNTK got them: split at white space, quotes kept (the
    scripts pass them as an unquoted shell variable); a sequence is taken as already split."""
    if isinstance(args, str):
        return args.split()
    return [str(a) for a in args]


def cntk_arguments(config: str, args: str | Sequence[str] = (), *, config_dir: str, run_dir: str,
                   data_dir: str, output_dir: str | None = None, device_id: int | str = -1,
                   timestamping: bool = True) -> list[str]:
    """The command line of ``cntkrun <config> <args>`` (run-test-common): ``config`` is one file or
    several joined with ``+``, each relative to ``config_dir``."""
    files = "+".join(p if os.path.isabs(p) else os.path.join(config_dir, p) for p in config.split("+"))
    argv = [f"configFile={files}", f"currentDirectory={data_dir}", f"RunDir={run_dir}",
            f"DataDir={data_dir}", f"ConfigDir={config_dir}", f"OutputDir={output_dir or run_dir}",
            f"DeviceId={device_id}"]
    if timestamping:
        argv.append("timestamping=true")
    return argv + split_arguments(args)


@contextlib.contextmanager
def working_directory(path: str | None) -> Iterator[None]:
    """Run the block in ``path`` (None: where we are), and come back after."""
    if path is None:
        yield
        return
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def cntkrun(config: str, args: str | Sequence[str] = (), *, config_dir: str, run_dir: str, data_dir: str,
            output_dir: str | None = None, device_id: int | str = -1, overrides: Sequence[str] = (),
            delete_models: bool = True) -> RunOutcome:
    """Run ``config`` as run-test-common's ``cntkrun`` did, in this process.

    ``overrides`` are ``name=value`` arguments placed after the run-test's own (sizes, epoch
    counts, the device). ``$RunDir/Models`` is emptied first (``DeleteExistingModels=1``). A
    cntkio error ends the run and is returned in the outcome (CNTK's process exiting non-zero);
    any other exception is a defect and propagates."""
    from ..actions.runner import run

    argv = cntk_arguments(config, args, config_dir=config_dir, run_dir=run_dir, data_dir=data_dir,
                          output_dir=output_dir, device_id=device_id) + list(overrides)
    models = os.path.join(run_dir, "Models")
    if delete_models and os.path.isdir(models):
        shutil.rmtree(models)
    os.makedirs(models, exist_ok=True)
    outcome = RunOutcome(argv=argv)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        try:
            run(argv, base_dir=data_dir, results=outcome.results)
        except CntkioError as e:
            outcome.error = e
            sys.stderr.write(f"cntkio: error: {e}\n")
    outcome.output = buffer.getvalue()
    return outcome
