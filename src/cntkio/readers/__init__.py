"""Readers built from CNTK config: a ``reader`` section becomes a MinibatchSource.

``build_reader(section)`` builds the source a reader section describes (legacy
``readerType = CNTKTextFormatReader`` or composite ``deserializers = (...)``), with every option
of the reader pages; ``reader_spec(section)`` is the same translation without opening files;
``EpochReader`` reads epochs with CNTK's config-reader semantics (consecutive ``epochSize``
slices of one endless timeline), shared by every config action.
"""
from .epochs import EpochReader, sweep_size
from .factory import (READER_TYPES, ReaderSpec, UnsupportedReaderError, build_reader, reader_input_names,
                      reader_spec)
from .section import Section, as_section

__all__ = ["build_reader", "reader_spec", "reader_input_names", "ReaderSpec", "UnsupportedReaderError",
           "READER_TYPES", "EpochReader", "sweep_size", "Section", "as_section"]
