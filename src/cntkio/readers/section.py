"""A read-only view of one config section with CNTK's lookup rules, over either a parsed
``ConfigParameters`` or a plain dict tree.

CNTK looks a name up in the section first and then in each enclosing section up to the root
(``precision`` or ``traceLevel`` written at the top of a file reach every reader), and compares
names case-insensitively (``sparse.cntk`` defines ``defMbSize`` and uses ``$defMBSize$``). The
reader factory reads every key through this view so that both rules hold whatever the config came
from, and every error names the key path (``mnistTrain.reader.input.features.dim``). Values are
converted by :mod:`cntkio.values`; errors get the file and line where the key was written.
"""
from __future__ import annotations

import difflib
from typing import Any, Callable, Iterator, Sequence

from .. import values
from ..errors import ConfigError

__all__ = ["Section", "as_section"]

_MISSING = object()


def _is_config_params(obj: Any) -> bool:
    return hasattr(obj, "to_dict") and callable(obj) and hasattr(obj, "exists")


def _plain(value: Any) -> Any:
    """A ConfigParameters value as the plain tree ``to_dict()`` gives (dict / list / str)."""
    if _is_config_params(value):
        return value.to_dict()
    is_array = getattr(value, "is_array_literal", None)
    if is_array is not None and is_array():
        return [_plain(v) for v in value.as_array()]
    return str(value)


class _LazyNode(dict):
    """The names of an enclosing ConfigParameters, each resolved only when looked up: a lookup
    that reaches a parent set must not resolve its other entries (CNTK resolves lazily; an
    unrelated ``$var$`` elsewhere in the file is no error for this reader)."""

    def __init__(self, cfg: Any) -> None:
        super().__init__((k, None) for k in cfg.keys())
        self._cfg = cfg
        self._done: set = set()

    def __getitem__(self, key: str) -> Any:
        if key not in self._done:
            dict.__setitem__(self, key, _plain(self._cfg(key)))
            self._done.add(key)
        return dict.__getitem__(self, key)

    def items(self):  # type: ignore[override]
        return [(k, self[k]) for k in self.keys()]


