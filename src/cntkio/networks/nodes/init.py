"""The initial value of a learnable parameter: every initializer CNTK names, from the parameter's
attributes; it never touches a network (a tensor in, a tensor out).

CNTK's list (Source/ComputationNetworkLib/InputAndParamNodes.h:17-28 and InputAndParamNodes.cpp,
``ParseRandomizationType`` and ``InitRandom``), each random kind scaled by ``initValueScale``:

=============== ============================== ==========================================
``uniform``      uniform in ±0.05                (BrainScript's and NDL's legacy default)
``uniform1``     uniform in ±1
``gaussian``     normal, std 0.2/sqrt(fanIn)
``normal``       normal, std 1
``xavier``       uniform in ±sqrt(3/fanIn)
``glorotUniform`` uniform in ±sqrt(6/(fanIn+fanOut))
``glorotNormal`` normal, std sqrt(2/(fanIn+fanOut))
``heUniform``    uniform in ±sqrt(6/fanIn)
``heNormal``     normal, std sqrt(2/fanIn)
``TruncNormal``  normal, std 1, drawn again outside ±2 std
``bilinear``     the bilinear-interpolation kernel of a transposed convolution (square kernels)
``zero``, ``fixedValue`` (``value``), ``constant`` (``value``), ``fromFile`` (``initFromFilePath``,
a text matrix), ``fromLiteral`` (``initFromLiteral``, the same text in a string)
=============== ============================== ==========================================

The fan-in and fan-out come from CNTK's tensor dimensions (``cntkDims``; ``[rows, cols]`` for
NDL's ``Parameter(rows, cols)``) as ``InitRandom`` computes them: the first ``initFilterRank``
axes are the filter, ``initOutputRank`` axes are outputs (counted from the left, or from the
right when negative), the rest inputs; fanIn = filter · inputs, fanOut = elements · filter / fanIn.
Names are matched without regard to case (CNTK's NDL did so for its six; BrainScript compared
exactly).
"""
from __future__ import annotations

import math
import os

from ...integrations.torch_backend import torch
from .base import NodeError, as_float, as_int, numel

__all__ = ["KINDS", "initial_value", "fans", "read_matrix"]

#: lower-cased kind -> CNTK's spelling
KINDS = {k.lower(): k for k in ("uniform", "uniform1", "gaussian", "normal", "xavier", "glorotUniform",
                                "glorotNormal", "heUniform", "heNormal", "TruncNormal", "bilinear", "zero",
                                "fixedValue", "constant", "fromFile", "fromLiteral")}


