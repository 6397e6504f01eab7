"""The image transforms (CNTK's Crop, Scale, Mean, Color, Intensity, Transpose), built from their
config dicts, applied to one decoded image at a time with OpenCV (which releases the GIL).

An image travels as a NumPy array ``(H, W, C)`` in BGR order, ``uint8`` until a transform needs
floats (Mean, Color, Intensity), ``float32`` after. Each transform is an object with
``apply(img, rng)``; ``rng`` is the per-sequence ``numpy.random.Generator`` the image deserializer
derives from ``(seed, sweep, sequence position, stream)`` (see ``docs/images.md``), so a random
transform gives the same pixels on every run, thread count and checkpoint restore. Deterministic
transforms never draw from it.

Geometry follows what CNTK 2.7 was measured to do (``cntk-readers-measured.md`` section 2): the
centre crop at ``((W-w)//2, (H-h)//2)`` with sides ``round_half_up(float32(ratio) * min(W, H))``,
Scale fill = ``cv2.resize``, Scale pad/crop resize to the side ratio with round half up and a
centred border/crop, Mean subtracted only when its Channel x Row x Col match.
"""
from __future__ import annotations

import math
import os
from typing import Any, Mapping

import numpy as np

from .._log import get_logger
from ..errors import ConfigError, FormatError
from ..values import to_bool, to_choice, to_float, to_int, to_pair, to_range, to_str

__all__ = ["Crop", "Scale", "Mean", "Color", "Intensity", "Transpose", "build_crop", "build_scale",
           "build_mean", "build_color", "build_intensity", "build_transpose", "read_opencv_matrices",
           "cv2_module"]

_log = get_logger("transforms")


def cv2_module():
    """OpenCV (the ``image`` extra: ``pip install cntkio[image]``), with a clear error when absent."""
    try:
        import cv2
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("cntkio's image deserializers and transforms need OpenCV: "
                          "pip install opencv-python-headless (or cntkio[image])") from e
    return cv2


def _get(config: Mapping, key: str, default: Any = None) -> Any:
    """A config value by case-insensitive key (CNTK's config lookups are)."""
    if key in config:
        return config[key]
    low = key.lower()
    for k, v in config.items():
        if str(k).lower() == low:
            return v
    return default


def _round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def _opt(name: str, config: Mapping) -> str:
    return f"transforms[{_get(config, 'type', name)}].{name}"


# --- Crop -----------------------------------------------------------------------------------

