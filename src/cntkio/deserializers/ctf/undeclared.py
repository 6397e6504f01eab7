"""CTF input names the config does not declare: one warning per name, naming file, line and name.

It only reads the text of sequences delivered with an empty input; it never changes what is delivered.
"""
from __future__ import annotations

import re
import threading
from typing import Callable, Sequence

import numpy as np

from ..._log import TraceLogger
from ..protocol import ChunkData

__all__ = ["UndeclaredInputs", "SCAN_LIMIT"]

#: sequences with an empty input searched for undeclared input names, per deserializer
SCAN_LIMIT = 256
#: ``|name`` at the start of a sample (not a ``|#`` comment)
_INPUT_NAME = re.compile(rb"\|([^\s|#][^\s|]*)")


class UndeclaredInputs:
    """A sequence in which a declared input has no sample while another has some is delivered
    with that stream empty (a zero-padded gap in the minibatch: cntkio's choice, docs/ctf.md;
    CNTK 2.7 warned "Skipping unknown input" and then stopped with "Input ... is empty in
    sequence ... Malformed input file", TextParser.cpp). The usual cause is an input the config
    does not declare (a misspelt alias): the lines of such sequences are searched for names that
    are not declared, and each such name is warned about once, naming the file, the line and the
    declared names. At most :data:`SCAN_LIMIT` sequences are searched in all."""

    def __init__(self, filename: str, names: Sequence[str], aliases: Sequence[str],
                 trace: TraceLogger) -> None:
        self.filename = filename
        self.names = list(names)
        self.aliases = list(aliases)
        self.trace = trace
        self.seen: set[bytes] = set()
        self.budget = SCAN_LIMIT
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def check(self, data: ChunkData, seqs: np.ndarray, text: Callable[[], bytes | memoryview],
              starts: np.ndarray, first_lines: np.ndarray, keys: np.ndarray) -> None:
        """Search the sequences ``seqs`` (global numbers, one per sequence of ``data``) that came
        out with an empty input; ``text()`` gives the file's bytes, ``starts`` each sequence's
        byte offset (plus the end), ``first_lines`` its first line, ``keys`` its key."""
        if len(self.names) < 2 or self.budget <= 0 or len(seqs) == 0:
            return
        counts = np.stack([np.diff(st.offsets) for st in data.streams.values()])
        gap = (counts == 0).any(axis=0) & (counts > 0).any(axis=0)
        if not gap.any():
            return
        with self._lock:
            take = min(self.budget, int(gap.sum()))
            self.budget -= take
        if take <= 0:
            return
        m = text()
        declared = {a.encode("utf-8") for a in self.aliases}
        seqs = np.asarray(seqs)
        for j in np.flatnonzero(gap)[:take].tolist():
            g = int(seqs[j])
            body = bytes(m[int(starts[g]):int(starts[g + 1])])
            for match in _INPUT_NAME.finditer(body):
                name = match.group(1)
                if name in declared:
                    continue
                with self._lock:
                    if name in self.seen:
                        continue
                    self.seen.add(name)
                line = int(first_lines[g]) + body.count(b"\n", 0, match.start())
                self.trace.warning(
                    "%s:%d: input '%s' is not declared (declared: %s); its samples are skipped, and "
                    "sequence %d is delivered with %s empty (a zero-padded gap)", self.filename, line,
                    name.decode("utf-8", "backslashreplace"), ", ".join(f"'{a}'" for a in self.aliases),
                    int(keys[g]), ", ".join(f"'{n}'" for n, c in zip(self.names, counts[:, j]) if c == 0))
