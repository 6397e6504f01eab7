"""Legacy reader sections -> one deserializer config + MinibatchSource options.

CNTK's legacy readers were DLLs configured by their whole ``reader`` section; cntkio reads each
as one deserializer on the composite engine. The reader factory (``readers/factory.py``) asks a
legacy type's factory for its ``legacy_adapter`` and calls

* ``adapter.config(section, spec)``: the deserializer config dict (and ``spec.stream_names``);
* ``adapter.source_options(section, spec)``: adjusts ``spec.source_kwargs`` (randomization).

The options shared by the legacy readers (UCIFastReader, BinaryReader, SequenceReader,
LUSequenceReader, HTKMLFReader) are read here, once:

* ``randomize``: ``Auto`` (default), ``None``, or ``N``: records are randomized within blocks of
  N consecutive records (``Auto``: blocks of ``epochSize`` records when the epoch size is known,
  else the whole data set). cntkio's block randomizer does it: the blocks are its chunks and the
  window is one chunk, so a block's records are shuffled among themselves; the blocks' order is
  shuffled too (CNTK read them in file order).
* ``minibatchMode``: ``Partial`` (default) or ``Full`` (epochs deliver no partial minibatch:
  ``ReaderSpec.full_minibatches``, applied by :class:`cntkio.readers.EpochReader`).
* ``readMethod``, ``readAhead``, ``verbosity``: see :func:`shared_options`.
* ``nbrUttsInEachRecurrentIter``: N sentences/utterances in parallel per minibatch, see
  :func:`apply_parallel_sequences` (SequenceReader, LUSequenceReader and HTKMLFReader call it
  from their ``source_options``).
"""
from __future__ import annotations

from typing import Any

from ..._log import get_logger
from .urls import refuse_url, remote_keys

_log = get_logger("readers.legacy")

__all__ = ["randomize_option", "shared_options", "stream_sections", "block_source_options", "cache_config",
           "apply_shared_options", "parallel_sequences_option", "apply_parallel_sequences", "apply_sentence_rows",
           "PARALLEL_KEYS", "UCIFastAdapter"]


def randomize_option(sec: Any, auto_epoch_blocks: bool = True) -> tuple[bool, int]:
    """``(randomize, block)`` of a legacy section's ``randomize``: block 0 = the whole data set
    (or, with ``auto_epoch_blocks``, ``epochSize`` records when the epoch size is known, for
    ``Auto``)."""
    if not sec.exists("randomize"):
        text = "auto"
    else:
        text = str(sec.raw("randomize")).strip().lower()
    if text in ("none", "false", "f", "0", "no"):
        return False, 0
    if text in ("auto", "true", "t", "yes"):
        if not auto_epoch_blocks:
            return True, 0
        epoch = sec.int("epochSize", 0, minimum=0) if sec.exists("epochSize") else 0
        return True, epoch
    try:
        n = int(text)
    except ValueError as e:
        raise sec.error("randomize", f"randomize must be Auto, None or a number of records, found {text!r}") from e
    if n < 0:
        raise sec.error("randomize", f"randomize must be Auto, None or a positive number of records, found {n}")
    epoch = sec.int("epochSize", 0, minimum=0) if sec.exists("epochSize") else 0
    if n and epoch and epoch % n:
        _log.warning("%s: randomize = %d is not a factor of epochSize = %d (the spec asks for one): epochs "
                     "will straddle randomization blocks", sec.key_path("randomize"), n, epoch)
    return True, n


_INFO_ONCE: set[str] = set()


def info_once(key: str, msg: str, *args: Any) -> None:
    """Log ``msg`` at info level once per process for ``key`` (an option that cntkio's engine
    makes unnecessary is said once, not per reader built)."""
    if key not in _INFO_ONCE:
        _INFO_ONCE.add(key)
        _log.info(msg, *args)


def _warn_once(key: str, msg: str, *args: Any) -> None:
    if key not in _INFO_ONCE:
        _INFO_ONCE.add(key)
        _log.warning(msg, *args)


