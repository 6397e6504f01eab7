"""ImageDeserializer (and what the Base64ImageDeserializer of ``b64.py`` shares with it): labelled
images through a chain of transforms.

One image stream (dense float32, ``(C, H, W)`` with a Transpose, else ``(H, W, C)``; BGR unless
``channelOrder = rgb``) and at most one label stream (sparse one-hot of ``labelDim``) per
deserializer, as CNTK 2.7. Images are decoded with OpenCV and transformed on the engine's loader
threads (OpenCV releases the GIL): the ImageDeserializer gives each image a chunk of its own, as
CNTK does (so a randomized sweep visits images in CNTK's order), the Base64ImageDeserializer
chunks its lines like CTF.

An image that cannot be read, decoded or transformed makes its sequence invalid: it is logged
(naming the map file, the line and the reason), counted against the source's ``max_errors`` and
quoted by the error that ends the read when they exceed it. An image whose shape after the
transforms differs from the stream's (no Scale last to unify them) is CNTK's packer error, a
:class:`~cntkio.errors.DataError` naming the stream, both shapes, the map line and the image.
Sequence keys are unsigned 64-bit numbers, or strings with ``useNumericSequenceKeys = false``.
With ``multiViewCrop = true`` (or a legacy ImageReader section with ``cropType = Multiview10``)
every image is ten sequences, copy ``k`` cropped by view ``k`` (CNTK's ImageDataDeserializer.cpp:150
and 213).

Random transforms draw from ``numpy.random.default_rng([seed, sweep, position, stream])`` per
sequence (``position`` = its index in the map, ``seed`` = the deserializer's ``seed`` option when
it sets one, else the source's ``randomizationSeed``, the ``randomization_seed`` source option), so
every run, thread count and checkpoint restore sees the same pixels (docs/images.md). With a
random transform the deserializer declares that its chunks depend on the sweep
(``depends_on_sweep``): the engine then loads an image again in every sweep, passing the sweep, so
every sweep draws a new augmentation.
"""
from __future__ import annotations

import os
import threading
import zipfile
import zlib
from typing import Any, Mapping

import numpy as np
import numpy.random  # noqa: F401 (imported with the module: on first use it took 20-40 ms of the first image's load)

from ..._log import get_logger
from ...constants import DEFAULT_CHUNK_SIZE_IN_BYTES
from ...errors import ConfigError, DataError, FormatError
from ...remote import is_remote, remote_options
from ...registry import build_transform
from ...streams import StreamInformation
from ...transforms.ops import Transpose, cv2_module
from ...values import local_path, to_bool, to_choice, to_int, to_str
from ..base import DeserializerBase
from ..protocol import ChunkData, ChunkInfo, DenseStream, SequenceTable, SparseStream
from . import remote as remote_image
from .mapfile import check_zip_members, parse_image_map, resolve_path, shown

__all__ = ["ImageCore", "ImageDataDeserializer", "ImageConfig", "parse_config", "legacy_stream_names"]

_log = get_logger("deserializers.image")

#: files below this size are read into a buffer each loader thread keeps (larger ones: fresh memory)
_REUSED_READ_BYTES = 16 << 20


def _get(config: Mapping, key: str, default: Any = None) -> Any:
    for k, v in config.items():
        if str(k).lower() == key.lower():
            return v
    return default


