"""LUSequenceReader: language-understanding columns (words, then the label) on cntkio's engine.

    reader = [
        readerType = LUSequenceReader
        file = atis.train.txt              # 'word label' per line, sentences BOS ... EOS
        wordContext = 0:1:2                # the words at t, t+1, t+2 form the input at t
        unk = "<unk>"                      # input words not in the token file
        wordmap = wordmap.txt              # 'word mapped' per line, used with usewordmap
        randomize = None
        labelIn = [ usewordmap = true; beginSequence = BOS; endSequence = EOS; token = input.txt ]
        labels = [ token = output.txt ]
    ]

Every non-blank line has the same number of columns: input words, then the label (last). A
sentence runs from a line whose first column is ``beginSequence`` to the next whose first column
is ``endSequence`` (both lines included, as in CNTK's ATIS data). A sentence cut by the next
begin symbol or by the end of the file, and lines outside any sentence, are reported with file and
line and dropped, counted against ``maxErrors``.

Inputs: each input word is looked up in the input ``token`` file (line order = id, duplicates are
an error), after the ``wordmap`` when ``usewordmap`` is true; a word not found reads as ``unk``
(which must be a token), or is an error without it. The input at ``t`` is the one-hot vectors of
the words at ``t + c`` for each offset ``c`` of ``wordContext`` (default ``0``), concatenated
(offsets past the sentence's ends take its first or last word, i.e. the begin/end symbols): a
sparse stream of ``len(wordContext) * columns * tokens`` (``tokens``: the input token file's
length; a ``labelDim`` is not used, as in CNTK). Labels: one-hot in the output token file's ids
(sparse, as wide as that file); a label not in it is an error. The input words are delivered
under the name of the reader section's features section when it has one (``features = [dim =
0]``, as CNTK's ``m_featuresName``), else under the input section's name.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..._log import get_logger
from ...deserializers.protocol import ChunkData
from ...errors import ConfigError
from ...streams import StreamInformation
from ...values import to_bool, to_choice, to_int, to_str
from .sections import (apply_sentence_rows, apply_shared_options, block_source_options,
                       parallel_sequences_option, randomize_option)
from .sequence import SentenceCorpus, _as_dict, feature_section_name, one_hot_sparse
from .urls import REMOTE_KEYS, local_file, remote_keys
from .vocab import lookup, read_token_file, read_word_map, tokenize_file

__all__ = ["LUSequenceDeserializer", "LUSequenceAdapter", "build", "DESERIALIZER_TYPE"]

_log = get_logger("readers.legacy.lusequence")

DESERIALIZER_TYPE = "LUSequenceReaderDeserializer"
_LOG_ERRORS = 10


class LUSequenceDeserializer(SentenceCorpus):
    """Sentences of an LU corpus (module docstring).

    ``config``: ``{"file", "input": {"name", "token", "labelDim", "usewordmap"}, "output":
    {"name", "token", "labelDim"}, "beginSequence", "endSequence", "wordContext" (list of ints),
    "unk", "wordmap", "sentencesPerChunk", "precision"}``."""

    key_kind = "numeric"

    def __init__(self, config: Mapping, trace_level: int = 1, **_source_options: Any) -> None:
        self.file = to_str(config.get("file"), "file")
        precision = to_choice(config.get("precision", "float"), "precision", ("float", "double"))
        self.dtype = np.float32 if precision == "float" else np.float64
        inp, out = dict(config["input"]), dict(config["output"])
        self.in_name, self.out_name = str(inp["name"]), str(out["name"])
        self.in_stream = str(inp.get("stream", self.in_name))
        # files at URLs (docs/remote.md): read whole, so copied once into <cacheDir>/files/
        self._remote = remote = {k: config[k] for k in REMOTE_KEYS if k in config}
        self.in_vocab = read_token_file(to_str(inp.get("token"), f"{self.in_name}.token"), f"{self.in_name}.token",
                                        remote)
        self.out_vocab = read_token_file(to_str(out.get("token"), f"{self.out_name}.token"),
                                         f"{self.out_name}.token", remote)
        # a stream's dimension is its token file's length, whatever labelDim says: CNTK's
        # LUSequenceReader sets "dim = idx4word.size()" after reading the token file
        # (Source/Readers/LUSequenceReader/LUSequenceReader.cpp, Init)
        self.in_dim, self.out_dim = len(self.in_vocab), len(self.out_vocab)
        for name, spec, dim in ((self.in_name, inp, self.in_dim), (self.out_name, out, self.out_dim)):
            given = spec.get("labelDim")
            if given is not None and to_int(given, f"{name}.labelDim", minimum=1) != dim:
                _log.info("%s.labelDim = %s is not used: the dimension is the token file's %d tokens (as in CNTK)",
                          name, given, dim)
        self.begin = to_str(config.get("beginSequence", "BOS"), "beginSequence")
        self.end = to_str(config.get("endSequence", "EOS"), "endSequence")
        self.context = [int(c) for c in config.get("wordContext", [0])]
        if not self.context:
            raise ConfigError("wordContext lists no offset", path="wordContext")
        self.word_map = None
        if to_bool(inp.get("usewordmap", False), f"{self.in_name}.usewordmap"):
            if not config.get("wordmap"):
                raise ConfigError("usewordmap is true but no wordmap file is given", path="wordmap")
            self.word_map = read_word_map(to_str(config["wordmap"], "wordmap"), "wordmap", remote)
        self.unk_id = -1
        if config.get("unk") is not None:
            unk = str(config["unk"])
            if unk not in self.in_vocab:
                raise ConfigError(f"the unk word {unk!r} is not in the input token file", path="unk")
            self.unk_id = self.in_vocab[unk]
        self._read()
        per = to_int(config.get("sentencesPerChunk", 0), "sentencesPerChunk", minimum=0) or 4096
        n = len(self.lengths)
        self._bounds = list(range(0, n, per)) + [n]
        self._infos = [
            StreamInformation(self.in_stream, 0, "sparse", self.dtype, (len(self.context) * self.ncols * self.in_dim,)),
            StreamInformation(self.out_name, 1, "sparse", self.dtype, (self.out_dim,))]

    def _read(self) -> None:
        """The corpus in one pass (:func:`.vocab.tokenize_file`, in C), then array operations: each
        distinct word is mapped once (input id after the word map, label id, begin/end symbol) and
        the tokens' ids gathered; sentences are matched begin to end without a Python step each."""
        errors = 0

        def report(line: int, what: str, outcome: str = "sentence dropped, counted against maxErrors") -> None:
            nonlocal errors
            errors += 1
            if errors <= _LOG_ERRORS:
                _log.warning("%s:%d: %s (%s)", self.file, line, what, outcome)

        words, numbers, counts = tokenize_file(local_file(self.file, self._remote, "file", "the corpus"), "file",
                                               self.file)
        nonblank = np.flatnonzero(counts)
        if not len(nonblank):
            raise ConfigError(f"the corpus {self.file!r} holds no sentence", path="file")
        self.ncols = int(counts[nonblank[0]]) - 1
        if self.ncols < 1:
            raise ConfigError(f"{self.file}:{int(nonblank[0]) + 1}: expected input column(s) and a "
                              "label, found one column", path="file")
        wrong = nonblank[counts[nonblank] != self.ncols + 1]
        if len(wrong):
            k = int(wrong[0])
            raise ConfigError(f"{self.file}:{k + 1}: expected {self.ncols + 1} columns (as the first line), "
                              f"found {int(counts[k])}", path="file")
        table = numbers.reshape(len(nonblank), self.ncols + 1)
        mapped = words if self.word_map is None else list(map(self.word_map.get, words, words))
        in_ids = lookup(mapped, self.in_vocab)[table[:, :self.ncols]]
        out_ids = lookup(words, self.out_vocab)[table[:, self.ncols]]
        kinds = (np.fromiter(map(self.begin.__eq__, words), np.int8, count=len(words))
                 + 2 * np.fromiter(map(self.end.__eq__, words), np.int8, count=len(words)))
        kind = kinds[table[:, 0]]
        line_no = nonblank + 1
        N = len(kind)
        bos, eos = np.flatnonzero(kind & 1), np.flatnonzero(kind & 2)
        # each begin line's sentence ends at the first end line after it, unless the next begin
        # line (or the end of the file) comes first: then it is cut there, and reported
        j = np.searchsorted(eos, bos + 1)
        e = np.append(eos, N)[j]
        nb = np.append(bos[1:], N)
        cut = e >= nb
        for k in np.flatnonzero(cut).tolist():
            report(int(line_no[bos[k]]), f"the sentence begun here has no {self.end!r} before "
                   f"{'the next ' + repr(self.begin) if nb[k] < N else 'the end of the file'}")
        e = np.where(cut, nb - 1, e)
        self.starts = bos.astype(np.int64)
        self.lengths = (e + 1 - bos).astype(np.int64)
        self.invalid = cut.copy()
        # the lines of each sentence (sentences do not overlap): sentence number per line, -1 outside
        edges = np.zeros(N + 1, np.int64)
        np.add.at(edges, bos, 1)
        np.add.at(edges, e + 1, -1)
        covered = np.cumsum(edges[:N]) > 0
        stray = np.flatnonzero(~covered)
        if len(stray):
            report(int(line_no[stray[0]]), f"{len(stray)} line(s) outside any {self.begin!r} ... {self.end!r} "
                   "sentence (the first here)", "ignored")
        sent_of = np.full(N, -1, np.int64)
        sent_of[covered] = np.repeat(np.arange(len(bos)), self.lengths)
        # unknown words and labels make their sentence invalid
        miss_in = in_ids < 0
        if miss_in.any() and self.unk_id >= 0:
            in_ids[miss_in] = self.unk_id
            miss_in[:] = False
        for rows, what in ((np.flatnonzero(miss_in.any(1)), "input word not in the token file (and no unk)"),
                           (np.flatnonzero(out_ids < 0), "label not in the output token file")):
            for r in rows.tolist():
                if sent_of[r] >= 0 and not self.invalid[sent_of[r]]:
                    self.invalid[sent_of[r]] = True
                    report(int(line_no[r]), what)
        in_ids[in_ids < 0] = 0
        out_ids[out_ids < 0] = 0
        self.in_ids, self.out_ids = in_ids, out_ids
        if errors > _LOG_ERRORS:
            _log.warning("%s: %d bad sentences in all", self.file, errors)
        if not len(self.lengths):
            raise ConfigError(f"the corpus {self.file!r} holds no {self.begin!r} ... {self.end!r} sentence",
                              path="file")

    # --- the protocol (SentenceCorpus) ----------------------------------------------------------
    def get_chunk(self, chunk_id: int) -> ChunkData:
        a, b, table, offsets, t, base = self._chunk_positions(chunk_id)
        lens = table.lengths
        last = np.repeat(lens - 1, lens)
        cols = []
        for c in self.context:
            pos = base + np.clip(t + c, 0, last)
            cols.append(self.in_ids[pos])                 # [n, ncols]
        ids = np.concatenate(cols, axis=1)                # one block of in_dim per (offset, column)
        streams = {self.in_stream: one_hot_sparse(ids, offsets, self.in_dim, self.dtype),
                   self.out_name: one_hot_sparse(self.out_ids[base + t], offsets, self.out_dim, self.dtype)}
        return self._chunk_data(table, streams, a, b)


