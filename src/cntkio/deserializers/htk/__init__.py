"""Speech data: HTK feature files listed in SCP files, and frame labels in HTK master label files.

* :class:`HTKFeatureDeserializer` (config type ``HTKFeatureDeserializer``): features, by memory
  map, with context windows; :mod:`.features`.
* :class:`HTKMLFDeserializer` (config type ``HTKMLFDeserializer``): labels from MLF files through
  a state list; :mod:`.labels`.
* :class:`HTKMLFBinaryDeserializer` (config type ``HTKMLFBinaryDeserializer``): the same from
  binary MLF files; :mod:`.mlfbin`.

The two join by utterance key (the feature deserializer first). Frame mode (the source's
``frame_mode``) makes every frame a sequence, so that CNTK's block randomizer shuffles frames.
"""
from __future__ import annotations

from typing import Any, Mapping

from .features import TYPE_NAME as FEATURE_TYPE, HTKFeatureDeserializerImpl
from .labels import BINARY_TYPE_NAME as MLF_BINARY_TYPE, TYPE_NAME as MLF_TYPE, HTKMLFBinaryDeserializerImpl, \
    HTKMLFDeserializerImpl

__all__ = ["HTKFeatureDeserializer", "HTKMLFDeserializer", "HTKMLFBinaryDeserializer", "build_features",
           "build_mlf", "build_mlf_binary", "HTKFeatureDeserializerImpl", "HTKMLFDeserializerImpl",
           "HTKMLFBinaryDeserializerImpl", "FEATURE_TYPE", "MLF_TYPE", "MLF_BINARY_TYPE"]


def _has(stream: Mapping, key: str) -> bool:
    return key in stream and stream[key] is not None


def HTKFeatureDeserializer(streams: Mapping[str, Any]) -> dict:
    """The config of an HTK feature deserializer, as cntk.io's ``HTKFeatureDeserializer``:
    ``streams = {name: StreamDef(shape=dim, scp=path or list, context=(left, right),
    broadcast=False, defines_mb_size=False, max_sequence_length=65535)}``. ``shape`` is the files'
    frame dimension (the output is ``dim * (left + 1 + right)``)."""
    inputs: dict[str, dict] = {}
    for name, s in streams.items():
        if s.get("stream_alias") is not None:
            raise ValueError("HTKFeatureDeserializer does not support stream names")
        if not _has(s, "scp"):
            raise ValueError("No scp files specified for HTKFeatureDeserializer")
        entry = {"dim": s.get("dim"), "scpFile": s["scp"],
                 "contextWindow": tuple(s["context"]) if _has(s, "context") else (0, 0),
                 "expandToUtterance": bool(s.get("broadcast") or False),
                 "definesMBSize": bool(s.get("defines_mb_size", False)),
                 "maxSequenceLength": int(s.get("max_sequence_length", 65535))}
        inputs[name] = entry
    if not inputs:
        raise ValueError("no feature streams found")
    return {"type": FEATURE_TYPE, "input": inputs}


def HTKMLFDeserializer(label_mapping_file: str, streams: Mapping[str, Any], phoneBoundaries: bool = False,
                       *, phone_boundaries: bool | None = None) -> dict:
    """The config of an MLF label deserializer, as cntk.io's ``HTKMLFDeserializer``:
    ``streams = {name: StreamDef(shape=number of labels, mlf=path or list)}``. ``phoneBoundaries``
    is cntk.io's keyword (``HTKMLFDeserializer(label_mapping_file, streams, phoneBoundaries=False)``,
    bindings/python/cntk/io/__init__.py); ``phone_boundaries`` is accepted as well."""
    if phone_boundaries is not None:
        if phoneBoundaries and not phone_boundaries:
            raise ValueError("HTKMLFDeserializer: phoneBoundaries and phone_boundaries disagree")
        phoneBoundaries = phone_boundaries
    if len(streams) != 1:
        raise ValueError("HTKMLFDeserializer only accepts a single stream")
    (name, s), = streams.items()
    if s.get("stream_alias") is not None:
        raise ValueError("HTKMLFDeserializer does not support stream names")
    if not _has(s, "mlf"):
        raise ValueError("No master label files specified for HTKMLFDeserializer")
    mlf = s["mlf"]
    mlfs = list(mlf) if isinstance(mlf, (list, tuple)) else [mlf]
    return {"type": MLF_TYPE, "input": {name: {"dim": s.get("dim"), "mlfFileList": mlfs,
                                               "labelMappingFile": label_mapping_file,
                                               "phoneBoundaries": bool(phoneBoundaries)}}}


def build_features(config: Mapping, **source_options: Any) -> HTKFeatureDeserializerImpl:
    """The registry's factory of ``HTKFeatureDeserializer``."""
    return HTKFeatureDeserializerImpl(config, **source_options)


def build_mlf(config: Mapping, **source_options: Any) -> HTKMLFDeserializerImpl:
    """The registry's factory of ``HTKMLFDeserializer``."""
    return HTKMLFDeserializerImpl(config, **source_options)


def HTKMLFBinaryDeserializer(streams: Mapping[str, Any]) -> dict:
    """The config of a binary MLF label deserializer, as CNTK 2.7's ``HTKMLFBinaryDeserializer(stream
    name, mlf files, dimension)``: ``streams = {name: StreamDef(shape=number of labels, mlf=path or
    list)}``."""
    if len(streams) != 1:
        raise ValueError("HTKMLFBinaryDeserializer only accepts a single stream")
    (name, s), = streams.items()
    if not _has(s, "mlf"):
        raise ValueError("HTKMLFBinaryDeserializer: No mlf files were specified")
    mlf = s["mlf"]
    mlfs = list(mlf) if isinstance(mlf, (list, tuple)) else [mlf]
    return {"type": MLF_BINARY_TYPE, "input": {name: {"dim": s.get("dim"), "mlfFileList": mlfs}}}


def build_mlf_binary(config: Mapping, **source_options: Any) -> HTKMLFBinaryDeserializerImpl:
    """The registry's factory of ``HTKMLFBinaryDeserializer``."""
    return HTKMLFBinaryDeserializerImpl(config, **source_options)
