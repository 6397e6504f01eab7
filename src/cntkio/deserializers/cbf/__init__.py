"""The CNTK binary format (CBF) deserializer, writer and converters.

``CBFDeserializer(filename, streams={})`` is cntk.io's factory: it returns the config dict of a
``CNTKBinaryFormatDeserializer`` (``file``, ``input``: ``{name: {alias: stream in the file}}``).
The file's header defines the streams (names, dims, dense or sparse); the config only renames
them, and streams it does not name come out under their own names. ``docs/binary.md`` describes
the layout, the converters (``ctf2bin``, ``bin2ctf``, ``cntkio convert``) and where cntkio
differs from CNTK 2.7.
"""
from __future__ import annotations

from typing import Any, Mapping

from .deserializer import CNTKBinaryFormatDeserializer, parse_options
from .layout import MAGIC, VERSION, CBFHeader, CBFStream, read_header
from .convert import bin2ctf, ctf2bin, infer_ctf_streams, read_header_file
from .writer import CBFWriter

__all__ = ["CBFDeserializer", "CNTKBinaryFormatDeserializer", "CBFWriter", "ctf2bin", "bin2ctf",
           "infer_ctf_streams", "read_header_file", "read_header", "parse_options", "CBFHeader",
           "CBFStream", "MAGIC", "VERSION", "TYPE_NAME", "build"]

#: The deserializer type name in configs.
TYPE_NAME = "CNTKBinaryFormatDeserializer"


def CBFDeserializer(filename: str, streams: Mapping[str, Any] = {}) -> dict:  # noqa: B006 (cntk.io's signature)
    """The config of a CBF deserializer reading ``filename``, as cntk.io's ``CBFDeserializer``.

    ``streams`` maps output names to ``StreamDef(field=name_in_file, ...)``; only the field is
    used (the file's header defines dims and storage), and a StreamDef without a field reads the
    file stream of its own name. Streams of the file not listed still come out under their own
    names. The result is ``{'type': 'CNTKBinaryFormatDeserializer', 'file': filename, 'input':
    {name: {'alias': field}}}``; option keys (``precision``, ``keepDataInMemory``, ``traceLevel``)
    may be added.
    """
    inputs: dict[str, dict[str, Any]] = {}
    for key, stream in streams.items():
        alias = stream.get("stream_alias") if isinstance(stream, Mapping) else None
        inputs[key] = {"alias": key if alias is None else alias}
    return {"type": TYPE_NAME, "file": filename, "input": inputs}


def build(config: Mapping, **source_options: Any) -> CNTKBinaryFormatDeserializer:
    """The registry's factory of ``CNTKBinaryFormatDeserializer`` (see :mod:`cntkio.registry`)."""
    return CNTKBinaryFormatDeserializer(config, **source_options)
