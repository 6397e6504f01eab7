"""The configuration fingerprint and settings of a train command, kept in its model files for ``makeMode``.

A train command's epoch files record two hashes: of the network description (the
``SimpleNetworkBuilder``, ``NDLNetworkBuilder``, ``BrainScriptNetworkBuilder`` or
``ExperimentalNetworkBuilder`` section as resolved, with the text of the NDL/BrainScript files it
names) and of the reader's streams (each stream's name, deserializer type and its input entry:
dim, format, alias...; not the data files, which may move). With ``makeMode=true`` a rerun that
would resume from an epoch file whose hashes differ from the configuration's stops with a
ConfigError saying which part changed; ``forceResume=true`` (in the command section, a parent, or
on the command line) resumes anyway. Model files written before fingerprints existed resume as
before.

The files also record the settings themselves (:func:`config_settings`: every key of the network
builder section, the description files' hashes, and the SGD settings that change the model, i.e.
all but output-only keys such as ``numMBsToShowResult``), so that makeMode can say which keys
differ. When the final model exists, makeMode would only test it: :func:`check_final_model` stops
with the differing keys when the configuration's network, training settings or reader streams are
not those the model was trained with (``makeMode=false`` or another ``modelPath`` trains anew,
``forceResume=true`` uses the model anyway).
"""
from __future__ import annotations

import hashlib
import json
import os

from .._log import get_logger
from ..config import ConfigParameters
from ..errors import ConfigError

__all__ = ["config_fingerprint", "config_settings", "check_resume", "check_final_model", "FINGERPRINT_KEY",
           "SETTINGS_KEY", "FORCE_KEY"]

_log = get_logger("actions.train")

#: the key of the fingerprint in a model file's ``info``
FINGERPRINT_KEY = "config_fingerprint"
#: the settings themselves in a model file's ``info`` (:func:`config_settings`)
SETTINGS_KEY = "config_settings"
#: the configuration key that resumes despite a different fingerprint
FORCE_KEY = "forceResume"
#: SGD keys that change what is printed or kept, not the model
_OUTPUT_ONLY = {"modelpath", "nummbstoshowresult", "tracelevel", "keepcheckpointfiles", "progressbar",
                "maxtempmemsizeinsamplesforcnn", "numsubminibatches", "maxsamplesinram", "prefetchtrainingdata",
                "usealldataforprecomputednode"}

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


def _flat(tree, prefix: str, out: dict) -> None:
    if isinstance(tree, dict):
        for k, v in tree.items():
            _flat(v, f"{prefix}.{k}", out)
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            _flat(v, f"{prefix}[{i}]", out)
    else:
        out[prefix.lower()] = [prefix, str(tree)]


def config_settings(command: ConfigParameters, adapt: bool = False) -> dict:
    """``{"network": {key: [path, text]}, "training": {...}}``: the network builder's keys (with
    the hashes of the description files it names) and the SGD settings that change the model,
    keyed by their lower-case dotted path (module docstring)."""
    from .sgd import SGD_KEYS
    network: dict = {}
    for key in _BUILDERS:
        if command.exists(key):
            value = command(key)
            where = getattr(value, "path", None) or f"{command.path}.{key}"
            tree = value.to_dict() if isinstance(value, ConfigParameters) else str(value)
            _flat(tree, where, network)
            for i, digest in enumerate(_files_text(tree)):
                network[f"{where.lower()}#file{i}"] = [f"{where} (the text of the description file it names)", digest]
    if adapt and command.exists("originalModelFileName"):
        network["originalmodelfilename"] = ["originalModelFileName", str(command("originalModelFileName"))]
    sgd = command("SGD") if command.exists_current("SGD") else command
    base = getattr(sgd, "path", "") or command.path
    training: dict = {}
    for key in SGD_KEYS:
        if key.lower() in _OUTPUT_ONLY or not sgd.exists(key):
            continue
        value = sgd(key)
        _flat(value.to_dict() if isinstance(value, ConfigParameters) else str(value), f"{base}.{key}", training)
    return {"network": network, "training": training}


def settings_diff(saved: dict, now: dict) -> list[str]:
    """``path: old in the model, new in the configuration`` for each setting that differs (parts
    the model file did not record are not compared)."""
    lines = []
    for part in ("network", "training"):
        old, new = saved.get(part), now.get(part, {})
        if old is None:
            continue
        for k in sorted(set(old) | set(new)):
            a, b = old.get(k), new.get(k)
            if (a or [None, None])[1] != (b or [None, None])[1]:
                label = (b or a)[0]
                lines.append(f"{label}: {a[1] if a else '(not set)'} in the model, {b[1] if b else '(not set)'} "
                             "in the configuration")
    return lines


def _located(command: ConfigParameters, label: str):
    """The ConfigValue of a setting's dotted path, as seen from the command section, or None."""
    rel = label.split(": ")[0].split(" ")[0]
    own = f"{command.path}."
    if own != "." and rel.startswith(own):
        rel = rel[len(own):]
    for candidate in (rel, rel.rsplit(".", 1)[-1]):
        try:
            if command.exists(candidate):
                return command(candidate)
        except Exception:  # noqa: BLE001 - a path with an index or a file mark: no location
            continue
    return None


def check_final_model(command: ConfigParameters, name: str, model_path: str, adapt: bool = False) -> None:
    """Raise ConfigError when makeMode finds the final model ``model_path`` trained with another
    network, other training settings or other reader streams than the configuration's (unless
    ``forceResume``); the message lists the keys that differ."""
    from .checks import load_command_model
    sgd = command("SGD") if command.exists_current("SGD") else command
    info = load_command_model(sgd, "modelPath", model_path).info or {}
    saved_fp, saved = info.get(FINGERPRINT_KEY), info.get(SETTINGS_KEY)
    if not saved_fp and not saved:
        _log.info("%s: %s has no configuration fingerprint (written by an older cntkio): not compared", name,
                  model_path)
        return
    now = config_settings(command, adapt)
    lines = settings_diff(saved, now) if saved else []
    fp = config_fingerprint(command, adapt)
    if saved_fp and saved_fp.get("reader") != fp["reader"]:
        lines.append("the reader's streams (names, dims, formats)")
    if saved_fp and not saved and saved_fp.get("network") != fp["network"]:
        lines.append("the network description")
    if not lines:
        return
    force = command.exists(FORCE_KEY) and str(command(FORCE_KEY)).strip().lower() in ("true", "t", "1", "yes")
    if force:
        _log.warning("%s: the final model %s was trained with other settings; using it anyway (%s=true): %s",
                     name, model_path, FORCE_KEY, "; ".join(lines))
        return
    first = _located(command, lines[0])
    raise ConfigError(f"makeMode: the final model {model_path} exists but was trained with other settings than "
                      "the configuration's, so the commands after training would use a model this configuration "
                      "does not describe:\n    " + "\n    ".join(lines),
                      path=getattr(first, "path", None) or f"{name}.makeMode",
                      file=getattr(first, "file", None) or command.file, line=getattr(first, "line", None),
                      hint=f"train anew with makeMode=false or another modelPath, or set {FORCE_KEY}=true to "
                           "use the existing model")


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
