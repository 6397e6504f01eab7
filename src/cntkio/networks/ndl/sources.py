"""Where NDL comes from: NDL files (``networkDescription``, ``ndlMacros``, ``LoadNDLSnippet``)
and sections of a config file (inline NDL named by ``run``/``load``).

An NDL file is read with the NDL parser (config-language lexing). A config section was already
parsed by the config loader (its ``$var$`` substituted); each of its entries is read back as one
NDL statement at the line it was written on, so both kinds of source go through the same
statement parser.
"""
from __future__ import annotations

import os
import re

from ...config import ConfigParameters
from ...config.parser import read_text
from ...errors import ConfigError
from .evaluator import MacroLibrary
from .parser import Assign, Block, ListExpr, Loc, MacroDef, NDLError, Ref, Str, parse_ndl, parse_span
from .variables import Variables, resolve_variables

__all__ = ["NDLFile", "read_ndl_file", "config_statements", "load_macros", "section_names"]


class NDLFile:
    """The statements of one NDL file: its sections (``name = [ ... ]``), its top-level macros,
    and its own ``run``/``load`` defaults."""

    def __init__(self, statements: list, file: str) -> None:
        self.file = file
        self.statements = statements
        self.sections: dict[str, Assign] = {}
        self.macros: list[MacroDef] = []
        self.run: list[str] = []
        self.load: list[str] = []
        self.loose: list = []
        for st in statements:
            if isinstance(st, MacroDef):
                self.macros.append(st)
            elif isinstance(st, Assign) and isinstance(st.expr, Block):
                self.sections[st.name.lower()] = st
            elif isinstance(st, Assign) and st.name.lower() in ("run", "load"):
                getattr(self, st.name.lower()).extend(section_names(st.expr))
            else:
                self.loose.append(st)

    def section(self, name: str, loc: Loc | None = None) -> list:
        st = self.sections.get(name.lower())
        if st is None:
            raise NDLError(f"{self.file} has no section {name!r} (sections: "
                           f"{', '.join(s.name for s in self.sections.values()) or 'none'})", loc)
        return st.expr.statements


def section_names(expr) -> list[str]:
    if isinstance(expr, (Ref, Str)):
        return [p for p in str(getattr(expr, "name", getattr(expr, "value", ""))).split(":") if p]
    if isinstance(expr, ListExpr):
        return [n for e in expr.items for n in section_names(e)]
    raise NDLError("run/load: expected section names (a:b)", getattr(expr, "loc", None))


def read_ndl_file(path: str, *, what: str = "NDL file", where: str | None = None,
                  variables: Variables | None = None) -> NDLFile:
    """Parse an NDL file (a located ConfigError when it is missing), its ``$name$`` replaced with
    ``variables`` first (CNTK's LoadConfigFileAndResolveVariables; ``ndl/variables.py``)."""
    if not os.path.isfile(path):
        raise ConfigError(f"{what} {path} does not exist", path=where)
    text = read_text(path)
    if variables is not None:
        text = resolve_variables(text, variables, path)
    return NDLFile(parse_ndl(text, file=path), path)


def config_statements(section: ConfigParameters) -> list:
    """The NDL statements of a config section, each at the file and line it was written on."""
    out = []
    lines: dict = {}
    for key, value in section.items():
        if isinstance(value, ConfigParameters):
            loc = Loc(value.file or "<config>", value.line or 0, 1)
            out.append(Assign(key, Block(config_statements(value), loc), loc))
            continue
        text = str(value)
        if getattr(value, "quoted", False):
            text = '"' + text + '"'
        stripped = text.lstrip()
        macro = stripped.startswith("(") and not _one_group(stripped)
        stmt = f"{key}{text}" if macro else f"{key}={text}"
        file, line = getattr(value, "file", None) or "<config>", getattr(value, "line", None) or 1
        stmt, col0 = _as_written(stmt, key, text, file, line, lines)
        out.extend(parse_span(stmt, file, line, col0))
    return out


def _as_written(stmt: str, key: str, text: str, file: str, line: int, cache: dict) -> tuple[str, int]:
    """The statement with its first line as written in the config file (so columns are the file's),
    and the column it starts at; the reconstruction itself when the file cannot be matched."""
    if file not in cache:
        try:
            cache[file] = read_text(file).splitlines() if os.path.isfile(file) else None
        except ConfigError:
            cache[file] = None
    rows = cache[file]
    if not rows or not 0 < line <= len(rows):
        return stmt, 1
    src = rows[line - 1]
    first = text.split("\n", 1)[0].strip()
    head = re.compile(rf"(?<![\w.]){re.escape(key)}\s*=?\s*", re.I)
    for m in head.finditer(src):              # "key = value" exactly, not a name that contains key
        if first and src.startswith(first, m.end()):
            return src[m.start():m.end()] + text.lstrip(), m.start() + 1
    return stmt, 1


def _one_group(text: str) -> bool:
    depth = 0
    for i, c in enumerate(text.rstrip()):
        depth += c == "("
        depth -= c == ")"
        if depth == 0:
            return i == len(text.rstrip()) - 1
    return False


def load_macros(library: MacroLibrary, statements: list, where: str, *, keep: list | None = None) -> None:
    """Register the macros of a loaded section. A macro file's section holds macro definitions only;
    with ``keep`` (a ``load`` section of the network's own file or config), its other statements are
    appended there: CNTK parses the load sections into the same script as the run sections, first
    (NetworkDescriptionLanguage.h:712-731, FileParse), so their variables and nodes are the network's
    (the Deprecated MNIST/CIFAR-10 NDL files' ``ndlMnistMacros``: imageW, features, labels, ...)."""
    for st in statements:
        if isinstance(st, MacroDef):
            library.add(st)
        elif isinstance(st, Assign) and isinstance(st.expr, Block) and keep is None:
            load_macros(library, st.expr.statements, where)
        elif keep is not None:
            keep.append(st)
        else:
            raise NDLError(f"{where}: a macro section holds macro definitions (Name(params) = ...), found "
                           f"the statement {getattr(st, 'name', '')!r}", st.loc)


def load_macro_file(library: MacroLibrary, path: str, where: str | None = None,
                    variables: Variables | None = None) -> None:
    """``ndlMacros``: the macros of a file (its ``load`` sections if it names them, else all),
    its ``$name$`` replaced with ``variables`` first."""
    f = read_ndl_file(path, what="ndlMacros file", where=where, variables=variables)
    for m in f.macros:
        library.add(m)
    names = f.load or list(f.sections)
    for n in names:
        load_macros(library, f.section(n), f"{path} section {n}")
