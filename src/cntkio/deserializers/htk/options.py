"""Option lookup shared by the HTK deserializers (through :mod:`cntkio.values`)."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ...errors import ConfigError
from ...values import to_array, to_bool, to_choice, to_pair, to_path

__all__ = ["one_input", "option", "paths_of", "context_of", "dtype_of", "MISSING"]

MISSING = object()


def _get(mapping: Mapping | None, name: str) -> Any:
    if not mapping:
        return MISSING
    if name in mapping:
        return mapping[name]
    low = name.lower()
    for k, v in mapping.items():
        if str(k).lower() == low:
            return v
    return MISSING


def option(spec: Mapping, outer: Mapping | None, *names: str, default: Any = None) -> Any:
    """The first of ``names`` given in ``spec`` (the input's section), then in ``outer`` (the
    deserializer's section); names match case-insensitively, as CNTK's config lookups do."""
    for where in (spec, outer):
        for n in names:
            v = _get(where, n)
            if v is not MISSING and v is not None:
                return v
    return default


def one_input(config: Mapping, type_name: str) -> tuple[str, Mapping]:
    """The one ``input`` stream of an HTK deserializer's config."""
    inputs = _get(config, "input")
    if inputs is MISSING or not isinstance(inputs, Mapping) or not inputs:
        raise ConfigError(f"the {type_name} needs input = [ name = [ ... ] ] with one stream", path="input")
    if len(inputs) != 1:
        raise ConfigError(f"the {type_name} delivers one stream, as in CNTK 2.7; found {len(inputs)} "
                          f"({', '.join(map(str, inputs))}): use one deserializer per stream", path="input")
    (name, spec), = inputs.items()
    if not isinstance(spec, Mapping):
        raise ConfigError(f"input.{name} must be a section [ ... ]", path=f"input.{name}")
    return str(name), spec


def paths_of(spec: Mapping, names: tuple[str, ...], where: str, outer: Mapping | None = None) -> list[str]:
    """One path or a list of paths (``("a":"b")`` in a config, a list from Python)."""
    value = option(spec, outer, *names)
    if value is None:
        raise ConfigError(f"{where} is required: a file or a list of files", path=where)
    items = to_array(value, where) if isinstance(value, (list, tuple)) else [value]
    if isinstance(value, str) and value.startswith("("):
        items = to_array(value, where)
    out = [to_path(v, f"{where}[{i}]") for i, v in enumerate(items)]
    if not out:
        raise ConfigError(f"{where} lists no file", path=where)
    return out


def context_of(value: Any, where: str) -> tuple[int, int] | None:
    """``contextWindow``: one number ``n`` (``(n, n)``) or a pair ``left:right``."""
    if value is None:
        return None
    left, right = to_pair(value, where)
    if left < 0 or right < 0:
        raise ConfigError(f"{where} must be non-negative, found {left}:{right}", path=where)
    return int(left), int(right)


def dtype_of(config: Mapping) -> np.dtype:
    prec = _get(config, "precision")
    if prec is MISSING or prec is None:
        return np.dtype(np.float32)
    return np.dtype(np.float32 if to_choice(prec, "precision", ("float", "double")) == "float" else np.float64)


def numeric_keys_of(config: Mapping, spec: Mapping) -> bool:
    """``useNumericSequenceKeys`` (keys are numbers: ``"007"`` joins ``"7"``, as CNTK's corpus
    descriptor read them) and ``hashSequenceKeys`` (string keys hashed: cntkio always hashes them,
    so it changes nothing), on the deserializer or its stream. Both true is CNTK's error."""
    numeric = to_bool(option(spec, config, "useNumericSequenceKeys", default=False), "useNumericSequenceKeys")
    hashed = to_bool(option(spec, config, "hashSequenceKeys", default=False), "hashSequenceKeys")
    if numeric and hashed:
        raise ConfigError("Hashing should not be used with numeric sequence keys. (useNumericSequenceKeys and "
                          "hashSequenceKeys are both true)", path="hashSequenceKeys")
    return numeric