class Crop:
    """``type = "Crop"``: ``cropType`` Center | RandomSide | RandomArea | Multiview10 (as CNTK 2.7's
    ImageDeserializer does it: one view per image, view 0, the top-left corner), ``cropSize`` (w or w:h, 0 = none), ``sideRatio``, ``areaRatio``, ``aspectRatio``
    (ranges lo:hi), ``jitterType`` None | UniRatio, ``hflip`` (default: true for the random types,
    as CNTK flips their crops horizontally with probability 1/2)."""

    TYPES = ("center", "randomside", "randomarea", "multiview10")

    def __init__(self, config: Mapping) -> None:
        self.crop_type = to_choice(_get(config, "cropType", "center"), _opt("cropType", config), self.TYPES)
        size = _get(config, "cropSize", 0)
        w, h = to_pair(size, _opt("cropSize", config))
        if w < 0 or h < 0:
            raise ConfigError(f"cropSize must be >= 0, found {w}:{h}", path=_opt("cropSize", config))
        self.crop_size = (w, h) if w > 0 and h > 0 else None
        self.side_ratio = to_range(_get(config, "sideRatio", 0.0), _opt("sideRatio", config))
        self.area_ratio = to_range(_get(config, "areaRatio", 0.0), _opt("areaRatio", config))
        self.aspect_ratio = to_range(_get(config, "aspectRatio", 1.0), _opt("aspectRatio", config))
        jitter = to_choice(_get(config, "jitterType", "none"), _opt("jitterType", config),
                           ("none", "uniratio"))
        self.jitter = jitter == "uniratio"
        for name, (lo, hi) in (("sideRatio", self.side_ratio), ("areaRatio", self.area_ratio)):
            if lo < 0 or hi > 1:
                raise ConfigError(f"{name} must lie in [0, 1], found {lo}:{hi}", path=_opt(name, config))
        if self.aspect_ratio[0] <= 0:
            raise ConfigError(f"aspectRatio must be > 0, found {self.aspect_ratio}",
                              path=_opt("aspectRatio", config))
        self.random_type = self.crop_type in ("randomside", "randomarea")
        if self.random_type and self.crop_size is None and self.side_ratio[1] <= 0 and self.area_ratio[1] <= 0:
            raise ConfigError(f"cropType = {self.crop_type} needs cropSize, sideRatio or areaRatio",
                              path=_opt("cropType", config))
        self.hflip = to_bool(_get(config, "hflip", self.random_type), _opt("hflip", config))
        ranges = (self.side_ratio, self.area_ratio)
        #: draws random numbers: a random type, a flip, or a centre crop with a UniRatio jitter over a range
        self.random = self.random_type or self.hflip or (
            self.crop_size is None and self.jitter and any(lo != hi for lo, hi in ranges))

    def _ratio(self, lo: float, hi: float, rng) -> float:
        if lo == hi or not (self.jitter or self.random_type):
            return lo
        return lo + (hi - lo) * rng.random()

    def geometry(self, W: int, H: int, rng) -> tuple[int, int, int, int]:
        """``(x0, y0, w, h)`` of the crop of a W x H image."""
        if self.crop_size is not None:
            w, h = self.crop_size
        elif self.area_ratio[1] > 0 and (self.crop_type == "randomarea" or self.side_ratio[1] <= 0):
            a = self._ratio(*self.area_ratio, rng)
            asp = self._ratio(*self.aspect_ratio, rng) if self.random_type else 1.0
            area = a * W * H
            w = _round_half_up(math.sqrt(area * asp))
            h = _round_half_up(math.sqrt(area / asp))
        else:
            s = self._ratio(*self.side_ratio, rng)
            side = _round_half_up(float(np.float32(s)) * min(W, H))
            asp = self._ratio(*self.aspect_ratio, rng) if self.random_type else 1.0
            if asp != 1.0:
                w, h = _round_half_up(side * math.sqrt(asp)), _round_half_up(side / math.sqrt(asp))
            else:
                w = h = side
        w, h = max(1, min(w, W)), max(1, min(h, H))
        if self.random_type:
            x0 = int(rng.integers(0, W - w + 1))
            y0 = int(rng.integers(0, H - h + 1))
        elif self.crop_type == "multiview10":
            x0 = y0 = 0          # CNTK 2.7's ImageDeserializer: view 0 of the 10, the top-left corner
        else:
            x0, y0 = (W - w) // 2, (H - h) // 2
        return x0, y0, w, h

    def apply(self, img: np.ndarray, rng) -> np.ndarray:
        H, W = img.shape[:2]
        x0, y0, w, h = self.geometry(W, H, rng)
        out = img[y0:y0 + h, x0:x0 + w]          # a view: the next transform reads it in place
        if self.hflip and rng.random() < 0.5:
            out = cv2_module().flip(out, 1).reshape(out.shape)
        return out


# --- Scale ----------------------------------------------------------------------------------

_INTERPOLATIONS = ("nearest", "linear", "cubic", "lanczos")


class Scale:
    """``type = "Scale"``: ``width``, ``height``, ``channels`` (the declared output; channels are
    not converted, as in CNTK), ``interpolations`` (nearest | linear | cubic | lanczos, several
    joined by ``:`` = one drawn per image), ``scaleMode`` Fill | Crop | Pad, ``padValue`` (-1 =
    replicate the border, else a constant saturated to 0..255)."""

    def __init__(self, config: Mapping) -> None:
        self.width = to_int(_get(config, "width"), _opt("width", config), minimum=1)
        self.height = to_int(_get(config, "height"), _opt("height", config), minimum=1)
        self.channels = to_int(_get(config, "channels"), _opt("channels", config), minimum=1)
        raw = _get(config, "interpolations", "linear")
        names = raw if isinstance(raw, (list, tuple)) else str(raw).split(":")
        cv2 = cv2_module()
        codes = {"nearest": cv2.INTER_NEAREST, "linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC,
                 "lanczos": cv2.INTER_LANCZOS4}
        self.interpolations = [codes[to_choice(n.strip(), _opt("interpolations", config), _INTERPOLATIONS)]
                               for n in names if str(n).strip()] or [cv2.INTER_LINEAR]
        self.mode = to_choice(_get(config, "scaleMode", "fill"), _opt("scaleMode", config),
                              ("fill", "crop", "pad"))
        self.pad_value = to_int(_get(config, "padValue", -1), _opt("padValue", config))
        self.random = len(self.interpolations) > 1

    def apply(self, img: np.ndarray, rng) -> np.ndarray:
        cv2 = cv2_module()
        interp = self.interpolations[int(rng.integers(len(self.interpolations)))] if self.random \
            else self.interpolations[0]
        w, h = self.width, self.height
        H0, W0 = img.shape[:2]
        if self.mode == "fill":
            return _resize(cv2, img, w, h, interp)
        if self.mode == "pad":
            nw, nh = (w, _round_half_up(H0 * w / W0)) if W0 > H0 else (_round_half_up(W0 * h / H0), h)
            out = _resize(cv2, img, nw, nh, interp)
            top, left = (h - nh) // 2, (w - nw) // 2
            bottom, right = h - nh - top, w - nw - left
            if min(top, left, bottom, right) < 0:
                raise ValueError(f"Scale pad: the {W0}x{H0} image resized to {nw}x{nh} does not fit "
                                 f"{w}x{h}")
            if self.pad_value < 0:
                out = cv2.copyMakeBorder(out, top, bottom, left, right, cv2.BORDER_REPLICATE)
            else:
                v = float(min(self.pad_value, 255))
                out = cv2.copyMakeBorder(out, top, bottom, left, right, cv2.BORDER_CONSTANT,
                                         value=(v, v, v, v))
            return out.reshape(h, w, -1)
        nw, nh = (w, _round_half_up(H0 * w / W0)) if W0 < H0 else (_round_half_up(W0 * h / H0), h)
        if nw < w or nh < h:
            raise ValueError(f"Scale crop: the {W0}x{H0} image resized to {nw}x{nh} is smaller than "
                             f"{w}x{h}")
        out = _resize(cv2, img, nw, nh, interp)
        y0, x0 = (nh - h) // 2, (nw - w) // 2
        return out[y0:y0 + h, x0:x0 + w]


