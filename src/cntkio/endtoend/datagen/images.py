"""Image data for image reader sections: a map file, the images it names, mean and intensity files.

What it must never do: make images of another size or channel count than the reader's settings
give (``width``/``height``/``channels`` of the legacy reader, the ``Scale`` transform of the
deserializer), or labels outside ``labelDim``.

* ``readerType = ImageReader``: ``file`` (the map), the feature section's ``width``, ``height``,
  ``channels`` and ``meanFile``, the label section's ``labelDim``;
* ``type = ImageDeserializer``: ``file``; the image size from the ``Scale`` transform (else
  ``DataShape.options["image"] = (width, height, channels)``, else 32x32x3); a ``Mean``
  transform's ``meanFile`` and an ``Intensity`` transform's ``intensityFile``;
* ``type = Base64ImageDeserializer``: the same, the images base64 PNG inside the map.

Images are PNG files (lossless, so a test may compare pixels) in a folder beside the map file;
the map names them by absolute path.
"""
from __future__ import annotations

import base64
import os

import numpy as np

from .sandbox import Sandbox

__all__ = ["legacy", "deserializer", "base64_deserializer", "write_mean_file", "write_intensity_file"]

_DEFAULT = (32, 32, 3)


def _cv2():
    from ...transforms.ops import cv2_module
    return cv2_module()


def _image(rng: np.random.Generator, size: tuple[int, int, int], label: int) -> np.ndarray:
    """A ``height x width x channels`` uint8 image whose mean brightness follows its label."""
    w, h, c = size
    base = rng.integers(0, 256, size=(h, w, c), dtype=np.int64)
    return ((base + 37 * label) % 256).astype(np.uint8)


def _png(img: np.ndarray) -> bytes:
    ok, buf = _cv2().imencode(".png", img)
    if not ok:      # pragma: no cover - OpenCV encodes any uint8 array
        raise RuntimeError("OpenCV could not encode a PNG")
    return buf.tobytes()


def write_mean_file(box: Sandbox, path: str, size: tuple[int, int, int]) -> str:
    """An OpenCV XML storage with ``Channel``, ``Row``, ``Col`` and ``MeanImg`` (CNTK's mean file)."""
    w, h, c = size
    values = " ".join(f"{v:.2f}" for v in box.rng.uniform(100, 150, size=w * h * c))
    text = ('<?xml version="1.0" ?>\n<opencv_storage>\n'
            f"<Channel>{c}</Channel>\n<Row>{h}</Row>\n<Col>{w}</Col>\n"
            f'<MeanImg type_id="opencv-matrix">\n  <rows>1</rows>\n  <cols>{w * h * c}</cols>\n'
            f"  <dt>f</dt>\n  <data>{values}</data>\n</MeanImg>\n</opencv_storage>\n")
    return box.write_text(path, text)


def write_intensity_file(box: Sandbox, path: str) -> str:
    """An OpenCV XML storage with ``EigVal`` (1x3) and ``EigVec`` (3x3): the Intensity transform's PCA."""
    val = " ".join(f"{v:.4f}" for v in (0.2175, 0.0188, 0.0045))
    vec = " ".join(f"{v:.4f}" for v in (-0.5675, 0.7192, 0.4009, -0.5808, -0.0045, -0.8140, -0.5836, -0.6948, 0.4203))
    text = ('<?xml version="1.0" ?>\n<opencv_storage>\n'
            f'<EigVal type_id="opencv-matrix">\n  <rows>1</rows>\n  <cols>3</cols>\n  <dt>f</dt>\n  <data>{val}</data>'
            f'</EigVal>\n<EigVec type_id="opencv-matrix">\n  <rows>3</rows>\n  <cols>3</cols>\n  <dt>f</dt>\n'
            f"  <data>{vec}</data></EigVec>\n</opencv_storage>\n")
    return box.write_text(path, text)