class ImageConfig:
    """The options of an image deserializer, from a Python or config-file dict (either form:
    ``input = {name: {transforms | labelDim}}``, or the legacy ImageReader section whose
    ``features`` and ``labels`` subsections hold the transform options)."""

    def __init__(self, config: Mapping, randomization_seed: int = 0) -> None:
        self.type = str(config.get("type", "ImageDeserializer"))
        file = _get(config, "file")
        if file is None:
            raise ConfigError(f"{self.type}: the map file is not given (file = ...)", path="file")
        self.file = local_path(to_str(file, "file"))
        self.grayscale = to_bool(_get(config, "grayscale", False), "grayscale")
        self.channel_order = to_choice(_get(config, "channelOrder", "bgr"), "channelOrder", ("bgr", "rgb"))
        # the random transforms' seed: the deserializer's own ``seed`` when it sets one, else the
        # source's randomizationSeed (docs/images.md, "Random transforms are reproducible")
        seed = _get(config, "seed")
        self.seed = to_int(seed, "seed", minimum=0) if seed is not None else \
            to_int(randomization_seed, "randomizationSeed", minimum=0)
        self.chunk_size = to_int(_get(config, "chunkSizeInBytes", DEFAULT_CHUNK_SIZE_IN_BYTES),
                                 "chunkSizeInBytes", minimum=1)
        # keys: unsigned 64-bit numbers, or (useNumericSequenceKeys = false, CNTK's corpus option)
        # strings: the first column as written, or the line number for a 2-column map
        self.numeric_keys = to_bool(_get(config, "useNumericSequenceKeys", True), "useNumericSequenceKeys")
        self.multiview = to_bool(_get(config, "multiViewCrop", False), "multiViewCrop")
        precision = to_choice(_get(config, "precision", "float"), "precision", ("float", "double"))
        self.dtype = np.float32 if precision == "float" else np.float64
        self.label_dtype = self.dtype
        # cntkio's extension: elementType = uint8 delivers the pixels as bytes (a quarter of the
        # memory and of the copy to a GPU; normalise there)
        if to_choice(_get(config, "elementType", "float"), "elementType", ("float", "uint8")) == "uint8":
            self.dtype = np.uint8
        inputs = _get(config, "input")
        legacy = inputs is None
        if legacy:                              # readerType = ImageReader
            inputs = _legacy_inputs(config)
        features, labels = [], []
        for name, spec in dict(inputs).items():
            spec = dict(spec or {})
            dim = _get(spec, "labelDim", _get(spec, "labelDimension"))
            if dim is not None:
                labels.append((name, to_int(dim, f"input.{name}.labelDim", minimum=1)))
            else:
                features.append((name, list(_get(spec, "transforms", []) or [])))
        if len(features) != 1 or len(labels) > 1:
            raise ConfigError(f"Please specify a single feature and label stream. '{len(features)}' features , "
                              f"'{len(labels)}' labels found.", path="input")
        self.image_name, raw = features[0]
        self.label_name, self.label_dim = labels[0] if labels else (None, None)
        self.transforms = []
        for i, t in enumerate(raw):
            if not isinstance(t, Mapping):
                raise ConfigError(f"expected a transform {{'type': ...}}, found {t!r}",
                                  path=f"input.{self.image_name}.transforms[{i}]")
            self.transforms.append(build_transform(t))
        self.chw = any(isinstance(t, Transpose) for t in self.transforms)
        for i, t in enumerate(self.transforms):
            if isinstance(t, Transpose) and i != len(self.transforms) - 1:
                raise ConfigError("Transpose must be the last transform", path=f"input.{self.image_name}.transforms")
        self.transforms = [t for t in self.transforms if not isinstance(t, Transpose)]
        crops = [t for t in self.transforms if type(t).__name__ == "Crop"]
        if legacy and any(t.crop_type == "multiview10" for t in crops):
            self.multiview = True               # the ImageReader made ten copies (ImageConfigHelper.h:67)
        self.random = any(getattr(t, "random", False) for t in self.transforms)
        floats = [type(t).__name__ for t in self.transforms if type(t).__name__ in ("Mean", "Color", "Intensity")]
        if self.dtype == np.uint8 and floats:
            raise ConfigError(f"elementType = uint8 delivers the decoded bytes, but {floats[0]} makes floats: "
                              "remove it or deliver floats", path="elementType")
        # a Mean last in the chain is fused with the HWC -> CHW copy (one pass, OpenCV, no GIL)
        self.tail_mean = self.transforms.pop() if self.transforms and type(self.transforms[-1]).__name__ == "Mean" \
            else None
        # the stream's shape is the last Scale's, unless a Crop follows it: then, as without a Scale,
        # the shape is unknown until an image is read (CNTK's CropTransformer sets the layout to
        # Unknown, ImageTransformers.cpp:120-126), and every image must come out in the first one's
        kinds = [type(t).__name__ for t in self.transforms]
        last_scale = max((i for i, k in enumerate(kinds) if k == "Scale"), default=-1)
        self.declared = None
        if last_scale >= 0 and "Crop" not in kinds[last_scale + 1:]:
            t = self.transforms[last_scale]
            self.declared = (t.height, t.width, t.channels)


