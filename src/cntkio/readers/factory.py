"""The factory turning a CNTK ``reader`` section into a MinibatchSource.

Two shapes of reader section exist (spec: ctf-text-format-reader.txt and
composite-readers-deserializers-transforms.txt):

* the legacy one, ``reader = [readerType = "CNTKTextFormatReader"; file = ...; input = [...]]``,
  where the reader section itself is the one deserializer's configuration;
* the composite one, ``reader = [randomize = ...; deserializers = ([type = ...]:[type = ...])]``;
  with a ``deserializers`` key the reader type is CompositeDataReader whatever ``readerType`` says,
  as in CNTK.

Both build the same engine objects as the Python API: one deserializer config dict per
deserializer (the dicts cntk.io's factories produce, built by
:func:`cntkio.registry.build_deserializer`) and the MinibatchSource keyword arguments. Type
names (``type = ...``, ``readerType = ...``) resolve through :mod:`cntkio.registry`.
Every key is looked up as CNTK does: in the section, then in the enclosing ones
(:class:`~cntkio.readers.section.Section`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import registry
from .._log import get_logger
from ..constants import (DEFAULT_CHUNK_SIZE_IN_BYTES, DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS,
                         LEGACY_RANDOMIZATION_WINDOW_IN_BYTES, RANDOMIZE_AUTO)
from ..errors import ConfigError, FormatError, NotImplementedInCntkio, RemoteError
from .legacy.urls import remote_keys
from .section import Section, as_section

__all__ = ["ReaderSpec", "reader_spec", "build_reader", "resolve_window", "make_source", "reader_input_names",
           "UnsupportedReaderError", "READER_TYPES", "CTF_TYPE"]

_log = get_logger("readers")

CTF_TYPE = "CNTKTextFormatDeserializer"
CBF_TYPE = "CNTKBinaryFormatDeserializer"
IMAGE_TYPE = "ImageDeserializer"
#: reader types whose CNTK packer has no local timeline: distributed minibatches take a global
#: budget (HTKDeserializers/HTKMLFReader.cpp:160, CNTKTextFormatReader.cpp:59-66,
#: CNTKBinaryReader.cpp:64; CompositeDataReader.cpp:188 and ImageReader.cpp:84 use a local one)
_GLOBAL_BUDGET_READERS = ("htkmlfreader", "htkdeserializers", "cntktextformatreader", "cntkbinaryreader")
_IMAGE_TYPES = (IMAGE_TYPE, "Base64ImageDeserializer")

#: legacy ``readerType`` values whose reader section is one deserializer's configuration: the
#: registry's table (:func:`cntkio.registry.register_reader` adds to it)
READER_TYPES: dict[str, str] = registry.READER_TYPES
COMPOSITE = registry.COMPOSITE_READER

# CTF options a deserializer reads (from its own section or an enclosing one, as CNTK does)
_CTF_OPTIONS = {
    "skipSequenceIds": "bool", "maxErrors": "int", "traceLevel": "int", "chunkSizeInBytes": "int",
    "keepDataInMemory": "bool", "cacheIndex": "bool", "numChunksToCache": "int",
}


class UnsupportedReaderError(ConfigError, NotImplementedInCntkio):
    """A readerType or deserializer type that cntkio does not implement; the message lists the
    implemented ones."""


@dataclass
class ReaderSpec:
    """What a reader section asks for: the deserializer config dicts, in order (the first is the
    primary), the MinibatchSource keyword arguments, the stream names in config order, and the
    element type (``precision``)."""

    deserializers: list[dict] = field(default_factory=list)
    source_kwargs: dict[str, Any] = field(default_factory=dict)
    stream_names: list[str] = field(default_factory=list)
    dtype: str = "float32"
    reader_type: str = COMPOSITE
    #: the window was not given: "the whole dataset" (resolved when the deserializers are built)
    whole_dataset_window: str | None = None
    #: the reader section's key path (for error messages)
    path: str = "reader"
    #: legacy readers' minibatchMode = Full: epochs deliver no partial minibatch (readers/epochs.py)
    full_minibatches: bool = False


# types resolve through cntkio.registry: the one table of config type names
_registered = registry.registered_deserializers
_factory = registry.deserializer_factory
_implemented_reader_types = registry.implemented_reader_types


#: CNTK's readers outside the formats cntkio implements (the spec's documents), refused by name
OUTSIDE_READERS = {
    "kaldi2reader": "CNTK's reader of Kaldi feature archives and alignments (Kaldi2Reader)",
    "kaldireader": "CNTK's reader of Kaldi feature archives (KaldiReader)",
    "libsvmbinaryreader": "CNTK's reader of its LibSVM binary format (LibSVMBinaryReader)",
    "sparsepcreader": "CNTK's reader of its sparse PC format (SparsePCReader)",
    "dssmreader": "CNTK's reader of its DSSM format (DSSMReader)",
}


def _unsupported_type(kind: str, name: str, sec: Section, key: str) -> UnsupportedReaderError:
    reg = _registered()
    outside = OUTSIDE_READERS.get(name.lower())
    if outside is not None:
        file, line = sec.where(key)
        return UnsupportedReaderError(
            f"{kind} {name!r} is not implemented in cntkio: it is {outside}, a format outside the readers cntkio "
            f"implements (reader types: {', '.join(_implemented_reader_types())}; deserializer types: "
            f"{', '.join(reg)})", path=sec.key_path(key), file=file, line=line)
    if kind == "readerType":
        msg = (f"readerType {name!r} is not implemented in cntkio; implemented reader types: "
               f"{', '.join(_implemented_reader_types())} (a CompositeDataReader reader section lists "
               f"its deserializers = (...); implemented deserializer types: {', '.join(reg)})")
    else:
        msg = f"deserializer type {name!r} is not implemented in cntkio; implemented types: {', '.join(reg)}"
    import difflib
    close = difflib.get_close_matches(name, list(READER_TYPES) + [COMPOSITE] + reg, n=1, cutoff=0.7)
    file, line = sec.where(key)
    return UnsupportedReaderError(msg, path=sec.key_path(key), file=file, line=line,
                                  hint=f"did you mean {close[0]!r}?" if close else None)


# --- the reader section -----------------------------------------------------------------------

def reader_spec(config: Any, path: str = "reader") -> ReaderSpec:
    """Translate a reader section (ConfigParameters, dict or Section) into a :class:`ReaderSpec`
    without opening any file. Raises ConfigError naming the key path for anything wrong."""
    reader = as_section(config, path)
    spec = ReaderSpec(path=reader.path or path)
    adapter = None

    precision = reader.choice("precision", ("float", "double"), "float")
    spec.dtype = "float32" if precision == "float" else "float64"

    if reader.has_local("deserializers"):
        rt = reader.str("readerType", COMPOSITE, inherit=False)
        if rt.lower() != COMPOSITE.lower():
            _log.info("%s: 'deserializers' given, so the reader is a %s (readerType=%s ignored, as in CNTK)",
                      reader.path, COMPOSITE, rt)
        spec.reader_type = COMPOSITE
        items = reader.elements("deserializers")
        if not items:
            raise reader.error("deserializers", "deserializers = (...) lists no deserializer")
        for i, dsec in enumerate(items):
            if not isinstance(dsec, Section):
                raise reader.error(f"deserializers[{i}]",
                                   f"expected a deserializer section [...], found {str(dsec)!r}")
            spec.deserializers.append(_deserializer_config(dsec, spec, legacy=False))
        legacy = False
    else:
        if not reader.exists("readerType"):
            raise reader.error("readerType", "a reader section needs readerType = ... or deserializers = (...)",
                               f"implemented reader types: {', '.join(_implemented_reader_types())}")
        rt_given = reader.str("readerType")
        resolved = registry.reader_deserializer_type(rt_given)
        if resolved is None or resolved[1] not in _registered():
            raise _unsupported_type("readerType", rt_given, reader, "readerType")
        spec.reader_type, dtype = resolved
        # a legacy reader (UCIFastReader, ...) translates its own section: readers/legacy/
        adapter = getattr(_factory(dtype), "legacy_adapter", None)
        dconf = (adapter.config(reader, spec) if adapter is not None
                 else _deserializer_config(reader, spec, legacy=True, type_name=dtype))
        spec.deserializers.append(dconf)
        names_of = getattr(_factory(dtype), "legacy_stream_names", None)
        if names_of is not None and not spec.stream_names:     # ImageReader: its sub-sections are the streams
            spec.stream_names.extend(names_of(dconf))
        legacy = True

    spec.source_kwargs = _source_kwargs(reader, spec, legacy, own_randomize=adapter is not None)
    if legacy and adapter is not None:
        adapter.source_options(reader, spec)
    return spec


def _deserializer_config(dsec: Section, spec: ReaderSpec, *, legacy: bool,
                         type_name: str | None = None) -> dict:
    if type_name is None:
        given = dsec.str("type", inherit=False)
        type_name = registry.canonical_name(given, _registered())
        if type_name is None:
            raise _unsupported_type("deserializer", given, dsec, "type")
    config: dict[str, Any] = {"type": type_name}
    factory = _factory(type_name)
    if type_name == CTF_TYPE:
        config["file"] = dsec.str("file")
        for key, kind in _CTF_OPTIONS.items():
            if dsec.exists(key):
                config[key] = getattr(dsec, kind)(key)
        for key in ("useNumericSequenceKeys", "hashSequenceKeys"):
            if dsec.exists(key):
                config[key] = dsec.bool(key)
        inputs = dsec.section("input")
        config["input"] = {}
        for name in inputs.keys():
            isec = inputs.section(name)
            config["input"][name] = _ctf_input(isec, type_name, factory)
            spec.stream_names.append(name)
    else:
        # another registered format: its section as written, keys it reads resolved by its factory
        for key, value in dsec.items():
            if key.lower() in ("module", "input", "type"):   # type: resolved above
                continue
            config[key] = value
        for key in ("useNumericSequenceKeys", "hashSequenceKeys"):   # reader-level, as CNTK's corpus
            if (type_name.startswith("HTK") or type_name in _IMAGE_TYPES) and key not in config and dsec.exists(key):
                config[key] = dsec.bool(key)
        if dsec.has_local("input"):
            inputs = dsec.section("input")
            config["input"] = {}
            for name in inputs.keys():
                isec = inputs.section(name)
                entry = dict(isec.to_dict())
                tkey = isec.local_key("transforms")
                if tkey is not None:
                    entry.pop(tkey)
                    entry["transforms"] = _transforms(isec, type_name, factory)
                config["input"][name] = entry
                spec.stream_names.append(name)
    for key, value in remote_keys(dsec).items():   # object stores (docs/remote.md): from this section or
        config.setdefault(key, value)                 # an enclosing one
    config["precision"] = "float" if spec.dtype == "float32" else "double"
    return config


def _ctf_input(isec: Section, type_name: str, factory) -> dict:
    fmt = isec.choice("format", ("dense", "sparse"), inherit=False)
    entry: dict[str, Any] = {
        "dim": isec.int("dim", inherit=False, minimum=1),
        "format": fmt,
        "alias": isec.str("alias", isec.path.rsplit(".", 1)[-1], inherit=False),
        "definesMBSize": isec.bool("definesMBSize", False, inherit=False),
    }
    if isec.has_local("transforms"):
        entry["transforms"] = _transforms(isec, type_name, factory)
    return entry


def _transforms(isec: Section, type_name: str, factory) -> list[dict]:
    raw = isec.raw("transforms", inherit=False)
    items = raw if isinstance(raw, list) else [raw]
    if not getattr(factory, "supports_transforms", False):
        supporting = [t for t in _registered() if getattr(_factory(t), "supports_transforms", False)]
        where = (f"transforms are applied by: {', '.join(supporting)}" if supporting else
                 "no deserializer implemented in cntkio applies transforms yet (CNTK's come with the "
                 "ImageDeserializer)")
        raise isec.error("transforms", f"the {type_name} does not apply transforms; {where}",
                         "remove the transforms list from this input")
    out = []
    for i, t in enumerate(items):
        if not isinstance(t, dict) or not any(k.lower() == "type" for k in t):
            raise isec.error(f"transforms[{i}]", "expected a transform section [type = ...]")
        out.append(dict(t))
    return out


def _source_kwargs(reader: Section, spec: ReaderSpec, legacy: bool, own_randomize: bool = False) -> dict[str, Any]:
    kw: dict[str, Any] = {}
    # a legacy adapter reads its own randomize (Auto/None/N) in source_options
    randomize = True if own_randomize else _randomize(reader)
    kw["randomize"] = randomize
    kw["randomization_seed"] = reader.int("randomizationSeed", 0, minimum=0)

    has_ctf = any(d["type"] == CTF_TYPE for d in spec.deserializers)
    # one image deserializer alone: a window of 1 sample (its chunks are single images, shuffled
    # anyway): CNTK's ImageReader (ImageReader.cpp:52, BlockRandomizer(0, 1, ..., sample based)) and
    # its composite reader (CompositeDataReader.cpp:139-143); the chunk shuffle alone gives the
    # order of ImageReaderSimple_Control.txt
    image_only = len(spec.deserializers) == 1 and spec.deserializers[0]["type"] == IMAGE_TYPE
    explicit_sample_based = reader.exists("sampleBasedRandomizationWindow")
    if legacy and not image_only:
        sample_based = reader.bool("sampleBasedRandomizationWindow", False)
    else:
        sample_based = reader.bool("sampleBasedRandomizationWindow", not has_ctf)
    if reader.exists("randomizationWindow"):
        window = reader.int("randomizationWindow", minimum=1)
    elif image_only:
        window = 1
    elif not sample_based and legacy and has_ctf:
        # ctf-text-format-reader: 4 GB worth of chunks (128 for the default 32 MB chunks)
        chunk = int(spec.deserializers[0].get("chunkSizeInBytes", DEFAULT_CHUNK_SIZE_IN_BYTES))
        window = max(1, LEGACY_RANDOMIZATION_WINDOW_IN_BYTES // max(1, chunk))
    elif has_ctf and not (explicit_sample_based and sample_based):
        window = DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS
    elif sample_based:
        # CNTK's default, requestDataSize samples (CompositeDataReader.cpp:137): wider than any corpus,
        # so every chunk's window is the whole corpus
        window = RANDOMIZE_AUTO
    else:
        window = None                   # the whole dataset, in chunks
        spec.whole_dataset_window = "chunks"
    if not randomize:
        kw["randomization_window_in_chunks"] = 0
        kw["randomization_window_in_samples"] = 0
        spec.whole_dataset_window = None
    elif sample_based:
        kw["randomization_window_in_chunks"] = 0
        kw["randomization_window_in_samples"] = window
    else:
        kw["randomization_window_in_chunks"] = window
        kw["randomization_window_in_samples"] = 0

    frame_mode = reader.bool("frameMode", False)
    truncated = reader.bool("truncated", False)
    if frame_mode and truncated:
        raise reader.error("truncated", "frameMode and truncated cannot both be true")
    kw["frame_mode"] = frame_mode
    if truncated:
        # a legacy reader's truncated = true without truncationLength (not CNTKTextFormatReader's):
        # the minibatch size per row
        kw["truncation_length"] = reader.int("truncationLength", minimum=1) \
            if reader.exists("truncationLength") or not legacy or spec.reader_type == "CNTKTextFormatReader" else 0
    else:
        kw["truncation_length"] = 0
    if reader.exists("multiThreadedDeserialization"):
        kw["multithreaded_deserializer"] = reader.bool("multiThreadedDeserialization")
    if reader.exists("verbosity"):
        kw["trace_level"] = reader.int("verbosity")
    elif reader.exists("traceLevel"):
        kw["trace_level"] = reader.int("traceLevel")
    else:
        kw["trace_level"] = 1 if legacy else 0
    if reader.exists("maxErrors"):
        kw["max_errors"] = reader.int("maxErrors", minimum=0)
    if reader.exists("globalRandomization"):
        # cntkio's extension: each sweep a keyed bijection over every sequence (engine/index_shuffle)
        kw["global_randomization"] = reader.bool("globalRandomization")
    if reader.bool("hashSequenceKeys", False) and not _any_string_keys(spec):
        _log.warning("%s: hashSequenceKeys only affects string sequence keys (HTK, MLF); the "
                     "deserializers here have numeric keys", reader.key_path("hashSequenceKeys"))
    return kw


def _any_string_keys(spec: ReaderSpec) -> bool:
    return any(d["type"] not in (CTF_TYPE, CBF_TYPE) for d in spec.deserializers)


def _randomize(reader: Section) -> bool:
    if not reader.exists("randomize"):
        return True
    value = str(reader.raw("randomize")).strip().lower()
    if value == "auto":          # CNTK's older spelling
        return True
    if value == "none":
        return False
    try:
        return reader.bool("randomize")
    except ConfigError as e:
        raise reader.error("randomize", f"randomize must be true or false (or the older auto/none), found {value!r}",
                           "the randomization window is set with randomizationWindow") from e


# --- building ---------------------------------------------------------------------------------

def reader_input_names(config: Any, path: str = "reader") -> list[str]:
    """The stream names a reader section defines, in config order (deserializers in order, then
    their ``input`` sections in order): the order CNTK's reader tests dump them in."""
    return reader_spec(config, path).stream_names