def shared_options(sec: Any) -> dict[str, Any]:
    """The options every legacy reader shares (and HTKMLFReader maps through the same code):

    * ``minibatchMode``: ``partial`` or ``full`` (CNTK's spelling in any case);
    * ``readMethod``: ``blockRandomize`` (default), ``rollingWindow`` or ``none``, checked here;
      :func:`block_source_options` applies it for the readers that randomize through it (UCIFast,
      Binary, Sequence, LUSequence): ``blockRandomize`` is cntkio's block randomizer, as CNTK's;
      ``rollingWindow`` (CNTK: a temporary file and a window rolling over it) is read through the
      block randomizer over the same window, with a warning (the order differs from CNTK's);
      ``none`` (cntkio's extension) turns randomization off as ``randomize = None`` does.
      HTKMLFReader maps the value itself (``htkmlf.py``);
    * ``readAhead``: CNTK's optional read-ahead thread, checked here. cntkio always loads and packs
      ahead on its own threads, so either value reads the same minibatches: accepted with a
      one-time info line (:func:`block_source_options`; HTKMLFReader logs its own);
    * ``verbosity``: the trace level (the reader factory maps it to ``trace_level``).
    """
    out: dict[str, Any] = {}
    out["minibatchMode"] = sec.choice("minibatchMode", ("partial", "full"), "partial")
    out["readMethod"] = sec.choice("readMethod", ("blockRandomize", "rollingWindow", "none"), "blockRandomize")
    out["readAhead"] = sec.bool("readAhead", False)
    out["verbosity"] = sec.int("verbosity", 1) if sec.exists("verbosity") else None
    return out


def stream_sections(sec: Any) -> list[str]:
    """Names of ``sec``'s own sub-sections that define a stream (they have ``dim``), in order."""
    names = []
    for k in sec.keys():
        v = sec.raw(k, inherit=False)
        if isinstance(v, list) and len(v) == 1 and isinstance(v[0], dict):
            v = v[0]
        if isinstance(v, dict) and any(str(x).lower() == "dim" for x in v):
            names.append(k)
    return names


def apply_shared_options(sec: Any, spec: Any) -> dict[str, Any]:
    """:func:`shared_options`, with ``minibatchMode = Full`` recorded in the reader spec (the
    epochs then deliver no partial minibatch)."""
    options = shared_options(sec)
    spec.full_minibatches = options["minibatchMode"] == "full"
    return options


#: CNTK's spellings of the number of parallel sequences (the LM reader's page also spells it
#: without the s of "utts"); keys are case-insensitive
PARALLEL_KEYS = ("nbrUttsInEachRecurrentIter", "nbrUttInEachRecurrentIter")


def parallel_sequences_option(sec: Any) -> int:
    """``nbrUttsInEachRecurrentIter`` (0 when absent): checked to be a whole number >= 0."""
    for key in PARALLEL_KEYS:
        if sec.exists(key):
            return sec.int(key, minimum=0)
    return 0


def apply_parallel_sequences(sec: Any, spec: Any, *, always_truncated: bool) -> int:
    """Map ``nbrUttsInEachRecurrentIter = N`` onto the engine's truncated-BPTT slots; returns N.

    CNTK's recurrent legacy readers put N sentences (utterances) side by side in every minibatch:
    each of the N parallel rows continues its sentence in the next minibatch (the network carries
    its state over) and takes the next sentence when one ends; a minibatch holds ``minibatchSize``
    steps of each row (``truncationLength`` steps where one is given). That is the engine's
    truncated-BPTT packing with a fixed number of slots: ``spec.source_kwargs["parallel_sequences"]
    = N`` (``truncation_length`` stays the factory's: ``truncationLength`` with ``truncated =
    true``, else 0 = the minibatch size per row).

    ``always_truncated``: the reader always works this way (SequenceReader, LUSequenceReader);
    otherwise (HTKMLFReader) only with ``truncated = true``; without it whole utterances are packed
    up to the minibatch size and N > 1 has no effect (a warning says so), as in CNTK's HTKMLFReader
    on its deserializers. In frame mode the value has no effect (frames are randomized one by one),
    which is logged.
    ``truncated = true`` with neither ``truncationLength`` nor N reads one row (CNTK's default N of
    1) of ``minibatchSize`` steps.
    Call it from an adapter's ``source_options`` (after the factory's ``truncated``/``frameMode``).
    """
    n = parallel_sequences_option(sec)
    key = next((k for k in PARALLEL_KEYS if sec.exists(k)), PARALLEL_KEYS[0])
    kw = spec.source_kwargs
    if (n == 0 and not sec.exists(key) and not kw.get("frame_mode") and not kw.get("truncation_length")
            and sec.bool("truncated", False)):
        n = 1            # truncated = true without a truncationLength: CNTK's default of one row
    if n == 0:
        kw.pop("parallel_sequences", None)
        return 0
    if kw.get("frame_mode"):
        _log.warning("%s = %d has no effect in frame mode (frames are delivered one by one, as in CNTK)",
                     sec.key_path(key), n)
        kw.pop("parallel_sequences", None)
        return n
    truncated = always_truncated or bool(kw.get("truncation_length")) or sec.bool("truncated", False)
    if not truncated:
        if n > 1:
            # CNTK's HTKMLFReader on the deserializers packs whole utterances up to the minibatch
            # size and reads N only for truncated packing (HTKDeserializers/HTKMLFReader.cpp:69-97,
            # 172-190); CNTK's older HTKMLFReader DLL put N whole utterances side by side whatever
            # the minibatch size (HTKMLFReader/HTKMLFReader.cpp:977-1014): docs/differences.md
            _log.warning("%s = %d: without truncated = true whole utterances are packed up to the minibatch "
                         "size (as CNTK's HTKMLFReader on its deserializers); CNTK's older HTKMLFReader put %d "
                         "utterances in each minibatch whatever its size", sec.key_path(key), n, n)
        kw.pop("parallel_sequences", None)
        return n
    kw["parallel_sequences"] = n
    _log.info("%s = %d: %d sequences in parallel per minibatch, %s steps each", sec.key_path(key), n, n,
              kw.get("truncation_length") or "minibatchSize")
    return n