def legacy_stream_names(config: Mapping) -> list[str]:
    """The streams a legacy ``readerType = ImageReader`` section delivers (:func:`_legacy_inputs`'s
    rule, without building a transform): the sub-sections with ``labelDim`` or ``width``."""
    return [name for name, sec in config.items() if isinstance(sec, Mapping) and any(
        _get(sec, k) is not None for k in ("labelDim", "labelDimension", "width"))]


def _legacy_inputs(config: Mapping) -> dict:
    """The legacy ``readerType = ImageReader`` section: the subsection with ``labelDim`` is the
    labels, the one with ``width`` the features, whose keys configure Crop, Scale, Color, Intensity
    and Mean at once, in that order (as CNTK's ImageReader did), then Transpose unless
    ``imageLayout`` is ``legacy`` (HWC)."""
    out: dict = {}
    for name, sec in config.items():
        if not isinstance(sec, Mapping):
            continue
        if _get(sec, "labelDim") is not None or _get(sec, "labelDimension") is not None:
            out[name] = {"labelDim": _get(sec, "labelDim", _get(sec, "labelDimension"))}
        elif _get(sec, "width") is not None:
            chain: list[dict] = []
            crop = {k: v for k, v in sec.items() if str(k).lower() in
                    ("croptype", "cropsize", "sideratio", "cropratio", "arearatio", "aspectratio",
                     "jittertype", "hflip")}
            if crop:
                if _get(crop, "cropRatio") is not None and _get(crop, "sideRatio") is None:
                    crop["sideRatio"] = crop.pop(next(k for k in crop if str(k).lower() == "cropratio"))
                chain.append({"type": "Crop", **crop})
            chain.append({"type": "Scale", **{k: v for k, v in sec.items() if str(k).lower() in
                                              ("width", "height", "channels", "interpolations",
                                               "scalemode", "padvalue")}})
            color = {k: v for k, v in sec.items() if str(k).lower() in
                     ("brightnessradius", "contrastradius", "saturationradius")}
            if color:
                chain.append({"type": "Color", **color})
            if _get(sec, "intensityStdDev") is not None:
                chain.append({"type": "Intensity", "intensityStdDev": _get(sec, "intensityStdDev"),
                              "intensityFile": _get(sec, "intensityFile")})
            if _get(sec, "meanFile"):
                chain.append({"type": "Mean", "meanFile": _get(sec, "meanFile")})
            # CNTK's order: Crop, Scale, Color, Intensity, Mean, then Transpose unless the
            # layout is HWC (imageLayout = legacy)
            if str(_get(sec, "imageLayout", "cudnn")).lower() not in ("legacy", "hwc"):
                chain.append({"type": "Transpose"})
            out[name] = {"transforms": chain}
    return out


parse_config = ImageConfig


