"""The ``edit`` action: run a Model Editing Language (MEL) script (``models/mel.py``).

Parameters: ``editPath`` (required, the MEL script), ``ndlMacros`` (NDL macro files, ``+``
separated, looked up through the parent sections so a root-level value is shared with the
NDLNetworkBuilder; ``$name$`` in the script and the macro files is the config's variable, as CNTK
resolved it). The script loads models (``LoadModel``), edits them, and saves them
(``SaveModel``) in cntkio's model format, which train/adapt/test/eval/write read.
"""
from __future__ import annotations

import os

from .._log import get_logger
from ..errors import ConfigError
from ..networks.mel import MelScript, run_mel
from ..networks.ndl.builder import split_paths
from ..networks.ndl.variables import config_variables
from ._common import report
from ._params import get_str, has, key_path

__all__ = ["edit"]

_log = get_logger("actions.edit")


def edit(section, name: str = "edit") -> MelScript:
    """Run ``editPath``; returns the script's state (models, files saved)."""
    if not has(section, "editPath"):
        raise ConfigError("the edit action needs editPath=<MEL script>", path=key_path(section, "editPath"))
    path = get_str(section, "editPath")
    macros = split_paths(get_str(section, "ndlMacros")) if has(section, "ndlMacros") else []
    if not os.path.isfile(path):
        raise ConfigError(f"MEL script {path} does not exist", path=key_path(section, "editPath"))
    script = run_mel(path, macros=macros, variables=config_variables(section))
    report(f"{name}: ran {path}; saved " + (", ".join(script.saved) or "no model"))
    return script