def fans(dims: list[int], filter_rank: int = 0, output_rank: int = 1) -> tuple[int, int]:
    """(fanIn, fanOut) of a parameter of CNTK dimensions ``dims`` (InitRandom's rule)."""
    if filter_rank + abs(output_rank) > len(dims):
        raise NodeError(f"initFilterRank={filter_rank} and initOutputRank={output_rank} exceed the rank of "
                        f"{list(dims)}")
    total = numel(dims)
    filt = numel(dims[:filter_rank])
    begin = filter_rank + (output_rank if output_rank >= 0 else 0)
    end = len(dims) if output_rank >= 0 else len(dims) + output_rank
    fan_in = filt * numel(dims[begin:end])
    return fan_in, (total * filt // fan_in if fan_in else 0)


def _bilinear(shape: tuple, dims: list[int], kw: int, kh: int) -> torch.Tensor:
    """CNTK's InitBilinear: kernel k of output channel k is the bilinear filter, the others 0."""
    if kw != kh:
        raise NodeError(f"init=bilinear needs a square kernel, found {kw}x{kh}")
    count = numel(shape) // (kw * kh)
    channels = int(round(math.sqrt(count)))
    if channels * channels != count:
        raise NodeError(f"init=bilinear needs as many input as output channels, found {count} kernels")
    factor = (kw + 1) // 2
    center = (kw - 1) / 2.0
    r = 1 - (torch.arange(kw, dtype=torch.float64) - center).abs() / factor
    k2 = r[:, None] * r[None, :]                          # [h, w]
    out = torch.zeros(channels, channels, kh, kw, dtype=torch.float64)
    for c in range(channels):
        out[c, c] = k2
    return out.reshape(shape)


def read_matrix(text: str, where: str) -> list[list[float]]:
    """The rows of a text matrix (CNTK's LoadMatrixFromTextFile: numbers separated by blanks, one
    row a line)."""
    try:
        return [[float(v) for v in line.split()] for line in text.splitlines() if line.strip()]
    except ValueError as e:
        raise NodeError(f"{where}: expected numbers separated by spaces ({e})") from e


def _from_rows(rows: list[list[float]], shape: tuple, where: str) -> torch.Tensor:
    n = numel(shape)
    if not rows or any(len(r) != len(rows[0]) for r in rows):
        raise NodeError(f"{where}: expected a matrix (rows of equally many numbers), found rows of "
                        f"{sorted({len(r) for r in rows})} values")
    want = (int(shape[0]), n // int(shape[0])) if shape else (1, 1)
    if (len(rows), len(rows[0])) != want:
        raise NodeError(f"{where} holds a {len(rows)}x{len(rows[0])} matrix, the parameter needs "
                        f"{want[0]} rows of {want[1]} values")
    return torch.tensor(rows, dtype=torch.float64).reshape(shape)


def initial_value(attrs: dict, shape: tuple, seed: int, base_dir: str | None = None) -> torch.Tensor:
    """The initial value (float64) of a parameter of ``shape`` with the attributes ``attrs``;
    ``seed`` seeds the generator unless ``randomSeed`` is set."""
    init = KINDS.get(str(attrs.get("init", "uniform")).lower())
    if init is None:
        raise NodeError(f"init: expected one of {', '.join(KINDS.values())}, found {attrs.get('init')!r}")
    scale = as_float(attrs.get("initValueScale", 1.0), "initValueScale")
    if init in ("fixedValue", "constant"):
        return torch.full(shape, as_float(attrs.get("value", 0.0), "value"), dtype=torch.float64)
    if init == "zero":
        return torch.zeros(shape, dtype=torch.float64)
    if init == "fromLiteral":
        return _from_rows(read_matrix(str(attrs.get("initFromLiteral", "")), "initFromLiteral"), shape,
                          "initFromLiteral")
    if init == "fromFile":
        path = str(attrs.get("initFromFilePath", ""))
        if not path:
            raise NodeError("init=fromFile needs initFromFilePath=\"file\"")
        if not os.path.isabs(path) and not os.path.exists(path) and base_dir:
            path = os.path.join(base_dir, path)     # CNTK opens it from the current directory; then beside the NDL
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise NodeError(f"cannot read initFromFilePath {path}: {e.strerror}") from e
        return _from_rows(read_matrix(text, path), shape, path)
    dims = [int(d) for d in attrs.get("cntkDims") or shape]
    if init == "bilinear":
        kw = as_int(attrs.get("kernelWidth") or dims[0], "kernelWidth")
        kh = as_int(attrs.get("kernelHeight") or (dims[1] if len(dims) > 1 else dims[0]), "kernelHeight")
        return _bilinear(shape, dims, kw, kh)
    fan_in, fan_out = fans(dims, as_int(attrs.get("initFilterRank", 0), "initFilterRank"),
                           as_int(attrs.get("initOutputRank", 1), "initOutputRank"))
    fan_in, fan_out = max(fan_in, 1), max(fan_out, 1)
    s = as_int(attrs.get("randomSeed", -1), "randomSeed")
    gen = torch.Generator().manual_seed(s if s >= 0 else seed)
    uniform = {"uniform": 0.05, "uniform1": 1.0, "xavier": math.sqrt(3.0 / fan_in),
               "glorotUniform": math.sqrt(6.0 / (fan_in + fan_out)), "heUniform": math.sqrt(6.0 / fan_in)}
    if init in uniform:
        return (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * (uniform[init] * scale)
    std = {"gaussian": 0.2 / math.sqrt(fan_in), "normal": 1.0, "glorotNormal": math.sqrt(2.0 / (fan_in + fan_out)),
           "heNormal": math.sqrt(2.0 / fan_in), "TruncNormal": 1.0}[init]
    v = torch.randn(shape, generator=gen, dtype=torch.float64)
    if init == "TruncNormal":
        out = v.abs() > 2
        while bool(out.any()):
            v[out] = torch.randn(int(out.sum()), generator=gen, dtype=torch.float64)
            out = v.abs() > 2
    return v * (std * scale)