def _join(a: str, b: str | None) -> str:
    return f"{a}.{b}" if a and b else (a or b or "")


def _dpath(spec: ReaderSpec, path: str, i: int) -> str:
    return f"{path}.deserializers[{i}]" if spec.reader_type == COMPOSITE else path


def _named_file_error(e: OSError, config: Any, dconf: dict, spec: ReaderSpec, path: str, i: int) -> OSError:
    """The OSError of a deserializer's file, naming the config key and line that named the file,
    with the path said once (the same OSError type)."""
    key = next((k for k, v in dconf.items() if isinstance(v, str) and e.filename is not None
                and str(v) == str(e.filename)), "file")
    where, line = None, None
    try:
        node = config
        if spec.reader_type == COMPOSITE and hasattr(config, "exists_current") and config.exists_current("deserializers"):
            node = config("deserializers").as_array()[i]
        value = node(key) if hasattr(node, "exists") and node.exists(key) else None
        where, line = getattr(value, "file", None), getattr(value, "line", None)
    except (ConfigError, IndexError, TypeError):
        pass
    reason = e.strerror or str(e)
    if e.filename is not None and str(e.filename) not in reason:
        reason += f": {e.filename}"
    prefix = f"{where}:{line}: " if where and line else (f"{where}: " if where else "")
    if isinstance(e, RemoteError):    # an object store's error: its URL and range, the key before its reason
        return type(e)(f"{prefix}{_join(_dpath(spec, path, i), key)}: {e.reason}", url=e.url, begin=e.begin,
                       end=e.end)
    err = type(e)(f"{prefix}{_join(_dpath(spec, path, i), key)}: {reason}")
    err.errno = e.errno
    return err


