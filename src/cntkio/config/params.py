"""ConfigParameters and ConfigValue: CNTK's configuration tree with lazy typing.

A :class:`ConfigParameters` is one parameter set (``name=[...]``): an ordered, case-insensitive
mapping from names to values, linked to the set that contains it. Looking a name up searches
the set, then its parents up to the root, as CNTK does, so that a value written at the top of a
file is seen by every section.

A :class:`ConfigValue` is a ``str`` that remembers where it was written (file, line, key path).
It is converted only when a consumer asks: ``as_int()``, ``as_float()``, ``as_bool()``,
``as_array()``, ``as_params()``. ``$name$`` references are replaced when a value is looked up,
so that the last assignment of a variable wins wherever it is.

Conversions of text to numbers and booleans are :mod:`cntkio.values`' (the one place for CNTK
option values); the text -> tree parsing is :mod:`~cntkio.config.parser`'s, printing
:mod:`~cntkio.config.printer`'s and ``$var$`` substitution :mod:`~cntkio.config.variables`'.
"""
from __future__ import annotations

from typing import Any, Iterator

from .. import values
from ..errors import ConfigError
from ._node import ConfigArray, ParameterSet
from .text import (OPEN, Text, closest, find_top, group_body, is_dict_group, is_group, is_quoted,
                    join_path, split, strip_span)
from .parser import ParseContext, make_value, parse_body, parse_text_into, parsing
from .printer import dump, format_value
from .variables import substitute

__all__ = ["ConfigParameters", "ConfigValue", "ConfigArray"]

_MISSING = object()


_new_str = str.__new__


