"""Validation before work: every command section a configuration will run, checked at once.

``cntkio configFile=...`` calls :func:`validate_commands` before the first command runs, and
``cntkio validate configFile=...`` (:mod:`cntkio.tools.validate`) does only that. Each command section is resolved as its action
will read it and checked:

* the settings (``precision``, ``deviceId``, ``traceLevel``) and the ``action`` name;
* required keys (``modelPath``, a learning rate, a network builder, ``reader``, ``outputPath``...):
  by reading the section through the same code the action uses (``SGDParams.from_config``, the
  reader factory's ``reader_spec``, the network builders), so the same ConfigErrors come out;
* input files present (the reader's data files, a model file that no earlier command of the run
  writes);
* output paths writable (``modelPath``, ``outputPath``, ``outputFile``): the file's directory
  exists and is writable, or can be created;
* the reader's streams against the network's inputs: every input node is fed by a stream of the
  same name with the same dimension (SimpleNetworkBuilder: ``features`` = first layer size,
  ``labels`` = last layer size; NDL/BrainScript: the Input nodes' sizes);
* ``makeMode``: a train command that would resume from an epoch file written for another network
  or another reader (:mod:`cntkio.actions.fingerprint`).

All problems are collected and raised together as one :class:`ValidationError`, one line each
with file, line and key. Then the keys no part of cntkio read are reported
(:mod:`cntkio.config.usage`): a warning each, or, with ``strict``, part of the error.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from .._log import get_logger
from ..config import ConfigParameters
from ..config.usage import UnusedKey, unused_keys
from .._paths import missing_file_text
from ..errors import CntkioError, ConfigError
from . import BUILTIN_ACTIONS, get_action
from .checks import check_writable, network_inputs

__all__ = ["ValidationError", "ValidationReport", "validate_commands", "ACTION_KEYS"]

_log = get_logger("actions.validate")

#: actions that train a network and write modelPath
_TRAINING = {"train", "adapt"}
#: actions that read modelPath
_MODEL_READERS = {"test", "eval", "cv", "write", "testunroll", "dumpnode"}
#: keys each action reads when it runs, beyond what validation reads (declared for the unused-key
#: report, which runs before the actions)
_COMMON = ("precision", "deviceId", "traceLevel", "numCPUThreads", "progressBar", "minibatchSize", "epochSize",
           "numMBsToShowResult")
ACTION_KEYS: dict[str, tuple[str, ...]] = {
    "train": _COMMON + ("makeMode", "forceResume", "cvReader", "dropoutRate", "tensorBoardLogDir"),
    "adapt": _COMMON + ("makeMode", "forceResume", "cvReader", "tensorBoardLogDir", "originalModelFileName", "refNodeName",
                        "adaptationRegType", "adaptationRegWeight"),
    # maxEpochs: CNTK's configs (the spec's first example too) set it in test sections, where it changes nothing
    "test": _COMMON + ("modelPath", "evalNodeNames", "maxEpochs"),
    "eval": _COMMON + ("modelPath", "evalNodeNames", "maxEpochs"),
    "cv": _COMMON + ("modelPath", "evalNodeNames", "crossValidationInterval", "sleepTimeBetweenRuns"),
    "write": _COMMON + ("modelPath", "outputNodeNames", "outputPath", "precisionFormat", "writer"),
    "testunroll": _COMMON + ("modelPath",),
    "dumpnode": _COMMON + ("modelPath", "nodeName", "outputFile", "printMetadata", "printValues"),
    "dumpreader": _COMMON + ("dumpLayout", "maxEpochs", "maxMinibatchesPerEpoch", "numSubsets", "outputFile",
                             "sortOutput", "streams", "subsetNum"),
    "createlabelmap": _COMMON + ("labelMappingFile", "labelStream"),
    "edit": _COMMON + ("editPath", "ndlMacros", "outputModelPath", "makeMode"),
}

BUILTIN_LOWER = {a.lower() for a in BUILTIN_ACTIONS}
#: network sections written in another language (NDL, BrainScript), read whole by their evaluators
_WHOLE_SECTIONS = ("NDLNetworkBuilder", "BrainScriptNetworkBuilder", "ExperimentalNetworkBuilder")

#: reader types whose sections the reader factory reads key by key (others: readers/legacy adapters)
_TRACKED_READERS = {"compositedatareader", "cntktextformatreader"}

#: keys naming input files in a deserializer's configuration
_FILE_KEYS = ("file", "scpFile", "mlfFile", "mlfFileList", "mapFile", "labelMappingFile")
#: keys naming input files in a legacy reader's translation (its label mapping file may be written)
_LEGACY_FILE_KEYS = ("file", "scpFile", "mlfFile", "mlfFileList", "mapFile")


class ValidationError(ConfigError):
    """Every problem found before work, one per line (``problems``: the ConfigErrors)."""

    def __init__(self, problems: list[Exception], unused: list[UnusedKey] | None = None) -> None:
        self.problems = list(problems)
        self.unused = list(unused or [])
        lines = [str(p) for p in self.problems] + [str(u) for u in self.unused]
        n = len(lines)
        super().__init__(f"{n} problem{'s' if n != 1 else ''} found before any work:\n  " + "\n  ".join(lines))


@dataclass
class ValidationReport:
    """What :func:`validate_commands` found: the problems (empty when the run may start) and the
    keys nothing read."""

    problems: list[Exception] = field(default_factory=list)
    unused: list[UnusedKey] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _value(cfg, key: str):
    """``key``'s ConfigValue as seen from ``cfg`` (its file and line), or None."""
    try:
        return cfg(key) if cfg.exists(key) else None
    except ConfigError:
        return None