def build_reader(config: Any, path: str = "reader", **overrides: Any):
    """Build the MinibatchSource a reader section describes.

    ``config``: the reader section (ConfigParameters, dict or Section); ``path`` its key path for
    error messages; ``overrides``: MinibatchSource keyword arguments that replace the section's
    (e.g. ``max_samples``). The deserializers are built here, so a missing file or a bad option is
    reported before any data is read.
    """
    spec = reader_spec(config, path)
    path = spec.path
    kw = dict(spec.source_kwargs)
    trace = kw.get("trace_level", 1)
    # the source's seed reaches the deserializers (the image transforms draw from it)
    seed = overrides.get("randomization_seed", kw.get("randomization_seed", 0))
    deserializers = []
    for i, dconf in enumerate(spec.deserializers):
        try:
            deserializers.append(registry.build_deserializer(dconf, frame_mode=kw.get("frame_mode", False),
                                                    trace_level=trace, randomization_seed=seed))
        except OSError as e:
            raise _named_file_error(e, config, dconf, spec, path, i) from e
        except ConfigError as e:
            raise ConfigError(e.reason, path=_join(_dpath(spec, path, i), e.path), file=e.file,
                              line=e.line, hint=e.hint) from e
        except FormatError:
            raise                       # bad data: its own error, naming the file and line
        except (ValueError, TypeError, KeyError) as e:
            raise ConfigError(f"cannot build the {dconf['type']}: {e}", path=_dpath(spec, path, i)) from e
    kw.update(overrides)
    return make_source(spec, deserializers, resolve_window(spec, deserializers, kw))