class ImageCore(DeserializerBase):
    """What both image deserializers share: decoding, the transform chain, the streams."""

    key_kind = "numeric"

    def __init__(self, config: Mapping, trace_level: int = 1, **source_options: Any) -> None:
        self.cfg = ImageConfig(config, source_options.get("randomization_seed", 0))
        self.map_file = self.cfg.file
        self.map_dir = os.path.dirname(self.map_file if is_remote(self.map_file) else os.path.abspath(self.map_file))
        self._remote_options = remote_options(config)     # for URLs (the map's, its images')
        self._cv2 = cv2_module()
        self._zips = threading.local()
        self._all_zips: list = []           # every thread's open archives, closed by close()
        self._zips_lock = threading.Lock()

    # --- decoding and transforms -----------------------------------------------------------
    def _decode(self, data: np.ndarray) -> np.ndarray | None:
        cv2 = self._cv2
        if self.cfg.grayscale:        # as CNTK: the decoder's own gray conversion (libjpeg's for JPEG)
            img = cv2.imdecode(data, cv2.IMREAD_GRAYSCALE | cv2.IMREAD_IGNORE_ORIENTATION)
            return None if img is None else img[:, :, None]
        return cv2.imdecode(data, cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)

    def depends_on_sweep(self) -> bool:
        """With a random transform, an image's pixels depend on the sweep that reads it
        (:class:`~cntkio.deserializers.protocol.SweepDependentDeserializer`)."""
        return bool(self.cfg.random)

    def _rng(self, position: int, sweep: int = 0):
        return np.random.default_rng([self.cfg.seed, sweep, int(position), 0]) if self.cfg.random else None

    def _transform(self, img: np.ndarray, position: int, sweep: int = 0, view: int = 0) -> np.ndarray:
        rng = self._rng(position, sweep)
        for t in self.cfg.transforms:
            img = t.apply(img, rng, view) if view and type(t).__name__ == "Crop" else t.apply(img, rng)
            if img.ndim == 2:
                img = img[:, :, None]
        return img

    def _layout(self, img: np.ndarray, out: np.ndarray) -> None:
        """Write an HWC image into one output sample (the declared shape), as CNTK: the buffer is
        read as H x W x C of the declared shape (channels are not converted). A Mean last in the
        chain is subtracted here, in the same pass when the shapes allow it."""
        H, W, C = self._hwc
        mean = self.cfg.tail_mean
        if mean is not None:
            if (mean.mean is not None and img.shape == mean.mean.shape == (H, W, C) and self.cfg.chw
                    and self.cfg.channel_order == "bgr" and img.dtype == np.uint8):
                cv2 = self._cv2
                planes = cv2.split(img) if C > 1 else [img[:, :, 0]]
                for k in range(C):
                    cv2.subtract(planes[k], self._mean_chw[k], dst=out[k], dtype=cv2.CV_32F)
                return
            img = mean.apply(img, None)
        flat = img.reshape(-1)
        if self.cfg.declared is None and img.shape != (H, W, C):
            raise DataError(
                "Packer currently does not support samples with varying shapes.Please make sure there is a "
                "transform that unifies the shape of samples for input stream "
                f"'{self.cfg.image_name}' or the deserializer provides samples with the same shape. The image "
                f"is {'x'.join(map(str, img.shape))} (HxWxC) after the transforms; the stream's samples are "
                f"{H}x{W}x{C}, the first image's shape (a Scale transform last makes them one)")
        if flat.size < H * W * C:
            raise ValueError(f"the image is {'x'.join(map(str, img.shape))} (HxWxC) after the transforms, "
                             f"the stream is {H}x{W}x{C}; images of different sizes need a Scale transform")
        hwc = flat[:H * W * C].reshape(H, W, C)
        if self.cfg.channel_order == "rgb" and C == 3:
            hwc = hwc[:, :, ::-1]
        if self.cfg.chw:
            out[...] = hwc.transpose(2, 0, 1)
        else:
            out[...] = hwc

    def _set_shape(self, first: np.ndarray | None) -> None:
        if self.cfg.declared is not None:
            self._hwc = self.cfg.declared
        else:
            self._hwc = tuple(int(s) for s in first.shape)
        H, W, C = self._hwc
        shape = (C, H, W) if self.cfg.chw else (H, W, C)
        self._streams = [StreamInformation(self.cfg.image_name, 0, "dense", self.cfg.dtype, shape)]
        if self.cfg.label_name is not None:
            self._streams.append(StreamInformation(self.cfg.label_name, 1, "sparse", self.cfg.label_dtype,
                                                   (self.cfg.label_dim,)))
        self._sample_shape = shape
        m = self.cfg.tail_mean
        self._mean_chw = np.ascontiguousarray(m.mean.transpose(2, 0, 1)) if m is not None and m.mean is not None \
            else None

    def stream_infos(self) -> list[StreamInformation]:
        return list(self._streams)

    def _where(self, line: int, key: Any) -> str:
        """``map:line: key K: stream 'name'`` (``line`` 0-based, as CNTK counts; shown 1-based)."""
        return f"{shown(self.map_file)}:{int(line) + 1}: key {key}: stream '{self.cfg.image_name}'"

    def _pack(self, keys: np.ndarray, labels: np.ndarray, images: list, where: list) -> ChunkData:
        """A chunk from decoded images (None = failed, with ``where[i]`` the message naming the map
        line, the key, the stream and the cause)."""
        n = len(images)
        values = np.empty((n,) + self._sample_shape, self.cfg.dtype)    # every row is written below
        invalid = np.zeros(n, bool)
        reasons: dict[int, str] = {}
        for i, img in enumerate(images):
            if img is not None:
                try:
                    self._layout(img, values[i])
                    continue
                except DataError as e:
                    err = DataError(f"{where[i]}: {e.reason}")    # where: the map file and line, the key
                    err.file = self.map_file
                    raise err from e
                except ValueError as e:
                    where[i] = f"{where[i]}: {e}"
            invalid[i] = True
            values[i] = 0
            reasons[i] = where[i]
            _log.warning("sequence skipped (counted against max_errors): %s", where[i])
        return self._chunk_data(keys, labels, values, invalid if invalid.any() else None, reasons or None)

    def _chunk_data(self, keys: np.ndarray, labels: np.ndarray, values: np.ndarray,
                    invalid: np.ndarray | None, reasons: dict | None = None) -> ChunkData:
        n = len(keys)
        offsets = np.arange(n + 1, dtype=np.int64)
        streams: dict = {self.cfg.image_name: DenseStream(values, offsets)}
        if self.cfg.label_name is not None:
            streams[self.cfg.label_name] = SparseStream(
                offsets.copy(), labels.astype(np.int32), np.ones(n, self.cfg.label_dtype), offsets.copy(),
                self.cfg.label_dim)
        return ChunkData(SequenceTable(keys, np.ones(n, np.int64)), streams, invalid, None, reasons)


