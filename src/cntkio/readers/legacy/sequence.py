"""SequenceReader (CNTK's LMSequenceReader): language-model text on cntkio's engine.

    reader = [
        readerType = SequenceReader          # LMSequenceReader is the same reader
        file = ptb.train.txt                 # one sentence per line
        randomize = None                     # Auto: sentences randomized over the whole corpus
        unk = "<unk>"                        # words outside the vocabulary
        wordclass = vocab.txt                # optional: 'index count word class' per line
        nbruttsineachrecurrentiter = 10      # 10 sentences side by side per minibatch
        labelIn = [ labelDim = 10000; beginSequence = "</s>"; endSequence = "</s>" ]
        labels = [ labelType = NextWord; labelDim = 10000 ]
    ]

``nbrUttsInEachRecurrentIter = N`` (N > 0) puts up to N sentences of one length side by side in
every minibatch, continued in the next minibatch until they end, ``minibatchSize`` words per row,
inputs sparse (:func:`.sections.apply_sentence_rows`); 0 (the default) packs whole sentences up
to ``minibatchSize`` words.

Each non-blank line is a sentence. It must end with ``endSequence`` (else it is reported with
file and line and dropped, counted against ``maxErrors``); ``beginSequence`` is put in front
when the line does not start with it. A sentence ``w0 w1 ... wn`` (w0 the begin symbol, wn the end
symbol) is one sequence of ``n`` samples: the input stream (the section that is not the output
one, e.g. ``labelIn``) holds ``w0 .. w(n-1)`` one-hot (sparse, ``labelDim`` of that section), the
output stream (``labelType = NextWord``, or the section named ``labels``) the next words
``w1 .. wn``: one-hot (sparse) of its ``labelDim``, or, with ``wordclass``, CNTK's class-based LM
rows ``(word id, class id, first word id of the class, last + 1)`` (dense, 4 values).

The vocabulary is the input section's ``labelMappingFile`` when that file exists (one word per
line, id = line number: CNTK's LMSequenceReader, SequenceReader.cpp:1489-1506), else the
``wordclass`` file's (word ids as its indices), else it is built from the corpus: the words by
falling count, ties by the words' text (a ``labelMappingFile`` that does not exist is then CNTK's
"created on the fly", with a warning: CNTK wrote no file either, SequenceReader.cpp:1509-1541). A word
outside it reads as the ``unk`` word, ``<unk>`` unless ``unk`` says otherwise (CNTK's default,
SequenceReader.cpp:1429; ``GetIdFromLabel``, :78); when the vocabulary has no such word it is an
error with file, line and word. Ids must be below each section's ``labelDim``.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..._log import get_logger
from ...deserializers.base import DeserializerBase
from ...deserializers.protocol import ChunkData, ChunkInfo, DenseStream, SequenceTable, SparseStream
from ...errors import ConfigError
from ...streams import StreamInformation
from ...values import to_choice, to_int, to_str
from .sections import (apply_sentence_rows, apply_shared_options, block_source_options,
                       parallel_sequences_option, randomize_option)
from .urls import REMOTE_KEYS, exists, local_file, remote_keys
from .vocab import WordClasses, lookup, read_token_file, tokenize_file

__all__ = ["SequenceDeserializer", "SequenceAdapter", "build", "DESERIALIZER_TYPE", "one_hot_sparse",
           "feature_section_name"]

_log = get_logger("readers.legacy.sequence")

DESERIALIZER_TYPE = "SequenceReaderDeserializer"
#: CNTK's default unk word (SequenceReader.cpp:1429, ``readerConfig(L"unk", L"<unk>")``)
_DEFAULT_UNK = "<unk>"
_LOG_ERRORS = 10


def one_hot_sparse(ids: np.ndarray, offsets: np.ndarray, dim: int, dtype) -> SparseStream:
    """One-hot samples as CSR: one non-zero per sample (``ids`` may hold several per sample when
    ``ids`` is 2-D: one column per non-zero, each block of ``dim`` columns offset)."""
    ids = np.asarray(ids)
    n = ids.shape[0]
    ids = ids.reshape(n, -1)
    per = ids.shape[1]
    indptr = np.arange(0, (n + 1) * per, per, dtype=np.int64)
    indices = (ids + (np.arange(per) * dim)[None, :]).astype(np.int32).ravel()
    return SparseStream(indptr, indices, np.ones(n * per, dtype), offsets, dim * per)


class SentenceCorpus(DeserializerBase):
    """What the sentence readers share: sentences ``starts[i]`` .. ``+ lengths[i]`` of one token
    array, chunks of consecutive sentences (``_bounds``), keys the sentence numbers, ``invalid``
    sentences counted against ``maxErrors``. Subclasses set those and ``_infos`` and build a
    chunk's streams from :meth:`_chunk_positions`."""

    def stream_infos(self) -> list[StreamInformation]:
        return list(self._infos)

    def chunk_infos(self) -> list[ChunkInfo]:
        return [ChunkInfo(c, b - a, int(self.lengths[a:b].sum()))
                for c, (a, b) in enumerate(zip(self._bounds, self._bounds[1:]))]

    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        a, b = self._bounds[chunk_id], self._bounds[chunk_id + 1]
        return SequenceTable(np.arange(a, b, dtype=np.int64), self.lengths[a:b].copy())

    def _chunk_positions(self, chunk_id: int):
        """``(a, b, table, offsets, t, base)`` of chunk ``chunk_id``: its sentences ``a:b``, their
        table and sample offsets, and per sample its position ``t`` in its sentence and its
        sentence's first token ``base`` (so ``base + t`` indexes the token array)."""
        a, b = self._bounds[chunk_id], self._bounds[chunk_id + 1]
        table = self.sequence_infos(chunk_id)
        lens = table.lengths
        offsets = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(lens, out=offsets[1:])
        t = np.arange(int(offsets[-1]), dtype=np.int64) - np.repeat(offsets[:-1], lens)
        return a, b, table, offsets, t, np.repeat(self.starts[a:b], lens)

    def _chunk_data(self, table: SequenceTable, streams: dict, a: int, b: int) -> ChunkData:
        inv = self.invalid[a:b]
        return ChunkData(table, streams, inv.copy() if inv.any() else None)


