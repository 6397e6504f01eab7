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
from ..errors import ConfigError, FormatError, MissingDependency
from ..values import to_bool, to_choice, to_float, to_int, to_pair, to_range, to_str

__all__ = ["Crop", "Scale", "Mean", "Color", "Intensity", "Transpose", "build_crop", "build_scale",
           "build_mean", "build_color", "build_intensity", "build_transpose", "read_opencv_matrices",
           "cv2_module"]

_log = get_logger("transforms")


def cv2_module():
    """OpenCV (the ``image`` extra: ``pip install cntkio[image]``); a MissingDependency saying what to
    install when absent (tests/transforms/test_missing_opencv.py)."""
    try:
        import cv2
    except ImportError as e:
        raise MissingDependency("the image deserializers and transforms need OpenCV, which is not installed: "
                                "pip install 'cntkio[image]' (the package opencv-python-headless)") from e
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
    """``type = "Crop"``: ``cropType`` Center | RandomSide | RandomArea | Multiview10; ``cropSize``
    (w or w:h, 0 = none); ``sideRatio`` or ``areaRatio``; ``aspectRatio``; ``jitterType`` None |
    UniRatio; ``hflip``. The size follows CNTK 2.7's rules (docs/images.md): ``cropSize`` (clipped
    to the image); else a square from the side or area ratio (``round(min(W, H) * s)``,
    ``round(sqrt(W * H * a))``; without either the whole image), reshaped by an aspect ratio other
    than 1 (area kept, orientation by a coin, sides truncated), drawn again up to 10 times until it
    fits, else the whole image. Ratios are the range's low end with jitterType None, uniform in it
    with UniRatio. Center crops are centred, RandomSide/RandomArea placed uniformly and flipped with
    probability 1/2 (``hflip``, default on for them). Multiview10 takes view ``view`` of
    :meth:`apply` (the image's copy number when the deserializer makes ten copies of each image,
    ``multiViewCrop``; else 0): views 0-4 the top-left, top-right, bottom-left, bottom-right and
    centre crops, 5-9 the same flipped horizontally (CNTK's ImageTransformers.cpp:132-156,
    285-325)."""

    TYPES = ("center", "randomside", "randomarea", "multiview10")
    ATTEMPTS = 10

    def __init__(self, config: Mapping) -> None:
        self.crop_type = to_choice(_get(config, "cropType", "center"), _opt("cropType", config), self.TYPES)
        w, h = to_pair(_get(config, "cropSize", 0), _opt("cropSize", config))
        if w < 0 or h < 0:
            raise ConfigError(f"cropSize must be >= 0, found {w}:{h}", path=_opt("cropSize", config))
        self.crop_size = (w, h) if w > 0 and h > 0 else None
        self.side_ratio = to_range(_get(config, "sideRatio", 0.0), _opt("sideRatio", config))
        self.area_ratio = to_range(_get(config, "areaRatio", 0.0), _opt("areaRatio", config))
        self.aspect_ratio = to_range(_get(config, "aspectRatio", 1.0), _opt("aspectRatio", config))
        self.jitter = to_choice(_get(config, "jitterType", "none"), _opt("jitterType", config),
                                ("none", "uniratio")) == "uniratio"
        self.use_side = self.side_ratio != (0.0, 0.0)
        self.use_area = self.area_ratio != (0.0, 0.0)
        for name, used, (lo, hi) in (("sideRatio", self.use_side, self.side_ratio),
                                     ("areaRatio", self.use_area, self.area_ratio)):
            if used and not (lo > 0 and hi <= 1):
                raise ConfigError(f"{name} must lie in (0, 1], found {lo}:{hi}", path=_opt(name, config))
        if self.use_side and self.use_area:
            raise ConfigError("sideRatio and areaRatio cannot be specified simultaneously",
                              path=_opt("areaRatio", config))
        if self.aspect_ratio[0] <= 0:
            raise ConfigError(f"aspectRatio must be > 0, found {self.aspect_ratio[0]}:{self.aspect_ratio[1]}",
                              path=_opt("aspectRatio", config))
        self.random_type = self.crop_type in ("randomside", "randomarea")
        if self.random_type and self.crop_size is None and not (self.use_side or self.use_area):
            raise ConfigError(f"cropType = {self.crop_type} needs cropSize, sideRatio or areaRatio",
                              path=_opt("cropType", config))
        hflip = to_bool(_get(config, "hflip", self.random_type), _opt("hflip", config))
        self.hflip = hflip and self.crop_type != "multiview10"
        ranges = [r for r, used in ((self.side_ratio, self.use_side), (self.area_ratio, self.use_area),
                                    (self.aspect_ratio, True)) if used]
        #: whether it draws random numbers (a position, a flip, a jittered ratio, an aspect coin)
        self.random = self.random_type or self.hflip or (self.crop_size is None and (
            (self.jitter and any(lo != hi for lo, hi in ranges)) or self.aspect_ratio != (1.0, 1.0)))

    def _ratio(self, lo: float, hi: float, rng) -> float:
        lo32, hi32 = float(np.float32(lo)), float(np.float32(hi))     # CNTK reads them as floats
        if not self.jitter or lo32 == hi32:
            return lo32
        return lo32 + (hi32 - lo32) * rng.random()

    def size(self, W: int, H: int, rng) -> tuple[int, int]:
        """The crop's ``(w, h)`` for a W x H image."""
        if self.crop_size is not None:
            return min(W, self.crop_size[0]), min(H, self.crop_size[1])
        for _ in range(self.ATTEMPTS):
            if self.use_side:
                w = h = _round_half_up(min(W, H) * self._ratio(*self.side_ratio, rng))
            elif self.use_area:
                w = h = _round_half_up(math.sqrt(W * H * self._ratio(*self.area_ratio, rng)))
            else:
                w, h = W, H
            aspect = self._ratio(*self.aspect_ratio, rng)
            if aspect != 1.0:
                area = w * h
                long, short = int(math.sqrt(area * aspect)), int(math.sqrt(area / aspect))
                w, h = (long, short) if rng.random() < 0.5 else (short, long)
            if w <= W and h <= H:
                return max(w, 1), max(h, 1)
        return W, H                                   # no fit in 10 draws: the whole image

    def geometry(self, W: int, H: int, rng) -> tuple[int, int, int, int]:
        """``(x0, y0, w, h)`` of the crop of a W x H image."""
        w, h = self.size(W, H, rng)
        if self.random_type:
            x0 = int(rng.integers(0, W - w + 1))
            y0 = int(rng.integers(0, H - h + 1))
        elif self.crop_type == "multiview10":
            x0, y0 = self.view_origin(W, H, w, h, 0)
        else:
            x0, y0 = (W - w) // 2, (H - h) // 2
        return x0, y0, w, h

    @staticmethod
    def view_origin(W: int, H: int, w: int, h: int, view: int) -> tuple[int, int]:
        """Where Multiview10's view ``view`` (0-9) of a w x h crop of a W x H image starts."""
        corner = view % 5
        if corner == 4:
            return (W - w) // 2, (H - h) // 2
        return (W - w if corner in (1, 3) else 0), (H - h if corner in (2, 3) else 0)

    def apply(self, img: np.ndarray, rng, view: int = 0) -> np.ndarray:
        """The crop of ``img`` (HWC); ``view``: Multiview10's view (see the class docstring)."""
        H, W = img.shape[:2]
        x0, y0, w, h = self.geometry(W, H, rng)
        view %= 10
        if self.crop_type == "multiview10":
            x0, y0 = self.view_origin(W, H, w, h, view)
        out = img[y0:y0 + h, x0:x0 + w]          # a view: the next transform reads it in place
        if (self.hflip and rng.random() < 0.5) or (self.crop_type == "multiview10" and view >= 5):
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

    random = False

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
    Per image (CNTK 2.7's rules): ``beta = U(-b, b) * mean(image)``, ``alpha = 1 + U(-c, c)``,
    ``x = clip(alpha * x + beta, 0, 255)``; then (3 channels) the HSV saturation times
    ``1 + U(-s, s)``, at most 1."""

    def __init__(self, config: Mapping) -> None:
        self.brightness = to_float(_get(config, "brightnessRadius", 0.0), _opt("brightnessRadius", config))
        self.contrast = to_float(_get(config, "contrastRadius", 0.0), _opt("contrastRadius", config))
        self.saturation = to_float(_get(config, "saturationRadius", 0.0), _opt("saturationRadius", config))
        for n, v in (("brightnessRadius", self.brightness), ("contrastRadius", self.contrast),
                     ("saturationRadius", self.saturation)):
            if not 0.0 <= v <= 1.0:
                raise ConfigError(f"{n} must lie in [0, 1], found {v}", path=_opt(n, config))
        self.random = self.brightness > 0 or self.contrast > 0 or self.saturation > 0

    def apply(self, img: np.ndarray, rng) -> np.ndarray:
        if not self.random:
            return img
        cv2 = cv2_module()
        img = np.ascontiguousarray(img, dtype=np.float32)
        if self.brightness > 0 or self.contrast > 0:
            beta = rng.uniform(-self.brightness, self.brightness) * float(img.mean()) if self.brightness > 0 \
                else 0.0
            alpha = 1.0 + rng.uniform(-self.contrast, self.contrast) if self.contrast > 0 else 1.0
            img = img * np.float32(alpha) + np.float32(beta)
            np.clip(img, 0, 255, out=img)
        if self.saturation > 0 and img.ndim == 3 and img.shape[2] == 3:
            ratio = np.float32(1.0 + rng.uniform(-self.saturation, self.saturation))
            hsv = cv2.cvtColor(img, cv2.COLOR_BGR2HSV)          # float: S in [0, 1], V as the input
            np.minimum(hsv[:, :, 1] * ratio, 1, out=hsv[:, :, 1])
            img = cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)
        return img


# --- Intensity ------------------------------------------------------------------------------

class Intensity:
    """``type = "Intensity"``: AlexNet's PCA lighting noise. ``intensityStdDev`` and
    ``intensityFile`` (OpenCV XML with ``EigVal`` 1x3 and ``EigVec`` 3x3, in RGB order): per image
    ``shift = EigVec @ (N(0, stdDev) * EigVal)`` (3 draws); a BGR pixel's channel c gets
    ``shift[2 - c]``, clipped to [0, 255]. Without a file or with stdDev 0 it does nothing (CNTK)."""

    def __init__(self, config: Mapping) -> None:
        self.std = to_float(_get(config, "intensityStdDev", 0.0), _opt("intensityStdDev", config))
        path = _get(config, "intensityFile")
        self.eigval = self.eigvec = None
        if path is not None and str(path) != "":
            file = to_str(path, _opt("intensityFile", config))
            m = read_opencv_matrices(file, ("EigVal", "EigVec"), "intensityFile")
            self.eigval = np.asarray(m["EigVal"], np.float32)
            self.eigvec = np.asarray(m["EigVec"], np.float32)
            if self.eigval.shape != (1, 3) or self.eigvec.shape != (3, 3):
                raise FormatError(f"Invalid EigVal/EigVec data in file: {file} (expected 1x3 and 3x3, found "
                                  f"{'x'.join(map(str, self.eigval.shape))} and "
                                  f"{'x'.join(map(str, self.eigvec.shape))})", file=file)
            self.eigval = self.eigval.reshape(3)
        self.random = self.eigval is not None and self.std != 0.0

    def apply(self, img: np.ndarray, rng) -> np.ndarray:
        if not self.random:
            return img
        alphas = (rng.normal(0.0, self.std, 3).astype(np.float32) * self.eigval).astype(np.float32)
        shift = self.eigvec @ alphas
        c = img.shape[2] if img.ndim == 3 else 1
        per_channel = np.array([shift[c - k - 1] for k in range(c)], np.float32) if c <= 3 else None
        if per_channel is None:
            raise ValueError(f"Intensity: an image of {c} channels (1 to 3 expected)")
        out = img.astype(np.float32) + per_channel
        return np.clip(out, 0, 255, out=out)


# --- Transpose ------------------------------------------------------------------------------

class Transpose:
    """``type = "Transpose"``: HWC to CHW. The image deserializer always delivers CHW (CNTK's
    Python API appends this transform itself); listed in a config, it marks that layout."""

    random = False

    def __init__(self, config: Mapping | None = None) -> None:
        pass

    def apply(self, img: np.ndarray, rng) -> np.ndarray:
        return img




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
