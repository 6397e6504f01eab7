"""Deserializers: one per input format, each filling the columnar chunk containers of base.py."""
from .base import (ChunkData, ChunkInfo, DenseStream, Deserializer, SequenceTable, SparseStream,
                   build_deserializer, register_deserializer, registered_deserializers)

__all__ = ["ChunkData", "ChunkInfo", "DenseStream", "Deserializer", "SequenceTable", "SparseStream",
           "build_deserializer", "register_deserializer", "registered_deserializers"]
