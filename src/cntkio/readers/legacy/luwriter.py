"""``writerType = LUSequenceWriter``: a network's outputs as the tokens they score highest, one line per call.

What it must never do: write a token that is not in the output section's token file, or leave
its text file half written (it is written to a temporary name and renamed when closed).

CNTK's ``LUSequenceWriter`` (Source/Readers/LUSequenceReader/LUSequenceWriter.cpp): the writer's
``outputNodeNames`` (found from the writer section up: the write command's) name the nodes; each
has a writer sub-section of its name with ``file`` (the text written), ``token`` (the token file:
one token a line, line order = index) and ``nbest`` (default 1). Every ``save_data`` call (one
minibatch of the write action) writes one line: for each sample the token of its highest-scoring
index among the first ``min(tokens, dim)`` values (``nbest > 1``: the ``nbest`` best tokens, best
first, leaving out those scored exactly 0), each followed by a space.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Mapping

import numpy as np

from ...errors import ConfigError
from ..section import as_section
from .vocab import read_token_file

__all__ = ["LUSequenceDataWriter"]


class LUSequenceDataWriter:
    """IDataWriter of ``writerType = LUSequenceWriter`` (module docstring)."""

    def __init__(self, config: Any = None) -> None:
        self._outputs: dict[str, dict] = {}
        self._handles: dict[str, Any] = {}
        self.written: list[str] = []
        if config is not None:
            self.init(config)

    def init(self, config: Any) -> None:
        sec = as_section(config, "writer")
        names = [str(n) for n in (sec.list("outputNodeNames", []) or [])]
        if not names:
            raise sec.error("outputNodeNames", "writer needs at least one outputNodeName specified in config")
        for n in names:
            if not sec.has_local(n):
                raise sec.error(n, f"the writer has no section {n!r} (file, token, nbest) for the output node")
            s = sec.section(n)
            path = s.str("file", inherit=False)
            tokens = read_token_file(s.str("token", inherit=False), s.key_path("token"))
            nbest = s.int("nbest", 1, minimum=1, inherit=False)
            self._outputs[n] = {"file": path, "tokens": [t for t, _ in sorted(tokens.items(), key=lambda kv: kv[1])],
                                "nbest": nbest}

    def get_sections(self) -> dict[str, str]:
        """``{output node: "data"}``: the nodes whose values are written."""
        return {n: "data" for n in self._outputs}

    def _handle(self, path: str):
        h = self._handles.get(path)
        if h is None:
            directory = os.path.dirname(os.path.abspath(path))
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
            h = self._handles[path] = (os.fdopen(fd, "w", encoding="utf-8", newline="\n"), tmp)
        return h[0]

    def save_data(self, record_start: int, matrices: Mapping[str, Any], num_records: int, dataset_size: int,
                  byte_variable_sized: int = 0) -> bool:
        """Write one line per output: the tokens of ``num_records`` samples."""
        for name, out in self._outputs.items():
            if name not in matrices:
                raise KeyError(f"save_data: no data for output {name!r}")
            values = np.asarray(matrices[name], dtype=np.float64).reshape(int(num_records), -1)
            tokens, nbest = out["tokens"], out["nbest"]
            scores = values[:, :min(len(tokens), values.shape[1])]
            words = []
            if nbest == 1:
                words = [tokens[int(i)] for i in scores.argmax(axis=1)]
            else:
                for row in scores:
                    order = np.argsort(-row, kind="stable")[:nbest]
                    words.extend(tokens[int(i)] for i in order if row[i] != 0)
            self._handle(out["file"]).write("".join(w + " " for w in words) + "\n")
        return int(record_start) + int(num_records) >= int(dataset_size)

    def save_mapping(self, save_id: str, mapping: Mapping[int, str]) -> None:
        if save_id not in self._outputs:
            raise ConfigError(f"no output {save_id!r} (outputs: {', '.join(self._outputs)})", path="writer")

    def destroy(self) -> None:
        for path, (h, tmp) in list(self._handles.items()):
            h.close()
            os.replace(tmp, path)
            self.written.append(path)
        self._handles = {}

    close = destroy