class LUSequenceAdapter:
    """``readerType = LUSequenceReader`` section -> ``LUSequenceReaderDeserializer`` config."""

    deserializer_type = DESERIALIZER_TYPE

    def config(self, sec: Any, spec: Any) -> dict:
        apply_shared_options(sec, spec)
        parallel_sequences_option(sec)                  # checked here; applied in source_options
        names = [k for k in sec.keys() if isinstance(_as_dict(sec.raw(k, inherit=False)), dict)
                 and any(str(x).lower() in ("token", "labeldim") for x in _as_dict(sec.raw(k, inherit=False)))]
        out = [n for n in names if n.lower() == "labels"] or names[-1:]
        if len(names) < 2:
            raise sec.error("labels", "an LUSequenceReader section needs an input section (labelIn = [token = ...]) "
                            "and an output section (labels = [token = ...])")
        out_name = out[0]
        in_name = next(n for n in names if n != out_name)
        isec, osec = sec.section(in_name), sec.section(out_name)
        inp = {"name": in_name, "stream": feature_section_name(sec) or in_name, "token": isec.str("token", inherit=False),
               "usewordmap": isec.bool("usewordmap", False, inherit=False)}
        outp = {"name": out_name, "token": osec.str("token", inherit=False)}
        for d, s in ((inp, isec), (outp, osec)):
            if s.has_local("labelDim"):
                d["labelDim"] = s.int("labelDim", inherit=False, minimum=1)
        config: dict[str, Any] = {
            "type": self.deserializer_type, "file": sec.str("file"), "input": inp, "output": outp,
            "beginSequence": isec.str("beginSequence", "BOS"), "endSequence": isec.str("endSequence", "EOS"),
            "precision": "float" if spec.dtype == "float32" else "double"}
        if sec.exists("wordContext"):
            config["wordContext"] = [int(x) for x in sec.list("wordContext")]
        for key in ("unk", "wordmap"):
            if sec.exists(key):
                config[key] = sec.str(key)
        randomize, block = randomize_option(sec, auto_epoch_blocks=False)
        config["sentencesPerChunk"] = block if randomize else 0
        spec.stream_names.extend([inp["stream"], out_name])
        config.update(remote_keys(sec))         # files at URLs: the keys from here or outwards
        return config

    def source_options(self, sec: Any, spec: Any) -> None:
        block_source_options(sec, spec, auto_epoch_blocks=False)
        apply_sentence_rows(sec, spec)   # as SequenceReader


def build(config: Mapping, **source_options: Any) -> LUSequenceDeserializer:
    """The registry's factory of ``LUSequenceReaderDeserializer``."""
    return LUSequenceDeserializer(config, **source_options)


build.legacy_adapter = LUSequenceAdapter()
