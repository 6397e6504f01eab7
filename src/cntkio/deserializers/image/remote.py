"""Images at URLs (:mod:`cntkio.remote`): a single image is one GET of the object (kept in the chunk
cache), a member of a zip archive at a URL is read through ``zipfile`` over ranged reads of the
archive (the central directory once per loader thread, then each member's own bytes).

It never downloads a whole archive to read one member.
"""
from __future__ import annotations

import zipfile

import numpy as np

from ...remote import open_object, read_whole

__all__ = ["read"]

#: the ranged reads of an archive are made this large (a member's local header and its data in one)
ZIP_READ_BYTES = 1 << 18


def read(path: str, options, local, lock, opened: list) -> np.ndarray:
    """The bytes of the image at ``path`` (``archive.zip@member`` for a member), as uint8. ``local``
    is the thread's namespace where its open archives are kept (``local.open``); each new archive
    is added to ``opened`` under ``lock`` (the deserializer closes them)."""
    arch, sep, inner = path.partition(".zip@")
    if not sep:
        return np.frombuffer(read_whole(path, options), np.uint8)
    zips = local.__dict__.setdefault("open", {})
    z = zips.get(arch)
    if z is None:
        z = zips[arch] = zipfile.ZipFile(open_object(arch + ".zip", options).open(ZIP_READ_BYTES))
        with lock:
            opened.append(z)
    return np.frombuffer(z.read(inner.lstrip("/")), np.uint8)
