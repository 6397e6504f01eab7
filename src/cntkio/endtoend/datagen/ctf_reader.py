"""CTF reader sections (``CNTKTextFormatReader``, ``CNTKTextFormatDeserializer``) to the files they read.

What it must never do: write anything but the reader's ``file``.
"""
from __future__ import annotations

from .ctf import ctf_streams, write_ctf

__all__ = ["legacy", "deserializer"]


def legacy(box, reader, shape_of) -> None:
    """``readerType = CNTKTextFormatReader``: ``file`` and ``input``."""
    deserializer(box, reader, shape_of)


def deserializer(box, sec, shape_of) -> None:
    """``type = CNTKTextFormatDeserializer`` (and the legacy reader): ``file``, ``input``."""
    path = box.path(sec.str("file"), sec.key_path("file"))
    if box.claim(path, "ctf"):
        write_ctf(box, path, ctf_streams(sec.section("input")), shape_of(path))
