"""CNTK's end-to-end tests, run by cntkio: the run-test runner and data generators for CNTK's configs.

What it must never do: change a configuration (only the command-line arguments a run-test gave,
and sizes, epochs and the device), or write data outside the directories it is given.

* :func:`cntkrun` (:mod:`.runner`): one configuration run as CNTK's ``run-test`` scripts ran it
  (``configFile=`` with ``RunDir``, ``DataDir``, ``ConfigDir``, ``OutputDir``, ``DeviceId``, the
  process in ``DataDir``), in this process; what ran comes back as a :class:`RunOutcome`;
* :func:`generate_data` (:mod:`.datagen`): small data of the right shape for every reader the
  configuration's commands use;
* :mod:`.baseline`: the facts of a CNTK ``baseline.txt`` log (commands, actions, criterion
  nodes, epochs) and their comparison with a run.

``docs/from-cntk.md`` lists CNTK's own configs and what each does under cntkio.
"""
from __future__ import annotations

from .datagen import DataShape, generate_data
from .runner import RunOutcome, cntk_arguments, cntkrun

__all__ = ["cntkrun", "cntk_arguments", "RunOutcome", "generate_data", "DataShape"]
