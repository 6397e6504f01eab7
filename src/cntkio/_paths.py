"""What an error about a missing file says: the path once, and where a relative path is taken from.

What it must never do: print a path twice, or leave a user with a relative path guessing which
directory it was looked for in (the working directory, named).
"""
from __future__ import annotations

import errno
import os

__all__ = ["relative_note", "missing_file_text", "missing_file_error"]


def relative_note(path: str | os.PathLike) -> str:
    """``" (relative paths are taken from the working directory, /x)"`` for a relative ``path``;
    ``""`` for an absolute one."""
    if os.path.isabs(os.fspath(path)):
        return ""
    return f" (relative paths are taken from the working directory, {os.getcwd()})"


def missing_file_text(what: str, path: str | os.PathLike) -> str:
    """``"<what> <path> does not exist"`` with :func:`relative_note`: the path once."""
    return f"{what} {os.fspath(path)} does not exist{relative_note(path)}"


def missing_file_error(what: str, path: str | os.PathLike, detail: str = "") -> FileNotFoundError:
    """A FileNotFoundError (``errno`` ENOENT, ``filename`` the path) whose text names the path once:
    ``[Errno 2] <what> does not exist (<detail>; relative paths ...): '<path>'``."""
    note = relative_note(path)
    if detail:
        note = f" ({detail}; {note[2:-1]})" if note else f" ({detail})"
    return FileNotFoundError(errno.ENOENT, f"{what} does not exist{note}", os.fspath(path))
