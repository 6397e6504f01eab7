"""The manual stands on its own: docs/, README.md and the docstrings the API reference renders
link nowhere outside the repository and name no machine paths or project-internal spec files;
every page is in the mkdocs navigation; the examples of the "coming from" pages run as written.

The mkdocs build itself (``mkdocs build --strict``, in .ci/run) checks anchors and renders the
docstrings; these checks need no mkdocs."""
import importlib
import inspect
import re
import warnings

import pytest

import paths

DOCS = paths.DOCS
PAGES = sorted(DOCS.rglob("*.md"))
README = [paths.REPO / "README.md", *sorted((paths.REPO / "examples").rglob("README*"))]

# Text that points out of the repository: the shared folder beside it, machine paths, the spec
# files the developers read (their facts are restated in docs/cntk-facts.md).
OUTSIDE = re.compile(
    r"\.\./shared|\bshared/(spec|bench|cntk27|conformance|tools|hooks)\b|/work/|/home/|/root/|/tmp/"
    r"|cntk-io-semantics|cntk-ctf-behaviours|cntk-readers-measured|configuration-files\.txt"
    r"|ctf-text-format-reader|composite-readers-deserializers-transforms|custom-deserializer\.txt"
    r"|user-minibatch-source\.txt|DESIGN\.md")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|<(https?://[^>]+)>|(?<![\w(<])(https?://\S+)")


def outside_mentions(text: str) -> list[str]:
    return [m.group(0) for m in OUTSIDE.finditer(text)]


def link_problems(path, text: str) -> list[str]:
    """Links that leave the repository (any URL, an absolute path, a path climbing out of it) or
    point at nothing."""
    problems = []
    for m in LINK.finditer(text):
        target = next(g for g in m.groups() if g)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
            problems.append(f"{target}: outside the repository")
            continue
        file_part = target.split("#", 1)[0]
        if not file_part:
            continue                      # an anchor on the same page (mkdocs checks it exists)
        resolved = (path.parent / file_part).resolve()
        if paths.REPO.resolve() not in resolved.parents:
            problems.append(f"{target}: outside the repository")
        elif not resolved.exists():
            problems.append(f"{target}: no such file")
    return problems


def outside_code(text: str) -> str:
    """The text without its fenced code blocks (where a line may start with '<')."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


@pytest.mark.parametrize("path", PAGES + README, ids=lambda p: str(p.relative_to(paths.REPO)))
def test_page_stays_inside_the_repository(path):
    text = path.read_text()
    assert outside_mentions(text) == [], f"{path.name} points outside the repository"
    assert link_problems(path, text) == [], f"{path.name} has links that leave the repository or break"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(paths.REPO)))
def test_no_line_starts_raw_html(path):
    # Markdown takes a line starting with '<tag' as a raw HTML block: the rest of the paragraph
    # (in Python-Markdown, often the rest of the page) disappears from the rendered manual.
    bad = [line for line in outside_code(path.read_text()).splitlines()
           if re.match(r"\s{0,3}</?[A-Za-z][\w-]*[\s>/]", line)]
    assert bad == []


def test_the_checks_catch_what_they_should(tmp_path):
    page = paths.DOCS / "x.md"
    assert outside_mentions("see `../shared/spec/cntk-io-semantics.md`, section 2") != []
    assert outside_mentions("run `python /work/main/bench/x.py`") == ["/work/"]
    assert outside_mentions("(cntk-readers-measured 1.3)") == ["cntk-readers-measured"]
    assert outside_mentions("the [guide](guide.md), `bench/peers/gen_data.py`") == []
    assert link_problems(page, "[a](https://example.org) and <http://x.y/z>") == [
        "https://example.org: outside the repository", "http://x.y/z: outside the repository"]
    assert link_problems(page, "[a](../../secrets.md) [b](guide.md) [c](nope.md#x) [d](#here)") == [
        "../../secrets.md: outside the repository", "nope.md#x: no such file"]
    assert link_problems(page, "[t](../tests/paths.py)") == []      # inside the repository


def test_every_page_is_in_the_navigation():
    nav = (paths.REPO / "mkdocs.yml").read_text().split("\nnav:", 1)[1]
    listed = set(re.findall(r":\s*(\S+\.md)\s*$", nav, flags=re.M))
    pages = {str(p.relative_to(DOCS)) for p in PAGES}
    assert pages - listed == set(), "pages missing from mkdocs.yml's nav"
    assert listed - pages == set(), "nav entries without a page"


def api_directives() -> list[tuple[str, list[str] | None]]:
    """(dotted name, members option) of every ``::: name`` in docs/api/*.md."""
    found = []
    for page in sorted((DOCS / "api").glob("*.md")):
        for m in re.finditer(r"^::: (\S+)\n((?:    .*\n)*)", page.read_text(), flags=re.M):
            members = re.search(r"members: \[([^\]]*)\]", m.group(2))
            found.append((m.group(1), [s.strip() for s in members.group(1).split(",")] if members else None))
    return found


def resolve(dotted: str):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def rendered_docstrings(obj, members=None) -> dict[str, str]:
    """The docstrings the API reference shows for ``obj``: its own and its public members'
    (a module's ``__all__`` or the directive's members; a class's methods and properties)."""
    out = {getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj))): inspect.getdoc(obj) or ""}
    if inspect.ismodule(obj):
        for name in members or getattr(obj, "__all__", []):
            out.update(rendered_docstrings(getattr(obj, name)))
    elif inspect.isclass(obj):
        for name, member in vars(obj).items():
            if not name.startswith("_") or name == "__init__":
                doc = inspect.getdoc(member) or ""
                out[f"{obj.__qualname__}.{name}"] = doc
    return out


def test_api_reference_covers_the_public_names():
    import cntkio
    documented = set()
    for dotted, members in api_directives():
        documented.add(dotted.rsplit(".", 1)[-1])
        obj = resolve(dotted)
        documented.update(members or (getattr(obj, "__all__", []) if inspect.ismodule(obj) else []))
    assert set(cntkio.__all__) - documented == set(), "cntkio names missing from docs/api"


def test_rendered_docstrings_stay_inside_the_repository():
    assert len(api_directives()) > 20
    bad = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dotted, members in api_directives():
            for where, doc in rendered_docstrings(resolve(dotted), members).items():
                if outside_mentions(doc):
                    bad[where] = outside_mentions(doc)
    assert bad == {}


@pytest.mark.parametrize("page", ["from-pytorch.md", "from-cntk.md", "index.md"])
def test_page_examples_run(page, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S)
    assert blocks
    monkeypatch.chdir(paths.REPO)          # the examples read the shipped examples/ data
    namespace = {"__name__": page}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, code in enumerate(blocks):
            exec(compile(code, f"docs/{page} block {i}", "exec"), namespace)


def test_package_ships_py_typed():
    # PEP 561: type checkers read cntkio's annotations only when the installed package has it
    assert (paths.SRC / "cntkio" / "py.typed").is_file()
    assert '"py.typed"' in (paths.REPO / "pyproject.toml").read_text().split("[tool.setuptools.package-data]")[1]


def public_callables():
    """(where, function) of every public function and method the API reference renders."""
    seen = {}
    for dotted, members in api_directives():
        obj = resolve(dotted)
        objs = [(dotted, obj)]
        if inspect.ismodule(obj):
            objs = [(f"{dotted}.{n}", getattr(obj, n)) for n in members or getattr(obj, "__all__", [])]
        for where, o in objs:
            if inspect.isclass(o):
                for name, member in vars(o).items():
                    if name.startswith("_") and name != "__init__":
                        continue
                    func = member.fget if isinstance(member, property) else member
                    func = getattr(func, "__func__", func)           # classmethod, staticmethod
                    if name == "__init__" and getattr(func, "__module__", "") == "typing":
                        continue                      # a Protocol's __init__, typing's own
                    if inspect.isfunction(func):
                        seen[f"{where}.{name}"] = func
            elif inspect.isfunction(o):
                seen[where] = o
    return seen


def missing_annotations(func) -> list[str]:
    sig = inspect.signature(func)
    missing = [name for i, (name, p) in enumerate(sig.parameters.items())
               if p.annotation is inspect.Parameter.empty and not (i == 0 and name in ("self", "cls"))]
    if sig.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def test_the_public_api_is_annotated():
    funcs = public_callables()
    assert len(funcs) > 100
    assert missing_annotations(lambda a, b=1: a) == ["a", "b", "return"]
    unannotated = {where: m for where, f in funcs.items() if (m := missing_annotations(f))}
    assert unannotated == {}


TEST_FILE = re.compile(r"(?<![\w/.])tests/[\w/-]+\.py")


@pytest.mark.parametrize("path", PAGES + README, ids=lambda p: str(p.relative_to(paths.REPO)))
def test_the_test_files_a_page_names_exist(path):
    """A page that cites a test names a file that is there (issue 31: six had moved)."""
    missing = [m for m in TEST_FILE.findall(path.read_text()) if not (paths.REPO / m).is_file()]
    assert missing == []