class Section:
    """One section (a dict of names to values), its parent section and its key path."""

    def __init__(self, node: Any, parent: "Section | None" = None, path: str = "", *,
                 lazy: bool = False) -> None:
        self._cfg = node if _is_config_params(node) else None   # where values were written
        if _is_config_params(node):
            # a parsed ConfigParameters: its resolved tree, with its enclosing sets as parents
            # (whose values are resolved only when a lookup reaches them)
            cfg_parent = getattr(node, "parent", None)
            if parent is None and cfg_parent is not None:
                parent = Section(cfg_parent, lazy=True)
            path = getattr(node, "path", "") or path
            node = _LazyNode(node) if lazy else node.to_dict()
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
        if self._cfg is not None:
            self._cfg.note_asked(name)  # a name the reader knows: suggested for misspelt keys
        return self._lower.get(name.lower())

    def _mark(self, key: str | None) -> None:
        """Record that ``key`` (this section's own spelling) was read: the configuration's
        unused-key report (cntkio.config.usage) skips it."""
        if key is not None and self._cfg is not None and hasattr(self._cfg, "mark_used"):
            self._cfg.mark_used(key)

    def key_path(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def has_local(self, name: str) -> bool:
        k = self.local_key(name)
        self._mark(k)
        return k is not None

    def exists(self, name: str) -> bool:
        """Whether ``name`` is defined here or in an enclosing section."""
        return self._find(name)[0] is not _MISSING

    def _find(self, name: str) -> tuple[Any, "Section | None"]:
        sec: Section | None = self
        while sec is not None:
            k = sec.local_key(name)
            if k is not None:
                sec._mark(k)
                return sec.node[k], sec
            sec = sec.parent
        return _MISSING, None

    def where(self, name: str) -> tuple[str | None, int | None]:
        """The file and line where ``name`` (as seen from here) was written, when known."""
        sec: Section | None = self
        while sec is not None:
            k = sec.local_key(name)
            if k is not None:
                if sec._cfg is None:
                    return None, None
                try:
                    value = sec._cfg(k)
                except Exception:  # noqa: BLE001 - provenance is best effort
                    return None, None
                return getattr(value, "file", None), getattr(value, "line", None)
            sec = sec.parent
        sec = self
        while sec is not None and sec._cfg is None:
            sec = sec.parent
        if sec is not None:
            return getattr(sec._cfg, "file", None), getattr(sec._cfg, "line", None)
        return None, None

    def error(self, name: str, message: str, hint: str | None = None) -> ConfigError:
        """A ConfigError about ``name``: its key path, and its file and line when known."""
        file, line = self.where(name)
        return ConfigError(message, path=self.key_path(name), file=file, line=line, hint=hint)

    def suggest(self, name: str) -> str | None:
        close = difflib.get_close_matches(name, self.keys(), n=1, cutoff=0.7)
        return f"did you mean {close[0]!r}?" if close else None

    # --- values --------------------------------------------------------------------------------
    def raw(self, name: str, default: Any = _MISSING, *, inherit: bool = True) -> Any:
        if inherit:
            value, _ = self._find(name)
        else:
            k = self.local_key(name)
            self._mark(k)
            value = self.node[k] if k is not None else _MISSING
        if value is _MISSING:
            if default is _MISSING:
                raise self.error(name, f"required parameter {name!r} is missing", self.suggest(name))
            return default
        return value

    def value(self, name: str, convert: Callable, default: Any = _MISSING, *, inherit: bool = True,
              **options: Any) -> Any:
        """``name``'s value converted by ``convert(value, key_path, **options)`` (a function of
        :mod:`cntkio.values`); ``default`` when absent (returned as it is). A conversion error
        gets the file and line where the key was written."""
        value = self.raw(name, default, inherit=inherit)
        if value is default and default is not _MISSING:
            return value
        try:
            return convert(value, self.key_path(name), **options)
        except ConfigError as e:
            raise self.error(name, e.reason, e.hint) from e

    def str(self, name: str, default: Any = _MISSING, *, inherit: bool = True) -> Any:
        return self.value(name, values.to_str, default, inherit=inherit)

    def int(self, name: str, default: Any = _MISSING, *, minimum: int | None = None,
            inherit: bool = True) -> Any:
        return self.value(name, values.to_int, default, inherit=inherit, minimum=minimum)

    def bool(self, name: str, default: Any = _MISSING, *, inherit: bool = True) -> Any:
        return self.value(name, values.to_bool, default, inherit=inherit)

    def choice(self, name: str, choices: Sequence[str], default: Any = _MISSING, *,
               inherit: bool = True) -> Any:
        """One of ``choices`` in any case, returned as spelt in ``choices``."""
        return self.value(name, values.to_choice, default, inherit=inherit, choices=choices)

    def list(self, name: str, default: Any = _MISSING, *, inherit: bool = True) -> Any:
        """An array: ``a:b`` text split (``v*N`` repeats), an array literal as its elements, a set
        as a one-element list."""
        return self.value(name, values.to_array, default, inherit=inherit)

    def section(self, name: str, *, inherit: bool = False) -> "Section":
        """The sub-section ``name`` (by default only this section's own)."""
        if inherit:
            value, owner = self._find(name)
        else:
            k = self.local_key(name)
            self._mark(k)
            value, owner = (self.node[k], self) if k is not None else (_MISSING, None)
        if value is _MISSING:
            raise self.error(name, f"required section {name!r} is missing", self.suggest(name))
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
            value = value[0]
        if not isinstance(value, dict):
            raise self.error(name, f"expected a parameter set [...], found {_describe(value)}")
        parent = owner if owner is not None else self
        if parent._cfg is not None:
            sub = parent._cfg(parent.local_key(name))
            if _is_config_params(sub):
                return Section(sub, parent, parent.key_path(name))
        return Section(value, parent, parent.key_path(name))

    def elements(self, name: str) -> list:
        """The elements of the array ``name`` of this section (``(a:b)``, ``([..]:[..])``): a
        Section (with this section as parent) for each parameter set, the plain value otherwise.
        A single value or set is a one-element array."""
        k = self.local_key(name)
        if k is None:
            raise self.error(name, f"required parameter {name!r} is missing", self.suggest(name))
        self._mark(k)
        raw = self.node[k]
        items = raw if isinstance(raw, list) else [raw]
        cfg_items: list = []
        if self._cfg is not None:
            try:
                cfg_items = list(self._cfg(k).as_array())
            except Exception:  # noqa: BLE001 - provenance is best effort
                cfg_items = []
        if len(cfg_items) != len(items):
            cfg_items = [None] * len(items)
        out: list = []
        for i, (item, c) in enumerate(zip(items, cfg_items)):
            if isinstance(item, dict):
                node = c if _is_config_params(c) else item
                out.append(Section(node, self, self.key_path(f"{name}[{i}]")))
            else:
                out.append(item)
        return out

    def items(self) -> Iterator[tuple[str, Any]]:
        # the whole section taken as written (a third-party format's options): all of it is read
        if self._cfg is not None and hasattr(self._cfg, "mark_all_used"):
            self._cfg.mark_all_used()
        return iter(self.node.items())

    def to_dict(self) -> dict:
        if self._cfg is not None and hasattr(self._cfg, "mark_all_used"):
            self._cfg.mark_all_used()
        return self.node


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a parameter set [...]"
    if isinstance(value, (list, tuple)):
        return f"an array of {len(value)} values"
    return repr(str(value))


def as_section(config: Any, path: str = "", *, lazy: bool = False) -> Section:
    """A Section for a ``ConfigParameters``, a plain dict or a Section. ``lazy`` (ConfigParameters
    only): resolve each value when it is looked up, not the whole section at once."""
    if isinstance(config, Section):
        return config
    return Section(config, None, path, lazy=lazy and _is_config_params(config))