def _resize(cv2, img: np.ndarray, w: int, h: int, interp: int) -> np.ndarray:
    if img.strides[-1] != img.itemsize or img.strides[-2] != img.itemsize * img.shape[-1]:
        img = np.ascontiguousarray(img)       # OpenCV takes row-strided views, not other strides
    out = cv2.resize(img, (w, h), interpolation=interp)
    return out.reshape(h, w, -1)


# --- Mean -----------------------------------------------------------------------------------

def read_opencv_matrices(path: str, names: tuple[str, ...], option: str) -> dict:
    """The named nodes of an OpenCV XML/YAML storage file: numbers as floats, matrices as arrays.
    A missing file or node raises, naming the file and the option."""
    cv2 = cv2_module()
    if not os.path.isfile(path):
        raise FormatError(f"Could not open file: {path}", file=path, expected=f"the {option} file")
    fs = cv2.FileStorage(path, cv2.FILE_STORAGE_READ)
    try:
        if not fs.isOpened():
            raise FormatError(f"Invalid data in file: {path}", file=path,
                              expected="an OpenCV XML/YAML storage")
        out = {}
        for n in names:
            node = fs.getNode(n)
            if node.empty():
                raise FormatError(f"Invalid data in file: {path}", file=path,
                                  expected=f"a node <{n}> (the {option} file)", found="none")
            out[n] = node.mat() if node.isMap() else np.float64(node.real())
            if out[n] is None:
                raise FormatError(f"Invalid data in file: {path}", file=path,
                                  expected=f"<{n}> to be an OpenCV matrix (the {option} file)")
        return out
    finally:
        fs.release()


class Mean:
    """``type = "Mean"``: ``meanFile``, an OpenCV XML with ``Channel``, ``Row``, ``Col`` and the
    ``MeanImg`` matrix (H*W*C floats, HWC/BGR). Subtracted when the image at this point of the
    chain is Row x Col x Channel; otherwise the image passes unchanged with a warning (CNTK)."""

    def __init__(self, config: Mapping) -> None:
        path = _get(config, "meanFile")
        self.file = None
        self.mean = None
        if path is None or str(path) == "":
            return                      # CNTK accepts a Mean without a file: it does nothing
        self.file = to_str(path, _opt("meanFile", config))
        m = read_opencv_matrices(self.file, ("Channel", "Row", "Col", "MeanImg"), "meanFile")
        c, r, k = (int(np.asarray(m[n]).reshape(-1)[0]) for n in ("Channel", "Row", "Col"))
        img = np.asarray(m["MeanImg"], dtype=np.float32).reshape(-1)
        if img.size != c * r * k:
            raise FormatError(f"MeanImg holds {img.size} values, Channel x Row x Col = {c}x{r}x{k} = "
                              f"{c * r * k}", file=self.file)
        self.mean = img.reshape(r, k, c)
        self._warned = False

    def apply(self, img: np.ndarray, rng) -> np.ndarray:
        if self.mean is None:
            return img
        if img.shape != self.mean.shape and not (img.ndim == 2 and self.mean.shape == img.shape + (1,)):
            if not self._warned:
                self._warned = True
                _log.warning("Mean file %s (%s) does not match the size of the input image %s, will "
                             "be ignored.", self.file, "x".join(map(str, self.mean.shape)),
                             "x".join(map(str, img.shape)))
            return img
        return img.astype(np.float32) - self.mean.reshape(img.shape)


# --- Color ----------------------------------------------------------------------------------

