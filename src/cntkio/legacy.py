"""CNTK's data reader and writer interfaces (IDataReader / IDataWriter of the configuration spec's
programmer reference), on cntkio's engine.

    from cntkio.legacy import DataReader
    reader = DataReader({"readerType": "UCIFastReader", "file": "train.txt",
                         "features": {"dim": 784, "start": 1},
                         "labels": {"dim": 1, "start": 0, "labelDim": 10}})
    reader.start_minibatch_loop(mb_size=256, epoch=0, requested_epoch_samples=60000)
    matrices = {}
    while reader.get_minibatch(matrices):
        features, labels = matrices["features"], matrices["labels"]

A reader is found by its ``readerType`` in :mod:`cntkio.registry` (``register_reader``), a writer
by its ``writerType`` (``register_writer``). See docs/legacy-readers.md.
"""
from .readers.legacy.interfaces import (END_DATASET, END_EPOCH, END_SENTENCE, REQUEST_DATA_SIZE, BinaryDataWriter,
                                        DataReader, DataWriter)
from .registry import register_reader, register_writer

__all__ = ["DataReader", "DataWriter", "BinaryDataWriter", "REQUEST_DATA_SIZE", "END_DATASET", "END_EPOCH",
           "END_SENTENCE", "register_reader", "register_writer"]