class SequenceDeserializer(SentenceCorpus):
    """Sentences of a language-model corpus (module docstring).

    ``config``: ``{"file", "input": {"name", "labelDim"}, "output": {"name", "labelDim"},
    "beginSequence", "endSequence", "unk", "wordclass", "sentencesPerChunk" (0: about
    ``tokensPerChunk`` tokens), "precision"}``."""

    key_kind = "numeric"

    def __init__(self, config: Mapping, trace_level: int = 1, **_source_options: Any) -> None:
        self.file = to_str(config.get("file"), "file")
        precision = to_choice(config.get("precision", "float"), "precision", ("float", "double"))
        self.dtype = np.float32 if precision == "float" else np.float64
        inp, out = dict(config["input"]), dict(config["output"])
        self.in_name, self.out_name = to_str(inp["name"], "input"), to_str(out["name"], "output")
        self.in_stream = to_str(inp.get("stream", self.in_name), "input.stream")
        self.in_dim = to_int(inp.get("labelDim"), f"{self.in_name}.labelDim", minimum=1)
        self.out_dim = to_int(out.get("labelDim", self.in_dim), f"{self.out_name}.labelDim", minimum=1)
        self.begin = to_str(config.get("beginSequence", "</s>"), "beginSequence")
        self.end = to_str(config.get("endSequence", "</s>"), "endSequence")
        unk = config.get("unk")
        # files at URLs (docs/remote.md): read whole, so copied once into <cacheDir>/files/
        remote = {k: config[k] for k in REMOTE_KEYS if k in config}
        self.classes = WordClasses(to_str(config["wordclass"], "wordclass"), "wordclass", remote) \
            if config.get("wordclass") else None
        self._path = local_file(self.file, remote, "file", "the corpus")
        try:
            open(self._path, "rb").close()
        except OSError as e:
            raise ConfigError(f"the corpus {self.file!r} cannot be read: {e.strerror}", path="file") from e
        mapping = config.get("labelMappingFile")
        self.mapping_file = None if mapping is None else to_str(mapping, f"{self.in_name}.labelMappingFile")
        if self.mapping_file is not None and not exists(self.mapping_file, remote):
            _log.warning("%s.labelMappingFile %s does not exist: the vocabulary is built from the corpus (as "
                         "CNTK's LMSequenceReader built it on the fly)", self.in_name, self.mapping_file)
            self.mapping_file = None
        fixed = self.classes is not None or self.mapping_file is not None
        # CNTK's unk defaults to <unk>: with a fixed vocabulary, a word outside it reads as <unk>
        # when the vocabulary has it
        self.unk = str(unk) if unk is not None else (_DEFAULT_UNK if fixed else None)
        self._unk_given = unk is not None
        if self.mapping_file is not None:
            if self.classes is not None:
                raise ConfigError("labelMappingFile and wordclass both give the vocabulary; give one",
                                  path=f"{self.in_name}.labelMappingFile")
            self.vocab = read_token_file(self.mapping_file, f"{self.in_name}.labelMappingFile", remote)
            self._check_symbols()
        elif self.classes is not None:
            self.vocab = self.classes.words
            self._check_symbols()
        self._index()                       # builds the vocabulary from the corpus without wordclass
        if self.classes is None and self.mapping_file is None:
            self._check_symbols()
        top = max(self.vocab.values()) + 1
        for name, dim in ((self.in_name, self.in_dim), (self.out_name, self.out_dim)):
            if self.classes is None or name == self.in_name:
                if top > dim:
                    raise ConfigError(f"the vocabulary has {top} words, more than {name}.labelDim = {dim}",
                                      path=f"{name}.labelDim", hint=f"set labelDim = {top}")
        per = to_int(config.get("sentencesPerChunk", 0), "sentencesPerChunk", minimum=0)
        tokens_per_chunk = to_int(config.get("tokensPerChunk", 1 << 20), "tokensPerChunk", minimum=1)
        self._chunk(per, tokens_per_chunk)
        self._infos = [StreamInformation(self.in_stream, 0, "sparse", self.dtype, (self.in_dim,)),
                       StreamInformation(self.out_name, 1, "dense" if self.classes else "sparse", self.dtype,
                                         (4,) if self.classes else (self.out_dim,))]

    def _check_symbols(self) -> None:
        for sym, key in ((self.begin, "beginSequence"), (self.end, "endSequence")):
            if sym not in self.vocab:
                raise ConfigError(f"{key} {sym!r} is not in the vocabulary", path=key)
        if self.unk is not None and self.unk not in self.vocab:
            if self._unk_given:
                raise ConfigError(f"the unk word {self.unk!r} is not in the vocabulary", path="unk")
            self.unk = None             # the default <unk> is not in it: a word outside is an error

    def _index(self) -> None:
        """One pass over the corpus (:func:`.vocab.tokenize_file`, in C): token ids (int32),
        sentence lengths and line numbers; without a wordclass file the vocabulary is built from
        the corpus's words (and the begin, end and unk symbols), ids by falling count, ties by the
        words' text. The per-sentence checks are array operations on the ids."""
        words, numbers, line_counts = tokenize_file(self._path, "file", self.file)
        keep = np.flatnonzero(line_counts)
        if not len(keep):
            raise ConfigError(f"the corpus {self.file!r} holds no sentence", path="file")
        lens = line_counts[keep]
        lines = keep + 1
        if self.classes is None and self.mapping_file is None:   # ids by falling count, then text
            seen = set(words)
            words = words + [w for w in dict.fromkeys((self.begin, self.end, self.unk))
                             if w is not None and w not in seen]
            counts = np.bincount(numbers, minlength=len(words))
            order = sorted(range(len(words)), key=lambda i: (-int(counts[i]), words[i]))
            remap = np.empty(len(words), np.int32)
            remap[order] = np.arange(len(words), dtype=np.int32)
            ids = remap[numbers]
            self.vocab = {words[i]: k for k, i in enumerate(order)}
        else:
            ids = lookup(words, self.vocab)[numbers]
        begin_id, end_id = self.vocab[self.begin], self.vocab[self.end]
        self.unk_id = -1 if self.unk is None else self.vocab[self.unk]
        starts = np.zeros(len(lens), np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        invalid = ids[starts + lens - 1] != end_id
        errors = []
        for k in np.flatnonzero(invalid)[:_LOG_ERRORS].tolist():
            errors.append(f"{self.file}:{int(lines[k])}: the sentence does not end with {self.end!r}")
        missing = ids < 0
        if missing.any():
            if self.unk_id >= 0:
                ids[missing] = self.unk_id
            else:
                sent_of = np.repeat(np.arange(len(lens)), lens)
                bad = np.unique(sent_of[missing])
                for k in bad[:_LOG_ERRORS].tolist():
                    line = int(lines[k])
                    word = next(w for w in _line_text(self._path, line).split() if w not in self.vocab)
                    errors.append(f"{self.file}:{line}: word {word!r} is not in the vocabulary and the "
                                  f"vocabulary has no unk word")
                invalid[bad] = True
                ids[missing] = 0
        for m in errors:
            _log.warning("%s (sentence dropped, counted against maxErrors)", m)
        if int(invalid.sum()) > len(errors):
            _log.warning("%s: %d bad sentences in all", self.file, int(invalid.sum()))
        # put beginSequence in front of the sentences that do not start with it
        need = (ids[starts] != begin_id) | (lens == 1)
        self.ids = np.insert(ids, starts[need], begin_id).astype(np.int32)
        lens = lens + need
        self.invalid = invalid
        self.starts = np.zeros(len(lens) + 1, np.int64)
        np.cumsum(lens, out=self.starts[1:])
        self.lengths = lens - 1                       # samples per sentence

    def _chunk(self, per: int, tokens_per_chunk: int) -> None:
        n = len(self.lengths)
        if per > 0:
            bounds = list(range(0, n, per)) + [n]
        else:
            cum = self.starts[1:]
            marks = np.searchsorted(cum, np.arange(tokens_per_chunk, int(cum[-1]) + tokens_per_chunk,
                                                   tokens_per_chunk), side="left") + 1
            bounds = sorted(set([0] + np.minimum(marks, n).tolist() + [n]))
        self._bounds = bounds

    # --- the protocol (SentenceCorpus) ----------------------------------------------------------
    def get_chunk(self, chunk_id: int) -> ChunkData:
        a, b, table, offsets, t, base = self._chunk_positions(chunk_id)
        pos = base + t
        cur, nxt = self.ids[pos], self.ids[pos + 1]
        streams = {self.in_stream: one_hot_sparse(cur, offsets, self.in_dim, self.dtype)}
        if self.classes is not None:
            streams[self.out_name] = DenseStream(self.classes.labels(nxt, self.dtype), offsets)
        else:
            streams[self.out_name] = one_hot_sparse(nxt, offsets, self.out_dim, self.dtype)
        return self._chunk_data(table, streams, a, b)

    def word_ids(self) -> dict[str, int]:
        """The vocabulary: word -> id."""
        return dict(self.vocab)


class SequenceAdapter:
    """``readerType = SequenceReader`` section -> ``SequenceReaderDeserializer`` config."""

    deserializer_type = DESERIALIZER_TYPE

    def config(self, sec: Any, spec: Any) -> dict:
        apply_shared_options(sec, spec)
        parallel_sequences_option(sec)          # checked here; applied in source_options
        names = [k for k in sec.keys() if isinstance(_as_dict(sec.raw(k, inherit=False)), dict)
                 and any(str(x).lower() in ("labeldim", "labeltype") for x in _as_dict(sec.raw(k, inherit=False)))]
        out = [n for n in names if str(sec.section(n).raw("labelType", "", inherit=False)).lower() == "nextword"]
        if not out:
            out = [n for n in names if n.lower() == "labels"]
        inputs = [n for n in names if n not in out[:1]]
        if not inputs:
            raise sec.error("labelIn", "a SequenceReader section needs an input section (labelIn = [labelDim = ...]) "
                            "and may have an output section (labels = [labelType = NextWord; labelDim = ...])")
        in_name = inputs[0]
        isec = sec.section(in_name)
        # without an output section the labels are the next words in labelIn's vocabulary (the spec:
        # "in the language modeling case, it is the same as labelIn"), named 'labels'
        out_name = out[0] if out else "labels"
        out_dim = sec.section(out_name).int("labelDim", minimum=1) if out else isec.int("labelDim", minimum=1)
        stream = feature_section_name(sec) or in_name
        config: dict[str, Any] = {
            "type": self.deserializer_type, "file": sec.str("file"),
            "input": {"name": in_name, "stream": stream, "labelDim": isec.int("labelDim", minimum=1)},
            "output": {"name": out_name, "labelDim": out_dim},
            "beginSequence": isec.str("beginSequence", "</s>"),
            "endSequence": isec.str("endSequence", "</s>"),
            "precision": "float" if spec.dtype == "float32" else "double",
        }
        if sec.exists("unk"):
            config["unk"] = sec.str("unk")
        if sec.exists("wordclass"):
            config["wordclass"] = sec.str("wordclass")
        if isec.exists("labelMappingFile"):
            config["labelMappingFile"] = isec.str("labelMappingFile")
        randomize, block = randomize_option(sec, auto_epoch_blocks=False)
        config["sentencesPerChunk"] = block if randomize else 0
        spec.stream_names.extend([stream, out_name])
        config.update(remote_keys(sec))         # files at URLs: the keys from here or outwards
        return config

    def source_options(self, sec: Any, spec: Any) -> None:
        block_source_options(sec, spec, auto_epoch_blocks=False)
        # nbrUttsInEachRecurrentIter = N: up to N sentences of one length side by side, carried on
        # into the next minibatch (the LM reader always read this way)
        apply_sentence_rows(sec, spec)


def _line_text(path: str, line: int) -> str:
    """Line ``line`` (1-based) of ``path`` (for messages)."""
    with open(path, encoding="utf-8") as fh:
        for n, text in enumerate(fh, 1):
            if n == line:
                return text
    return ""


def feature_section_name(sec: Any) -> str | None:
    """The name of the reader section's features section, if it has one: the first sub-section
    with ``dim`` and none of ``labelMappingFile``, ``labelDim``, ``labelType`` or ``sectionType =
    labels`` (CNTK's ``GetFileConfigNames``, Source/Common/Config.cpp). CNTK's LMSequenceReader and
    LUSequenceReader deliver the input words under that name (``m_featuresName``), so a
    SimpleNetworkBuilder's ``features`` input reads them; the input section (``labelIn``) only
    configures them."""
    for k in sec.keys():
        d = _as_dict(sec.raw(k, inherit=False))
        if not isinstance(d, dict):
            continue
        low = {str(x).lower(): v for x, v in d.items()}
        if low.keys() & {"labelmappingfile", "labeldim", "labeltype"} or str(low.get("sectiontype", "")) == "labels":
            continue
        if "dim" in low:
            return k
    return None


def _as_dict(v: Any) -> Any:
    if isinstance(v, list) and len(v) == 1 and isinstance(v[0], dict):
        return v[0]
    return v


def build(config: Mapping, **source_options: Any) -> SequenceDeserializer:
    """The registry's factory of ``SequenceReaderDeserializer``."""
    return SequenceDeserializer(config, **source_options)


build.legacy_adapter = SequenceAdapter()
