"""The ``createLabelMap`` action: the label values found in a reader's data, to ``labelMappingFile``.

Parameters: ``section`` (the name of the command section whose ``reader`` is read, usually the
train section; default: this section), ``minibatchSize`` (default 40960), ``labelStream`` (the
label stream's name; default: the input that defines ``labelMappingFile``, else ``labels``).
``labelMappingFile`` is looked up from the label input's own section up through the reader and the
command sections to the root, as CNTK configs share it between train and test sections.

CNTK implemented this action for UCIFastReader, whose label column holds raw category values.
cntkio's readers (CNTK text format, composite) deliver labels as vectors (one-hot, dense or sparse),
so the category of a sample is the index of its largest value; the file lists the distinct
categories found in one sweep of the data, sorted, one per line (line ``i`` names the label of
category ``i`` when every category occurs).
"""
from __future__ import annotations

import os

import numpy as np

from .._log import get_logger
from ..errors import ConfigError
from ..readers.legacy.urls import refuse_url
from ._common import Dist, dist_context, epoch_minibatches, open_reader, report, stream_samples, _stream_name
from ._params import get_str, has, key_path, minibatch_size, section as get_section

__all__ = ["create_label_map", "label_categories"]

_log = get_logger("actions.labelmap")


def label_categories(values: np.ndarray) -> np.ndarray:
    """The category index of each label sample (``values[N, dim]``): the index of its largest value."""
    values = np.asarray(values)
    if values.ndim != 2 or values.shape[1] == 0:
        raise ValueError(f"expected label samples [N, dim], found shape {values.shape}")
    return np.argmax(values, axis=1)


def _input_sections(reader) -> dict:
    """``{stream name: its input section}`` of a legacy or composite reader section."""
    out = {}
    if reader.exists_current("input"):
        inputs = reader("input")
        for n in inputs.keys():
            out[n] = inputs(n)
    if reader.exists_current("deserializers"):
        items = reader("deserializers")
        items = items.as_array() if hasattr(items, "as_array") else items
        for d in items:
            if hasattr(d, "exists_current") and d.exists_current("input"):
                inputs = d("input")
                for n in inputs.keys():
                    out[n] = inputs(n)
    return out


def create_label_map(section, name: str = "createLabelMap") -> str:
    """Write the label map of the reader of ``section``'s section; returns the file path."""
    dist = dist_context()
    target = section
    if has(section, "section"):
        sec_name = get_str(section, "section")
        root = getattr(section, "root", section)
        if not root.exists(sec_name):
            raise ConfigError(f"no section named {sec_name!r}", path=key_path(section, "section"))
        target = root(sec_name)
    reader = get_section(target, "reader")
    inputs = _input_sections(reader)
    stream = get_str(section, "labelStream", None)
    if stream is None:
        with_map = [n for n, s in inputs.items() if hasattr(s, "exists_current") and s.exists_current("labelMappingFile")]
        stream = with_map[0] if with_map else "labels"
    lookup = inputs.get(stream, reader)
    if not has(lookup, "labelMappingFile"):
        raise ConfigError("no labelMappingFile to write", path=key_path(reader, "labelMappingFile"),
                          hint="set labelMappingFile in the label input, the reader or at the root")
    out_path = get_str(lookup, "labelMappingFile")
    refuse_url(out_path, key_path(lookup, "labelMappingFile"), "label mapping file")   # written locally only
    if has(reader, "readerType") and get_str(reader, "readerType").lower() == "ucifastreader":
        # UCIFastReader's label column holds the raw labels: their distinct values (readers/legacy)
        from ..readers.legacy.ucifast import write_label_map
        if dist.is_main:
            labels = write_label_map(reader, stream, out_path)
            report(f"{name}: {len(labels)} labels of stream {stream!r} written to {out_path}", dist=dist)
        dist.barrier()
        return out_path
    mb_size = minibatch_size(section)
    source = open_reader(target, "reader", name)
    seen = np.zeros(0, dtype=np.int64)
    for mb in epoch_minibatches(source, minibatch_size=mb_size, epoch_size=0, epoch=0, dist=Dist()):
        by_name = {_stream_name(k): v for k, v in mb.items()}
        if stream not in by_name:
            raise ConfigError(f"the reader delivers no stream {stream!r} (streams: {', '.join(sorted(by_name))})",
                              path=key_path(section, "labelStream"))
        seen = np.union1d(seen, label_categories(stream_samples(by_name[stream])))
    if dist.is_main:
        d = os.path.dirname(out_path)
        if d:
            os.makedirs(d, exist_ok=True)
        with open(out_path, "w", encoding="ascii", newline="\n") as f:
            f.write("".join(f"{int(c)}\n" for c in seen))
        report(f"{name}: {len(seen)} labels of stream {stream!r} written to {out_path}", dist=dist)
    dist.barrier()
    return out_path
