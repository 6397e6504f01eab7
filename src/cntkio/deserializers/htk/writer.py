"""Writing HTK feature files: the HTKMLFReader's dataset-processing mode (its ``write`` sub-section).

* :func:`write_htk` writes one HTK parameter file (the layout :mod:`.htkfile` reads: a 12-byte
  big-endian header ``nSamples, sampPeriod, sampSize, parmKind`` and big-endian float32 frames),
  to a temporary name renamed over the target, so that an existing file is replaced whole or
  not at all.
* :func:`scp_utterances` lists the utterances of an SCP file in order: their output names (the
  logical name's last path component up to its last ``.``, the key the readers use), frame
  counts and the period of their source files.
* :class:`HTKOutputWriter` writes one output of a ``write`` sub-section (``path``, ``ext``,
  optional ``scpFile``): one file ``<path>/<utterance>.<ext>`` per utterance, then the SCP file
  listing them (temporary name, renamed).
"""
from __future__ import annotations

import os

import numpy as np

from ...errors import FormatError
from .htkfile import read_header
from .scp import _resolve

__all__ = ["write_htk", "scp_utterances", "HTKOutputWriter", "USER_KIND", "DEFAULT_PERIOD"]

USER_KIND = 9               # HTK's USER parameter kind: what CNTK's writer wrote
DEFAULT_PERIOD = 100000     # 10 ms in 100 ns units


def _temp_name(path: str) -> str:
    d, b = os.path.split(os.path.abspath(path))
    return os.path.join(d, f".{b}.tmp{os.getpid()}")


def write_htk(path: str, frames: np.ndarray, *, kind: int = USER_KIND, period: int = DEFAULT_PERIOD) -> None:
    """Write ``frames[n, dim]`` as the HTK file ``path`` (big-endian float32; temporary name, then
    renamed)."""
    frames = np.asarray(frames)
    if frames.ndim != 2:
        raise ValueError(f"HTK frames must be 2-D [frames, dim], found shape {frames.shape}")
    n, dim = frames.shape
    if dim * 4 > 0x7FFF:
        raise ValueError(f"an HTK frame holds at most {0x7FFF // 4} values, found {dim}")
    header = np.array([n, period], ">i4").tobytes() + np.array([dim * 4, kind], ">i2").tobytes()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = _temp_name(path)
    try:
        with open(tmp, "wb") as f:
            f.write(header)
            f.write(np.ascontiguousarray(frames, dtype=">f4").tobytes())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _utterance_name(logical: str) -> str:
    base = logical.replace("\\", "/").rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[0] if "." in base else base


def scp_utterances(path: str, prefix: str | None = None) -> list[tuple[str, int, int]]:
    """``(name, frames, sampPeriod)`` for every line of the SCP file ``path``, in order."""
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise FormatError(f"cannot open the SCP file: {e.strerror}", file=path) from e
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        logical, eq, physical = line.partition("=")
        if not eq:
            physical = logical
        rng = None
        if physical.endswith("]") and "[" in physical:
            physical, _, r = physical[:-1].rpartition("[")
            try:
                a, b = (int(v) for v in r.split(","))
            except ValueError as e:
                raise FormatError("cannot parse the SCP line's frame range", file=path, line=lineno,
                                  expected="[start,end] with decimal frame numbers", found=repr(raw)) from e
            rng = (a, b)
            if not eq:
                logical = physical
        header = read_header(_resolve(physical, path, prefix))
        frames = rng[1] - rng[0] + 1 if rng else header.num_frames
        out.append((_utterance_name(logical), frames, header.samp_period))
    return out


class HTKOutputWriter:
    """One output of a ``write`` sub-section: ``write(name, frames)`` per utterance, ``close()``
    writes the SCP file (when ``scp_file`` is given) listing the files written, in order."""

    def __init__(self, path: str, ext: str = "mfc", scp_file: str | None = None, *, kind: int = USER_KIND) -> None:
        self.path, self.ext, self.scp_file, self.kind = path, ext.lstrip("."), scp_file, kind
        self.written: list[str] = []

    def file_of(self, name: str) -> str:
        return os.path.join(self.path, f"{name}.{self.ext}")

    def write(self, name: str, frames: np.ndarray, period: int = DEFAULT_PERIOD) -> str:
        target = self.file_of(name)
        write_htk(target, frames, kind=self.kind, period=period or DEFAULT_PERIOD)
        self.written.append(target)
        return target

    def close(self) -> None:
        if not self.scp_file:
            return
        os.makedirs(os.path.dirname(os.path.abspath(self.scp_file)), exist_ok=True)
        tmp = _temp_name(self.scp_file)
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(p + "\n" for p in self.written))
        os.replace(tmp, self.scp_file)
