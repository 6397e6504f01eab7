"""The top-level settings of a run, validated: ``deviceId``, ``precision``, ``traceLevel`` (used by
the runner and by validation before work; :mod:`cntkio.actions.runner` re-exports them)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

__all__ = ["DeviceId", "parse_device_id", "check_precision"]


@dataclass(frozen=True)
class DeviceId:
    """A validated ``deviceId``: ``kind`` is ``auto``, ``cpu``, ``gpu`` (``index`` set), ``all``
    or ``best`` (``count`` best GPUs, written ``*N``)."""

    kind: str
    index: int | None = None
    count: int | None = None

    def __str__(self) -> str:
        if self.kind == "gpu":
            return str(self.index)
        if self.kind == "best":
            return f"*{self.count}"
        return self.kind


def parse_device_id(value: Any, path: str = "deviceId") -> DeviceId:
    """Validate a ``deviceId`` value (configuration-files.txt: auto, cpu, a CUDA device number,
    all, ``*N``; CNTK also writes ``-1`` for the CPU)."""
    text = str(value).strip().lower()
    if text == "auto":
        return DeviceId("auto")
    if text in ("cpu", "-1"):
        return DeviceId("cpu")
    if text == "all":
        return DeviceId("all")
    m = re.fullmatch(r"\*(\d+)", text)
    if m and int(m.group(1)) >= 1:
        return DeviceId("best", count=int(m.group(1)))
    if re.fullmatch(r"\d+", text):
        return DeviceId("gpu", index=int(text))
    raise ConfigError(f"deviceId must be auto, cpu, -1, a GPU number (0, 1, ...), all or *N, found {str(value)!r}",
                      path=path)


def check_precision(value: Any, path: str = "precision") -> str:
    """Validate a ``precision`` value: ``float`` or ``double``."""
    text = str(value).strip().lower()
    if text not in ("float", "double"):
        raise ConfigError(f"precision must be float or double, found {str(value)!r}", path=path)
    return text


def _trace_level(value: Any, path: str = "traceLevel") -> int:
    text = str(value).strip()
    if not re.fullmatch(r"[+-]?\d+", text) or int(text) < 0:
        raise ConfigError(f"traceLevel must be an integer >= 0, found {text!r}", path=path)
    return int(text)