class ImageDataDeserializer(ImageCore):
    """``type = "ImageDeserializer"``: images listed in a map file (module docstring)."""

    def __init__(self, config: Mapping, trace_level: int = 1, **source_options: Any) -> None:
        super().__init__(config, trace_level, **source_options)
        m = parse_image_map(self.map_file, self.cfg.label_dim, self.cfg.numeric_keys, config)
        self.key_kind = "numeric" if self.cfg.numeric_keys else "string"
        self.keys, self.labels, self.lines = m.keys, m.labels, m.lines
        # paths are resolved on an image's first read, on the loader threads (a relative one costs
        # a stat), against the working directory of now; the members of zip archives are checked now
        self._cwd = os.getcwd()
        self.paths: list = [None] * len(m.paths)
        self._written = m.paths
        check_zip_members(self.map_file, m.paths, m.lines, self.map_dir, self._cwd, self._remote_options)
        # multiViewCrop: every image is ten sequences (copies 0-9, one chunk each), as CNTK
        self.copies = 10 if self.cfg.multiview else 1
        self._chunks = [ChunkInfo(i, 1, 1) for i in range(len(self.paths) * self.copies)]
        self._ones = np.ones(len(self._chunks), np.int64)     # every image is one sample (read-only views)
        self._ones.flags.writeable = False
        first = None
        if self.cfg.declared is None:           # no Scale last: the first image gives the stream's shape
            first, why = self._load(0)
            if first is None:
                raise FormatError(f"the first image of the map cannot be read, and without a Scale "
                                  f"transform last it gives the image stream's shape: {why}",
                                  file=self.map_file, line=int(self.lines[0]) + 1)
        self._set_shape(first)

    def _read(self, path: str) -> np.ndarray:
        """The file's bytes; a plain file is read into this thread's reused buffer (valid until
        the thread's next read: the decoder copies what it needs), so that an image costs no
        fresh pages (page faults and zeroing) for its bytes."""
        arch, sep, inner = path.partition(".zip@")
        if is_remote(path):
            return remote_image.read(path, self._remote_options, self._zips, self._zips_lock, self._all_zips)
        if not sep:
            local = self._zips
            with open(path, "rb", buffering=0) as f:
                size = os.fstat(f.fileno()).st_size
                if size < _REUSED_READ_BYTES:      # a larger file gets memory of its own (not kept)
                    buf = getattr(local, "buf", None)
                    if buf is None or buf.size <= size:
                        buf = local.buf = np.empty(min(max(2 * size + 1, 1 << 20), _REUSED_READ_BYTES), np.uint8)
                    n = f.readinto(buf[:size + 1])      # one byte more: a file that grew is read whole below
                    if n <= size:
                        return buf[:n]
            return np.fromfile(path, np.uint8)
        zips = self._zips.__dict__.setdefault("open", {})
        z = zips.get(arch)
        if z is None:
            z = zips[arch] = zipfile.ZipFile(arch + ".zip")
            with self._zips_lock:
                self._all_zips.append(z)
        return np.frombuffer(z.read(inner.lstrip("/")), np.uint8)

    def _load(self, chunk: int, sweep: int = 0):
        """The image of chunk ``chunk`` (map entry ``chunk // copies``, view ``chunk % copies``)
        decoded and transformed, or ``(None, why)``; ``why`` names the map line, the key, the
        stream, the image and the cause."""
        i, view = divmod(chunk, self.copies)
        written = shown(self._written[i])
        where = f"{self._where(self.lines[i], self.keys[i])}: image '{written}'"
        try:
            path = self.paths[i]
            if path is None:
                path = self.paths[i] = resolve_path(self._written[i], self.map_dir, self._cwd)
            data = self._read(path)
        except (OSError, KeyError, zipfile.BadZipFile, EOFError, zlib.error) as e:
            # (EOFError, zlib.error: a zip archive cut short or damaged under the reader)
            return None, f"{where}: Cannot open file '{written}' ({type(e).__name__}: {shown(str(e))})"
        try:
            img = self._decode(data) if data.size else None
        except self._cv2.error as e:            # e.g. a header claiming a huge size
            return None, f"{where}: cannot decode the image: {str(e).strip()}"
        if img is None:
            return None, f"{where}: cannot decode '{written}' as an image"
        try:
            return self._transform(img, chunk, sweep, view), where
        except (ValueError, self._cv2.error) as e:
            return None, f"{where}: {e}"

    def chunk_infos(self) -> list[ChunkInfo]:
        return self._chunks

    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        i = chunk_id // self.copies
        return SequenceTable(self.keys[i:i + 1], self._ones[chunk_id:chunk_id + 1])

    def get_chunk(self, chunk_id: int, sweep: int = 0) -> ChunkData:
        """Image ``chunk_id`` (one per chunk) as sweep ``sweep`` reads it (it seeds the random
        transforms)."""
        img, where = self._load(chunk_id, sweep)
        i = chunk_id // self.copies
        return self._pack(self.keys[i:i + 1], self.labels[i:i + 1], [img], [where])

    def close(self) -> None:
        """Close the zip archives every loader thread opened."""
        with self._zips_lock:
            opened, self._all_zips = self._all_zips, []
        for z in opened:
            z.close()
        self._zips = threading.local()