class ConfigValue(str):
    """A configuration value: a string converted on demand (CNTK's ConfigValue).

    ``path`` is the dotted key path (``mnistTrain.reader.file``), ``file``/``line`` where it was
    written; conversion errors name all three. ``quoted`` is true when the value was written in
    quotes (then ``as_array()`` does not split it).
    """

    # class defaults the parser's fast path (ConfigParameters._put) leaves unset
    quoted = False
    _path: "str | None" = None

    def __new__(cls, text: str, *, file: str | None = None, line: int | None = None,
                quoted: bool = False, scope: "ConfigParameters | None" = None,
                key: str | None = None, path: str | None = None) -> "ConfigValue":
        self = super().__new__(cls, text)
        self.file, self.line, self.quoted = file, line, quoted
        self._scope, self._key, self._path = scope, key, path
        return self

    # -- provenance -------------------------------------------------------------------------
    @property
    def path(self) -> str | None:
        """The dotted key path of this value, when known."""
        if self._path is not None:
            return self._path
        if self._key is None:
            return None
        return join_path(self._scope.path if self._scope is not None else "", self._key)

    @property
    def scope(self) -> "ConfigParameters | None":
        """The parameter set this value belongs to (where name lookups for it start)."""
        return self._scope

    def _derive(self, text: str, *, quoted: bool | None = None, line: int | None = None,
                path: str | None = None) -> "ConfigValue":
        return ConfigValue(text, file=self.file, line=self.line if line is None else line,
                           quoted=self.quoted if quoted is None else quoted, scope=self._scope,
                           key=self._key, path=path if path is not None else self._path)

    def _error(self, message: str, hint: str | None = None) -> ConfigError:
        return ConfigError(message, path=self.path, file=self.file, line=self.line, hint=hint)

    # -- conversions ------------------------------------------------------------------------
    def as_str(self) -> str:
        """The value as a plain ``str``."""
        return str(self)

    def as_int(self) -> int:
        """The value as an integer (``[-]digits``; a float text that is integral is accepted):
        :func:`cntkio.values.to_int`."""
        return values.to_int(self, self.path, file=self.file, line=self.line)

    def as_float(self) -> float:
        """The value as a float (``[-]ddd.ddd[e[+-]ddd]``, ``1#INF``, ``inf``, ``nan``):
        :func:`cntkio.values.to_float`."""
        return values.to_float(self, self.path, file=self.file, line=self.line)

    def as_bool(self) -> bool:
        """The value as a boolean: T/True/1 or F/False/0 in any case, "" is false (as in CNTK);
        a bare flag name is true (the parser writes it ``true``): :func:`cntkio.values.to_bool`."""
        return values.to_bool(self, self.path, file=self.file, line=self.line)

    def as_array(self, separator: str | None = None) -> "ConfigArray":
        """The value as an array (CNTK's ConfigArray).

        Elements are separated by ``:`` (or ``separator``), or by the character right after an
        opening ``{``/``(`` (``{|a|b}``, ``(;x;y)``), and by line breaks inside brackets;
        ``v*N`` repeats ``v`` N times; empty elements are dropped. Elements that are parameter
        sets (``[..]``, ``{a=..}``) come back as :class:`ConfigParameters`, other elements as
        ConfigValue (a nested array stays a string until its own ``as_array()``). A quoted value
        is a one-element array.
        """
        if self.quoted:
            return ConfigArray([self], path=self.path)
        src = Text(str(self), file=self.file, first_line=self.line or 1, strip=False)
        s, e = strip_span(src.text, 0, len(src.text))
        sep = separator or ":"
        if s < e and is_group(src, s, e) and not is_dict_group(src, s, e):
            s, e, sep = group_body(src, s, e, sep)
        with parsing():  # one object per element: no collector passes while they are made
            return ConfigArray(self._elements(src, s, e, sep), path=self.path)

    def _elements(self, src: Text, start: int, end: int, sep: str) -> list:
        out: list = []
        base = self.path or "value"
        text = src.text
        for ts, te in split(src, start, end, sep + "\n"):
            ts, te = strip_span(text, ts, te)
            if ts == te:
                continue
            first = text[ts]
            if first not in OPEN and first != '"' and text.find("*", ts, te) < 0:
                # a plain element (most of a large array): no group, no quotes, no repeat
                out.append(self._derive(text[ts:te], quoted=False, line=src.line_of(ts), path=f"{base}[{len(out)}]"))
                continue
            repeat = 1
            star = find_top(src, ts, te, "*")   # the first '*' outside brackets
            if star > ts:
                _, count = values.split_repeat(src.text[ts:te], self.path, star=star - ts,
                                               file=self.file, line=src.line_of(ts))
                if count is not None:
                    repeat = count
                    ts, te = strip_span(src.text, ts, star)
            line = src.line_of(ts)
            for _ in range(repeat):
                idx = len(out)
                path = f"{base}[{idx}]"
                if is_group(src, ts, te) and is_dict_group(src, ts, te):
                    body, body_end, bsep = group_body(src, ts, te, ";")
                    params = ConfigParameters(f"{self._key or 'value'}[{idx}]", self._scope,
                                              file=self.file, line=line)
                    parse_body(src, body, body_end, bsep, params, None)
                    out.append(params)
                elif is_quoted(src, ts, te):
                    out.append(self._derive(src.text[ts + 1:te - 1], quoted=True, line=line, path=path))
                else:
                    out.append(self._derive(src.text[ts:te], quoted=False, line=line, path=path))
        return out

    def as_params(self) -> "ConfigParameters":
        """The value read as a parameter set (``[a=1;b=2]``, ``{a=1}`` or ``a=1;b=2``)."""
        src = Text(str(self), file=self.file, first_line=self.line or 1, strip=False)
        s, e = strip_span(src.text, 0, len(src.text))
        sep = ";"
        if s < e and is_group(src, s, e):
            s, e, sep = group_body(src, s, e, sep)
        params = ConfigParameters(self._key or "value", self._scope, file=self.file, line=self.line)
        try:
            parse_body(src, s, e, sep, params, None)
        except ConfigError as err:
            raise self._error(f"expected a parameter set: {err.reason}", err.hint) from err
        return params

    def is_array_literal(self) -> bool:
        """True when the text is written as an array: a ``{..}``/``(..)`` group that is not a
        parameter set, a ``[..]`` group of bracket groups (``[ [..]:[..] ]``), or
        ``:``-separated elements of which one is bracketed or quoted."""
        if self.quoted:
            return False
        src = Text(str(self), strip=False)
        s, e = strip_span(src.text, 0, len(src.text))
        if s == e:
            return False
        try:
            if is_group(src, s, e):
                return not is_dict_group(src, s, e)
            pieces = [strip_span(src.text, a, b) for a, b in split(src, s, e, ":")]
        except ConfigError:
            return False
        pieces = [(a, b) for a, b in pieces if a < b]
        if len(pieces) < 2:
            return False
        return any(src.text[a] in OPEN or src.text[a] == '"' for a, b in pieces)

    def __reduce__(self):
        # pickles and copies keep the text and provenance, not the tree around the value
        return (_rebuild_value, (str(self), self.file, self.line, self.quoted, self.path))