def _error(cfg, key: str, message: str, hint: str | None = None) -> ConfigError:
    v = _value(cfg, key)
    path = getattr(v, "path", None) or (f"{cfg.path}.{key}" if getattr(cfg, "path", "") else key)
    return ConfigError(message, path=path, file=getattr(v, "file", None) or getattr(cfg, "file", None),
                       line=getattr(v, "line", None), hint=hint)


class _Run:
    def __init__(self, root: ConfigParameters) -> None:
        self.root = root
        self.problems: list[Exception] = []
        self.models: dict[str, Any] = {}        # modelPath written by an earlier command -> its network
        self.may_write_models = False           # an earlier command writes model files of its own (MEL)

    def add(self, err: Exception) -> None:
        if all(str(err) != str(p) for p in self.problems):     # a value read by two commands: once
            self.problems.append(err)

    def attempt(self, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except (CntkioError, OSError) as e:
            self.add(e)
            return None


def _settings(run: _Run, name: str, section: ConfigParameters) -> None:
    from .settings import _trace_level, check_precision, parse_device_id
    for key, check in (("precision", check_precision), ("deviceId", parse_device_id), ("traceLevel", _trace_level)):
        if section.exists(key):
            v = section(key)
            try:
                check(v, path=f"{name}.{key}")
            except ConfigError as e:
                run.add(ConfigError(e.reason, path=e.path, file=getattr(v, "file", None),
                                    line=getattr(v, "line", None), hint=e.hint))


def _reader(run: _Run, command: ConfigParameters, name: str, key: str, inputs: dict[str, int] | None,
            net_where: str | None) -> None:
    """The reader section ``key``: its translation, its files, its streams against ``inputs``."""
    from ..readers import reader_spec
    from ._params import section
    try:
        cfg = section(command, key)
        spec = reader_spec(cfg, path=f"{name}.{key}")
    except CntkioError as e:
        run.add(e)
        return
    dims: dict[str, tuple[int, str]] = {}
    if any("image" in str(d.get("type", "")).lower() for d in spec.deserializers):
        from ..transforms.ops import cv2_module
        try:
            cv2_module()        # images need OpenCV (an optional extra): said before any work
        except CntkioError as e:
            run.add(ConfigError(str(e), path=f"{name}.{key}", file=getattr(cfg, "file", None),
                                line=getattr(cfg, "line", None)))
    tracked = spec.reader_type.lower() in _TRACKED_READERS
    if not tracked and isinstance(cfg, ConfigParameters):
        cfg.mark_all_used()      # a legacy reader translates its own section (files, caches, keys)
    for i, d in enumerate(spec.deserializers):
        for fk in _FILE_KEYS if tracked else ():
            f = d.get(fk)
            if isinstance(f, str) and f and not _exists(f):
                run.add(_file_error(cfg, fk, f, i, spec))
        if not tracked and not d.get("cache"):   # a legacy reader's input files (not one that may read its cache)
            for fk, f in _input_files(d):
                if not _exists(f):
                    v = _find_value(cfg, fk, f)
                    run.add(ConfigError(missing_file_text("input file", f),
                                        path=getattr(v, "path", None) or f"{spec.path}.{fk}",
                                        file=getattr(v, "file", None) or getattr(cfg, "file", None),
                                        line=getattr(v, "line", None)))
        for stream, entry in (d.get("input") or {}).items():
            if isinstance(entry, dict) and "dim" in entry:
                try:
                    dims[stream] = (int(entry["dim"]), _dim_where(cfg, stream, i, spec))
                except (TypeError, ValueError):
                    pass
    if not inputs:
        return
    for node, dim in inputs.items():
        if node not in dims:
            if dims and not spec.stream_names or node in spec.stream_names:
                continue
            run.add(ConfigError(f"the network reads a stream named {node!r} but the reader delivers "
                                f"{', '.join(sorted(spec.stream_names)) or 'no streams'} (input node {node!r}, "
                                f"dim {dim})",
                                path=f"{name}.{key}.input", file=cfg.file, line=cfg.line,
                                hint=f"name the reader's input {node!r}" + (f" (the network: {net_where})"
                                                                             if net_where else "")))
            continue
        rdim, where = dims[node]
        if rdim != dim:
            run.add(ConfigError(f"stream {node!r} has dim {rdim} but the network's input node {node!r} has dim "
                                f"{dim}" + (f" ({net_where})" if net_where else ""),
                                path=f"{name}.{key}.input.{node}.dim", file=where.split("|")[0] or None,
                                line=int(where.split("|")[1]) if where.split("|")[1] else None,
                                hint="make the reader's dim and the network's size agree"))


def _dim_where(cfg, stream: str, i: int, spec) -> str:
    """'file|line' of the dim of ``stream`` in the reader section ``cfg``."""
    candidates = [f"input.{stream}.dim"]
    if spec.reader_type.lower() == "compositedatareader":
        candidates.insert(0, f"deserializers[{i}].input.{stream}.dim")
    node = cfg
    try:
        if cfg.exists_current("deserializers"):
            items = cfg("deserializers").as_array()
            node = items[i] if i < len(items) and isinstance(items[i], ConfigParameters) else cfg
        v = node(f"input.{stream}.dim") if node.exists(f"input.{stream}.dim") else None
    except ConfigError:
        v = None
    return f"{getattr(v, 'file', '') or ''}|{getattr(v, 'line', '') or ''}"


def _exists(path: str) -> bool:
    """A local input file exists; a URL is not asked for here (its reader names a missing object
    when it opens it, with the section's storageOptions)."""
    from ..remote import is_remote, local_path
    return is_remote(path) or os.path.exists(local_path(path))


def _input_files(tree) -> list[tuple[str, str]]:
    """``(key, path)`` of every input file a legacy reader's translated deserializer names."""
    out: list[tuple[str, str]] = []
    if isinstance(tree, dict):
        for k, v in tree.items():
            if k in _LEGACY_FILE_KEYS and isinstance(v, str) and v:
                out.append((k, v))
            elif isinstance(v, (dict, list)):
                out += _input_files(v)
    elif isinstance(tree, list):
        for v in tree:
            out += _input_files(v)
    return out


def _find_value(cfg, key: str, text: str):
    """The ConfigValue of a key named ``key`` whose text is ``text``, anywhere in the section ``cfg``."""
    if not isinstance(cfg, ConfigParameters):
        return None
    for name, value in cfg.items():
        if isinstance(value, ConfigParameters):
            found = _find_value(value, key, text)
            if found is not None:
                return found
        elif name.lower() == key.lower() and str(value).strip().strip('"') == text:
            return value
    return None


def _file_error(cfg, fk: str, f: str, i: int, spec) -> ConfigError:
    node = cfg
    try:
        if cfg.exists_current("deserializers"):
            items = cfg("deserializers").as_array()
            if i < len(items) and isinstance(items[i], ConfigParameters):
                node = items[i]
    except ConfigError:
        pass
    v = _value(node, fk)
    return ConfigError(missing_file_text("input file", f), path=getattr(v, "path", None) or f"{spec.path}.{fk}",
                       file=getattr(v, "file", None), line=getattr(v, "line", None))


def _training(run: _Run, command: ConfigParameters, name: str, action: str) -> None:
    from ._params import get_bool, get_str, section
    from .fingerprint import check_resume
    from .parallel import ParallelParams
    from .sgd import SGDParams
    from .sgd import INFO_KEYS, NOTED_KEYS, SGD_KEYS
    from .validate_values import ADJUST_VALUES, SGD_VALUES, check_values
    sgd_cfg = run.attempt(section, command, "SGD", required=False) or command
    adjust = sgd_cfg("AutoAdjust") if sgd_cfg.exists_current("AutoAdjust") else sgd_cfg
    bad = check_values(sgd_cfg, SGD_VALUES) + check_values(adjust, ADJUST_VALUES)
    params = None
    if bad:            # every bad value, each once; the checks across keys need good values
        for e in bad:
            run.add(e)
        for key in (*SGD_KEYS, *INFO_KEYS, *NOTED_KEYS):
            sgd_cfg.exists(key)          # read by SGDParams.from_config: not "not used"
        if adjust is not sgd_cfg:
            adjust.mark_all_used()
    else:
        params = run.attempt(SGDParams.from_config, sgd_cfg, command)
    run.attempt(ParallelParams.from_config, command, sgd_cfg, 1, False)
    model_path = None
    if not sgd_cfg.exists("modelPath"):
        run.add(_error(sgd_cfg, "modelPath", "required parameter modelPath is missing",
                       "the file the trained model is written to"))
    else:
        model_path = get_str(sgd_cfg, "modelPath")
        why = check_writable(model_path)
        if why is not None:
            run.add(_error(sgd_cfg, "modelPath", f"the model file cannot be written: {why}"))
    net = None
    if action == "adapt":
        if not command.exists("originalModelFileName"):
            run.add(_error(command, "originalModelFileName", "required parameter originalModelFileName is missing"))
        else:
            path = get_str(command, "originalModelFileName")
            if not os.path.exists(path) and path not in run.models and not run.may_write_models:
                run.add(_error(command, "originalModelFileName", missing_file_text("model file", path)))
            else:
                net = run.models.get(path) or (_load_net(run, command, "originalModelFileName")
                                                if os.path.exists(path) else None)
                if net is not None and os.path.exists(path):       # KL adaptation's own keys
                    from ..integrations.torch_backend import torch
                    from .train import kl_targets
                    run.attempt(kl_targets, command, sgd_cfg, torch.device("cpu"), torch.float32)
    else:
        from .train import initial_model_path
        start0 = initial_model_path(model_path) if model_path is not None else None
        if start0 is not None and run.attempt(get_bool, command, "makeMode", True) and (
                start0 in run.models or os.path.exists(start0)):
            # makeMode starts from modelPath.0 (an earlier edit or SVD writes it): no builder runs
            net = run.models.get(start0) or (_load_net_file(run, sgd_cfg, start0) if os.path.exists(start0) else None)
        else:
            net = _spec_network(run, command)
    from .board import board_problem
    bad_board = board_problem(command)          # tensorBoardLogDir: TensorBoard installed, writable
    if bad_board is not None:
        run.add(bad_board)
    inputs = network_inputs(net) if net is not None else None
    where = _network_where(command)
    _reader(run, command, name, "reader", inputs, where)
    if command.exists("cvReader"):
        _reader(run, command, name, "cvReader", inputs, where)
    if model_path is not None and params is not None:
        make_mode = run.attempt(get_bool, command, "makeMode", True)
        if make_mode:
            from .fingerprint import check_final_model
            from .train import first_missing_epoch
            start = first_missing_epoch(model_path, params.max_epochs)
            if start >= params.max_epochs:
                run.attempt(check_final_model, command, name, model_path, action == "adapt")
            else:
                run.attempt(check_resume, command, name, model_path, start, params.max_epochs, action == "adapt")
    if model_path is not None:
        run.models[model_path] = net     # written by this command (a later one reads it): no follow-on error


def _network_where(command) -> str | None:
    for key in ("SimpleNetworkBuilder", "NDLNetworkBuilder", "BrainScriptNetworkBuilder", "ExperimentalNetworkBuilder"):
        if command.exists_current(key):
            sec = command(key)
            if key == "SimpleNetworkBuilder" and isinstance(sec, ConfigParameters) and sec.exists("layerSizes"):
                v = sec("layerSizes")
                return f"{v.path} = {v} at {v.file}:{v.line}"
            return f"{getattr(sec, 'path', key)} at {getattr(sec, 'file', '?')}:{getattr(sec, 'line', '?')}"
    return None


def _spec_network(run: _Run, command):
    """The network a train command builds, as far as validation needs it (no data is read)."""
    from ..integrations.torch_backend import torch
    from .network import spec_from_config
    from ._params import section
    if command.exists("SimpleNetworkBuilder"):
        builder = run.attempt(section, command, "SimpleNetworkBuilder")
        if builder is None:
            return None
        spec = run.attempt(spec_from_config, builder)
        if spec is None or not hasattr(spec, "layer_sizes"):
            return None

        class _Spec:        # what network_inputs reads
            pass
        holder = _Spec()
        holder.spec = spec
        return holder
    from .network import build_network
    try:
        return build_network(command, device=torch.device("cpu"), dtype=torch.float32)
    except (CntkioError, OSError) as e:
        if run.may_write_models and "BS.Network.Load: model file" in str(e) and "does not exist" in str(e):
            return None     # the network loads a model an earlier command (edit, SVD) writes
        run.add(e)
        return None


def _load_net_file(run: _Run, cfg: ConfigParameters, path: str):
    from .checks import load_command_model
    mf = run.attempt(load_command_model, cfg, "modelPath", path)
    return None if mf is None else mf.network


def _load_net(run: _Run, command: ConfigParameters, key: str):
    """The network of the model file ``key`` names; a bad file is a problem naming the key and line."""
    from .checks import load_command_model
    mf = run.attempt(load_command_model, command, key)
    return None if mf is None else mf.network


def _output(run: _Run, command: ConfigParameters, key: str, *, required: bool) -> None:
    """An output file key: required, and writable ('-' is stdout)."""
    from ._params import get_str
    if not command.exists(key):
        if required:
            run.add(_error(command, key, f"required parameter {key} is missing"))
        return
    out = get_str(command, key)
    why = None if out == "-" else check_writable(out)
    if why is not None:
        run.add(_error(command, key, f"the output cannot be written: {why}"))


def _model_reader(run: _Run, command: ConfigParameters, name: str, action: str) -> None:
    from ._params import get_str
    from .network import has_brainscript
    from .htkwrite import has_htk_write
    if action == "write" and has_htk_write(command):
        # HTKMLFReader's dataset-processing mode checks and reads its own sections when it runs
        # (TIMIT_WriteBottleneck.cntk's reader and writer were reported as not used)
        for key in ("reader", "writer"):
            if command.exists_current(key) and isinstance(command(key), ConfigParameters):
                command(key).mark_all_used()
        return
    if action == "write" and has_brainscript(command):
        net = None   # the network is built from the command's BrainScriptNetworkBuilder
    elif not command.exists("modelPath"):
        run.add(_error(command, "modelPath", "required parameter modelPath is missing",
                       "the model file this command reads"))
        net = None
    else:
        path = get_str(command, "modelPath")
        if path in run.models:
            net = run.models[path]
        elif not os.path.exists(path):
            if not run.may_write_models:
                run.add(_error(command, "modelPath", missing_file_text("model file", path) + " and no earlier "
                                                     "command of this run writes it"))
            net = None
        else:
            net = _load_net(run, command, "modelPath")
    if action == "write" and not command.exists("writer"):
        _output(run, command, "outputPath", required=True)
    if action == "dumpnode":
        _output(run, command, "outputFile", required=False)
    if action != "dumpnode" and command.exists("reader"):
        inputs = network_inputs(net) if net is not None else None
        if inputs and action in ("test", "eval", "cv", "testunroll", "write"):
            feature = next(iter(inputs))
            # evaluation feeds the features (write: only them); labels are checked when given
            inputs = {k: v for k, v in inputs.items() if k == feature or action != "write"}
        _reader(run, command, name, "reader", inputs, f"the model {get_str(command, 'modelPath')}"
                if command.exists("modelPath") else None)


def validate_commands(root: ConfigParameters, *, strict: bool = False, raise_errors: bool = True,
                      warn: bool = True) -> ValidationReport:
    """Check every command section of ``root``'s ``command`` list (module docstring). With
    ``raise_errors``, a :class:`ValidationError` listing every problem is raised when there are
    any (with ``strict``, unused keys count as problems); otherwise they come back in the report.
    Unused keys are logged as warnings unless ``strict`` or not ``warn`` (the caller prints them)."""
    from ..config import command_sections
    from .sgd import SGD_KEYS
    from .parallel import PARALLEL_KEYS
    run = _Run(root)
    try:
        commands = command_sections(root)
    except ConfigError as e:
        if raise_errors:
            raise ValidationError([e]) from e
        return ValidationReport([e])
    if root.exists("stderr"):
        prefix = str(root("stderr")).strip()
        why = check_writable(prefix + "_log")
        if why is not None:
            run.add(_error(root, "stderr", f"the log file cannot be written: {why}"))
    for key in ("traceLevel", "deviceId", "precision", "numCPUThreads", "progressBar"):
        root.exists(key)
    from .validate_values import ACTION_VALUES, check_values
    for cmd in commands:
        _settings(run, cmd.name, cmd.section)
        for action in cmd.actions:
            try:
                get_action(action, path=f"{cmd.name}.action")
            except ConfigError as e:
                v = _value(cmd.section, "action")
                run.add(ConfigError(e.reason, path=e.path, file=getattr(v, "file", None),
                                    line=getattr(v, "line", None), hint=e.hint))
                continue
            low = action.lower()
            for e in check_values(cmd.section, ACTION_VALUES.get(low, {})):
                run.add(e)
            if low in _TRAINING:
                _training(run, cmd.section, cmd.name, low)
            elif low in _MODEL_READERS:
                _model_reader(run, cmd.section, cmd.name, low)
            else:
                if low == "dumpreader":
                    _output(run, cmd.section, "outputFile", required=True)
                if cmd.section.exists("reader"):
                    _reader(run, cmd.section, cmd.name, "reader", None, None)
            if low not in BUILTIN_LOWER or low in ("edit", "bnstat"):
                run.may_write_models = True
            if low == "svd" and cmd.section.exists("outputmodelPath"):     # the model it writes
                run.models[str(cmd.section("outputmodelPath"))] = None
    for cmd in commands:
        for action in cmd.actions:
            for key in ACTION_KEYS.get(action.lower(), ()):
                cmd.section.exists(key)     # read by the action when it runs
        for key in _WHOLE_SECTIONS:         # another language's text: read by its own evaluator
            if cmd.section.exists_current(key) and isinstance(cmd.section(key), ConfigParameters):
                cmd.section(key).mark_all_used()
        _file_variables(cmd.section)
    unused = unused_keys(root, [c.section for c in commands], known=(*SGD_KEYS, *PARALLEL_KEYS))
    if warn and not strict:
        for u in unused:
            _log.warning("%s", u)
    if raise_errors and (run.problems or (strict and unused)):
        if len(run.problems) == 1 and not (strict and unused):
            raise run.problems[0]        # one problem: the error itself, as the action would raise it
        raise ValidationError(run.problems, unused if strict else [])
    return ValidationReport(run.problems, unused)


def _file_variables(section: ConfigParameters) -> None:
    """Look up (so mark as used) the config names an NDL or MEL file reads as ``$name$``: CNTK
    resolves them from the builder's or the edit command's section outwards when it loads the file
    (LoadConfigFileAndResolveVariables, Source/ActionsLib/NDLNetworkBuilder.h:498), after validation."""
    import re
    scopes = [(section, ("editPath", "ndlMacros"))]
    if section.exists("NDLNetworkBuilder") and isinstance(section("NDLNetworkBuilder"), ConfigParameters):
        scopes.append((section("NDLNetworkBuilder"), ("networkDescription", "ndlMacros")))
    for scope, keys in scopes:
        for key in keys:
            try:
                paths = str(scope(key)).split("+") if scope.exists(key) else []
            except CntkioError:
                continue
            for path in paths:
                try:
                    with open(path.strip(), encoding="utf-8", errors="replace") as f:
                        text = re.sub(r"#[^\n]*", "", f.read())
                except OSError:
                    continue
                for name in set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_.]*)\$", text)):
                    scope.exists(name)

