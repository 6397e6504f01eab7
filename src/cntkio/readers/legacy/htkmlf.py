"""The legacy ``readerType = HTKMLFReader`` (and ``HTKDeserializers``) section on the composite engine.

CNTK's HTKMLFReader was configured by one reader section holding the feature and label
sub-sections (configuration-files.txt, "HTKMLFReader")::

    reader = [ readerType = "HTKMLFReader"; readMethod = "blockRandomize"; randomize = "auto"
               frameMode = true; nbruttsineachrecurrentiter = 32; verbosity = 0
               features = [ dim = 363; type = "real"; scpFile = "glob_0000.scp" ]
               labels = [ mlfFile = "glob_0000.mlf"; labelMappingFile = "state.list"; labelDim = 132
                          labelType = "category" ] ]

cntkio reads it as the deserializer form (composite-readers-deserializers-transforms.txt, "old
versus new configuration"): one ``HTKFeatureDeserializer`` per feature section (``scpFile`` or
``file``, ``dim``, ``contextWindow``, ``prefixPathInSCP``, ``expandToUtterance``) and one
``HTKMLFDeserializer`` per label section (a section with ``labelDim``, ``labelMappingFile``,
``mlfFile``/``mlfFileList`` or ``labelType``), joined by utterance key in that order, so the two
forms give the same minibatches. Sections may also sit under ``input = [...]`` and ``output =
[...]``. Reader options:

* ``frameMode``: default **true**, as in CNTK's HTKMLFReader;
* ``randomize``: ``auto`` (default: the whole corpus is the window), ``none``, or a window in
  frames (``randomization_window_in_samples``);
* ``readMethod`` (``blockRandomize``, ``rollingWindow``, ``none``): ``rollingWindow`` with a window
  (``randomize`` = N frames or ``auto``) is cntkio's rolling window over the frames in corpus order
  (each delivered less than N/2 positions from its corpus position; ``auto``: the whole sweep;
  :func:`cntkio.engine.randomizer.rolling_order`), read from the feature files by offset (no page
  file as CNTK wrote); ``unigram`` (lattice-based training only) is accepted with a warning;
* ``readAhead``,
  ``minibatchMode`` and ``verbosity``: read by the legacy readers' shared options;
* ``truncated``/``truncationLength`` for recurrent models; ``nbrUttsInEachRecurrentIter`` is
  accepted and logged (cntkio's parallel sequences follow from the minibatch size).
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

from ...constants import RANDOMIZE_AUTO
from ...deserializers.htk import FEATURE_TYPE, MLF_TYPE, build_features, build_mlf
from ...deserializers.composite import CompositeDeserializer
from .sections import PARALLEL_KEYS, apply_parallel_sequences, apply_shared_options
from .urls import exists, remote_keys
from ...errors import NotImplementedInCntkio

__all__ = ["HTKMLFAdapter", "build", "TYPE_NAME"]

TYPE_NAME = "HTKMLFReaderDeserializer"
#: ``randomize = auto``: CNTK's randomizeAuto range, (2^64 - 1) >> 2 frames, i.e. a window wider than
#: any corpus (with blockRandomize every chunk's window is the whole corpus; with rollingWindow the
#: whole sweep is shuffled)
ROLLING_WINDOW_AUTO = RANDOMIZE_AUTO
log = logging.getLogger("cntkio.readers.htkmlf")

#: old-HTKMLFReader keys accepted with one warning (they change no minibatch), with why
_INFO_READER_KEYS = {
    "unigram": "the unigram language model (ARPA) CNTK loaded only to map the MLF's word sequences for "
               "lattice-based sequence training (MMI); it changes no frame label, and cntkio reads no lattices",
}
_LABEL_KEYS = ("labelDim", "labelMappingFile", "mlfFile", "mlfFileList", "labelType")
_FEATURE_OPTIONS = ("dim", "contextWindow", "prefixPathInSCP", "expandToUtterance", "definesMBSize",
                    "maxSequenceLength")


def _truthy(v: Any) -> bool:
    return v is not None and str(v).strip().lower() in ("true", "1", "t", "yes")


def _sections(sec: Any) -> list[tuple[str, Any]]:
    out = []
    for group in ("input", "output"):
        if sec.has_local(group):
            g = sec.section(group)
            out.extend((k, g.section(k)) for k in g.keys() if _is_section(g, k))
    out.extend((k, sec.section(k)) for k in sec.keys()
               if k.lower() not in ("input", "output") and _is_section(sec, k))
    return out


def _is_section(sec: Any, key: str) -> bool:
    v = sec.raw(key, inherit=False)
    if isinstance(v, list) and len(v) == 1 and isinstance(v[0], dict):
        v = v[0]
    if not isinstance(v, dict):
        return False
    low = {str(x).lower() for x in v}
    return bool(low & {"dim", "labeldim", "scpfile", "mlffile", "mlffilelist", "file"})


def _is_labels(s: Any) -> bool:
    if any(s.has_local(k) for k in ("labelDim", "labelMappingFile", "mlfFile", "mlfFileList")):
        return True
    return s.has_local("labelType") and s.str("labelType", inherit=False).lower() == "category"


class HTKMLFAdapter:
    """``readerType = HTKMLFReader`` section -> the config of an HTK feature + MLF composite."""

    deserializer_type = TYPE_NAME

    def config(self, sec: Any, spec: Any) -> dict:
        for key in ("lattices", "latticeIndexFile", "denlatTocFile"):
            if sec.has_local(key):
                file, line = sec.where(key)
                raise NotImplementedInCntkio(
                    f"{file or '<config>'}:{line or '?'}: {sec.key_path(key)}: the lattice reader (denominator "
                    "lattices for sequence training, CNTK's latticearchive) is not implemented in cntkio: it "
                    "reads a format outside the readers cntkio implements")
        found = _sections(sec)
        if not found:
            raise sec.error("features", "an HTKMLFReader section needs feature and label sub-sections "
                            "(features = [dim = ...; scpFile = ...], labels = [labelDim = ...; mlfFile = ...; "
                            "labelMappingFile = ...])")
        feats, labels = [], []
        for name, s in found:
            part = self._labels(name, s) if _is_labels(s) else self._features(name, s)
            part.update(remote_keys(s))   # URLs (docs/remote.md): the sub-section's keys, else the reader's
            (labels if _is_labels(s) else feats).append(part)
        if not feats:
            raise sec.error("features", "an HTKMLFReader section needs a feature section with scpFile")
        # CNTK's config sections are a map ordered by name (case-insensitive): its first feature
        # section by name is the primary stream
        feats.sort(key=lambda f: str(next(iter(f["input"]))).lower())
        expand = [_truthy(next(iter(f["input"].values())).get("expandToUtterance")) for f in feats]
        for f, e in zip(feats, expand):
            ctx = next(iter(f["input"].values())).get("contextWindow")
            if e and ctx is not None and str(ctx).strip() not in ("1", "0", "0:0", "(0:0)"):
                raise sec.error(next(iter(f["input"])), "contextWindow expansion not permitted when "
                                "expandToUtterance=true")
        if expand[0]:     # CNTK's HTKMLFReader's checks
            raise sec.error(next(iter(feats[0]["input"])), "The first feature stream in the file must be frame-based "
                            "not utterance based. Please reorder the feature blocks of your config appropriately")
        # minibatchMode = Full: no partial minibatch at an epoch's end (readers/epochs.py)
        apply_shared_options(sec, spec)
        for key, why in _INFO_READER_KEYS.items():
            if sec.has_local(key):
                path = sec.str(key)
                if not exists(path, remote_keys(sec)):   # CNTK read the file: a missing one was its error too
                    raise sec.error(key, f"the file {path!r} does not exist",
                                    "give the unigram language model's path, or remove the key")
                log.warning("%s=%s is accepted and has no effect in cntkio: %s", sec.key_path(key), path, why)
        if sec.exists("addEnergy") and sec.int("addEnergy", minimum=0) != 0:
            # the spec: energy elements added with rollingWindow; CNTK 2.7's reader never read the key
            # (its rolling-window source was built with 0 energy elements), so neither does cntkio
            log.warning("%s = %s has no effect, as in CNTK 2.7 (its HTKMLFReader never read it)",
                        sec.key_path("addEnergy"), sec.raw("addEnergy"))
        if sec.exists("readAhead"):     # CNTK's old reader: a loader thread; the data are the same
            log.info("%s = %s: cntkio always loads ahead on background threads", sec.key_path("readAhead"),
                     sec.raw("readAhead"))
        parts = feats + labels
        for key in ("useNumericSequenceKeys", "hashSequenceKeys"):   # the reader's corpus: every part
            if sec.exists(key):
                for p in parts:
                    p[key] = sec.bool(key)
        spec.stream_names.extend(next(iter(p["input"])) for p in parts)
        precision = "float" if spec.dtype == "float32" else "double"
        for p in parts:
            p["precision"] = precision
        return {"type": TYPE_NAME, "parts": parts, "precision": precision}

    @staticmethod
    def _features(name: str, s: Any) -> dict:
        entry: dict[str, Any] = {}
        key = "scpFile" if s.has_local("scpFile") else "file"
        if not s.exists(key):
            raise s.error("scpFile", "a feature section needs scpFile = ... (the SCP file)")
        entry["scpFile"] = s.raw(key)
        for k in _FEATURE_OPTIONS:
            if s.has_local(k):
                entry[k] = s.raw(k, inherit=False)
        if s.has_local("type") and s.str("type", inherit=False).lower() not in ("real",):
            raise s.error("type", f"a feature section's type must be real, found {s.str('type', inherit=False)!r}")
        return {"type": FEATURE_TYPE, "input": {name: entry}}

    @staticmethod
    def _labels(name: str, s: Any) -> dict:
        entry: dict[str, Any] = {}
        if s.has_local("mlfFileList"):
            entry["mlfFileList"] = s.raw("mlfFileList", inherit=False)
        elif s.has_local("mlfFile") or s.has_local("file"):
            entry["mlfFile"] = s.raw("mlfFile" if s.has_local("mlfFile") else "file", inherit=False)
        else:
            raise s.error("mlfFile", "a label section needs mlfFile = ... or mlfFileList = (...)")
        dim_key = "labelDim" if s.has_local("labelDim") else "dim"
        if not s.has_local(dim_key):
            raise s.error("labelDim", "a label section needs labelDim = (the number of labels)")
        entry["dim"] = s.raw(dim_key, inherit=False)
        if s.exists("labelMappingFile"):     # without one the MLF has four columns, the class id last
            entry["labelMappingFile"] = s.raw("labelMappingFile")
        if s.has_local("labelType") and s.str("labelType", inherit=False).lower() != "category":
            raise s.error("labelType", "HTK label sections are labelType = category (one-hot per frame)")
        for key in ("labelToTargetMappingFile", "targetDim"):    # labels delivered as their targets
            if s.has_local(key):
                entry[key] = s.raw(key, inherit=False)
        if s.has_local("phoneBoundaries"):
            entry["phoneBoundaries"] = s.raw("phoneBoundaries", inherit=False)
        return {"type": MLF_TYPE, "input": {name: entry}}

    def source_options(self, sec: Any, spec: Any) -> None:
        kw = spec.source_kwargs
        text = str(sec.raw("randomize")).strip().lower() if sec.exists("randomize") else "auto"
        kw["randomization_window_in_chunks"] = 0
        if text in ("none", "false", "0"):
            kw["randomize"] = False
            kw["randomization_window_in_samples"] = 0
            spec.whole_dataset_window = None
        elif text in ("auto", "true"):
            # CNTK's randomizeAuto (HTKDeserializers/ConfigHelper.cpp:186), a frame window wider than
            # any corpus: a window of the corpus' own size would leave each chunk's window short of it
            # (half on each side) and give another order than CNTK's controls
            # (HTKMLFReaderSimpleDataLoop1_5_11_Control.txt)
            kw["randomize"] = True
            kw["randomization_window_in_samples"] = RANDOMIZE_AUTO
            spec.whole_dataset_window = None
        else:
            kw["randomize"] = True
            kw["randomization_window_in_samples"] = sec.int("randomize", minimum=1)
            spec.whole_dataset_window = None
        old = spec.reader_type.lower() == "htkmlfreader"     # CNTK's own HTKMLFReader DLL, else HTKDeserializers
        method = sec.str("readMethod", "blockRandomize").lower()
        allowed = ("blockrandomize", "rollingwindow") if old else ("blockrandomize", "none")
        if method not in allowed:
            raise sec.error("readMethod", "readMethod must be 'rollingWindow' or 'blockRandomize'" if old
                            else "readMethod must be 'blockRandomize' or 'none'.")
        no_window = text in ("none", "false", "0")
        if method == "blockrandomize" and no_window:
            raise sec.error("randomize", "'randomize' cannot be 'none' when 'readMethod' is 'blockRandomize'.",
                            "readMethod = rollingWindow (HTKMLFReader) or none (HTKDeserializers) with "
                            "randomize = none reads the corpus in order")
        if method == "rollingwindow":
            if any(p["input"][next(iter(p["input"]))].get("expandToUtterance") not in (None, False, "false")
                   for p in spec.deserializers[0]["parts"] if p["type"] == FEATURE_TYPE):
                raise sec.error("readMethod", "rollingWindow reader does not support expandToUtt. Change to "
                                "blockRandomize.")
            if not no_window:
                # cntkio's rolling window (not CNTK's order, which came from the C library's rand()):
                # frames in corpus order, each moved less than N/2 positions, N the randomize value;
                # auto is CNTK's randomizeAuto (2^62 - 1 frames: the whole sweep). The features are
                # read from the original files by offset: no page file.
                if not sec.bool("frameMode", True):
                    raise sec.error("readMethod", "readMethod = rollingWindow randomizes frames: it needs "
                                    "frameMode = true", "readMethod = blockRandomize randomizes utterances")
                kw["rolling_window"] = True
        if method == "none" or no_window:
            kw["randomize"] = False
            kw["randomization_window_in_samples"] = 0
            spec.whole_dataset_window = None
        truncated = sec.bool("truncated", False)
        frame_mode = sec.bool("frameMode", True)
        if frame_mode and truncated:
            raise sec.error("truncated", "'Truncated' cannot be 'true' in frameMode (i.e. when 'frameMode' is "
                            "'true')" if old else "frameMode and truncated BPTT are mutually exclusive.",
                            "frameMode = false with truncated = true")
        kw["frame_mode"] = frame_mode
        # minibatchMode = Full: CNTK's HTKMLFReader skips a frame-mode minibatch short of the size
        # (HTKMLFReader/HTKMLFReader.cpp:794-805, 1022); in sequence mode, and in the HTKDeserializers
        # reader (which never reads the key), it changes nothing
        if not (old and frame_mode):
            spec.full_minibatches = False
        # nbrUttsInEachRecurrentIter: with truncated = true, that many utterances side by side,
        # truncationLength steps each (without it, the minibatch size per row: CNTK's legacy form);
        # default 1; less than 1 is CNTK's error. In frame mode it has no effect (logged), as in
        # CNTK's reader on the deserializers (its old DLL refused N > 1 there when the epoch began;
        # the spec's old-versus-new example sets 32 in frame mode)
        key = next((k for k in PARALLEL_KEYS if sec.exists(k)), None)
        if key is not None:
            n = sec.int(key)
            if n < 1:
                raise sec.error(key, "nbrUttsInEachRecurrentIter cannot be less than 1.")
        n = apply_parallel_sequences(sec, spec, always_truncated=False)
        if truncated and n == 0 and not kw.get("truncation_length"):
            kw["parallel_sequences"] = 1


def build(config: Mapping, **source_options: Any) -> CompositeDeserializer:
    """The registry's factory of the legacy HTKMLFReader: the parts joined by key."""
    parts = []
    for p in config["parts"]:
        parts.append(build_features(p, **source_options) if p["type"] == FEATURE_TYPE
                     else build_mlf(p, **source_options))
    return CompositeDeserializer(parts, trace_level=source_options.get("trace_level", 1))


#: how the reader factory turns a ``readerType = HTKMLFReader`` section into this type's config
build.legacy_adapter = HTKMLFAdapter()
