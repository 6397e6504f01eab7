"""The package's shape (docs/architecture.md, "Rules the imports follow"), read from its source."""
import ast
import re

import pytest

import paths

PKG = paths.SRC / "cntkio"
#: the layers that stand on the core and may import the optional integrations at module level
TOP = ("cntkio.actions", "cntkio.networks", "cntkio.cli", "cntkio.__main__", "cntkio.integrations")
#: the base every other part speaks; it imports nothing of cntkio above it
BASE = ("cntkio.streams", "cntkio.errors", "cntkio.constants", "cntkio.values",
        "cntkio.deserializers.protocol")
MAX_LINES = 650  # "no module over ~600 lines", with a margin
#: the one module outside the engine that builds it (and talks to it through engine.reader.Reader)
ENGINE_BUILDER = "cntkio.source"
#: the integrations the core may call (lazily): torch and NumPy only, no cntkio module above them
LEAVES = ("cntkio.integrations.tensors", "cntkio.integrations.torch_backend")


def _modules():
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(paths.SRC).with_suffix("")
        name = ".".join(rel.parts)
        out[name[:-9] if name.endswith(".__init__") else name] = p
    return out


MODULES = _modules()


def _imports(name, path):
    """``[(target module, at module level)]`` of the cntkio modules ``name`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    top_ids = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.If, ast.Try)):
            top_ids.update(id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            stems = [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            base = name if is_pkg else name.rsplit(".", 1)[0]
            for _ in range(max(0, n.level - 1)):
                base = base.rsplit(".", 1)[0]
            stem = (base + ("." + n.module if n.module else "")) if n.level else (n.module or "")
            stems = [stem] + [f"{stem}.{a.name}" for a in n.names]
        else:
            continue
        for t in stems:
            if t in MODULES and t != name and not t.startswith(name + "."):
                out.append((t, id(n) in top_ids))
    return out


IMPORTS = {m: _imports(m, p) for m, p in MODULES.items()}


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))
    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_walker_finds_modules_and_imports():
    # the checks below are only as good as the import graph: it must see what is there
    assert "cntkio.engine.reader" in MODULES and "cntkio.source" in MODULES
    assert ("cntkio.engine.reader", True) in IMPORTS["cntkio.source"]
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_no_import_cycles_at_module_level_or_through_function_level_imports():
    # every import counts, the lazy ones (function level) too
    graph = {m: {t for t, _ in imps} for m, imps in IMPORTS.items()}
    assert _cycles(graph) == []


def test_the_core_reaches_torch_through_the_tensor_leaf_only():
    # MinibatchData.to_torch imports integrations.tensors lazily: a leaf, so no circle can close
    bad = [(m, t) for m, imps in IMPORTS.items() if not m.startswith(TOP) for t, _ in imps
           if t.startswith("cntkio.integrations") and t not in LEAVES]
    assert bad == []
    assert [t for t, _ in IMPORTS["cntkio.integrations.tensors"]] == ["cntkio.integrations.torch_backend"]
    assert IMPORTS["cntkio.integrations.torch_backend"] == []


def test_only_the_engine_and_the_source_import_the_engine():
    bad = [(m, t) for m, imps in IMPORTS.items() if not m.startswith("cntkio.engine") and m != ENGINE_BUILDER
           for t, _ in imps if t.startswith("cntkio.engine")]
    assert bad == []


def _package(module: str) -> str:
    """``cntkio.<sub>`` for a module of a subpackage, ``cntkio`` for a top-level module."""
    parts = module.split(".")
    return "cntkio." + parts[1] if len(parts) > 1 and (PKG / parts[1]).is_dir() else "cntkio"


def _private_names(tree) -> set:
    """The private names a module defines: functions, classes, assigned names and attributes,
    ``__slots__`` entries."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            out.add(n.attr)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, ast.Assign) and any(isinstance(x, ast.Name) and x.id == "__slots__" for x in n.targets):
            out.update(c.value for c in ast.walk(n.value) if isinstance(c, ast.Constant) and isinstance(c.value, str))
    return {name for name in out if name.startswith("_") and not name.startswith("__")}


TREES = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in MODULES.items()}


