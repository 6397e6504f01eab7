"""Deserializers: one per input format, each implementing the contract of ``protocol.py``.

``protocol``: the Deserializer protocols and the columnar chunk containers; ``base``: a base class
with the parts that follow from the rest; ``ctf``: the CNTK Text Format; ``user``: deserializers
written in Python (``UserDeserializer``). Types are resolved by config name in :mod:`cntkio.registry`.
"""
from ..registry import build_deserializer, register_deserializer, registered_deserializers
from .base import DeserializerBase
from .protocol import (ChunkData, ChunkInfo, DenseStream, Deserializer, LocalTimelineDeserializer,
                       RandomAccessDeserializer, SequenceTable, SparseStream, StreamData, has_random_access,
                       is_local_timeline)

__all__ = ["ChunkData", "ChunkInfo", "DenseStream", "Deserializer", "DeserializerBase",
           "LocalTimelineDeserializer", "RandomAccessDeserializer", "SequenceTable", "SparseStream",
           "StreamData", "build_deserializer", "has_random_access", "is_local_timeline",
           "register_deserializer", "registered_deserializers"]