def _write_set(box: Sandbox, map_path: str, size: tuple[int, int, int], classes: int, count: int,
               *, as_base64: bool = False) -> None:
    folder = os.path.splitext(map_path)[0] + "_images"
    lines = []
    for i in range(count):
        label = i % max(1, classes)
        data = _png(_image(box.rng, size, label))
        if as_base64:
            lines.append(f"{i}\t{label}\t{base64.b64encode(data).decode('ascii')}")
        else:
            path = box.write_bytes(os.path.join(folder, f"{i:05d}.png"), data)
            lines.append(f"{path}\t{label}")
    box.write_text(map_path, "\n".join(lines) + "\n")


def _size(width, height, channels, default=_DEFAULT) -> tuple[int, int, int]:
    return (int(width or default[0]), int(height or default[1]), int(channels or default[2]))


def legacy(box: Sandbox, reader, shape_of) -> None:
    """``readerType = ImageReader``: the section with ``width`` holds the features, the one with
    ``labelDim`` the labels."""
    features = labels = None
    for name in reader.keys():
        sub = reader.raw(name, inherit=False)
        if not isinstance(sub, dict):
            continue
        s = reader.section(name)
        if s.has_local("width"):
            features = s
        elif s.has_local("labelDim"):
            labels = s
    map_path = box.path(reader.str("file"), reader.key_path("file"))
    size = _size(*(features.int(k, None, inherit=False) for k in ("width", "height", "channels"))) \
        if features is not None else _DEFAULT
    if features is not None and features.has_local("meanFile"):
        mean = box.path(features.str("meanFile"), features.key_path("meanFile"))
        if box.claim(mean, "image mean"):
            write_mean_file(box, mean, size)
    if box.claim(map_path, "image map"):
        classes = labels.int("labelDim", 2, inherit=False) if labels is not None else 2
        _write_set(box, map_path, size, classes, shape_of(map_path).sequences)


def _transform_files(box: Sandbox, features) -> tuple[int, int, int]:
    """The image size the deserializer's transforms give, writing the mean and intensity files
    they name."""
    size = None
    if not features.has_local("transforms"):
        return _DEFAULT
    transforms = [t for t in features.elements("transforms") if hasattr(t, "str")]
    for t in transforms:
        if str(t.str("type", "", inherit=False)).lower() == "scale":
            size = _size(t.int("width", None, inherit=False), t.int("height", None, inherit=False),
                         t.int("channels", None, inherit=False))
    size = size or _DEFAULT
    for t in transforms:
        kind = str(t.str("type", "", inherit=False)).lower()
        if kind == "mean" and t.has_local("meanFile"):
            path = box.path(t.str("meanFile"), t.key_path("meanFile"))
            if box.claim(path, "image mean"):
                write_mean_file(box, path, size)
        elif kind == "intensity" and t.has_local("intensityFile"):
            path = box.path(t.str("intensityFile"), t.key_path("intensityFile"))
            if box.claim(path, "image intensity"):
                write_intensity_file(box, path)
    return size


def _deserializer(box: Sandbox, sec, shape_of, as_base64: bool) -> None:
    map_path = box.path(sec.str("file"), sec.key_path("file"))
    inputs = sec.section("input")
    size, classes = _DEFAULT, 2
    for name in inputs.keys():
        s = inputs.section(name)
        if s.has_local("labelDim") or s.has_local("dim") and not s.has_local("transforms"):
            classes = s.int("labelDim" if s.has_local("labelDim") else "dim", inherit=False)
        else:
            size = _transform_files(box, s)
    option = shape_of(map_path).option("image")
    if option is not None:
        size = tuple(int(v) for v in option)
    if box.claim(map_path, "image map"):
        _write_set(box, map_path, size, classes, shape_of(map_path).sequences, as_base64=as_base64)


def deserializer(box: Sandbox, sec, shape_of) -> None:
    """``type = ImageDeserializer``."""
    _deserializer(box, sec, shape_of, False)


def base64_deserializer(box: Sandbox, sec, shape_of) -> None:
    """``type = Base64ImageDeserializer``."""
    _deserializer(box, sec, shape_of, True)
