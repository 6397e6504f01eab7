"""The types a configuration names, in one table: deserializers, transforms and legacy readers.

A config's ``type = "CNTKTextFormatDeserializer"`` (a deserializer section), a transform's
``type = "Crop"`` and a legacy reader section's ``readerType = "CNTKTextFormatReader"`` all
resolve here, and so does ``MinibatchSource({'type': ..., ...})``.

* A **built-in** type is one line below: its config name and ``"module:factory"``. The module is
  imported on first use, so ``import cntkio`` stays light and listing the names loads nothing.
* A **third-party** type registers itself: ``register_deserializer("MyFormat", build)`` (or
  ``register_deserializer("MyFormat", "mypackage.myformat:build")``, imported lazily), and
  likewise :func:`register_transform` and :func:`register_reader`.

A deserializer factory is called as ``factory(config, **source_options)``: ``config`` is the
deserializer's config dict (``{'type': name, ...}``, from a Python factory such as
``CTFDeserializer`` or from a reader section, where values a format reads are the config's text),
``source_options`` the MinibatchSource options a format may need (``frame_mode``,
``trace_level``, ``randomization_seed``). It returns a :class:`~cntkio.deserializers.protocol.Deserializer`. A factory
with ``supports_transforms = True`` accepts ``transforms`` lists in its inputs. A transform
factory is called as ``factory(config, **options)``.

A legacy ``readerType`` names a reader whose section is one deserializer's configuration; it maps
to that deserializer's type and is implemented when that type is registered.

This module lives at the package's top level (not in ``deserializers/``) because it serves three
packages: the deserializers, the transforms and the reader factory (``readers/``); it imports
nothing of theirs.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable, Mapping, Union

if TYPE_CHECKING:
    from .deserializers.protocol import Deserializer

__all__ = [
    "READER_TYPES",
    "COMPOSITE_READER", "register_deserializer", "register_transform", "register_reader",
    "registered_deserializers", "registered_transforms", "registered_readers", "implemented_reader_types",
    "deserializer_factory", "transform_factory", "reader_deserializer_type", "canonical_name",
    "build_deserializer", "build_transform", "register_writer", "registered_writers", "writer_factory",
]

Factory = Callable[..., Any]
#: a factory, or ``"module:attribute"`` naming it (imported on first use)
FactorySpec = Union[Factory, str]

#: the reader type of a section that lists ``deserializers = (...)``
COMPOSITE_READER = "CompositeDataReader"

# --- built-in types: one line each ------------------------------------------------------------
_DESERIALIZERS: dict[str, FactorySpec] = {
    "CNTKTextFormatDeserializer": "cntkio.deserializers.ctf:build",
    "CNTKBinaryFormatDeserializer": "cntkio.deserializers.cbf:build",
    "ImageDeserializer": "cntkio.deserializers.image:build_image",
    "Base64ImageDeserializer": "cntkio.deserializers.image:build_base64",
    "UCIFastReaderDeserializer": "cntkio.readers.legacy.ucifast:build",
    "BinaryReaderDeserializer": "cntkio.readers.legacy.binaryreader:build",
    "SequenceReaderDeserializer": "cntkio.readers.legacy.sequence:build",
    "LUSequenceReaderDeserializer": "cntkio.readers.legacy.lusequence:build",
    "HTKFeatureDeserializer": "cntkio.deserializers.htk:build_features",
    "HTKMLFDeserializer": "cntkio.deserializers.htk:build_mlf",
    "HTKMLFBinaryDeserializer": "cntkio.deserializers.htk:build_mlf_binary",
    "HTKMLFReaderDeserializer": "cntkio.readers.legacy.htkmlf:build",
}
_TRANSFORMS: dict[str, FactorySpec] = {
    "Crop": "cntkio.transforms.ops:build_crop",
    "Scale": "cntkio.transforms.ops:build_scale",
    "Mean": "cntkio.transforms.ops:build_mean",
    "Color": "cntkio.transforms.ops:build_color",
    "Intensity": "cntkio.transforms.ops:build_intensity",
    "Transpose": "cntkio.transforms.ops:build_transpose",
}
#: legacy readerType -> the deserializer type its reader section configures
_READERS: dict[str, str] = {
    "CNTKTextFormatReader": "CNTKTextFormatDeserializer",
    "CNTKBinaryReader": "CNTKBinaryFormatDeserializer",
    "ImageReader": "ImageDeserializer",
    "UCIFastReader": "UCIFastReaderDeserializer",
    "BinaryReader": "BinaryReaderDeserializer",
    "SequenceReader": "SequenceReaderDeserializer",
    "LMSequenceReader": "SequenceReaderDeserializer",
    "LUSequenceReader": "LUSequenceReaderDeserializer",
    "HTKMLFReader": "HTKMLFReaderDeserializer",
    "HTKDeserializers": "HTKMLFReaderDeserializer",
}
#: the live table of legacy reader types (``register_reader`` adds to it)
READER_TYPES = _READERS

#: writerType -> the factory of an IDataWriter (``cntkio.legacy.DataWriter`` resolves through it)
_WRITERS: dict[str, FactorySpec] = {
    "BinaryReader": "cntkio.readers.legacy.interfaces:BinaryDataWriter",
    "BinaryWriter": "cntkio.readers.legacy.interfaces:BinaryDataWriter",
    "LUSequenceWriter": "cntkio.readers.legacy.luwriter:LUSequenceDataWriter",
}


# --- registering ------------------------------------------------------------------------------

def _check(kind: str, name: str, factory: Any) -> None:
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_{kind}: the type name must be a non-empty str, got {name!r}")
    if isinstance(factory, str):
        if ":" not in factory:
            raise ValueError(f"register_{kind}({name!r}): a factory given by name must read "
                             f"'module:attribute', got {factory!r}")
    elif not callable(factory):
        raise TypeError(f"register_{kind}({name!r}): the factory must be callable or a "
                        f"'module:attribute' string, got {type(factory).__name__}")


def register_deserializer(type_name: str, factory: FactorySpec) -> None:
    """Make a deserializer type buildable from its config dict (``{'type': type_name, ...}``).

    ``factory(config, **source_options)`` returns a Deserializer; ``source_options`` carries
    options of the MinibatchSource the deserializer may need (``frame_mode``, ``trace_level``,
    ``randomization_seed``).
    ``factory`` may also be ``"module:attribute"``, imported when the type is first built.
    Registering a name again replaces its factory.
    """
    _check("deserializer", type_name, factory)
    _DESERIALIZERS[type_name] = factory


def register_transform(type_name: str, factory: FactorySpec) -> None:
    """Make a transform type (``transforms = ([type = type_name; ...])``) buildable:
    ``factory(config, **options)`` returns the transform."""
    _check("transform", type_name, factory)
    _TRANSFORMS[type_name] = factory


def register_reader(reader_type: str, deserializer_type: str) -> None:
    """Make a legacy ``readerType = reader_type`` section read as one ``deserializer_type``
    deserializer configured by the reader section itself."""
    if not isinstance(reader_type, str) or not reader_type:
        raise TypeError(f"register_reader: the reader type must be a non-empty str, got {reader_type!r}")
    if not isinstance(deserializer_type, str) or not deserializer_type:
        raise TypeError(f"register_reader({reader_type!r}): the deserializer type must be a non-empty "
                        f"str (a name registered with register_deserializer), got {deserializer_type!r}")
    if reader_type.lower() == COMPOSITE_READER.lower():
        raise ValueError(f"register_reader: {COMPOSITE_READER} is the reader of deserializers = (...) "
                         "sections and cannot be redefined")
    _READERS[reader_type] = deserializer_type


def register_writer(writer_type: str, factory: FactorySpec) -> None:
    """Make ``writerType = writer_type`` buildable: ``factory(config)`` returns an object with
    the IDataWriter methods (``get_sections``, ``save_data``, ``save_mapping``, ``destroy``)."""
    _check("writer", writer_type, factory)
    _WRITERS[writer_type] = factory


def registered_writers() -> list[str]:
    """The writerType values that can be built, sorted."""
    return sorted(_WRITERS)


def writer_factory(writer_type: str) -> Factory | None:
    """The factory of a writerType (case-insensitive), or None when none is registered."""
    name = canonical_name(writer_type, _WRITERS)
    return None if name is None else _resolve(_WRITERS, "writer", name)


# --- listing and resolving --------------------------------------------------------------------

def registered_deserializers() -> list[str]:
    """The deserializer types that can be built (built-in and registered), sorted."""
    return sorted(_DESERIALIZERS)


def registered_transforms() -> list[str]:
    """The transform types that can be built, sorted."""
    return sorted(_TRANSFORMS)


def registered_readers() -> dict[str, str]:
    """Every legacy readerType known, with the deserializer type it configures (implemented or
    not: see :func:`implemented_reader_types`)."""
    return dict(_READERS)


def implemented_reader_types() -> list[str]:
    """The readerType values that work: CompositeDataReader, then each legacy reader whose
    deserializer type is registered."""
    return [COMPOSITE_READER] + [r for r, d in _READERS.items() if d in _DESERIALIZERS]


def canonical_name(name: str, known) -> str | None:
    """``name`` as spelled in ``known`` (config names are matched case-insensitively, as CNTK's
    config lookups are), or None."""
    if name in known:
        return name
    low = str(name).lower()
    for k in known:
        if k.lower() == low:
            return k
    return None


def reader_deserializer_type(reader_type: str) -> tuple[str, str] | None:
    """``(readerType as registered, its deserializer type)`` for a legacy readerType, or None."""
    name = canonical_name(reader_type, _READERS)
    return None if name is None else (name, _READERS[name])


def _resolve(table: dict[str, FactorySpec], kind: str, name: str) -> Factory:
    spec = table[name]
    if isinstance(spec, str):
        module, _, attr = spec.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise ImportError(f"the {kind} type {name!r} is registered as {spec!r}, which cannot "
                              f"be loaded: {e}") from e
        table[name] = factory
        return factory
    return spec


def deserializer_factory(type_name: str) -> Factory | None:
    """The factory of a registered deserializer type (exact name), or None."""
    if type_name not in _DESERIALIZERS:
        return None
    return _resolve(_DESERIALIZERS, "deserializer", type_name)


def transform_factory(type_name: str) -> Factory | None:
    """The factory of a registered transform type (exact name), or None."""
    if type_name not in _TRANSFORMS:
        return None
    return _resolve(_TRANSFORMS, "transform", type_name)


def _listing(names: list[str]) -> str:
    return ", ".join(names) if names else "(none)"


def build_deserializer(config: Mapping, **source_options: Any) -> Deserializer:
    """Build a deserializer from its config dict (as the cntk.io factories return)."""
    type_name = config.get("type")
    factory = deserializer_factory(type_name) if isinstance(type_name, str) else None
    if factory is None:
        raise ValueError(f"unknown deserializer type {type_name!r}; cntkio implements: "
                         + _listing(registered_deserializers()))
    return factory(config, **source_options)


def build_transform(config: Mapping, **options: Any) -> Any:
    """Build a transform from its config dict (``{'type': name, ...}``)."""
    type_name = next((v for k, v in config.items() if str(k).lower() == "type"), None)
    factory = transform_factory(type_name) if isinstance(type_name, str) else None
    if factory is None:
        raise ValueError(f"unknown transform type {type_name!r}; cntkio implements: "
                         + _listing(registered_transforms()))
    return factory(config, **options)
