"""Speech data for HTK reader sections: HTK feature archives with SCP lists, MLF labels, state lists.

What it must never do: give two files of one run different utterances: every SCP list and every
MLF of a sandbox names the same utterances (``utt0000``, ...) with the same frame counts, so that
features and labels written for different reader sections (a train and a dev reader, the feature
and label deserializers of a composite reader, several feature streams) always join.

* a feature section (``scpFile``, or ``file`` in a feature section): one HTK archive per SCP list
  (``<scp>.features``, big-endian float32, parameter kind USER) holding every utterance, listed as
  ``uttNNNN.mfc=<archive>[first,last]``; its dimension is ``dim`` divided by the context window
  (``contextWindow = k`` or ``l:r``; none: ``dim`` itself);
* ``writer = [writerType = HTKMLFWriter]``: each output's ``scpFile``, the list of the files the
  write action writes (one per utterance, in order);
* a label section (``mlfFile``): an MLF with one state per segment of 2 to 5 frames, times in
  100 ns; with ``labelMappingFile`` the states are named as its lines (written when absent:
  ``s0`` .. ``s<labelDim-1>``), without it the MLF has CNTK's four columns (``start end name
  index``).

``DataShape.sequences`` is the number of utterances; ``DataShape.options["frames"]`` the least and
most frames of one (default 4 to 12).
"""
from __future__ import annotations

import struct

import numpy as np

from .sandbox import Sandbox
from ...errors import CntkioError

__all__ = ["legacy", "feature_deserializer", "mlf_deserializer", "utterances", "write_htk_archive", "output_lists"]

_FRAMES = (4, 12)
_USER = 9           # HTK parameter kind USER
_PERIOD = 100000    # 10 ms in 100 ns units


def utterances(count: int, frames: tuple[int, int]) -> list[tuple[str, int]]:
    """The utterances of a sandbox: names and frame counts, the same for the same arguments."""
    rng = np.random.default_rng(1000 + count)
    lo, hi = int(frames[0]), int(frames[1])
    return [(f"utt{i:04d}", int(n)) for i, n in enumerate(rng.integers(lo, hi + 1, size=count))]


def _utterances(box: Sandbox, shape) -> list[tuple[str, int]]:
    return utterances(shape.sequences, tuple(shape.option("frames", _FRAMES)))


def write_htk_archive(box: Sandbox, scp_path: str, utts: list[tuple[str, int]], dim: int) -> str:
    """One HTK archive of all utterances and the SCP list naming them."""
    total = sum(n for _, n in utts)
    frames = box.rng.standard_normal((total, dim)).astype(">f4")
    header = struct.pack(">iihh", total, _PERIOD, dim * 4, _USER)
    archive = box.write_bytes(scp_path + ".features", header + frames.tobytes())
    lines, pos = [], 0
    for name, n in utts:
        lines.append(f"{name}.mfc={archive}[{pos},{pos + n - 1}]")
        pos += n
    return box.write_text(scp_path, "\n".join(lines) + "\n")


def _context_size(value) -> int:
    if value is None:
        return 1
    parts = [p for p in str(value).replace(" ", "").split(":") if p]
    if len(parts) == 1:
        return int(parts[0])
    return int(parts[0]) + 1 + int(parts[1])


def _state_names(box: Sandbox, path: str | None, count: int) -> list[str]:
    if path is None:
        return [f"c{i}" for i in range(count)]
    if box.claim(path, "state list"):
        box.write_text(path, "".join(f"s{i}\n" for i in range(count)))
        return [f"s{i}" for i in range(count)]
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def write_mlf(box: Sandbox, path: str, utts: list[tuple[str, int]], states: list[str], numeric: bool) -> str:
    """An MLF labelling every frame: segments of 2 to 5 frames, times in 100 ns; ``numeric``: the
    four-column form with the state index last (no state list)."""
    lines = ["#!MLF!#"]
    for name, n in utts:
        lines.append(f'"*/{name}.lab"')
        t = 0
        while t < n:
            step = min(n - t, int(box.rng.integers(2, 6)))
            k = int(box.rng.integers(len(states)))
            row = f"{t * _PERIOD} {(t + step) * _PERIOD} {states[k]}"
            lines.append(f"{row} {k}" if numeric else row)
            t += step
        lines.append(".")
    return box.write_text(path, "\n".join(lines) + "\n")


