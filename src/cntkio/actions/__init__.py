"""CNTK config commands: the action registry behind ``cntkio configFile=...``.

A CNTK config names the sections to run in ``command=a:b``; each section says what it does with
``action=...``. An action is a function ``fn(section, name)`` taking the section's
``ConfigParameters`` (lookups reach the parent sections, as in CNTK) and the section name.

Actions register themselves with :func:`register_action`. The built-in ones are found by name
in :data:`BUILTIN_ACTIONS` and imported only when first used, so that a missing optional
dependency (torch, for train/eval) never breaks the reader-only ``dumpReader`` action or
``cntkio --help``.
"""
from __future__ import annotations

import difflib
import importlib
from typing import Any, Callable

from ..errors import ConfigError, NotImplementedInCntkio

__all__ = ["register_action", "get_action", "known_actions", "BUILTIN_ACTIONS", "ACTION_SUMMARIES",
           "NOT_IMPLEMENTED_ACTIONS"]

Action = Callable[[Any, str], Any]

_ACTIONS: dict[str, Action] = {}

#: action name -> "module:function" implementing it (imported on first use)
BUILTIN_ACTIONS: dict[str, str] = {
    "dumpReader": "cntkio.actions.dump:dump_reader",
    "train": "cntkio.actions.train:train",
    "test": "cntkio.actions.eval:test",
    "eval": "cntkio.actions.eval:eval",
    "cv": "cntkio.actions.cv:cv",
    "write": "cntkio.actions.write:write",
    "createLabelMap": "cntkio.actions.labelmap:create_label_map",
    "dumpnode": "cntkio.actions.dumpnode:dumpnode",
    "adapt": "cntkio.actions.train:adapt",
    "edit": "cntkio.actions.edit:edit",
    "testUnroll": "cntkio.actions.unroll:test_unroll",
    "trainRNN": "cntkio.actions.train:train",
    "writeWordAndClass": "cntkio.actions.wordclass:write_word_and_class",
    "plot": "cntkio.actions.plot:plot",
    "SVD": "cntkio.actions.svd:svd",
    "bnstat": "cntkio.actions.bnstat:bnstat",
    "dumpNode": "cntkio.actions.dumpnode:dumpnode",
    "dumpNodes": "cntkio.actions.dumpnode:dumpnode",
}

#: CNTK's actions that cntkio refuses by name, with the reason (CNTK.cpp's action list)
NOT_IMPLEMENTED_ACTIONS: dict[str, str] = {
    "exportdbn": "it writes a CNTK model as a DBN file, and cntkio neither reads CNTK's model files nor "
                 "writes DBN files",
    "convertdbn": "it converts a DBN file into a CNTK model, and cntkio does not read DBN files",
    "devtest": "it is CNTK's developer self-test of its computation network code",
}

#: one line per action for ``cntkio --help``
ACTION_SUMMARIES: dict[str, str] = {
    "dumpReader": "read a section's reader and write its minibatches as text (CNTK reader-test format)",
    "train": "train a model with SGD on the section's reader (epochs of epochSize samples)",
    "test": "evaluate a model on the section's reader (same as eval)",
    "eval": "evaluate a model on the section's reader",
    "cv": "cross-validate a series of epoch models",
    "write": "write the outputs of a model's nodes for the section's reader",
    "createLabelMap": "write a label mapping file from a reader's labels",
    "dumpnode": "dump the nodes (parameters) of a model to a text file",
    "adapt": "continue training from originalModelFileName (adaptationRegType=KL regularises toward it)",
    "edit": "run a Model Editing Language (MEL) script (editPath) on model files",
    "testUnroll": "evaluate a model frame by frame (each output from its sequence's frames so far)",
    "trainRNN": "the same as train (CNTK's name for training recurrent networks)",
    "writeWordAndClass": "write a text corpus's vocabulary and word classes (class-based language models)",
    "plot": "write a model's network as a graphviz DOT file (rendered with renderCmd, or graphviz if installed)",
    "SVD": "replace a model's weight matrices by low-rank products (NodeNameRegex, KeepRatio) in a new model",
    "bnstat": "recompute a model's batch-normalization statistics over the reader's data (newModelPath)",
    "dumpNode": "the same as dumpnode",
    "dumpNodes": "the same as dumpnode (CNTK's deprecated name)",
}

# lower-cased name -> canonical name: CNTK's config names are case-insensitive
def _canonical(name: str) -> str | None:
    low = name.lower()
    for known in list(_ACTIONS) + list(BUILTIN_ACTIONS):
        if known.lower() == low:
            return known
    return None


def register_action(name: str, fn: Action) -> None:
    """Make ``action=<name>`` run ``fn(section, section_name)``. A later registration replaces an
    earlier one (a user can override a built-in action)."""
    if not callable(fn):
        raise TypeError(f"action {name!r}: expected a callable, found {type(fn).__name__}")
    _ACTIONS[name] = fn


def known_actions() -> list[str]:
    """The names ``action=`` accepts: built-in ones and those registered at run time."""
    return sorted(set(_ACTIONS) | set(BUILTIN_ACTIONS), key=str.lower)


def get_action(name: str, *, path: str | None = None) -> Action:
    """The function of an action name (case-insensitive).

    An unknown name raises ConfigError listing the known actions and the closest one; a built-in
    action whose module is not there (not written yet, or an optional dependency missing) raises
    ConfigError saying so.
    """
    canon = _canonical(str(name))
    refused = next((k for k in NOT_IMPLEMENTED_ACTIONS if k.lower() == str(name).lower()), None)
    if canon is None and refused is not None:
        raise NotImplementedInCntkio(f"{path + ': ' if path else ''}CNTK's action {refused!r} is not implemented "
                                     f"in cntkio: {NOT_IMPLEMENTED_ACTIONS[refused]}")
    if canon is None:
        names = known_actions()
        close = difflib.get_close_matches(str(name), names, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else None
        raise ConfigError(f"unknown action {name!r}; cntkio knows: {', '.join(names)}",
                          path=path, hint=hint)
    if canon in _ACTIONS:
        return _ACTIONS[canon]
    module_name, _, attr = BUILTIN_ACTIONS[canon].partition(":")
    failure: BaseException | None = None
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        failure = e
        module = None
    if canon in _ACTIONS:          # the module registered itself on import
        return _ACTIONS[canon]
    fn = getattr(module, attr, None) if module is not None else None
    if fn is not None:
        _ACTIONS[canon] = fn
        return fn
    # not where the table says: the actions' modules may register it under another layout
    errors = _discover()
    if canon in _ACTIONS:
        return _ACTIONS[canon]
    missing = [e.name for e in [failure, *errors] if isinstance(e, ModuleNotFoundError) and e.name
               and not e.name.startswith("cntkio")]
    if missing:
        dep = missing[0]
        raise ConfigError(f"action {canon!r} needs the Python package {dep!r}, which is not installed"
                          + (" (pip install 'cntkio[torch]')" if dep == "torch" else ""), path=path)
    raise ConfigError(f"action {canon!r} is not available in this installation of cntkio "
                      f"(no module of cntkio.actions implements it)", path=path)


def _discover() -> list[BaseException]:
    """Import every module of this package (each registers its actions); return import errors."""
    import pkgutil
    errors: list[BaseException] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name in ("runner", "dump"):
            continue
        try:
            importlib.import_module(f"{__name__}.{info.name}")
        except ImportError as e:
            errors.append(e)
    return errors
