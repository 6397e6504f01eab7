"""``$name$`` in NDL and MEL files, replaced with the config's variables before the file is parsed,
as CNTK did; it never reads a file or knows NDL syntax (the text in, the text out).

CNTK loads the files of ``networkDescription``, ``ndlMacros`` (NDLNetworkBuilder) and ``editPath``
(edit) with ``ConfigParser::LoadConfigFileAndResolveVariables`` (Source/Common/Config.cpp:156),
which calls ``ConfigParameters::ResolveVariables`` (Source/Common/Include/Config.h:1126) on the
whole text, line by line:

* a line's comment is left out first (``StripComments``, Config.h:625: a line whose first
  non-blank character is ``#``, else from the first ``#`` if a blank or tab precedes it);
* ``$`` followed by a letter or ``_`` starts a name, which ends at the next ``$``; a ``$`` whose
  name would hit one of ``,/<>?;':"[]{}\\|!@#%^&*()+=~``, a blank or the end of the line first is
  left as it is (Config.h:1046-1110);
* the name is looked up as the config looks up a key: in the section CNTK resolves from (the
  NDLNetworkBuilder section for its files, ActionsLib/NDLNetworkBuilder.h:498 and 536; the edit
  command for its MEL script, ActionsLib/TrainActions.cpp:265), then its parents; its value has
  its own ``$var$`` resolved; an undefined name is an error, and so is a value of several lines.
  (CNTK read an edit command's ``ndlMacros`` and MEL's ``LoadNDLSnippet`` files as written,
  TrainActions.cpp:262 and CNTK/ModelEditLanguage.cpp:175; cntkio resolves the macro files too.)
"""
from __future__ import annotations

from typing import Callable

from .parser import Loc, NDLError

__all__ = ["resolve_variables", "config_variables", "Variables"]

#: ``name -> value`` (None when the config has no such variable)
Variables = Callable[[str], "str | None"]

_FORBIDDEN = set(",/<>?;':\"[]{}\\|!@#%^&*()+=~` \t\n")


def _code_end(line: str) -> int:
    """Where the code of ``line`` ends (CNTK's StripComments)."""
    i = len(line) - len(line.lstrip(" \t"))
    if i == len(line) or line[i] == "#":
        return i
    k = line.find("#", i)
    if k > 0 and line[k - 1] in " \t":
        return k
    return len(line)


def resolve_variables(text: str, variables: Variables, file: str, first_line: int = 1) -> str:
    """``text`` (an NDL or MEL file) with every ``$name$`` outside comments replaced by
    ``variables(name)``; lines and the columns before a replacement are kept. Errors name
    ``file``, the line and the column of the ``$``."""
    if "$" not in text:
        return text
    out = []
    for n, line in enumerate(text.split("\n")):
        end = _code_end(line)
        if "$" not in line[:end]:
            out.append(line)
            continue
        code, rest = line[:end], line[end:]
        pieces, i, start = [], 0, 0
        while True:
            i = code.find("$", i)
            if i < 0 or i + 1 >= len(code):
                break
            c = code[i + 1]
            if not (c.isalpha() or c == "_"):
                i += 1
                continue
            j = i + 1
            while j < len(code) and code[j] != "$" and code[j] not in _FORBIDDEN:
                j += 1
            if j >= len(code) or code[j] != "$":
                i += 1
                continue
            name = code[i + 1:j]
            loc = Loc(file, first_line + n, i + 1)
            try:
                value = variables(name)
            except LookupError as e:
                raise NDLError(f"${name}$: {e.args[0]}", loc) from e
            if value is None:
                raise NDLError(f"undefined variable ${name}$", loc,
                               hint=f"CNTK replaces $name$ in NDL and MEL files with the config's variables: "
                                    f"define {name} in the config (the builder's section, a parent or the command "
                                    f"line)")
            if "\n" in value:
                raise NDLError(f"${name}$: the variable's value has several lines (CNTK allows one line here)", loc)
            pieces.append(code[start:i])
            pieces.append(value)
            start = i = j + 1
        pieces.append(code[start:])
        out.append("".join(pieces) + rest)
    return "\n".join(out)


def config_variables(scope) -> Variables:
    """The variables seen from the config section ``scope`` (a ``ConfigParameters``): its own
    keys, then its parents', each value with its own ``$var$`` resolved (a section is a
    LookupError: not a value)."""
    def look(name: str) -> str | None:
        if scope is None or not scope.exists(name):
            return None
        v = scope(name)
        if hasattr(v, "keys"):
            raise LookupError(f"{name} is a config section [ ... ], not a value")
        return str(v)
    return look
