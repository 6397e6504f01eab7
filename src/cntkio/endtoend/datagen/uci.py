"""UCIFastReader data: space-delimited records with the feature and label columns a reader section names.

What it must never do: write a record narrower than the columns the sections name, or a label
that the label mapping file it writes does not list.

Every sub-section with ``dim`` is a stream at columns ``[start, start + dim)``; a label section
(``labelDim``, ``labelType`` or ``labelMappingFile``) gets one column holding a class id below
``labelDim`` (``labelType = Regression``: numbers), and its ``labelMappingFile`` (ids ``0`` ..
``labelDim - 1``, one a line) when the file is absent. One record per sequence
(``DataShape.sequences`` of them).
"""
from __future__ import annotations

from .sandbox import Sandbox

__all__ = ["legacy"]


def legacy(box: Sandbox, reader, shape_of) -> None:
    """``readerType = UCIFastReader``."""
    path = box.path(reader.str("file"), reader.key_path("file"))
    if not box.claim(path, "uci records"):
        return
    streams = []       # (start, dim, classes or 0)
    for name in reader.keys():
        if not isinstance(reader.raw(name, inherit=False), dict):
            continue
        s = reader.section(name)
        if not s.has_local("dim"):
            continue
        start, dim = s.int("start", 0, inherit=False), s.int("dim", inherit=False)
        is_label = any(s.has_local(k) for k in ("labelDim", "labelType", "labelMappingFile"))
        regression = str(s.str("labelType", "category", inherit=False)).lower() == "regression"
        classes = int(s.int("labelDim", 2, inherit=False)) if is_label and not regression else 0
        if classes and s.exists("labelMappingFile"):
            mapping = box.path(s.str("labelMappingFile"), s.key_path("labelMappingFile"))
            if box.claim(mapping, "uci label map"):
                box.write_text(mapping, "".join(f"{i}\n" for i in range(classes)))
        streams.append((start, dim, classes))
    width = max((start + (1 if classes else dim) for start, dim, classes in streams), default=1)
    rows = []
    for _ in range(shape_of(path).sequences):
        row = [f"{v:.3g}" for v in box.rng.random(width)]
        for start, _dim, classes in streams:
            if classes:
                row[start] = str(int(box.rng.integers(classes)))
        rows.append(" ".join(row))
    box.write_text(path, "\n".join(rows) + "\n")
