"""Vocabularies and token corpora of the legacy text readers (SequenceReader, LUSequenceReader).

A corpus is read once into one int32 array of token ids and the sentence offsets into it; chunks
are slices of these arrays. :func:`tokenize_file` numbers the distinct tokens in C (the ``_tok``
extension: no Python object per token, the GIL released); the readers then map each distinct word
(not each token) to its id and gather the ids with NumPy. :class:`PyTokenTable` is the pure-Python
reference of the same numbering (``CNTKIO_PURE_PYTHON=1``), tested against the C one.
"""
from __future__ import annotations

import io
import mmap
from itertools import repeat
from typing import Mapping

import numpy as np

from ..._native import native
from ...errors import ConfigError
from .urls import local_file

__all__ = ["read_token_file", "read_word_map", "WordClasses", "PyTokenTable", "token_table", "tokenize_file",
           "lookup"]


def read_token_file(path: str, option: str, remote: Mapping | None = None) -> dict[str, int]:
    """A token file: one token per line (first field), line order = id. Duplicates are errors.
    A URL is read from its copy in the cache folder (``remote``: the object-store keys)."""
    out: dict[str, int] = {}
    first_line: dict[str, int] = {}
    try:
        fh = open(local_file(path, remote, option, "token file"), encoding="utf-8")
    except FileNotFoundError as e:
        raise ConfigError(f"token file {path!r} does not exist", path=option) from e
    with fh:
        for n, line in enumerate(fh, 1):
            parts = line.split()
            if not parts:
                continue
            tok = parts[0]
            if tok in out:
                raise ConfigError(f"{path}:{n}: token {tok!r} is listed twice (first on line "
                                  f"{first_line[tok]})", path=option)
            out[tok] = len(out)
            first_line[tok] = n
    if not out:
        raise ConfigError(f"token file {path!r} lists no token", path=option)
    return out