def _features(box: Sandbox, sec, scp_key: str, shape_of) -> None:
    scp = box.path(sec.str(scp_key), sec.key_path(scp_key))
    if not box.claim(scp, "htk features"):
        return
    dim = int(sec.int("dim", inherit=False))
    context = _context_size(sec.str("contextWindow", None, inherit=False))
    if dim % context:
        context = 1
    write_htk_archive(box, scp, _utterances(box, shape_of(scp)), dim // context)


def _labels(box: Sandbox, sec, mlf_key: str, dim_key: str, shape_of) -> None:
    mlf = box.path(sec.str(mlf_key), sec.key_path(mlf_key))
    if not box.claim(mlf, "mlf"):
        return
    count = int(sec.int(dim_key, inherit=False))
    mapping = (box.path(sec.str("labelMappingFile"), sec.key_path("labelMappingFile"))
               if sec.exists("labelMappingFile") else None)
    states = _state_names(box, mapping, count)
    write_mlf(box, mlf, _utterances(box, shape_of(mlf)), states, numeric=mapping is None)


def legacy(box: Sandbox, reader, shape_of) -> None:
    """``readerType = HTKMLFReader`` or ``HTKDeserializers``: every sub-section with ``scpFile``
    is a feature stream, every one with ``mlfFile`` a label stream."""
    for name in reader.keys():
        if not isinstance(reader.raw(name, inherit=False), dict):
            continue
        s = reader.section(name)
        if s.has_local("mlfFile"):
            _labels(box, s, "mlfFile", "labelDim" if s.has_local("labelDim") else "dim", shape_of)
        elif s.has_local("scpFile"):
            _features(box, s, "scpFile", shape_of)
        elif s.has_local("file") and s.has_local("dim"):
            _features(box, s, "file", shape_of)


def feature_deserializer(box: Sandbox, sec, shape_of) -> None:
    """``type = HTKFeatureDeserializer``: ``input = [name = [dim; scpFile; contextWindow]]``."""
    inputs = sec.section("input")
    for name in inputs.keys():
        s = inputs.section(name)
        _features(box, s, "scpFile" if s.has_local("scpFile") else "file", shape_of)


def mlf_deserializer(box: Sandbox, sec, shape_of) -> None:
    """``type = HTKMLFDeserializer``: ``input = [name = [dim; mlfFile; labelMappingFile]]``."""
    inputs = sec.section("input")
    for name in inputs.keys():
        s = inputs.section(name)
        if s.has_local("mlfFile"):
            _labels(box, s, "mlfFile", "labelDim" if s.has_local("labelDim") else "dim", shape_of)



def output_lists(box: Sandbox, writer, shape_of) -> None:
    """``writer = [writerType = HTKMLFWriter ...]``: each output section's ``scpFile`` (or ``file``)
    is the list of the files the write action writes, one per utterance of the sandbox, in order
    (``<scp>.out/uttNNNN.htk``). The outputs are the sections named by ``outputNodeNames``, as the
    write action finds them (a dotted node name such as TIMIT_WriteBottleneck.cntk's ``L2.BFF.FF.P``
    is a nested section), else every sub-section of the writer."""
    names = [str(n) for n in writer.list("outputNodeNames", [])] or [
        n for n in writer.keys() if isinstance(writer.raw(n, inherit=False), dict)]
    for name in names:
        try:
            s = writer
            for part in name.split("."):        # a.b.c = [...] is a = [b = [c = [...]]]
                s = s.section(part)
        except CntkioError:
            continue
        key = "file" if s.has_local("file") else "scpFile"
        if not s.has_local(key):
            continue
        scp = box.path(s.str(key), s.key_path(key))
        if box.claim(scp, "htk output list"):
            names = [n for n, _ in _utterances(box, shape_of(scp))]
            box.write_text(scp, "".join(f"{scp}.out/{n}.htk\n" for n in names))