def apply_sentence_rows(sec: Any, spec: Any) -> int:
    """SequenceReader and LUSequenceReader: :func:`apply_parallel_sequences`, and with N > 0 the
    sentence readers' own layout: sparse inputs stay sparse (``parallel_sparse``), and the rows
    of a minibatch hold sentences of one length (CNTK's documented grouping: the next sentence and
    the sentences of its length after it, up to N, side by side until they end together;
    ``parallel_groups``). ``groupEqualLengths = false`` (cntkio's key) fills each row with the next
    sentence as soon as its own ends instead."""
    n = apply_parallel_sequences(sec, spec, always_truncated=True)
    kw = spec.source_kwargs
    if kw.get("parallel_sequences"):
        kw["parallel_sparse"] = True
        kw["parallel_groups"] = sec.bool("groupEqualLengths", True)
    return n


_LABEL_KEYS = ("labelDim", "labelType", "labelMappingFile", "labelMapping")


class UCIFastAdapter:
    """``readerType = UCIFastReader`` section -> ``UCIFastReaderDeserializer`` config."""

    deserializer_type = "UCIFastReaderDeserializer"

    def config(self, sec: Any, spec: Any) -> dict:
        names = stream_sections(sec)
        if not names:
            raise sec.error("features", "a UCIFastReader section needs sub-sections with dim and start "
                            "(features = [dim = 784; start = 1], labels = [dim = 1; start = 0; labelDim = 10])")
        streams: dict[str, dict] = {}
        files: dict[str, str] = {}
        for name in names:
            s = sec.section(name)
            entry: dict[str, Any] = {"dim": s.int("dim", inherit=False, minimum=1),
                                     "start": s.int("start", 0, inherit=False, minimum=0)}
            if any(s.has_local(k) for k in _LABEL_KEYS):
                entry["labelType"] = s.choice("labelType", ("category", "regression", "none"), "category",
                                              inherit=False)
                if s.has_local("labelDim"):
                    entry["labelDim"] = s.int("labelDim", inherit=False, minimum=1)
                if s.has_local("labelMapping"):
                    entry["labelMapping"] = [str(x) for x in s.list("labelMapping", inherit=False)]
                elif s.exists("labelMappingFile"):
                    entry["labelMappingFile"] = s.str("labelMappingFile")
                    if s.exists("allowMapCreation"):       # make a missing map from the data
                        entry["allowMapCreation"] = s.bool("allowMapCreation")
            if s.exists("file"):
                files[name] = s.str("file")
            streams[name] = entry
            if entry.get("labelType") != "none":
                spec.stream_names.append(name)
        if not files:
            raise sec.error("file", "required parameter 'file' is missing (the UCI data file, in the reader "
                            "section or in each data section)")
        distinct = sorted(set(files.values()))
        if len(distinct) > 1:
            raise sec.error("file", f"UCIFastReader reads one file for all sections; found {', '.join(map(repr, distinct))}",
                            "move file = ... up to the reader section")
        apply_shared_options(sec, spec)
        randomize, block = randomize_option(sec)
        if randomize and shared_options(sec)["readMethod"] == "none":
            randomize = False
        # randomized: the chunks are CNTK's RandomOrdering blocks (source_options), the whole file
        # one block when its size is not known (randomize = Auto without epochSize)
        config: dict[str, Any] = {"type": self.deserializer_type, "file": distinct[0], "streams": streams,
                                  "recordsPerChunk": (block or _ONE_CHUNK) if randomize else 0}
        if sec.exists("chunkSizeInBytes"):
            config["chunkSizeInBytes"] = sec.int("chunkSizeInBytes", minimum=1)
        config["precision"] = "float" if spec.dtype == "float32" else "double"
        if sec.has_local("writerType"):
            config["cache"] = cache_config(sec, names)
        config.update(remote_keys(sec))      # a file at a URL (docs/remote.md): from here or outwards
        return config

    def source_options(self, sec: Any, spec: Any) -> None:
        """UCIFastReader randomizes as CNTK's did: its RandomOrdering in blocks of ``randomize``
        records (``Auto``: the epoch size, else the whole file), :mod:`cntkio.engine.ordering`."""
        block_source_options(sec, spec)
        kw = spec.source_kwargs
        if kw.get("randomize"):
            _, block = randomize_option(sec)
            kw["random_ordering"] = block
            spec.whole_dataset_window = "records" if not block else None


