"""The ``edit`` action: run a Model Editing Language (MEL) script (``models/mel.py``), or save a
BrainScript network.

Parameters: ``editPath`` (required, the MEL script), ``ndlMacros`` (NDL macro files, ``+``
separated, looked up through the parent sections so a root-level value is shared with the
NDLNetworkBuilder; ``$name$`` in the script and the macro files is the config's variable, as CNTK
resolved it). The script loads models (``LoadModel``), edits them, and saves them
(``SaveModel``) in cntkio's model format, which train/adapt/test/eval/write read. A command with
a ``BrainScriptNetworkBuilder`` (or under a section with one) is CNTK's BrainScript editing
instead: the network it builds (often from ``BS.Network.Load``) is saved to ``outputModelPath``,
unless that file exists and ``makeMode`` is true (the default).
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


def edit(section, name: str = "edit") -> MelScript | dict:
    """Run ``editPath``; returns the script's state (models, files saved). With a
    BrainScriptNetworkBuilder (here or in an enclosing section) instead: build that network and
    save it to ``outputModelPath``; returns ``{"outputModelPath": path}``."""
    from .network import has_brainscript
    if has_brainscript(section):
        return _brainscript_edit(section, name)
    if not has(section, "editPath"):
        raise ConfigError("the edit action needs editPath=<MEL script>", path=key_path(section, "editPath"))
    path = get_str(section, "editPath")
    macros = split_paths(get_str(section, "ndlMacros")) if has(section, "ndlMacros") else []
    if not os.path.isfile(path):
        raise ConfigError(f"MEL script {path} does not exist", path=key_path(section, "editPath"))
    script = run_mel(path, macros=macros, variables=config_variables(section))
    report(f"{name}: ran {path}; saved " + (", ".join(script.saved) or "no model"))
    return script


def _brainscript_edit(section, name: str) -> dict:
    """CNTK's BrainScript editing (``DoEdit``, Source/ActionsLib/TrainActions.cpp): the network of
    the BrainScriptNetworkBuilder (which may ``BS.Network.Load`` a model and change it) is saved to
    ``outputModelPath``; in makeMode (default) nothing is done when that file exists."""
    from ..networks import save_model
    from ._common import dist_context, resolve_device, resolve_dtype
    from ._params import get_bool
    from .network import build_brainscript_network
    out = get_str(section, "outputModelPath")
    if get_bool(section, "makeMode", True) and os.path.exists(out):
        report(f"{name}: '{out}' exists, skipping (makeMode=false forces the action)")
        return {"outputModelPath": out}
    dist = dist_context()
    net = build_brainscript_network(section, device=resolve_device(section, dist), dtype=resolve_dtype(section),
                                    precompute=False)
    if dist.is_main:
        save_model(out, net, epoch=0, info={"command": name})
    report(f"{name}: model with {len(net.order)} nodes saved as '{out}'", dist=dist)
    dist.barrier()
    return {"outputModelPath": out}
