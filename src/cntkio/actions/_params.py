"""Typed access to the parameters of a command section (shared by the actions).

CNTK values stay text until a component asks for them with a type; these helpers ask. They accept
a ``ConfigParameters`` section (lookups go up the parent chain, as the spec says: ``modelPath`` at
the root is seen by every command section) and give errors that name the key path and what was
expected. The conversions are :mod:`cntkio.values`' (a ConfigValue converts itself with them).
"""
from __future__ import annotations

from typing import Any

from .. import values
from ..config import ConfigParameters, ConfigValue
from ..errors import ConfigError

__all__ = ["has", "get_str", "get_int", "get_float", "get_bool", "get_list", "get_schedule",
           "schedule_value", "minibatch_size", "key_path", "section"]

_MISSING = object()
_NODE = (ConfigValue, ConfigParameters)     # converted by their own as_int() & co (file and line)


def key_path(cfg, key: str) -> str:
    """The dotted path of ``key`` in ``cfg`` (for error messages)."""
    for attr in ("path", "name", "key_path"):
        base = getattr(cfg, attr, None)
        if isinstance(base, str) and base:
            return f"{base}.{key}"
    return key


def has(cfg, key: str) -> bool:
    """Whether ``key`` is set in ``cfg`` or one of its parents."""
    if cfg is None:
        return False
    return bool(cfg.exists(key))


def _raw(cfg, key: str, default: Any = _MISSING):
    if has(cfg, key):
        return cfg(key)
    if default is _MISSING:
        raise ConfigError(f"required parameter {key} is missing", path=key_path(cfg, key))
    return default


def _text(v) -> str:
    s = str(v).strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        s = s[1:-1]
    return s


def section(cfg, key: str, required: bool = True):
    """A sub-section (``SGD``, ``reader``, ``SimpleNetworkBuilder``) or None when absent.

    A section found in an enclosing section (a root-level ``SGD`` seen from a command) looks its
    missing names up from ``cfg`` first, as CNTK's: ``ConfigParameters::operator()(name)`` sets
    the found value's parent to the section that asked ("update parent pointer to this
    pointer", Source/Common/Include/Config.h), so a root ``SGD`` finds the command's
    ``modelPath``."""
    if not has(cfg, key):
        if required:
            raise ConfigError(f"required section {key}=[...] is missing", path=key_path(cfg, key))
        return None
    value = cfg(key)
    if isinstance(value, ConfigParameters) and not cfg.exists_current(key) and value.parent is not cfg:
        return value.copy(parent=cfg)
    return value


def get_str(cfg, key: str, default: Any = _MISSING) -> str | None:
    v = _raw(cfg, key, default)
    return None if v is None else _text(v)


def get_int(cfg, key: str, default: Any = _MISSING) -> int | None:
    v = _raw(cfg, key, default)
    if v is None:
        return v
    if isinstance(v, _NODE):
        return v.as_int()
    return values.to_int(_text(v) if isinstance(v, str) else v, key_path(cfg, key))


def get_float(cfg, key: str, default: Any = _MISSING) -> float | None:
    v = _raw(cfg, key, default)
    if v is None:
        return v
    if isinstance(v, _NODE):
        return v.as_float()
    return _to_float(v, key_path(cfg, key))


def _to_float(v, path: str) -> float:
    return values.to_float(_text(v) if isinstance(v, str) else v, path)


def get_bool(cfg, key: str, default: Any = _MISSING) -> bool | None:
    v = _raw(cfg, key, default)
    if v is None:
        return v
    if isinstance(v, _NODE):
        return v.as_bool()      # a bare flag (``makeMode``) was written "true" by the parser
    return values.to_bool(_text(v) if isinstance(v, str) else v, key_path(cfg, key))


def get_list(cfg, key: str, default: Any = _MISSING) -> list | None:
    """An array value (``a:b:c``, ``v*N`` repeats expanded; a single value is a one-element list)."""
    v = _raw(cfg, key, default)
    if v is None:
        return None
    return to_list(v)


def to_list(v) -> list:
    """A config value as a flat list of text items, ``v*N`` expanded (a ConfigValue by its own
    ``as_array()``, other text by :func:`cntkio.values.to_array`)."""
    if isinstance(v, ConfigValue) and v.quoted:
        # a quoted list of numbers ("$vocab$:150:200:$vocab$" in rnn.cntk) reads as CNTK reads it:
        # the quotes are removed when the file is parsed and the array split after
        items = [_text(item) for item in values.to_array(str(v))]
        if len(items) > 1 and all(_is_number(i) for i in items):
            return items
    if isinstance(v, _NODE):
        v = list(v.as_array())
    elif isinstance(v, str):
        v = _text(v)
    return [_text(item) for item in values.to_array(v)]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def get_schedule(cfg, key: str, default: Any = _MISSING) -> list[float] | None:
    """A per-epoch schedule (``0.8*10:0.2``: 0.8 for 10 epochs, then 0.2) as floats, the last
    value repeating (see :func:`schedule_value`)."""
    values = get_list(cfg, key, default)
    if values is None:
        return None
    out = [_to_float(v, key_path(cfg, key)) for v in values]
    if not out:
        raise ConfigError("empty schedule", path=key_path(cfg, key))
    return out


def minibatch_size(cfg, default: int = 40960) -> int:
    """``minibatchSize`` of an evaluating action (eval, cv, write, createLabelMap): an array (a
    train section's per-epoch schedule, found up the chain) gives its first value, as CNTK; must be
    > 0."""
    values = get_schedule(cfg, "minibatchSize", str(default))
    size = values[0]
    if size <= 0 or not float(size).is_integer():
        raise ConfigError(f"expected a positive integer, found {size:g}", path=key_path(cfg, "minibatchSize"))
    return int(size)


def schedule_value(schedule: list, epoch: int):
    """The value of a per-epoch schedule for 0-based ``epoch`` (the last entry repeats)."""
    return schedule[min(epoch, len(schedule) - 1)]
