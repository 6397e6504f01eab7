"""cntkio: CNTK's data-reading system for NumPy and PyTorch.

The public names mirror ``cntk.io``: a CNTK 2.x script's data pipeline runs on cntkio by changing
its import. Heavy submodules load on first use, so ``import cntkio`` stays light.
"""
from __future__ import annotations

import importlib

from .constants import DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS, FULL_DATA_SWEEP, INFINITELY_REPEAT, TraceLevel
from .errors import ConfigError, FormatError
from .streams import Record, StreamConfiguration, StreamDef, StreamDefs, StreamInformation

__version__ = "0.1.0"

# name -> submodule that defines it (loaded lazily, PEP 562)
_LAZY = {
    "MinibatchData": "minibatch",
    "Minibatch": "minibatch",
    "Value": "minibatch",
    "MinibatchSource": "source",
    "CTFDeserializer": "deserializers.ctf",
    "CBFDeserializer": "deserializers.cbf",
    "HTKFeatureDeserializer": "deserializers.htk",
    "HTKMLFDeserializer": "deserializers.htk",
    "HTKMLFBinaryDeserializer": "deserializers.htk",
    "ImageDeserializer": "deserializers.image",
    "Base64ImageDeserializer": "deserializers.image",
    "UserDeserializer": "deserializers.user",
    "UserMinibatchSource": "user_source",
    "MinibatchSourceFromData": "user_source",
    "sequence_to_cntk_text_format": "helpers",
}

__all__ = [
    "INFINITELY_REPEAT", "FULL_DATA_SWEEP", "DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS", "TraceLevel",
    "ConfigError", "FormatError", "Record", "StreamConfiguration", "StreamDef", "StreamDefs",
    "StreamInformation", "transforms", *_LAZY,
]


def __getattr__(name: str):
    if name == "transforms":            # cntk.io.transforms: crop, scale, mean, color
        return importlib.import_module(".transforms", __name__)
    if name in _LAZY:
        value = getattr(importlib.import_module("." + _LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cntkio' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
