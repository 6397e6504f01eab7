"""The configuration fingerprint of a train command, kept in its model files for ``makeMode``.

A train command's epoch files record two hashes: of the network description (the
``SimpleNetworkBuilder``, ``NDLNetworkBuilder``, ``BrainScriptNetworkBuilder`` or
``ExperimentalNetworkBuilder`` section as resolved, with the text of the NDL/BrainScript files it
names) and of the reader's streams (each stream's name, deserializer type and its input entry:
dim, format, alias...; not the data files, which may move). With ``makeMode=true`` a rerun that
would resume from an epoch file whose hashes differ from the configuration's stops with a
ConfigError saying which part changed; ``forceResume=true`` (in the command section, a parent, or
on the command line) resumes anyway. Model files written before fingerprints existed resume as
before.
"""
from __future__ import annotations

import hashlib
import json
import os

from .._log import get_logger
from ..config import ConfigParameters
from ..errors import ConfigError

__all__ = ["config_fingerprint", "check_resume", "FINGERPRINT_KEY", "FORCE_KEY"]

_log = get_logger("actions.train")

#: the key of the fingerprint in a model file's ``info``
FINGERPRINT_KEY = "config_fingerprint"
#: the configuration key that resumes despite a different fingerprint
FORCE_KEY = "forceResume"

_BUILDERS = ("SimpleNetworkBuilder", "NDLNetworkBuilder", "BrainScriptNetworkBuilder", "ExperimentalNetworkBuilder")
_FILE_KEYS = ("networkDescription", "ndlMacros", "include")


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]


def _files_text(tree) -> list:
    """The contents of the description files a builder section names (NDL, BrainScript)."""
    out = []
    if isinstance(tree, dict):
        for k, v in tree.items():
            if isinstance(v, (dict, list)):
                out += _files_text(v)
            elif k in _FILE_KEYS and isinstance(v, str) and os.path.isfile(v):
                with open(v, "rb") as fh:
                    out.append(hashlib.sha256(fh.read()).hexdigest())
    elif isinstance(tree, list):
        for v in tree:
            out += _files_text(v)
    return out


def config_fingerprint(command: ConfigParameters, adapt: bool = False) -> dict:
    """``{"network": hash, "reader": hash}`` of a train/adapt command section (module docstring)."""
    from ..readers import reader_spec
    network: dict = {}
    for key in _BUILDERS:
        if command.exists(key):
            value = command(key)
            tree = value.to_dict() if isinstance(value, ConfigParameters) else str(value)
            network[key] = [tree, _files_text(tree)]
    if adapt and command.exists("originalModelFileName"):
        network["originalModelFileName"] = str(command("originalModelFileName"))
    streams: list = []
    if command.exists("reader"):
        spec = reader_spec(command("reader"), path=f"{command.path}.reader")
        for d in spec.deserializers:
            for name, entry in sorted((d.get("input") or {}).items()):
                streams.append([d.get("type"), name, entry])
    return {"network": _digest(network), "reader": _digest(streams)}


def check_resume(command: ConfigParameters, name: str, model_path: str, start: int, max_epochs: int,
                 adapt: bool = False) -> None:
    """Raise ConfigError when makeMode would resume at epoch ``start`` (0-based; the epoch file of
    ``model_path`` for epoch ``start``) from a file written for another network or other reader
    streams (unless ``forceResume``)."""
    from .checks import load_command_model
    from ..networks import epoch_model_path
    if start == 0 or start >= max_epochs:
        return
    path = epoch_model_path(model_path, start, max_epochs)
    sgd = command("SGD") if command.exists_current("SGD") else command     # where modelPath is looked up from
    saved = (load_command_model(sgd, "modelPath", path).info or {}).get(FINGERPRINT_KEY)
    if not saved:
        _log.info("%s: %s has no configuration fingerprint (written by an older cntkio): resuming without "
                  "checking it", name, path)
        return
    now = config_fingerprint(command, adapt)
    changed = [part for part in ("network", "reader") if saved.get(part) != now.get(part)]
    if not changed:
        return
    what = " and ".join({"network": "the network description", "reader": "the reader's streams"}[c] for c in changed)
    force = command.exists(FORCE_KEY) and str(command(FORCE_KEY)).strip().lower() in ("true", "t", "1", "yes")
    if force:
        _log.warning("%s: %s changed since %s was written; resuming anyway (%s=true)", name, what, path, FORCE_KEY)
        return
    mm = command("makeMode") if command.exists("makeMode") else None
    raise ConfigError(f"makeMode would resume from {path} (epoch {start} of {max_epochs}), but {what} changed "
                      "since it was written",
                      path=getattr(mm, "path", None) or f"{name}.makeMode", file=getattr(mm, "file", None) or command.file,
                      line=getattr(mm, "line", None) or command.line,
                      hint=f"delete the epoch files of {model_path} or set makeMode=false to train from scratch, "
                           f"or {FORCE_KEY}=true to resume with the saved model anyway")
