"""The error rule's mechanical half (issue 30): an ``except`` that turns an error into another
keeps it as ``__cause__`` (``raise ... from e``), everywhere in the package; and an error met
while writing a file names that file."""
from __future__ import annotations

import ast
import errno
import pathlib

import pytest

import cntkio
from cntkio.errors import raise_naming_output

PACKAGE = pathlib.Path(cntkio.__file__).parent


def _raises_losing_the_cause(tree: ast.AST) -> list[int]:
    """Lines of ``raise X`` inside an ``except`` block (not in a nested function) with no
    ``from`` or with ``from None``; re-raising the caught error itself is fine."""
    out = []
    for h in ast.walk(tree):
        if not isinstance(h, ast.ExceptHandler):
            continue
        todo = list(h.body)
        while todo:
            n = todo.pop()
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ExceptHandler)):
                continue
            if isinstance(n, ast.Raise) and n.exc is not None:
                reraise = isinstance(n.exc, ast.Name) and n.exc.id == h.name
                no_cause = n.cause is None or (isinstance(n.cause, ast.Constant) and n.cause.value is None)
                if not reraise and no_cause:
                    out.append(n.lineno)
            todo.extend(ast.iter_child_nodes(n))
    return out


def test_every_translated_exception_keeps_its_cause():
    found = []
    for p in sorted(PACKAGE.rglob("*.py")):
        for line in _raises_losing_the_cause(ast.parse(p.read_text(encoding="utf-8"))):
            found.append(f"{p.relative_to(PACKAGE.parent)}:{line}")
    assert not found, "raise inside except without 'from <the caught error>':\n" + "\n".join(found)


def test_the_audit_sees_what_it_looks_for():
    tree = ast.parse("try:\n    f()\nexcept KeyError:\n    raise ValueError('x') from None\n"
                     "try:\n    f()\nexcept KeyError as e:\n    raise ValueError('x')\n"
                     "try:\n    f()\nexcept KeyError as e:\n    raise ValueError('x') from e\n"
                     "try:\n    f()\nexcept KeyError as e:\n    raise e\n")
    assert sorted(_raises_losing_the_cause(tree)) == [4, 8]


def test_a_write_error_without_a_file_names_the_output(tmp_path):
    cause = OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(OSError) as e:
        raise_naming_output(cause, tmp_path / "out.cbf")
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(tmp_path / "out.cbf")
    assert str(e.value) == f"[Errno 28] No space left on device: '{tmp_path / 'out.cbf'}'"
    assert e.value.__cause__ is cause
    named = FileNotFoundError(errno.ENOENT, "No such file or directory", "in.ctf")
    with pytest.raises(FileNotFoundError) as e:          # an error that names its file is kept as it is
        raise_naming_output(named, "out.cbf")
    assert e.value is named
    other = OSError(errno.EIO, "Input/output error")
    with pytest.raises(OSError) as e:                   # any_errno=False: only a full disk, a size limit, a quota
        raise_naming_output(other, "out.cbf", any_errno=False)
    assert e.value is other
