"""Build an NDL network: from text or a file (``build``), or from a config's
``NDLNetworkBuilder`` section (``build_from_config``).

Order, as CNTK: the ``ndlMacros`` files (``+``-separated), then the ``load`` sections, then the
macros defined at the top of the NDL file, then the ``run`` sections, evaluated as one script
(their statements share one scope, so a second run section can use the first's nodes).
"""
from __future__ import annotations

import os
from typing import Iterable

from ...config import ConfigParameters
from ...errors import ConfigError
from ...integrations.torch_backend import torch
from .evaluator import Evaluator, MacroLibrary
from .graph import Graph
from .network import NDLNetwork
from .parser import NDLError, parse_ndl
from .sources import NDLFile, config_statements, load_macro_file, load_macros, read_ndl_file
from .variables import Variables, config_variables, resolve_variables

__all__ = ["build", "build_graph", "build_from_config", "split_paths"]


def split_paths(value: str | Iterable[str] | None) -> list[str]:
    """``ndlMacros``: one path, a ``+``-separated list, or a Python list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [p.strip() for p in value.split("+") if p.strip()]
    return [str(p) for p in value]


def _names(v) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [p for p in v.replace(",", ":").split(":") if p.strip()]
    return [str(p) for p in v]


def _variables(v: Variables | dict | None) -> Variables | None:
    if isinstance(v, dict):
        table = {str(k).lower(): str(x) for k, x in v.items()}
        return lambda name: table.get(name.lower())
    return v


def build_graph(source: str | NDLFile, *, run: str | Iterable[str] | None = None,
                load: str | Iterable[str] | None = None, macros: str | Iterable[str] | None = None,
                library: MacroLibrary | None = None, variables: Variables | dict | None = None) -> Graph:
    """The :class:`Graph` of NDL ``source`` (a file path, NDL text, or a parsed file);
    ``variables`` (a dict, or ``name -> value or None``) replace ``$name$`` in the texts, as the
    config's variables do in CNTK."""
    lib = library if library is not None else MacroLibrary()
    look = _variables(variables)
    for path in split_paths(macros):
        load_macro_file(lib, path, variables=look)
    if isinstance(source, NDLFile):
        f = source
    elif "\n" not in source and os.path.isfile(source):
        f = read_ndl_file(source, variables=look)
    else:
        text = resolve_variables(source, look, "<string>") if look is not None else source
        f = NDLFile(parse_ndl(text, file="<string>"), "<string>")
    loaded: list = []                 # the load sections' statements, run first (as CNTK's FileParse)
    for name in _names(load) or f.load:
        load_macros(lib, f.section(name), f"load section {name}", keep=loaded)
    for m in f.macros:
        lib.add(m)
    run_names = _names(run) or f.run
    outer = None
    if run_names:
        statements = loaded + [st for n in run_names for st in f.section(n)]
        outer = f.loose               # the file's top-level variables, seen by its sections
    else:
        if f.sections and not f.loose:
            raise NDLError(f"{f.file}: which section to run? (sections: {', '.join(s.name for s in f.sections.values())})",
                           hint="give run=<section> (in the file or the NDLNetworkBuilder)")
        statements = loaded + f.loose
    ev = Evaluator(macros=lib)
    ev.run(statements, outer=outer)
    return ev.graph


def build(source: str, *, run: str | Iterable[str] | None = None, load: str | Iterable[str] | None = None,
          macros: str | Iterable[str] | None = None, dtype: torch.dtype = torch.float32,
          seed_offset: int = 0, device: torch.device | str | None = None,
          variables: Variables | dict | None = None) -> NDLNetwork:
    """An NDL network as a ``torch.nn.Module``: ``source`` is NDL text or the path of an NDL file;
    ``run``/``load`` name its sections (``"a:b"`` or a list; they override the file's own),
    ``macros`` are macro files (CNTK's ``ndlMacros``), ``variables`` replace ``$name$``."""
    base = os.path.dirname(os.path.abspath(source)) if "\n" not in source and os.path.isfile(source) else None
    net = NDLNetwork(build_graph(source, run=run, load=load, macros=macros, variables=variables), dtype,
                     seed_offset=seed_offset, base_dir=base)
    return net.to(device) if device is not None else net


def build_from_config(builder: ConfigParameters, *, dtype: torch.dtype = torch.float32) -> NDLNetwork:
    """The network of an ``NDLNetworkBuilder`` section: ``networkDescription`` (a file) with
    ``run``/``load`` overriding the file's, or inline sections named by ``run``/``load`` found
    where a config lookup from the builder finds them; ``ndlMacros`` at any level above."""
    path = builder.path or "NDLNetworkBuilder"

    def get(key):
        return str(builder(key)) if builder.exists(key) else None
    lib = MacroLibrary()
    variables = config_variables(builder)       # $name$ in the files: NDLNetworkBuilder.h:498, 536
    for p in split_paths(get("ndlMacros")):
        load_macro_file(lib, p, where=f"{path}.ndlMacros", variables=variables)
    run, load = _names(get("run")), _names(get("load"))
    seed = int(builder("randomSeedOffset").as_int()) if builder.exists("randomSeedOffset") else 0
    desc = get("networkDescription")
    if desc:
        f = read_ndl_file(desc, what="networkDescription file", where=f"{path}.networkDescription",
                          variables=variables)
        graph = build_graph(f, run=run or None, load=load or None, library=lib)
        return NDLNetwork(graph, dtype, seed_offset=seed, base_dir=os.path.dirname(os.path.abspath(desc)))
    if not run:
        raise ConfigError("NDLNetworkBuilder needs networkDescription=<file> or run=<section>", path=path,
                          hint="e.g. run=ndlMacroUse naming a section of NDL statements")
    loaded: list = []
    for name in load:
        load_macros(lib, config_statements(_section(builder, name, path)), f"load section {name}", keep=loaded)
    statements = loaded + [st for name in run for st in config_statements(_section(builder, name, path))]
    ev = Evaluator(macros=lib)
    ev.run(statements)
    return NDLNetwork(ev.graph, dtype, seed_offset=seed)


def _section(builder: ConfigParameters, name: str, path: str) -> ConfigParameters:
    if not builder.exists(name):
        raise ConfigError(f"section {name!r} (named by run/load) is not found", path=path,
                          hint="it must be a section at the same level as the command or above")
    sec = builder(name)
    if not isinstance(sec, ConfigParameters):
        raise ConfigError(f"{name} is a value, not a section of NDL statements [ ... ]", path=f"{path}.{name}")
    return sec
