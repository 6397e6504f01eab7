"""The CNTK Text Format (CTF) deserializer.

``CTFDeserializer(filename, streams)`` is cntk.io's factory (cntk-io-semantics 1.6): it returns
the config dict of a ``CNTKTextFormatDeserializer``, to which CTF options may be added
(``skipSequenceIds``, ``maxErrors``, ``traceLevel``, ``chunkSizeInBytes``, ``keepDataInMemory``,
``cacheIndex``, ``precision``, ``frameMode``, ``numChunksToCache``). Building it does not touch
the file; ``build_deserializer(config)`` (the MinibatchSource does it) opens and indexes it.

The format rules are stated in ``_reference`` (the reference parser); ``docs/ctf.md`` describes
the format, the options, the index cache and where cntkio differs from CNTK 2.7.
"""
from __future__ import annotations

from typing import Any, Mapping

from .deserializer import CNTKTextFormatDeserializer, available_backends, ctf_backend, parse_options

__all__ = ["CTFDeserializer", "CTFRecord", "CNTKTextFormatDeserializer", "available_backends", "ctf_backend",
           "parse_options", "build", "TYPE_NAME"]

#: The deserializer type name in configs.
TYPE_NAME = "CNTKTextFormatDeserializer"


class CTFRecord(dict):
    """The config dict of a CTF deserializer (what ``CTFDeserializer`` returns), with the
    ``map_input`` method of cntk.io's earlier CTFDeserializer."""

    def map_input(self, node: str, dim: int, format: str = "dense", alias: str | None = None,
                  defines_mb_size: bool = False) -> "CTFRecord":
        """Read the input named ``alias`` in the file (default: ``node``) as stream ``node`` of
        ``dim`` columns, ``format`` ``"dense"`` or ``"sparse"`` (cntk 2.0's spelling, used by the
        spec's composite example)."""
        if format not in ("dense", "sparse"):
            raise ValueError(f"CTFDeserializer.map_input: format must be 'dense' or 'sparse', got {format!r}")
        self["input"][node] = {"alias": node if alias is None else alias, "dim": dim, "format": format,
                               "definesMBSize": bool(defines_mb_size)}
        return self


def CTFDeserializer(filename: str, streams: Mapping[str, Any] | None = None) -> CTFRecord:
    """The config of a CTF deserializer reading ``filename``, as cntk.io's ``CTFDeserializer``.

    ``streams`` maps stream names to ``StreamDef(field=alias, shape=dim, is_sparse=...,
    defines_mb_size=...)``. Every StreamDef needs a ``field`` (ValueError otherwise, with cntk's
    message); a missing ``shape`` raises AttributeError, as in cntk. The result is a dict
    ``{'type': 'CNTKTextFormatDeserializer', 'file': filename, 'input': {name: {'dim', 'format',
    'definesMBSize', 'alias'}}}``; add option keys to it before building a source. Without
    ``streams``, name them with ``.map_input(name, dim, format)`` (cntk 2.0's form).
    """
    inputs: dict[str, dict[str, Any]] = {}
    for key, stream in (streams or {}).items():
        if stream.stream_alias is None:
            raise ValueError("CTFDeserializer: stream name for key %s must be specified" % key)
        inputs[key] = {"alias": stream.stream_alias, "dim": stream.dim,
                       "format": "sparse" if stream.is_sparse else "dense",
                       "definesMBSize": bool(stream.defines_mb_size)}
    return CTFRecord(type=TYPE_NAME, file=filename, input=inputs)


def build(config: Mapping, **source_options: Any) -> CNTKTextFormatDeserializer:
    """The registry's factory of ``CNTKTextFormatDeserializer`` (see :mod:`cntkio.registry`)."""
    return CNTKTextFormatDeserializer(config, **source_options)