def read_word_map(path: str, option: str, remote: Mapping | None = None) -> dict[str, str]:
    """A word map file: ``word mapped`` per line (a URL: read from its copy in the cache folder)."""
    out: dict[str, str] = {}
    try:
        fh = open(local_file(path, remote, option, "word map file"), encoding="utf-8")
    except FileNotFoundError as e:
        raise ConfigError(f"word map file {path!r} does not exist", path=option) from e
    with fh:
        for n, line in enumerate(fh, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 2:
                raise ConfigError(f"{path}:{n}: expected 'word mapped', found {line.strip()!r}", path=option)
            out[parts[0]] = parts[1]
    return out


class WordClasses:
    """A ``wordclass`` file (CNTK's vocab.txt): ``index count word class`` per line. Words are
    numbered by ``index``; the words of a class must be consecutive ids (as CNTK's class-based
    output layer requires), which gives each class its id range ``[begin, end)``."""

    def __init__(self, path: str, option: str = "wordclass", remote: Mapping | None = None) -> None:
        words: dict[str, int] = {}
        classes: dict[int, int] = {}
        try:
            fh = open(local_file(path, remote, option, "word class file"), encoding="utf-8")
        except FileNotFoundError as e:
            raise ConfigError(f"word class file {path!r} does not exist", path=option) from e
        with fh:
            for n, line in enumerate(fh, 1):
                parts = line.split()
                if not parts:
                    continue
                if len(parts) != 4:
                    raise ConfigError(f"{path}:{n}: expected 'index count word class', found {line.strip()!r}",
                                      path=option)
                try:
                    idx, cls = int(parts[0]), int(parts[3])
                except ValueError as e:
                    raise ConfigError(f"{path}:{n}: index and class must be integers, found "
                                      f"{parts[0]!r} and {parts[3]!r}", path=option) from e
                if parts[2] in words:
                    raise ConfigError(f"{path}:{n}: word {parts[2]!r} is listed twice", path=option)
                if idx in classes:
                    raise ConfigError(f"{path}:{n}: index {idx} is listed twice", path=option)
                words[parts[2]] = idx
                classes[idx] = cls
        if not words:
            raise ConfigError(f"word class file {path!r} lists no word", path=option)
        n = max(classes) + 1
        if sorted(classes) != list(range(n)):
            raise ConfigError(f"{path}: word indices must be 0..{len(classes) - 1}", path=option)
        self.words = words
        self.word_class = np.array([classes[i] for i in range(n)], np.int64)
        ncls = int(self.word_class.max()) + 1
        self.class_begin = np.full(ncls, n, np.int64)
        self.class_end = np.zeros(ncls, np.int64)
        np.minimum.at(self.class_begin, self.word_class, np.arange(n))
        np.maximum.at(self.class_end, self.word_class, np.arange(n) + 1)
        sizes = np.bincount(self.word_class, minlength=ncls)
        # a class may hold no word: CNTK's writeWordAndClass moves to class 1 before its first word
        # when that word's share passes 1/nbrClass (DoWriteWordAndClassInfo, Source/ActionsLib/
        # OtherActions.cpp:417-422), and skips classes when nbrClass exceeds the words
        self.class_begin[sizes == 0] = 0
        bad = np.flatnonzero((sizes > 0) & ((self.class_end - self.class_begin) != sizes))
        if len(bad):
            raise ConfigError(f"{path}: the words of class {int(bad[0])} do not have consecutive indices "
                              "(a class-based output needs each class's words in one id range)", path=option)

    def labels(self, ids: np.ndarray, dtype) -> np.ndarray:
        """CNTK's class-based LM label rows: ``(word id, class id, class begin, class end)``."""
        cls = self.word_class[ids]
        return np.stack([ids, cls, self.class_begin[cls], self.class_end[cls]], 1).astype(dtype)


class PyTokenTable:
    """The pure-Python reference of ``_tok.TokenTable``: distinct tokens numbered by first
    appearance. ``intern(buf)`` splits UTF-8 bytes into lines (``\\n``, ``\\r\\n``, ``\\r``: text mode
    with universal newlines) and tokens (``str.split()``) and returns ``(numbers int32, tokens per
    line int64, new words)``; a text that is not UTF-8 raises ``ValueError("line N: ...")``."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    @property
    def size(self) -> int:
        return len(self.numbers)

    def intern(self, buf) -> tuple[np.ndarray, np.ndarray, list[str]]:
        raw = bytes(buf)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            head = raw[:e.start]
            line = head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1
            raise ValueError(f"line {line}: a token that is not UTF-8 text") from e
        lines = io.StringIO(text, newline=None).readlines()
        table = self.numbers
        before = len(table)
        numbers: list[int] = []
        counts = np.zeros(len(lines), np.int64)
        for k, line in enumerate(lines):
            toks = line.split()
            counts[k] = len(toks)
            for w in toks:
                numbers.append(table.setdefault(w, len(table)))
        new = list(table)[before:]
        return np.array(numbers, np.int32), counts, new


def token_table():
    """A new token table: the C one, or the pure-Python reference under ``CNTKIO_PURE_PYTHON=1``."""
    mod = native("tok")
    return mod.TokenTable() if mod is not None else PyTokenTable()


def tokenize_file(path: str, option: str = "file", name: str | None = None) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(words, numbers, counts)`` of a UTF-8 text file: its distinct whitespace-separated tokens in
    order of first appearance, each token's number (int32, an index into ``words``) in file order,
    and the tokens of each line (int64; blank lines 0). Errors name the file (``name``: the URL the
    local ``path`` is a copy of) and line."""
    shown = name or path
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise ConfigError(f"the corpus {shown!r} cannot be read: {e.strerror}", path=option) from e
    with fh:
        size = fh.seek(0, 2)
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    table = token_table()
    try:
        numbers, counts, words = table.intern(buf)
    except ValueError as e:
        raise ConfigError(f"{shown}:{str(e)[5:]}", path=option) from e
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()
    return words, numbers, counts


def lookup(words: list[str], table: dict, missing: int = -1) -> np.ndarray:
    """``table[w]`` (int32) of each word of ``words``, ``missing`` where absent: a per-word array that
    maps token numbers to ids (``lookup(words, vocab)[numbers]``)."""
    return np.fromiter(map(table.get, words, repeat(missing)), np.int32, count=len(words))
