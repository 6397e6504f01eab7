"""Text corpora for the legacy sentence readers: LMSequenceReader (language models), LUSequenceReader.

What it must never do: write a word that the vocabulary files it writes do not list, or more
words or labels than the reader's ``labelDim`` allows.

* ``LMSequenceReader``/``SequenceReader``: ``file`` (one sentence a line, ``</s> w ... </s>``, the
  begin and end symbols of the input section) and, when named, the ``wordclass`` file (``index
  count word class`` a line, the classes in contiguous blocks as class-based LMs need them). The
  vocabulary has ``min(labelDim, DataShape.options["vocabulary"] or 40)`` words, ``<unk>`` among
  them.
* ``LUSequenceReader``: ``file`` (``word label`` a line, sentences from ``BOS O`` to ``EOS O``, the
  begin and end symbols of the input section), the input ``token`` file, the ``wordmap`` (each
  word mapped to itself) and the output ``token`` file with ``DataShape.options["labels"]``
  labels (else the output section's ``labelDim``, else 8): the network's output dimension, which
  the reader section does not state.

``DataShape.sequences`` is the number of sentences, ``DataShape.length`` their words (default
3 to 8 when the shape says 1).
"""
from __future__ import annotations

from .sandbox import Sandbox

__all__ = ["lm", "lu"]

_WORDS = (3, 8)


def _sections(reader):
    out = []
    for name in reader.keys():
        if isinstance(reader.raw(name, inherit=False), dict):
            out.append(reader.section(name))
    return out


def _words_per_sentence(shape) -> tuple[int, int]:
    return _WORDS if tuple(shape.length) == (1, 1) else tuple(shape.length)


def _sentences(box: Sandbox, vocab: list[str], shape) -> list[list[str]]:
    lengths = box.lengths(shape.sequences, _words_per_sentence(shape))
    return [[vocab[int(k)] for k in box.rng.integers(len(vocab), size=int(n))] for n in lengths]


def lm(box: Sandbox, reader, shape_of) -> None:
    """``readerType = LMSequenceReader``."""
    path = box.path(reader.str("file"), reader.key_path("file"))
    shape = shape_of(path)
    dims = [s.int("labelDim", 0, inherit=False) for s in _sections(reader) if s.has_local("labelDim")]
    begin = next((str(s.str("beginSequence", inherit=False)) for s in _sections(reader)
                  if s.has_local("beginSequence")), "</s>")
    end = next((str(s.str("endSequence", inherit=False)) for s in _sections(reader) if s.has_local("endSequence")),
               begin)
    size = min([d for d in dims if d > 0] + [int(shape.option("vocabulary", 40))])
    specials = list(dict.fromkeys([begin, end, "<unk>"]))
    words = [f"w{i}" for i in range(max(1, size - len(specials)))]
    vocab = specials + words
    if box.claim(path, "lm corpus"):
        lines = [" ".join([begin, *s, end]) for s in _sentences(box, words, shape)]
        box.write_text(path, "\n".join(lines) + "\n")
    if reader.exists("wordclass"):
        wc = box.path(reader.str("wordclass"), reader.key_path("wordclass"))
        if box.claim(wc, "lm word classes"):
            half = (len(vocab) + 1) // 2     # two classes, each a contiguous block of word ids
            box.write_text(wc, "".join(f"{i}\t{len(vocab) - i}\t{w}\t{0 if i < half else 1}\n"
                                       for i, w in enumerate(vocab)))


def lu(box: Sandbox, reader, shape_of) -> None:
    """``readerType = LUSequenceReader``."""
    path = box.path(reader.str("file"), reader.key_path("file"))
    shape = shape_of(path)
    sections = _sections(reader)
    inp = next((s for s in sections if s.has_local("beginSequence") and s.has_local("token")
                and s.str("beginSequence", inherit=False) != "O"), None)
    out = next((s for s in sections if s is not inp and s.has_local("token")), None)
    if inp is None or out is None:
        return
    begin = str(inp.str("beginSequence", "BOS", inherit=False))
    end = str(inp.str("endSequence", "EOS", inherit=False))
    n_labels = int(shape.option("labels", 0) or out.int("labelDim", 8, inherit=False))
    labels = ["O"] + [f"B-l{i}" for i in range(n_labels - 1)]
    size = min(inp.int("labelDim", 40, inherit=False), int(shape.option("vocabulary", 40)))
    specials = [begin, end, "<unk>"]
    words = [f"w{i}" for i in range(max(1, size - len(specials)))]
    for sec, tokens in ((inp, specials + words), (out, labels)):
        token = box.path(sec.str("token", inherit=False), sec.key_path("token"))
        if box.claim(token, "lu tokens"):
            box.write_text(token, "".join(t + "\n" for t in tokens))
    if reader.exists("wordmap"):
        wordmap = box.path(reader.str("wordmap"), reader.key_path("wordmap"))
        if box.claim(wordmap, "lu word map"):
            box.write_text(wordmap, "".join(f"{w} {w}\n" for w in specials + words))
    if box.claim(path, "lu corpus"):
        lines = []
        for s in _sentences(box, words, shape):
            lines.append(f"{begin} O")
            lines += [f"{w} {labels[int(box.rng.integers(len(labels)))]}" for w in s]
            lines.append(f"{end} O")
        box.write_text(path, "\n".join(lines) + "\n")
