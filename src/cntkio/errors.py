"""Errors raised by cntkio.

Every error says where (file, line, column, or config key path), what was expected and what
was found, so that a user can open the file at the right place and fix it.
"""
from __future__ import annotations

import errno
import os
from typing import NoReturn

__all__ = ["CntkioError", "FormatError", "ConfigError", "MaxErrorsExceeded", "DataError", "NotImplementedInCntkio",
           "RemoteError", "raise_naming_output"]


class CntkioError(Exception):
    """Base class of all cntkio errors."""


class FormatError(CntkioError, ValueError):
    """Malformed input data.

    Attributes name the place (``file``, ``line``, ``column``, 1-based; ``offset``, 0-based byte
    offset) and the problem (``expected``, ``found``). Any of them may be None when unknown.
    """

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 column: int | None = None, offset: int | None = None,
                 expected: str | None = None, found: str | None = None) -> None:
        self.file, self.line, self.column, self.offset = file, line, column, offset
        self.expected, self.found, self.reason = expected, found, message
        where = ""
        if file is not None:
            where = str(file)
            if line is not None:
                where += f":{line}"
                if column is not None:
                    where += f":{column}"
            where += ": "
        detail = message
        if expected is not None:
            detail += f" (expected {expected}"
            detail += f", found {found})" if found is not None else ")"
        super().__init__(where + detail)


class MaxErrorsExceeded(FormatError, RuntimeError):
    """More malformed inputs than ``maxErrors`` allows.

    The message starts with CNTK's own text ("Reached the maximum number of allowed errors while
    reading the input file (<name>)." for a deserializer's own budget, "Number of invalid sequences
    'N' in the input exceeded the specified maximum number 'M'" for the source's ``max_errors``) and
    then names the last error: its file, line or key, stream and cause.
    """


class DataError(FormatError, RuntimeError):
    """Inputs that cannot be delivered together as configured: no sequence key in common between
    the deserializers of a source, a primary deserializer with no sequences, samples of one stream
    with different shapes. The message holds CNTK's text and names the files, keys and streams
    involved.
    """


class ConfigError(CntkioError, ValueError):
    """A configuration value is missing, misspelt or of the wrong type.

    ``path`` is the dotted key path (``mnistTrain.reader.file``); ``file``/``line`` where the value
    was written, when known.
    """

    def __init__(self, message: str, *, path: str | None = None, file: str | None = None,
                 line: int | None = None, hint: str | None = None) -> None:
        self.path, self.file, self.line, self.hint, self.reason = path, file, line, hint, message
        where = ""
        if file is not None:
            where = f"{file}:{line}: " if line is not None else f"{file}: "
        text = where + (f"{path}: " if path else "") + message
        if hint:
            text += f" ({hint})"
        super().__init__(text)


class NotImplementedInCntkio(CntkioError, NotImplementedError):
    """A CNTK feature that cntkio does not implement (yet); the message names it."""


class RemoteError(CntkioError, OSError):
    """Reading an object store failed: ``url`` names the object, ``begin``/``end`` the byte range
    being read (None when the whole object or its metadata was asked for); the back end's own
    error is the ``__cause__`` and its text ends the message."""

    def __init__(self, message: str, *, url: str, begin: int | None = None,
                 end: int | None = None) -> None:
        self.url, self.begin, self.end, self.reason = url, begin, end, message
        where = url if begin is None else f"{url} bytes {begin}-{end}"
        super().__init__(f"{where}: {message}")


#: errors of a write that say nothing of which file: a full disk, a file-size limit, a quota
_WRITE_ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)


def raise_naming_output(e: OSError, path: "str | os.PathLike[str]", *, any_errno: bool = True) -> NoReturn:
    """Re-raise ``e`` (an error met while writing ``path``); when it names no file, as an
    ``OSError`` of the same errno naming ``path`` (``[Errno 28] No space left on device:
    'out.cbf'``), with ``e`` as its cause. ``any_errno=False``: only for a full disk, a file-size
    limit or a quota (the caller's block may also read other files)."""
    if e.filename is None and (any_errno or e.errno in _WRITE_ERRNOS):
        raise OSError(e.errno, e.strerror or str(e), os.fspath(path)) from e
    raise e


class MissingDependency(CntkioError, ImportError):
    """An optional package a feature needs is not installed; the message says what to install
    (an ImportError too, so ``except ImportError`` still catches it)."""
