"""A read-only view of one config section with CNTK's lookup rules, over either a parsed
``ConfigParameters`` or a plain dict tree.

CNTK looks a name up in the section first and then in each enclosing section up to the root
(``precision`` or ``traceLevel`` written at the top of a file reach every reader), and compares
names case-insensitively (``sparse.cntk`` defines ``defMbSize`` and uses ``$defMBSize$``). The
reader factory reads every key through this view so that both rules hold whatever the config came
from, and every error names the key path (``mnistTrain.reader.input.features.dim``).
"""
from __future__ import annotations

import difflib
from typing import Any, Iterator

from ..errors import ConfigError

__all__ = ["Section", "as_section"]

_MISSING = object()


def _is_config_params(obj: Any) -> bool:
    return hasattr(obj, "to_dict") and callable(obj) and hasattr(obj, "exists")


class Section:
    """One section (a dict of names to values), its parent section and its key path."""

    def __init__(self, node: Any, parent: "Section | None" = None, path: str = "") -> None:
        if _is_config_params(node):
            # a parsed ConfigParameters: its resolved tree, with its enclosing sets as parents
            cfg_parent = getattr(node, "parent", None)
            if parent is None and cfg_parent is not None:
                parent = Section(cfg_parent)
            path = getattr(node, "path", "") or path
            node = node.to_dict()
        if not isinstance(node, dict):
            raise ConfigError(f"expected a parameter set [...], found {_describe(node)}", path=path or None)
        self.node = node
        self.parent = parent
        self.path = path
        self._lower = {str(k).lower(): k for k in node}

    # --- names ---------------------------------------------------------------------------------
    def keys(self) -> list[str]:
        """The names defined in this section itself, in config order."""
        return list(self.node)

    def local_key(self, name: str) -> str | None:
        """The spelling of ``name`` in this section (case-insensitive), or None."""
        return self._lower.get(name.lower())

    def key_path(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def has_local(self, name: str) -> bool:
        return self.local_key(name) is not None

    def exists(self, name: str) -> bool:
        """Whether ``name`` is defined here or in an enclosing section."""
        return self._find(name)[0] is not _MISSING

    def _find(self, name: str) -> tuple[Any, "Section | None"]:
        sec: Section | None = self
        while sec is not None:
            k = sec.local_key(name)
            if k is not None:
                return sec.node[k], sec
            sec = sec.parent
        return _MISSING, None

    def suggest(self, name: str) -> str | None:
        close = difflib.get_close_matches(name, self.keys(), n=1, cutoff=0.7)
        return f"did you mean {close[0]!r}?" if close else None

    # --- values --------------------------------------------------------------------------------
    def raw(self, name: str, default: Any = _MISSING, *, inherit: bool = True) -> Any:
        if inherit:
            value, _ = self._find(name)
        else:
            k = self.local_key(name)
            value = self.node[k] if k is not None else _MISSING
        if value is _MISSING:
            if default is _MISSING:
                raise ConfigError(f"required parameter {name!r} is missing", path=self.key_path(name),
                                  hint=self.suggest(name))
            return default
        return value

    def str(self, name: str, default: Any = _MISSING, *, inherit: bool = True) -> Any:
        value = self.raw(name, default, inherit=inherit)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, (dict, list)):
            raise ConfigError(f"expected a single value, found {_describe(value)}", path=self.key_path(name))
        return str(value).strip()

    def int(self, name: str, default: Any = _MISSING, *, minimum: int | None = None,
            inherit: bool = True) -> Any:
        value = self.raw(name, default, inherit=inherit)
        if value is default and default is not _MISSING:
            return value
        text = str(value).strip() if not isinstance(value, (dict, list)) else None
        try:
            if text is None:
                raise ValueError
            result = int(text) if text.lstrip("+-").isdigit() else int(float(text)) \
                if float(text).is_integer() else None
            if result is None:
                raise ValueError
        except ValueError:
            raise ConfigError(f"expected an integer, found {_describe(value)}",
                              path=self.key_path(name)) from None
        if minimum is not None and result < minimum:
            raise ConfigError(f"expected an integer >= {minimum}, found {result}", path=self.key_path(name))
        return result

    def bool(self, name: str, default: Any = _MISSING, *, inherit: bool = True) -> Any:
        value = self.raw(name, default, inherit=inherit)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower() if not isinstance(value, (dict, list)) else None
        if text in ("t", "true", "1", ""):      # a bare name (`frameMode`) is true
            return True
        if text in ("f", "false", "0"):
            return False
        raise ConfigError(f"expected a boolean (true/false), found {_describe(value)}",
                          path=self.key_path(name))

    def list(self, name: str, default: Any = _MISSING, *, inherit: bool = True) -> Any:
        value = self.raw(name, default, inherit=inherit)
        if value is default and default is not _MISSING:
            return value
        if isinstance(value, (list, tuple)):
            return list(value)
        if isinstance(value, dict):
            return [value]
        return [v for v in str(value).split(":")] if str(value) else []

    def section(self, name: str, *, inherit: bool = False) -> "Section":
        """The sub-section ``name`` (by default only this section's own)."""
        if inherit:
            value, owner = self._find(name)
        else:
            k = self.local_key(name)
            value, owner = (self.node[k], self) if k is not None else (_MISSING, None)
        if value is _MISSING:
            raise ConfigError(f"required section {name!r} is missing", path=self.key_path(name),
                              hint=self.suggest(name))
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
            value = value[0]
        if not isinstance(value, dict):
            raise ConfigError(f"expected a parameter set [...], found {_describe(value)}",
                              path=self.key_path(name))
        parent = owner if owner is not None else self
        return Section(value, parent, parent.key_path(name) if owner is not None else self.key_path(name))

    def child(self, node: dict, name: str) -> "Section":
        """A section for a dict found in this one (an element of an array), with this as parent."""
        return Section(node, self, self.key_path(name))

    def items(self) -> Iterator[tuple[str, Any]]:
        return iter(self.node.items())

    def to_dict(self) -> dict:
        return self.node


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a parameter set [...]"
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)} values"
    return repr(str(value))


def as_section(config: Any, path: str = "") -> Section:
    """A Section for a ``ConfigParameters``, a plain dict or a Section."""
    if isinstance(config, Section):
        return config
    return Section(config, None, path)
