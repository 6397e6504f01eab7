"""Image transforms, as ``cntk.io.transforms``: ``crop``, ``scale``, ``mean``, ``color`` return the
config dicts of CNTK's transform types (``{'type': 'Crop', ...}``), to be listed in
``StreamDef(field='image', transforms=[...])`` or ``ImageDeserializer.map_features``.
``intensity`` (CNTK's Intensity transform, which cntk.io had no function for) is cntkio's addition.

The transform types are registered with :mod:`cntkio.registry` (``Crop``, ``Scale``, ``Mean``,
``Color``, ``Intensity``, ``Transpose``); :mod:`cntkio.transforms.ops` implements them.
``docs/images.md`` describes every option.
"""
from __future__ import annotations

from typing import Any

__all__ = ["crop", "scale", "mean", "color", "intensity"]


def crop(crop_type: str = "center", crop_size: Any = 0, side_ratio: Any = 0.0, area_ratio: Any = 0.0,
         aspect_ratio: Any = 1.0, jitter_type: str = "none") -> dict:
    """A Crop transform: ``crop_type`` 'center' | 'randomside' | 'randomarea'; ``crop_size`` an
    int or (w, h) (0 = none); ``side_ratio``, ``area_ratio``, ``aspect_ratio`` a float or a
    (lo, hi) range; ``jitter_type`` 'none' | 'uniratio'."""
    return {"type": "Crop", "cropType": crop_type, "cropSize": crop_size, "sideRatio": side_ratio,
            "areaRatio": area_ratio, "aspectRatio": aspect_ratio, "jitterType": jitter_type}


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