#: recordsPerChunk of "one chunk for the whole file" (the RandomOrdering block of ``Auto`` without
#: an epoch size)
_ONE_CHUNK = 2**62


def block_source_options(sec: Any, spec: Any, auto_epoch_blocks: bool = True) -> None:
    """The MinibatchSource randomization options of a legacy section's ``randomize`` (module
    docstring): the deserializer's chunks are the randomization blocks, the window one chunk."""
    randomize, block = randomize_option(sec, auto_epoch_blocks)
    method = shared_options(sec)["readMethod"]
    if method == "none":
        randomize = False                      # readMethod = none: as randomize = None
    elif method == "rollingWindow" and randomize:
        _warn_once("readMethod", "%s = rollingWindow: cntkio randomizes through its block randomizer over the "
                   "same window (no temporary file); the order differs from CNTK's rolling window",
                   sec.key_path("readMethod"))
    if sec.exists("readAhead"):
        info_once("readAhead", "%s = %s: cntkio always loads and packs ahead on its own threads; the "
                  "option changes nothing", sec.key_path("readAhead"), sec.bool("readAhead"))
    kw = spec.source_kwargs
    kw["randomize"] = randomize
    kw["randomization_window_in_samples"] = 0
    if not randomize:
        kw["randomization_window_in_chunks"] = 0
        spec.whole_dataset_window = None
    elif block:
        kw["randomization_window_in_chunks"] = 1      # a block = a chunk, shuffled in itself
        spec.whole_dataset_window = None
    else:
        kw["randomization_window_in_chunks"] = 1
        spec.whole_dataset_window = "chunks"           # the whole data set


def cache_config(sec: Any, names: list[str]) -> dict:
    """The BinaryWriter cache of a UCIFastReader section (``writerType = BinaryReader``)."""
    wt = sec.str("writerType", inherit=False)
    if wt.lower() not in ("binaryreader", "binarywriter"):
        raise sec.error("writerType", f"UCIFastReader caches through writerType = BinaryReader, found {wt!r}")
    files: dict[str, str] = {}
    for name in names:
        s = sec.section(name)
        if s.has_local("wfile"):
            files[name] = s.str("wfile", inherit=False)
    if sec.has_local("wfile"):
        for name in names:
            files.setdefault(name, sec.str("wfile", inherit=False))
    for name, path in files.items():    # the cache is written, then memory-mapped: a local file
        refuse_url(path, f"{name}.wfile", "binary cache file")
    missing = [n for n in names if n not in files]
    if missing:
        raise sec.error("wfile", f"writerType is set but no wfile names the cache of {', '.join(missing)}",
                        "set wfile = ... in the reader section (one file) or in each section")
    conf: dict[str, Any] = {"files": files}
    if sec.exists("cacheViews"):        # cntkio's: minibatches as read-only views of the cache
        conf["views"] = sec.bool("cacheViews")
    if sec.exists("cacheMaps"):         # cntkio's: minibatches as copy-on-write maps of the cache
        conf["maps"] = sec.bool("cacheMaps")
    # CNTK's BinaryWriter preallocated its file (wsize MB, wrecords records: too small was an
    # error) and viewed it through a window of windowSize; cntkio's files grow as they are written
    # and are memory-mapped whole (the OS pages in what the engine's window touches), so these are
    # checked and said once; wrecords is compared with the records written (binary.py)
    for key, why in (("wsize", "the cache file is sized from the data"),
                     ("wrecords", "the cache file holds every record (a warning says when CNTK's "
                      "preallocation would have been too small)"),
                     ("windowSize", "the cache file is memory-mapped whole; the engine holds only "
                      "its randomization window")):
        if sec.exists(key):
            conf[key] = sec.int(key, minimum=0)
            info_once(key, "%s = %d: %s", sec.key_path(key), conf[key], why)
    for name in names:
        s = sec.section(name)
        if s.has_local("sectionType"):
            conf.setdefault("sectionTypes", {})[name] = s.choice(
                "sectionType", ("data", "labels", "labelMapping", "stats", "categoryLabels"), inherit=False)
        if s.has_local("wref"):
            ref = s.str("wref", inherit=False)
            if ref not in names:
                raise s.error("wref", f"wref names {ref!r}, which is not a section of this reader "
                              f"({', '.join(names)})")
    return conf