def resolve_window(spec: ReaderSpec, deserializers: list, kw: dict[str, Any]) -> dict[str, Any]:
    """``kw`` with the window of a section that gave none (``spec.whole_dataset_window``: the
    whole data set) sized from the built deserializers; options already in ``kw`` are kept."""
    kw = dict(kw)
    if spec.whole_dataset_window is not None:
        infos = deserializers[0].chunk_infos()
        key, size = (("random_ordering", sum(c.num_sequences for c in infos))   # UCIFastReader's
                     if spec.whole_dataset_window == "records"             # RandomOrdering
                     else ("randomization_window_in_chunks", len(infos)))
        if kw.get(key) is None:
            kw[key] = max(1, size)
    return kw


def make_source(spec: ReaderSpec, deserializers: list, kw: dict[str, Any]):
    """The MinibatchSource of a reader section over its built deserializers, with the reader
    type's minibatch rules (minibatchMode = Full, a global partition budget)."""
    from ..source import MinibatchSource
    kw = {"full_minibatches": spec.full_minibatches, **kw}
    source = MinibatchSource(deserializers if len(deserializers) > 1 else deserializers[0], **kw)
    if spec.reader_type.lower() in _GLOBAL_BUDGET_READERS:
        source.use_global_partition_budget()
    return source
