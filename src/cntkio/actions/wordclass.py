"""The ``writeWordAndClass`` action: a text corpus's vocabulary, word classes and class index files.

What it must never do: change the input corpus, or leave a half-written output under its name
(each file is written to a temporary name and renamed).

CNTK's ``DoWriteWordAndClassInfo`` (Source/ActionsLib/OtherActions.cpp), for class-based language
models (``LMSequenceReader``'s ``wordclass`` file, ``classCrossEntropyWithSoftmax``):

* every line of ``inputFile`` gets ``beginSequence`` in front and ``endSequence`` at the end when
  it lacks them (both required); its words are counted (the begin symbol not, when begin and end
  are the same);
* with ``nbrClass > 0``: the ``vocabSize - 1`` most frequent words are kept (``unk``, default
  ``<unk>``, not counted among them), every other word's count goes to ``unk``; words are then
  taken by falling count and cut into ``nbrClass`` classes of about equal
  ``sum(sqrt(count / total))`` (Mikolov's frequency binning); ``vocabSize`` shrinks to the words
  counted more than ``cutoff`` times (default 1) when there are fewer;
* without classes: the words sorted by their text, class 0;
* ``outputVocabFile``: ``index<TAB>count<TAB>word<TAB>class`` per word; ``outputWord2Cls``: the
  class of each word, one a line; ``outputCls2Index``: the first word index of each class;
  ``outputMappingFile`` (optional): the words, one a line;
* ``makeMode`` (default true): nothing is done when the outputs are newer than the input.

Words of equal count are ordered by their text (CNTK's order among them is its heap's, which its
source calls a bug: "leads to different sorting and thus class definitions with VS and gcc").
"""
from __future__ import annotations

import math
import os
import tempfile
from collections import Counter

from .._log import get_logger
from ..errors import ConfigError, FormatError
from ._common import report
from ._params import get_bool, get_int, get_str, key_path

__all__ = ["write_word_and_class", "word_classes"]

_log = get_logger("actions.wordclass")


def word_classes(counts: Counter, vocab_size: int, classes: int, unk: str, cutoff: int = 1,
                 where: str = "writeWordAndClass") -> tuple[list[str], list[float], list[int]]:
    """``(words, counts, class ids)`` in vocabulary order (module docstring)."""
    remaining = len(counts) - (sum(1 for c in counts.values() if c <= cutoff) if cutoff > 0 else 0)
    if remaining <= 0:
        raise ConfigError(f"no word remained after the cutoff of {cutoff}", path=f"{where}.cutoff")
    if vocab_size > remaining:
        _log.warning("%s: the corpus has %d words counted more than %d times, fewer than vocabSize = %d: "
                     "the vocabulary has %d words", where, remaining, cutoff, vocab_size, remaining)
        vocab_size = remaining
    if classes <= 0:
        words = sorted(counts)
        return words, [float(counts[w]) for w in words], [0] * len(words)
    by_count = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    kept: dict[str, float] = {}
    unk_count = 0.0
    wanted = vocab_size - 1
    taken = 0
    for word, count in by_count:
        if taken < wanted:
            taken += 1
            if word == unk:
                unk_count += count
                wanted += 1
            kept[word] = float(count)
        else:
            unk_count += count
    kept[unk] = unk_count
    total = sum(kept.values())
    norm = sum(math.sqrt(c / total) for c in kept.values()) if total > 0 else 1.0
    words, freqs, ids = [], [], []
    running, class_id = 0.0, 0
    for word, count in sorted(kept.items(), key=lambda kv: (-kv[1], kv[0])):
        running = min(1.0, running + (math.sqrt(count / total) / norm if total > 0 else 0.0))
        if running > (class_id + 1) / classes and class_id < classes:
            class_id += 1
        words.append(word)
        freqs.append(count)
        ids.append(class_id)
    return words, freqs, ids


def _write(path: str, lines: list[str]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _up_to_date(outputs: list[str], source: str) -> bool:
    try:
        t = os.path.getmtime(source)
    except OSError:
        t = 0.0
    return all(os.path.exists(p) and os.path.getmtime(p) >= t for p in outputs)


def write_word_and_class(section, name: str = "writeWordAndClass") -> dict:
    """Run the action on a command section; returns the files written (empty when up to date)."""
    vocab_size = get_int(section, "vocabSize")
    classes = get_int(section, "nbrClass", 0)
    cutoff = get_int(section, "cutoff", 1)
    source = get_str(section, "inputFile")
    vocab_file = get_str(section, "outputVocabFile")
    mapping_file = get_str(section, "outputMappingFile", "") or ""
    word2cls = get_str(section, "outputWord2Cls") if classes > 0 else ""
    cls2idx = get_str(section, "outputCls2Index") if classes > 0 else ""
    unk = get_str(section, "unk", "<unk>")
    begin, end = get_str(section, "beginSequence", ""), get_str(section, "endSequence", "")
    if not begin or not end:
        raise ConfigError("give both beginSequence and endSequence (CNTK requires them)",
                          path=key_path(section, "beginSequence" if not begin else "endSequence"))
    if vocab_size is None or vocab_size < 1:
        raise ConfigError(f"vocabSize must be >= 1, found {vocab_size}", path=key_path(section, "vocabSize"))
    outputs = [p for p in (vocab_file, word2cls, cls2idx) if p]
    if get_bool(section, "makeMode", True) and _up_to_date(outputs, source):
        report(f"{name}: all output files are up to date")
        return {}
    counts: Counter = Counter()
    skip_first = begin == end
    lineno = 0
    try:
        with open(source, encoding="utf-8") as f:
            for line in f:
                lineno += 1
                text = line.strip(" \n\r")
                if f"{begin} " not in text:
                    text = f"{begin} {text}"
                if f" {end}" not in text:
                    text = f"{text} {end}"
                tokens = text.split()
                counts.update(tokens[1:] if skip_first else tokens)
    except FileNotFoundError as e:
        raise ConfigError(f"input file {source!r} does not exist", path=key_path(section, "inputFile")) from e
    except UnicodeDecodeError as e:
        raise FormatError(f"not UTF-8 text ({e.reason})", file=source, line=lineno) from e
    words, freqs, ids = word_classes(counts, vocab_size, classes, unk, cutoff, name)
    written = {}
    if mapping_file:
        _write(mapping_file, words)
        written["outputMappingFile"] = mapping_file
    _write(vocab_file, [f"     {i}\t     {c:g}\t{w}\t{k}" for i, (w, c, k) in enumerate(zip(words, freqs, ids))])
    written["outputVocabFile"] = vocab_file
    if classes > 0:
        first = [0] * classes
        seen = set()
        for i, k in enumerate(ids):
            if k not in seen and k < classes:
                seen.add(k)
                first[k] = i
        _write(word2cls, [str(k) for k in ids])
        _write(cls2idx, [str(i) for i in first])
        written.update(outputWord2Cls=word2cls, outputCls2Index=cls2idx)
    report(f"{name}: vocabulary of {len(words)} words ({len(counts)} distinct in {source})"
           + (f" in {classes} classes" if classes > 0 else "") + f" written to {vocab_file}")
    return written