def _rebuild_value(text, file, line, quoted, path) -> ConfigValue:
    return ConfigValue(text, file=file, line=line, quoted=quoted, path=path)


class ConfigParameters(ParameterSet):
    """One parameter set of a CNTK configuration (CNTK's ConfigParameters).

    ``cfg(name)`` returns the value of ``name`` in this set or, failing that, in the nearest
    parent set that has it (a ConfigValue, or a ConfigParameters for a nested set);
    ``cfg(name, default)`` returns ``default`` (as a ConfigValue when it is a plain value) when
    no set has it. Names are case-insensitive. ``a.b.c`` looks ``a`` up and then descends.
    """

    def __init__(self, name: str = "", parent: "ConfigParameters | None" = None, *,
                 file: str | None = None, line: int | None = None) -> None:
        self._name = name
        self._parent = parent
        self.file = file
        self.line = line
        self._entries: dict[str, list] = {}
        self._origin: ConfigParameters | None = None   # the set this one was copied from
        # _used, the lower-case names a consumer looked up (config/usage.py): made when first needed

    @classmethod
    def from_dict(cls, tree: dict, name: str = "") -> "ConfigParameters":
        """A configuration built from a plain tree (dicts, lists, strings, numbers, bools), the
        inverse of :meth:`to_dict`; strings are taken as values, not as configuration text."""
        root = cls(name, None, file="<dict>")
        for key, value in tree.items():
            root.insert(str(key), format_value(value) if isinstance(value, str) else value)
        return root

    # -- structure --------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """This set's name in its parent ('' for the root)."""
        return self._name

    @property
    def parent(self) -> "ConfigParameters | None":
        """The enclosing parameter set (None for the root)."""
        return self._parent

    @property
    def root(self) -> "ConfigParameters":
        """The outermost parameter set."""
        node = self
        while node._parent is not None:
            node = node._parent
        return node

    @property
    def path(self) -> str:
        """The dotted key path of this set ('' for the root)."""
        if self._parent is None:
            return self._name
        return join_path(self._parent.path, self._name)

    def _set(self, name: str, value) -> None:
        key = name.lower()
        entry = self._entries.get(key)
        if isinstance(value, ConfigParameters):
            value._parent, value._name = self, (entry[0] if entry else name)
        else:
            value._scope, value._key, value._path = self, (entry[0] if entry else name), None
        if entry is None:
            self._entries[key] = [name, value]
        else:
            entry[1] = value

    def keys(self) -> list[str]:
        """The names defined in this set (not its parents), as first written."""
        return [e[0] for e in self._entries.values()]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.exists_current(name)

    def items(self) -> list[tuple[str, Any]]:
        """(name, resolved value) pairs of this set."""
        return [(e[0], self._resolved(self, k, ())) for k, e in self._entries.items()]

    def __repr__(self) -> str:
        return f"ConfigParameters({self.path or '<root>'!s}, keys={self.keys()!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ConfigParameters):
            return self.to_dict() == other.to_dict()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_origin", None)     # a copy pickles without the tree it was copied from
        return state

    def __setstate__(self, state: dict) -> None:
        # after unpickling, values find their set again (for lookups of $var$ and array elements)
        self.__dict__.update(state)
        for name, value in self._entries.values():
            if isinstance(value, ConfigValue):
                value._scope, value._key, value._path = self, name, None

    # -- lookup -----------------------------------------------------------------------------
    def _find(self, name: str, skip: "tuple[ConfigParameters, str] | None" = None):
        """(owner, key) of ``name`` searched from here up to the root, or None."""
        parts = name.split(".")
        first = parts[0].lower()
        self.note_asked(name)
        node: ConfigParameters | None = self
        owner = None
        while node is not None:
            if first in node._entries and not (skip is not None and skip[0] is node and skip[1] == first):
                owner = node
                break
            node = node._parent
        if owner is None:
            if len(parts) == 1:     # looked up through every enclosing set, up to the root: not there
                self.root.__dict__.setdefault("_missed_names", {}).setdefault(first, parts[0])
            return None
        key = first
        owner.mark_used(key)
        for part in parts[1:]:
            value = owner._entries[key][1]
            if not isinstance(value, ConfigParameters):
                return None
            owner, key = value, part.lower()
            if key not in owner._entries:
                return None
            owner.mark_used(key)
        return owner, key

    # -- which keys were read (cntkio.config.usage reports the others) ---------------------------
    def mark_used(self, name: str) -> None:
        """Record that a consumer read ``name`` of this set (and of the set it was copied from)."""
        key = name.lower()
        node: ConfigParameters | None = self
        while node is not None:
            used = node.__dict__.setdefault("_used", set())
            used.add(key)
            node = node.__dict__.get("_origin")

    def mark_all_used(self) -> None:
        """Record every name of this set and of the sets in it as read (a consumer that takes a
        whole section as it is written: NDL macros, a third-party format's options)."""
        for key, (_, value) in self._entries.items():
            self.mark_used(key)
            if isinstance(value, ConfigParameters):
                value.mark_all_used()

    def is_used(self, name: str) -> bool:
        """Whether a consumer read ``name`` of this set."""
        return name.lower() in self.__dict__.get("_used", ())

    def note_asked(self, name: str) -> None:
        """Record that a consumer looked ``name`` up (:meth:`asked_names`: misspelt keys' hints)."""
        root = self.root
        root.__dict__.setdefault("_asked_names", {}).setdefault(name.split(".")[-1].lower(),
                                                                name.split(".")[-1])

    def missed_names(self) -> list[str]:
        """Names looked up up to the root and found nowhere (a default was used)."""
        return list(self.root.__dict__.get("_missed_names", {}).values())

    def asked_names(self) -> list[str]:
        """Names consumers looked up anywhere in this configuration, found or not."""
        return list(self.root.__dict__.get("_asked_names", {}).values())

    def _visible_names(self) -> list[str]:
        names: list[str] = []
        node: ConfigParameters | None = self
        while node is not None:
            names.extend(node.keys())
            node = node._parent
        return names

    def _not_found(self, name: str) -> ConfigError:
        parts = name.split(".")
        # descend as far as the path exists, to suggest a name at the right level
        scope: ConfigParameters = self
        found = self._find(parts[0])
        candidates = self._visible_names()
        if found is not None and len(parts) > 1:
            owner, key = found
            node = owner._entries[key][1]
            for part in parts[1:]:
                if not isinstance(node, ConfigParameters):
                    break
                if part.lower() not in node._entries:
                    scope, candidates = node, node.keys()
                    name = part
                    break
                node = node._entries[part.lower()][1]
        guess = closest(name.split(".")[-1], candidates)
        hint = f"did you mean {guess!r}?" if guess else None
        where = scope.path or "the root"
        return ConfigError(f"required parameter {name!r} not found in {where} or its parent sections",
                           path=join_path(scope.path, name), file=scope.file or self.root.file,
                           line=scope.line, hint=hint)

    def __call__(self, name: str, default: Any = _MISSING):
        """The value of ``name`` (searching parent sets), or ``default`` when absent."""
        found = self._find(name)
        if found is None:
            if default is _MISSING:
                raise self._not_found(name)
            return self._wrap_default(name, default)
        owner, key = found
        stored = owner._entries[key][1]
        if isinstance(stored, ConfigValue) and stored == "default":
            # CNTK: the value "default" stands for the consumer's default value
            if default is _MISSING:
                value = owner._entries[key][1]
                raise ConfigError(f"parameter {name!r} is 'default' and no default value is known here",
                                  path=value.path, file=value.file, line=value.line,
                                  hint="give an explicit value")
            return self._wrap_default(name, default)
        return self._resolved(owner, key, ())

    def get(self, name: str, default: Any = None) -> Any:
        """Like ``cfg(name, default)`` with ``default=None``."""
        return self(name, default)

    def __getitem__(self, name: str):
        return self(name)

    def _wrap_default(self, name: str, default: Any):
        if default is None or isinstance(default, (ConfigParameters, ConfigValue)):
            return default
        if isinstance(default, dict):
            p = ConfigParameters(name, self)
            for k, v in default.items():
                p.insert(k, v)
            return p
        if isinstance(default, bool):
            text = "true" if default else "false"
        elif isinstance(default, (list, tuple)):
            text = format_value(list(default))
        else:
            text = str(default)
        return ConfigValue(text, scope=self, key=name)

    def exists(self, name: str) -> bool:
        """True when ``name`` is defined in this set or a parent set (CNTK's Exists)."""
        return self._find(name) is not None

    def exists_current(self, name: str) -> bool:
        """True when ``name`` is defined in this set itself (CNTK's ExistsCurrent)."""
        parts = name.split(".")
        node: Any = self
        for part in parts:
            if not isinstance(node, ConfigParameters) or part.lower() not in node._entries:
                return False
            node.mark_used(part)
            node = node._entries[part.lower()][1]
        return True

    # -- variables --------------------------------------------------------------------------
    def _resolved(self, owner: "ConfigParameters", key: str, stack: tuple):
        """The value of ``owner``'s entry ``key`` with ``$var$`` references replaced."""
        name, value = owner._entries[key]
        if isinstance(value, ConfigParameters) or "$" not in value:
            return value
        marker = (id(owner), key)
        if marker in stack:
            raise ConfigError("circular $variable$ reference", path=join_path(owner.path, name),
                              file=value.file, line=value.line,
                              hint="a variable's value refers back to itself")
        return substitute(value, owner, key, stack + (marker,))

    def resolve(self, text: str, name: str = "value") -> str:
        """``text`` with every ``$var$`` replaced by its value as seen from this set."""
        v = ConfigValue(text, scope=self, key=name)
        out = substitute(v, self, name.lower(), ((id(self), "\0"),), self_skip=False)
        if isinstance(out, ConfigParameters):
            return "[\n" + dump(out, indent=1) + "]"
        return str(out)

    # -- modification -----------------------------------------------------------------------
    def insert(self, name: str, value: Any = _MISSING) -> None:
        """Set ``name`` to ``value`` in this set (CNTK's Insert).

        An existing value is replaced, except that a parameter set (a ConfigParameters, a dict,
        or text in ``[...]``) merges into an existing set. A ``str`` is read as configuration
        text (``"[file=x]"``, ``"a:b"``, ``'"quoted"'``); dicts and lists become sets and arrays.
        With one argument, ``name`` is ``"name=value"`` text.
        """
        if value is _MISSING:
            parse_text_into(name, self, ParseContext(), file="<insert>")
            return
        if isinstance(value, ConfigParameters):
            value = value.copy()
        elif isinstance(value, ConfigValue):
            value = value._derive(str(value), path=None)
            value._path = None
        else:
            if isinstance(value, str):
                text = value
            else:
                text = format_value(value)
            src = Text(text, file="<insert>", strip=False)
            value = make_value(src, 0, len(src.text), None, name.split(".")[-1], self)
        self._assign(name, value)

    def remove(self, name: str) -> None:
        """Delete ``name`` from this set (not from parents); absent names are ignored."""
        self._entries.pop(name.lower(), None)

    # the parser builds the tree through these (see cntkio.config.parser)
    def _new_set(self, name: str, *, file: str | None, line: int | None) -> "ConfigParameters":
        return ConfigParameters(name, None, file=file, line=line)

    def _new_value(self, text: str, *, file: str | None, line: int | None, quoted: bool) -> ConfigValue:
        return ConfigValue(text, file=file, line=line, quoted=quoted)

    def _put(self, name: str, text: str, file: str | None, line: int, quoted: bool) -> None:
        """The parser's fast path: ``name`` (one plain name, not ``include``) set to a new value of
        ``text``, as ``_assign(name, _new_value(...))`` does (a value replaces a set)."""
        key = name.lower()
        entry = self._entries.get(key)
        value = _new_str(ConfigValue, text)
        value.file, value.line, value._scope = file, line, self
        if quoted:
            value.quoted = True
        if entry is None:
            value._key = name
            self._entries[key] = [name, value]
        else:
            value._key = entry[0]
            entry[1] = value

    def _put_items(self, items, file: str | None, line: int) -> None:
        """``_put`` of every ``(name, quoted text, word)`` (a plain name, not ``include``; the word
        when not empty, else the quoted text), all at ``line``: the parser's one-line sets."""
        entries = self._entries
        for name, quoted, word in items:
            if word:
                value = _new_str(ConfigValue, word)
            else:
                value = _new_str(ConfigValue, quoted)
                value.quoted = True
            value.file, value.line, value._scope = file, line, self
            key = name.lower()
            entry = entries.get(key)
            if entry is None:
                value._key = name
                entries[key] = [name, value]
            else:
                value._key = entry[0]
                entry[1] = value

    def _assign(self, name: str, value) -> None:
        """Set ``name`` to ``value`` (a node), merging parameter sets (CNTK's Insert); a dotted
        ``name`` walks (and creates) the sets on the way."""
        if "." not in name and name.lower() != "include":  # the common case: one plain name
            entry = self._entries.get(name.lower())
            if entry is not None and isinstance(entry[1], ConfigParameters) and isinstance(value, ConfigParameters):
                for sub_name, sub_value in list(value._entries.values()):
                    entry[1]._assign(sub_name, sub_value)
                return
            self._set(name, value)
            return
        parts = name.split(".")
        if "include" in name.lower() and any(p.lower() == "include" for p in parts):
            raise ConfigError("'include' is reserved: include=file pastes a configuration file",
                              path=join_path(self.path, name), file=value.file, line=value.line,
                              hint="use another name")
        target = self
        for part in parts[:-1]:
            entry = target._entries.get(part.lower())
            if entry is None or not isinstance(entry[1], ConfigParameters):
                child = ConfigParameters(part, None, file=value.file, line=value.line)
                target._set(part, child)
                target = child
            else:
                target = entry[1]
        entry = target._entries.get(parts[-1].lower())
        if entry is not None and isinstance(entry[1], ConfigParameters) and isinstance(value, ConfigParameters):
            for sub_name, sub_value in list(value._entries.values()):
                entry[1]._assign(sub_name, sub_value)
            return
        target._set(parts[-1], value)

    def copy(self, name: str | None = None, parent: "ConfigParameters | None" = None) -> "ConfigParameters":
        """A deep copy (values keep their provenance), detached or under ``parent``."""
        out = ConfigParameters(self._name if name is None else name, parent, file=self.file, line=self.line)
        out._origin = self
        for ename, value in self._entries.values():
            if isinstance(value, ConfigParameters):
                out._entries[ename.lower()] = [ename, value.copy(ename, out)]
            else:
                v = ConfigValue(str(value), file=value.file, line=value.line, quoted=value.quoted,
                                scope=out, key=ename)
                out._entries[ename.lower()] = [ename, v]
        return out

    # -- conversions ------------------------------------------------------------------------
    def as_params(self) -> "ConfigParameters":
        """This set itself (so that consumers can call ``cfg(x).as_params()`` on any value)."""
        return self

    def as_array(self, separator: str | None = None) -> ConfigArray:
        """A one-element array holding this set (a single ``[..]`` where an array is expected)."""
        return ConfigArray([self], path=self.path)

    def _type_error(self, what: str) -> ConfigError:
        return ConfigError(f"expected {what}, found a parameter set", path=self.path, file=self.file,
                           line=self.line)

    def as_int(self) -> int:
        """Always an error: a parameter set is not an integer."""
        raise self._type_error("an integer")

    def as_float(self) -> float:
        """Always an error: a parameter set is not a float."""
        raise self._type_error("a floating-point number")

    def as_bool(self) -> bool:
        """Always an error: a parameter set is not a boolean."""
        raise self._type_error("a boolean")

    def as_str(self) -> str:
        """Always an error: a parameter set is not a string."""
        raise self._type_error("a string")

    def to_dict(self) -> dict:
        """The resolved plain tree: dicts for sets, lists for array literals, strings otherwise.

        ``$var$`` references are replaced; values keep the spelling of their first definition's
        name. A value is a list only when written as an array (``(a:b)``, ``{|a|b}``,
        ``[..]:[..]``); plain ``a:b`` stays a string, since only its consumer knows whether it is
        an array (CNTK's lazy typing) — ``cfg(name).as_array()`` splits it.
        """
        return {name: _plain(self._resolved(self, key, ())) for key, (name, _) in self._entries.items()}

    def dump(self) -> str:
        """Configuration text that parses back to the same tree (after substitutions)."""
        return dump(self)


def _plain(value):
    if isinstance(value, ConfigParameters):
        return value.to_dict()
    if value.is_array_literal():
        return [_plain(v) for v in value.as_array()]
    return str(value)
