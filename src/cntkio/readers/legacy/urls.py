"""URLs in the legacy readers' files (docs/remote.md, "Legacy readers"): the object-store keys of a
reader section, a text file at a URL copied once into the cache folder, writes to a URL refused.

It never writes to an object store and never reads a URL other than through :mod:`cntkio.remote`.
"""
from __future__ import annotations

import re
from typing import Any, Mapping

from ...errors import ConfigError, NotImplementedInCntkio
from ...values import is_url

__all__ = ["REMOTE_KEYS", "remote_keys", "local_file", "refuse_url", "exists", "path_list", "URLNotWritable"]

#: the keys of :mod:`cntkio.remote.options`, as a config spells them
REMOTE_KEYS = ("storageOptions", "cacheDir", "cacheLimit", "remoteInFlight", "remoteRetries",
               "remoteRetryDelay", "remotePartSize")


class URLNotWritable(ConfigError, NotImplementedInCntkio):
    """A file cntkio would write (a cache, a label map, a writer's output) is named by a URL."""


def remote_keys(sec: Any) -> dict[str, Any]:
    """The object-store keys of a config section, looked up in it and then in the enclosing
    sections as every reader key is (``storageOptions`` as a dict, the others as written)."""
    out: dict[str, Any] = {}
    for key in REMOTE_KEYS:
        if sec.exists(key):
            out[key] = sec.section(key, inherit=True).to_dict() if key == "storageOptions" else sec.str(key)
    return out


def local_file(path: str, config: Mapping | None, option: str, what: str) -> str:
    """A local path to read the file ``path`` names whole: ``path`` itself (a ``file://`` URL as
    its path), or for a URL the copy of the object in ``<cacheDir>/files/``, fetched once and named
    by URL, size and ETag (:func:`cntkio.remote.local_copy`). A missing object is a ConfigError
    naming ``what``, the URL and the key ``option``."""
    from ...remote import is_remote, local_copy, local_path
    if not is_remote(path):
        return local_path(path)
    try:
        return local_copy(path, config)
    except FileNotFoundError as e:
        raise ConfigError(f"{what} {path!r} does not exist ({e.strerror or e})", path=option) from e


def exists(path: str, config: Mapping | None) -> bool:
    """Whether the file (a local file, or an object at a URL) exists."""
    import os

    from ...remote import is_remote, local_path, remote_options
    if not is_remote(path):
        return os.path.isfile(local_path(path))
    from ...remote import check_readable
    try:
        check_readable(path, remote_options(config), "the file")
    except FileNotFoundError:
        return False
    return True


def refuse_url(path: Any, option: str, what: str) -> None:
    """Raise :class:`URLNotWritable` naming ``what``, the URL and the key when ``path`` (a file
    cntkio would write) is a URL other than ``file://``: outputs and caches are local files."""
    if is_url(path) and not str(path).lower().startswith("file://"):
        raise URLNotWritable(f"{what} {path!r} is a URL: cntkio writes {what}s to local files only, never "
                             "to an object store", path=option,
                             hint="name a local file (upload it afterwards if it must live in the store)")


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+")


def path_list(items: list[str]) -> list[str]:
    """A config array of paths with its URLs whole again: ``file = s3://b/x.bin`` is split at its
    ``:`` as any array is (``s3``, ``//b/x.bin``); a scheme followed by a ``//...`` item is one URL."""
    out: list[str] = []
    for x in items:
        if out and x.startswith("//") and _SCHEME.fullmatch(out[-1]):
            out[-1] += ":" + x
        else:
            out.append(x)
    return out