class Color:
    """``type = "Color"``: ``brightnessRadius``, ``contrastRadius``, ``saturationRadius`` in [0, 1].
    Per image: ``alpha = 1 + U(-c, c)``, ``beta = U(-b, b) * mean(image)``, ``x = alpha*x + beta``;
    then (3 channels) the HSV saturation times ``1 + U(-s, s)``, clipped to [0, 1]."""

    random = True

    def __init__(self, config: Mapping) -> None:
        self.brightness = to_float(_get(config, "brightnessRadius", 0.0), _opt("brightnessRadius", config))
        self.contrast = to_float(_get(config, "contrastRadius", 0.0), _opt("contrastRadius", config))
        self.saturation = to_float(_get(config, "saturationRadius", 0.0), _opt("saturationRadius", config))
        for n, v in (("brightnessRadius", self.brightness), ("contrastRadius", self.contrast),
                     ("saturationRadius", self.saturation)):
            if not 0.0 <= v <= 1.0:
                raise ConfigError(f"{n} must lie in [0, 1], found {v}", path=_opt(n, config))

    def apply(self, img: np.ndarray, rng) -> np.ndarray:
        cv2 = cv2_module()
        img = np.ascontiguousarray(img, dtype=np.float32)
        if self.brightness > 0 or self.contrast > 0:
            alpha = 1.0 + (rng.uniform(-self.contrast, self.contrast) if self.contrast > 0 else 0.0)
            beta = rng.uniform(-self.brightness, self.brightness) * float(img.mean()) \
                if self.brightness > 0 else 0.0
            img = img * np.float32(alpha) + np.float32(beta)    # float: no saturation
        if self.saturation > 0 and img.ndim == 3 and img.shape[2] == 3:
            alpha = 1.0 + rng.uniform(-self.saturation, self.saturation)
            scale = np.float32(255.0)
            hsv = cv2.cvtColor(np.clip(img / scale, 0, 1).astype(np.float32), cv2.COLOR_BGR2HSV)
            hsv[:, :, 1] = np.clip(hsv[:, :, 1] * np.float32(alpha), 0, 1)
            img = cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR) * scale
        return img


# --- Intensity ------------------------------------------------------------------------------

class Intensity:
    """``type = "Intensity"``: AlexNet's PCA lighting noise. ``intensityStdDev`` and
    ``intensityFile`` (OpenCV XML with ``EigVal`` 1x3 and ``EigVec`` 3x3): per image ``alpha ~
    N(0, stdDev)`` (3 draws) and every pixel plus ``EigVec @ (alpha * EigVal)`` (BGR)."""

    random = True

    def __init__(self, config: Mapping) -> None:
        self.std = to_float(_get(config, "intensityStdDev", 0.0), _opt("intensityStdDev", config))
        path = _get(config, "intensityFile")
        self.eigval = self.eigvec = None
        if self.std > 0:
            if path is None:
                raise ConfigError("intensityStdDev > 0 needs intensityFile (EigVal, EigVec)",
                                  path=_opt("intensityFile", config))
            file = to_str(path, _opt("intensityFile", config))
            m = read_opencv_matrices(file, ("EigVal", "EigVec"), "intensityFile")
            self.eigval = np.asarray(m["EigVal"], np.float32).reshape(-1)
            self.eigvec = np.asarray(m["EigVec"], np.float32)
            if self.eigval.size != 3 or self.eigvec.shape != (3, 3):
                raise FormatError(f"expected EigVal 1x3 and EigVec 3x3, found {self.eigval.size} values "
                                  f"and {self.eigvec.shape}", file=file)

    def apply(self, img: np.ndarray, rng) -> np.ndarray:
        if self.eigval is None or img.ndim != 3 or img.shape[2] != 3:
            return img
        alpha = rng.normal(0.0, self.std, 3).astype(np.float32)
        shift = self.eigvec @ (alpha * self.eigval)
        return img.astype(np.float32) + shift.astype(np.float32)


# --- Transpose ------------------------------------------------------------------------------

class Transpose:
    """``type = "Transpose"``: HWC to CHW. The image deserializer always delivers CHW (CNTK's
    Python API appends this transform itself); listed in a config, it marks that layout."""

    random = False

    def __init__(self, config: Mapping | None = None) -> None:
        pass

    def apply(self, img: np.ndarray, rng) -> np.ndarray:
        return img


for _cls in (Mean,):
    _cls.random = False
Crop.random = False       # per instance: set in __init__
Scale.random = False      # per instance: set in __init__


def build_crop(config: Mapping, **options: Any) -> Crop:
    return Crop(config)


def build_scale(config: Mapping, **options: Any) -> Scale:
    return Scale(config)


def build_mean(config: Mapping, **options: Any) -> Mean:
    return Mean(config)


def build_color(config: Mapping, **options: Any) -> Color:
    return Color(config)


def build_intensity(config: Mapping, **options: Any) -> Intensity:
    return Intensity(config)


def build_transpose(config: Mapping, **options: Any) -> Transpose:
    return Transpose(config)
