"""Where generated test data may go: one directory tree, files written whole under a temporary name.

What it must never do: write outside its root (a path in a configuration that leads elsewhere is
an error naming the key), or leave a half-written file under its final name.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import ConfigError

__all__ = ["Sandbox", "DataShape"]


@dataclass
class DataShape:
    """How much data to make and of what form, where the configuration does not say.

    ``sequences``: sequences (utterances, images, sentences) per file; ``length``: the samples
    of a sequence, ``(least, most)`` (frame data: both 1), the same for all the streams of a
    sequence; ``streams``: a stream's own length by its name, an int or a pair (``"same"``: the
    common one); ``options``:
    family-specific hints, see each generator (``vocabulary``, ``frames``, ...).
    """

    sequences: int = 16
    length: tuple[int, int] = (1, 1)
    streams: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def stream_length(self, name: str) -> tuple[int, int] | str:
        value = next((v for k, v in self.streams.items() if k.lower() == name.lower()), None)
        if value is None:
            return self.length
        if isinstance(value, str):
            return value
        if isinstance(value, int):
            return (value, value)
        return (int(value[0]), int(value[1]))

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)


class Sandbox:
    """Writes files below ``root`` only; relative paths are relative to ``cwd`` (the directory
    the configuration runs in: CNTK's ``currentDirectory``)."""

    def __init__(self, root: str, cwd: str | None = None, seed: int = 0) -> None:
        self.root = os.path.realpath(root)
        self.cwd = cwd or self.root
        self.rng = np.random.default_rng(seed)
        self.written: dict[str, str] = {}     # path -> the family that wrote it
        self.reserved: set[str] = set()       # files the configuration's own commands write

    def reserve(self, value: Any, key: str) -> None:
        """A file one of the configuration's commands writes (a model, a vocabulary): never made here."""
        try:
            self.reserved.add(self.path(value, key))
        except ConfigError:
            pass                               # written outside the data directory: not ours either

    def path(self, value: Any, key: str) -> str:
        """The absolute path of a configuration's path value, which must lie below the root."""
        text = str(value).strip().strip('"')
        if not text:
            raise ConfigError("an empty path", path=key)
        full = os.path.realpath(text if os.path.isabs(text) else os.path.join(self.cwd, text))
        if os.path.commonpath([full, self.root]) != self.root:
            raise ConfigError(f"{text!r} lies outside the data directory {self.root}: no data is generated there",
                              path=key, hint="give the test's directories (DataDir=...) on the command line")
        return full

    def claim(self, path: str, family: str) -> bool:
        """True when ``path`` is still to be written (first come: a file two readers name is made once)."""
        if path in self.written or path in self.reserved or os.path.exists(path):
            return False
        self.written[path] = family
        return True

    def write_bytes(self, path: str, data: bytes) -> str:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return path

    def write_text(self, path: str, text: str) -> str:
        return self.write_bytes(path, text.encode("utf-8"))

    def lengths(self, count: int, span: tuple[int, int]) -> np.ndarray:
        """``count`` sequence lengths drawn from ``span`` (inclusive)."""
        lo, hi = int(span[0]), int(span[1])
        return self.rng.integers(lo, hi + 1, size=count) if hi > lo else np.full(count, lo, dtype=np.int64)