def _private_reads():
    """``(module, line, text)`` of every read of ``x._name`` (``x`` not ``self``/``cls``) where
    ``_name`` is private to another cntkio package: defined there and nowhere in the reader's."""
    defined: dict = {}
    for m, tree in TREES.items():
        defined.setdefault(_package(m), set()).update(_private_names(tree))
    anywhere = set().union(*defined.values())
    out = []
    for m, tree in TREES.items():
        own = defined[_package(m)]
        for n in ast.walk(tree):
            if isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__") \
                    and not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")) \
                    and n.attr in anywhere and n.attr not in own:
                out.append((m, n.lineno, ast.unparse(n)))
    return out


def test_the_private_reads_check_finds_what_it_must():
    # the rule below is only as good as its walker: a read of another package's private name is seen
    tree = ast.parse("def f(source, registry):\n    return source._reader, registry._READERS, self._own\n")
    assert _private_names(ast.parse("class _A:\n    __slots__ = ('_x',)\n_y = 1\n")) == {"_A", "_x", "_y"}
    names = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Attribute)]
    assert {"source._reader", "registry._READERS"} <= set(names)
    assert "_reader" in _private_names(TREES["cntkio.source"]) and "_READERS" in _private_names(TREES["cntkio.registry"])


def test_no_module_outside_the_engine_reads_a_private_attribute_of_another_package():
    # the engine builds the core's objects on its hot paths (MinibatchData._packed): it may
    assert [r for r in _private_reads() if _package(r[0]) != "cntkio.engine"] == []


def test_sources_are_not_probed_with_hasattr_or_getattr():
    # what a source can do is declared (cntkio.source_protocol), never probed
    bad = []
    for m, tree in TREES.items():
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("hasattr", "getattr") \
                    and n.args and "source" in ast.unparse(n.args[0]).lower():
                bad.append((m, n.lineno, ast.unparse(n)))
    assert bad == []


def test_the_core_never_imports_the_integrations_at_module_level():
    bad = [(m, t) for m, imps in IMPORTS.items() for t, top in imps
           if top and t.startswith("cntkio.integrations") and not m.startswith(TOP)]
    assert bad == []


@pytest.mark.parametrize("base", BASE)
def test_the_base_imports_only_the_base(base):
    assert [t for t, _ in IMPORTS[base] if not t.startswith(BASE)] == []


def test_the_engine_knows_the_protocol_not_the_formats():
    # the protocol, and the implementers' base class (the composite is a deserializer too)
    allowed = ("cntkio.deserializers.protocol", "cntkio.deserializers.base")
    bad = [(m, t) for m, imps in IMPORTS.items() if m.startswith("cntkio.engine")
           for t, _ in imps if t.startswith("cntkio.deserializers") and t not in allowed]
    assert bad == []


def test_the_network_languages_stand_on_the_config_language_and_torch_only():
    # networks/ (NDL, BrainScript, MEL, the node library, the model files) is a library of its own:
    # the actions use it, it knows no action, reader, engine or format
    above = ("cntkio.actions", "cntkio.readers", "cntkio.engine", "cntkio.deserializers", "cntkio.source",
             "cntkio.cli", "cntkio.transforms")
    bad = [(m, t) for m, imps in IMPORTS.items() if m.startswith("cntkio.networks")
           for t, _ in imps if t.startswith(above)]
    assert bad == []
    assert "cntkio.networks.ndl.parser" in MODULES and "cntkio.actions.models" not in MODULES


def test_torch_is_imported_in_one_place():
    pattern = re.compile(r"^\s*(import torch\b|from torch\b)", re.M)
    importers = sorted(m for m, p in MODULES.items() if pattern.search(p.read_text(encoding="utf-8")))
    assert importers == ["cntkio.integrations.torch_backend"]


def test_no_module_over_the_size_limit():
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in MODULES.items()}
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}


def test_the_source_talks_to_the_reader_interface_only():
    text = (PKG / "source.py").read_text(encoding="utf-8")
    assert re.findall(r"_reader\._\w+", text) == []      # no private fields of the reader
    assert re.findall(r"hasattr\(self\._\w+", text) == []  # no dispatch on what the reader has
    assert re.findall(r"getattr\(self\._reader", text) == []
