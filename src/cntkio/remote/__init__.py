"""Reading from object stores: any path of a deserializer may be a URL (``s3://``, ``gs://``,
``az://``, ``https://``, ...) read through fsspec and its back ends (docs/remote.md).

A plain path never comes here (``cntkio.values.is_url`` decides); nothing here imports fsspec until
a URL is opened. ``file://`` URLs are read as the local paths they name (:func:`local_path`).
"""
from __future__ import annotations

from ..values import is_url, local_path
from .objects import RemoteFile, RemoteObject, check_readable, forget, open_object, read_whole, resolve
from .options import OPTION_KEYS, RemoteOptions, default_cache_dir, parse_size, remote_options
from .store import ObjectChanged, RemoteDenied, RemoteNotFound

__all__ = ["is_url", "is_remote", "local_path", "RemoteObject", "RemoteFile", "RemoteOptions",
           "remote_options", "open_object", "check_readable", "read_whole", "resolve", "forget",
           "parse_size", "default_cache_dir", "OPTION_KEYS", "ObjectChanged", "RemoteNotFound",
           "RemoteDenied", "read_path", "remote_for", "local_copy"]


def is_remote(path) -> bool:
    """Whether ``path`` is read through the object-store layer: a URL other than ``file://``."""
    return is_url(path) and not str(path).lower().startswith("file://")


def remote_for(path: str, config, what: str) -> RemoteObject | None:
    """The :class:`RemoteObject` a deserializer reads for ``path`` when it is a URL (``file://``
    excepted), opened with the remote options of its ``config``; None for a local path. A missing
    object raises FileNotFoundError naming ``what`` (``"CTF input file"``) and the URL."""
    if not is_remote(path):
        return None
    return check_readable(path, remote_options(config), what)


def local_copy(path: str, config) -> str:
    """A local path to read the file at ``path`` whole, as a local file (an MLF, a state list: read
    whole by their parsers): ``path`` itself when local, else a copy of the object kept in
    ``<cacheDir>/files/`` under its URL, size and ETag/generation (fetched once, written under a
    temporary name and renamed; not counted against ``cacheLimit``)."""
    if not is_remote(path):
        return local_path(path)
    import os
    import tempfile
    options = remote_options(config)
    obj = check_readable(path, options, "the file")
    folder = os.path.join(options.cache_dir, "files")
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, f"{obj.key}-{os.path.basename(path.rstrip('/'))}")
    if os.path.exists(target) and os.path.getsize(target) == obj.size:
        return target
    fd, tmp = tempfile.mkstemp(prefix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            step = 64 << 20
            for a in range(0, obj.size, step):
                f.write(obj.read(a, a + step))
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def read_path(path: str, config=None) -> bytes:
    """The whole file at ``path``: a local path (or ``file://``) read from disk, a URL through
    the object store with the remote options of ``config`` (a deserializer's config)."""
    if is_remote(path):
        return read_whole(path, remote_options(config))
    with open(local_path(path), "rb") as f:
        return f.read()
