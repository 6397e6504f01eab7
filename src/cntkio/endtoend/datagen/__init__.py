"""Small data of the right shape for every reader a CNTK configuration's commands use.

What it must never do: write outside the directory it is given, change an existing file, or make
data of another shape than the configuration declares (dims, label counts, image sizes come from
the reader sections; only counts and lengths come from :class:`DataShape`).

:func:`generate_data` loads the configuration as a run would (the same command line), walks the
sections ``command=`` names, and for each ``reader`` and ``cvReader`` (found there or in an
enclosing section, as CNTK looks them up) writes the files the reader reads, by family:

* CNTK text format (``CNTKTextFormatReader``, ``CNTKTextFormatDeserializer``): :mod:`.ctf`;
* images (``ImageReader``, ``ImageDeserializer``, ``Base64ImageDeserializer``): map files, the
  images, mean files (:mod:`.images`);
* speech (``HTKMLFReader``, ``HTKDeserializers``, ``HTKFeatureDeserializer``,
  ``HTKMLFDeserializer``): HTK feature files with their SCP lists, MLF labels, state lists
  (:mod:`.htk`);
* text corpora (``LMSequenceReader``/``SequenceReader``, ``LUSequenceReader``): sentences and
  the vocabulary, class and label files (:mod:`.text`);
* ``UCIFastReader``: delimited numbers with a label column (:mod:`.uci`).

The output lists of an ``HTKMLFWriter`` writer section are written too (:mod:`.htk`). A file
several readers name is written once. Readers cntkio does not implement are left alone
(the run refuses them by name).
"""
from __future__ import annotations

import os
from typing import Any, Callable, Mapping, Sequence

from ...readers.section import Section, as_section
from .sandbox import DataShape, Sandbox

__all__ = ["generate_data", "DataShape", "Sandbox", "READER_KEYS"]

#: the keys of a command section that hold readers
READER_KEYS = ("reader", "cvReader")
#: keys (lower case) of a command section naming a file the command writes: never generated
OUTPUT_KEYS = {"outputvocabfile", "outputword2cls", "outputcls2index", "outputpath", "outputmodelpath",
               "modelpath", "outputfile", "newmodelpath"}

Shapes = DataShape | Mapping[str, DataShape] | None


def _shape_for(shapes: Shapes, path: str) -> DataShape:
    """The shape of the file at ``path``: a mapping's entry for its base name, else its ``"*"``."""
    if shapes is None:
        return DataShape()
    if isinstance(shapes, DataShape):
        return shapes
    return shapes.get(os.path.basename(path)) or shapes.get("*") or DataShape()


#: reader and deserializer types (lower case) -> "module:function" of this package writing their files
_FAMILIES = {
    "cntktextformatreader": "ctf_reader:legacy", "cntktextformatdeserializer": "ctf_reader:deserializer",
    "imagereader": "images:legacy", "imagedeserializer": "images:deserializer",
    "base64imagedeserializer": "images:base64_deserializer",
    "htkmlfreader": "htk:legacy", "htkdeserializers": "htk:legacy",
    "htkfeaturedeserializer": "htk:feature_deserializer", "htkmlfdeserializer": "htk:mlf_deserializer",
    "lmsequencereader": "text:lm", "sequencereader": "text:lm", "lusequencereader": "text:lu",
    "ucifastreader": "uci:legacy",
}


def _family(type_name: str) -> Callable[..., None] | None:
    import importlib
    spec = _FAMILIES.get(type_name.lower())
    if spec is None:
        return None
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def _reader(box: Sandbox, reader: Section, shapes: Shapes) -> None:
    if reader.has_local("deserializers"):
        for d in reader.elements("deserializers"):
            if isinstance(d, Section):
                fn = _family(str(d.str("type", "")))
                if fn is not None:
                    fn(box, d, lambda p: _shape_for(shapes, p))
        return
    fn = _family(str(reader.str("readerType", "")))
    if fn is not None:
        fn(box, reader, lambda p: _shape_for(shapes, p))


def generate_data(argv: Sequence[str] | Any, *, root: str, cwd: str | None = None, shapes: Shapes = None,
                  seed: int = 0, base_dir: str | None = None) -> list[str]:
    """Write the data the configuration's readers read; return the files written.

    ``argv`` is the run's command line (or a loaded configuration); ``root`` the directory all
    files must lie below; ``cwd`` the directory relative paths start from (the run's
    ``currentDirectory``, default ``root``); ``shapes`` a :class:`DataShape` for every file or a
    mapping of file base names (and ``"*"``) to shapes."""
    from ...config import command_sections, load_config

    cfg = load_config(list(argv), base_dir=base_dir or cwd or root) if isinstance(argv, (list, tuple)) else argv
    box = Sandbox(root, cwd, seed)
    commands = command_sections(cfg)
    for cmd in commands:
        for key in cmd.section.keys():
            if key.lower() in OUTPUT_KEYS:
                box.reserve(cmd.section(key), f"{cmd.name}.{key}")
    for cmd in commands:
        sec = as_section(cmd.section, lazy=True)
        for key in READER_KEYS:
            if sec.exists(key):
                _reader(box, sec.section(key, inherit=True), shapes)
        if sec.has_local("writer"):
            writer = sec.section("writer")
            if str(writer.str("writerType", "", inherit=False)).lower() == "htkmlfwriter":
                from .htk import output_lists
                output_lists(box, writer, lambda p: _shape_for(shapes, p))
    return list(box.written)
