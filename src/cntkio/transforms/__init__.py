"""Image transforms, as ``cntk.io.transforms``: ``crop``, ``scale``, ``mean``, ``color`` return the
config dicts of CNTK's transform types (``{'type': 'Crop', ...}``), to be listed in
``StreamDef(field='image', transforms=[...])`` or ``ImageDeserializer.map_features``.
``intensity`` (CNTK's Intensity transform, which cntk.io had no function for) is cntkio's addition.

The transform types are registered with :mod:`cntkio.registry` (``Crop``, ``Scale``, ``Mean``,
``Color``, ``Intensity``, ``Transpose``); :mod:`cntkio.transforms.ops` implements them.
``docs/images.md`` describes every option.
"""
from __future__ import annotations

import numbers
from typing import Any

__all__ = ["crop", "scale", "mean", "color", "intensity"]


def _pair(x: Any, name: str, ordered: bool) -> tuple:
    """cntk.io's ``sanitize_2d_number`` / ``sanitize_range``: a number is ``(x, x)``; a pair of
    numbers is kept (``ordered``: its first must not exceed its second)."""
    if isinstance(x, numbers.Number) and not isinstance(x, bool):
        return (x, x)
    if isinstance(x, (tuple, list)) and len(x) == 2 and all(isinstance(v, numbers.Number) for v in x):
        if ordered and x[0] > x[1]:
            raise ValueError(f"{name}: Input argument must be a number or a tuple of two numbers such as the first "
                             f"number is smaller than or equal to the second number (found {tuple(x)})")
        return tuple(x)
    raise ValueError(f"{name}: Input argument must be a number or a tuple of two numbers (found {x!r})")


def _colon(pair: tuple, integer: bool) -> str:
    """A pair as CNTK's ``ReaderCrop`` writes it into the transform's dictionary: ``"a:b"``, each
    printed as a C++ stream prints an int or a float (MinibatchSource.cpp:38-43)."""
    if integer:
        return f"{int(pair[0])}:{int(pair[1])}"
    import numpy as np
    return ":".join(format(float(np.float32(v)), "g") for v in pair)


def crop(crop_type: str = "center", crop_size: Any = 0, side_ratio: Any = 0.0, area_ratio: Any = 0.0,
         aspect_ratio: Any = 1.0, jitter_type: str = "none") -> dict:
    """A Crop transform: ``crop_type`` 'center' | 'randomside' | 'randomarea' | 'multiview10';
    ``crop_size`` an int or (w, h) (0 = none); ``side_ratio``, ``area_ratio``, ``aspect_ratio`` a
    float or a (lo, hi) range; ``jitter_type`` 'none' | 'uniratio'. The pairs are reported as CNTK
    reports them, colon strings (``cropSize='0:0'``, ``sideRatio='0.5:0.5'``, ``aspectRatio='1:1'``);
    a range whose low end exceeds its high end is a ValueError, as in cntk.io."""
    return {"type": "Crop", "cropType": crop_type,
            "cropSize": _colon(_pair(crop_size, "crop_size", False), True),
            "sideRatio": _colon(_pair(side_ratio, "side_ratio", True), False),
            "areaRatio": _colon(_pair(area_ratio, "area_ratio", True), False),
            "aspectRatio": _colon(_pair(aspect_ratio, "aspect_ratio", True), False),
            "jitterType": jitter_type}


def scale(width: int, height: int, channels: int, interpolations: str = "linear",
          scale_mode: str = "fill", pad_value: int = -1) -> dict:
    """A Scale transform to ``width`` x ``height`` (``channels`` is the declared channel count);
    ``interpolations`` 'nearest' | 'linear' | 'cubic' | 'lanczos' (several joined by ':');
    ``scale_mode`` 'fill' | 'crop' | 'pad'; ``pad_value`` -1 (replicate) or 0..255."""
    return {"type": "Scale", "width": width, "height": height, "channels": channels,
            "interpolations": interpolations, "scaleMode": scale_mode, "padValue": pad_value}


def mean(filename: str) -> dict:
    """A Mean transform subtracting the OpenCV XML mean image ``filename``."""
    return {"type": "Mean", "meanFile": filename}


def color(brightness_radius: float = 0.0, contrast_radius: float = 0.0,
          saturation_radius: float = 0.0) -> dict:
    """A Color transform: random brightness, contrast and saturation, each within its radius."""
    return {"type": "Color", "brightnessRadius": brightness_radius, "contrastRadius": contrast_radius,
            "saturationRadius": saturation_radius}


def intensity(std_dev: float, filename: str) -> dict:
    """An Intensity transform (AlexNet PCA lighting noise): ``std_dev`` and an OpenCV XML file with
    ``EigVal`` (1x3) and ``EigVec`` (3x3). cntkio's addition to cntk.io's functions."""
    return {"type": "Intensity", "intensityStdDev": std_dev, "intensityFile": filename}
