"""Image deserializers: ``ImageDeserializer`` (a map file of image paths, plain files or members of
zip archives) and ``Base64ImageDeserializer`` (images as base64 text in the map file), with the
transforms of :mod:`cntkio.transforms`. ``docs/images.md`` describes the formats and options.

``ImageDeserializer(filename, streams)`` and ``Base64ImageDeserializer(filename, streams)`` are
cntk.io's factories: they return the deserializer's config dict (``{'type': 'ImageDeserializer',
'file': ..., 'input': {features: {'transforms': [...]}, labels: {'labelDim': n}}}``), with cntk.io's
methods ``map_features``, ``map_labels``, ``ignore_labels`` and the static transform functions
``crop``, ``scale``, ``mean``, ``color``. As cntk.io, the Python API appends a Transpose (the
image stream is CHW); a config file lists it itself.
"""
from __future__ import annotations

from typing import Any, Mapping

from ... import transforms as _t
from .b64 import Base64ImageDataDeserializer
from .deserializer import ImageDataDeserializer, legacy_stream_names

__all__ = ["ImageDeserializer", "Base64ImageDeserializer", "ImageDataDeserializer",
           "Base64ImageDataDeserializer", "build_image", "build_base64"]


class _ImageRecord(dict):
    """The config dict of an image deserializer, with cntk.io's methods."""

    TYPE = "ImageDeserializer"
    crop = staticmethod(_t.crop)
    scale = staticmethod(_t.scale)
    mean = staticmethod(_t.mean)
    color = staticmethod(_t.color)

    def __init__(self, filename: str, streams: Mapping[str, Any] | None = None, *,
                 channel_order: str = "bgr", grayscale: bool = False, seed: int | None = None,
                 dtype: str = "float") -> None:
        super().__init__(type=self.TYPE, file=filename, input={})
        if dtype != "float":
            self["elementType"] = dtype
        if channel_order != "bgr":
            self["channelOrder"] = channel_order
        if grayscale:
            self["grayscale"] = True
        if seed is not None:
            self["seed"] = seed
        for name, s in (streams or {}).items():
            field = s.get("stream_alias") if isinstance(s, Mapping) else None
            if field == "image":
                self.map_features(name, s.get("transforms") or [])
            elif field == "label":
                dim = s.get("dim")
                if dim is None:
                    raise ValueError(f"{self.TYPE}: the label stream {name!r} needs shape=<number of classes>")
                self.map_labels(name, dim)
            else:
                raise ValueError(f"{self.TYPE}: stream {name!r} has field {field!r}; the fields of an image "
                                 "map are 'image' and 'label'")

    def map_features(self, node: str, transforms: Any = ()) -> "_ImageRecord":
        """The image stream ``node`` through ``transforms`` (a Transpose to CHW is appended)."""
        chain = [dict(t) for t in (transforms or [])]
        if not any(str(t.get("type", "")).lower() == "transpose" for t in chain):
            chain.append({"type": "Transpose"})
        self["input"][node] = {"transforms": chain}
        return self

    def map_labels(self, node: str, num_classes: int) -> "_ImageRecord":
        """The label stream ``node``: one-hot of ``num_classes``."""
        self["input"][node] = {"labelDim": num_classes}
        return self

    def ignore_labels(self) -> "_ImageRecord":
        """Deliver no label stream (the map's label column is still read)."""
        for k in [k for k, v in self["input"].items() if "labelDim" in v]:
            del self["input"][k]
        return self


class ImageDeserializer(_ImageRecord):
    """cntk.io's ``ImageDeserializer(filename, streams=None)``: lines ``path<TAB>label`` or
    ``key<TAB>path<TAB>label``; paths may name ``archive.zip@/inner/path``. Streams:
    ``StreamDef(field='image', transforms=[...])`` and ``StreamDef(field='label', shape=n)``.
    cntkio's keywords: ``channel_order='rgb'``, ``grayscale=True``, ``seed`` (random transforms;
    default: the source's ``randomization_seed``),
    ``dtype='uint8'`` (the pixels as bytes; no Mean, Color or Intensity)."""

    TYPE = "ImageDeserializer"


class Base64ImageDeserializer(_ImageRecord):
    """cntk.io's ``Base64ImageDeserializer(filename, streams=None)``: lines
    ``[key<TAB>]label<TAB>base64``; otherwise as :class:`ImageDeserializer`."""

    TYPE = "Base64ImageDeserializer"


def build_image(config: Mapping, **source_options: Any) -> ImageDataDeserializer:
    """The registry's factory of ``ImageDeserializer``."""
    return ImageDataDeserializer(config, **source_options)


def build_base64(config: Mapping, **source_options: Any) -> Base64ImageDataDeserializer:
    """The registry's factory of ``Base64ImageDeserializer``."""
    return Base64ImageDataDeserializer(config, **source_options)


build_image.supports_transforms = True
#: the streams of a legacy ImageReader section, for the reader factory (ImageReader has no input = [...])
build_image.legacy_stream_names = legacy_stream_names
build_base64.supports_transforms = True
