"""What both HTK deserializers share: utterance chunks, frame-mode tables and the join by key.

Keys are 64-bit hashes of the utterance names (:func:`text.hash_names`), so a corpus of millions
of utterances holds no Python string per utterance. In sequence mode a sequence is an utterance
and its key is the hash (uint64); in frame mode every frame is a sequence, keyed by the structured
pair ``(utterance hash, frame)`` (:data:`FRAME_KEY`), which the other HTK deserializer resolves to
its own frame of the same utterance.
"""
from __future__ import annotations

import numpy as np

from ..._native import native
from ..base import DeserializerBase
from ..protocol import ChunkInfo, SequenceTable
from .text import hash_names, numeric_names

__all__ = ["FRAME_KEY", "CHUNK_FRAMES", "MAX_UTTERANCES_PER_CHUNK", "chunk_bounds", "UtteranceCorpus"]

#: the key of one frame in frame mode
FRAME_KEY = np.dtype([("utt", "<u8"), ("frame", "<i8")])
#: CNTK 2.7 closed a chunk once it held more than 15 minutes of speech (100 frames a second) ...
CHUNK_FRAMES = 15 * 60 * 100
#: ... or 65535 utterances
MAX_UTTERANCES_PER_CHUNK = 65535


def chunk_bounds(lengths: np.ndarray, chunk_frames: int = CHUNK_FRAMES,
                 max_utts: int = MAX_UTTERANCES_PER_CHUNK) -> np.ndarray:
    """Utterance indices where chunks start (plus the end): a new chunk starts when the current
    one holds more than ``chunk_frames`` frames or ``max_utts`` utterances."""
    n = len(lengths)
    if n == 0:
        return np.zeros(1, np.int64)
    cum = np.zeros(n + 1, np.int64)         # frames before each utterance
    np.cumsum(lengths, out=cum[1:])
    bounds = [0]
    i = 0
    while i < n:      # one step per chunk: the chunk ends before the first utterance that finds
        # it over chunk_frames frames, or full with max_utts utterances
        j = int(np.searchsorted(cum, cum[i] + chunk_frames, side="right"))
        i = min(max(j, i + 1), i + max_utts, n)
        bounds.append(i)
    return np.asarray(bounds, np.int64)


class UtteranceCorpus(DeserializerBase):
    """Utterances in chunks, exposed as sequences (sequence mode) or one sequence per frame
    (frame mode), with the join by key. Subclasses set ``_keys`` (uint64 per utterance),
    ``_lengths`` (frames per utterance), ``frame_mode`` and ``broadcast``, then call
    :meth:`_init_chunks`."""

    key_kind = "string"
    frame_mode = False
    broadcast = False
    #: read by selection in input order too (engine.global_timeline): a selection is written once,
    #: where the minibatch delivers it, instead of a whole chunk parsed and then copied
    direct_in_order = True

    def _init_chunks(self) -> None:
        self._bounds = chunk_bounds(self._lengths)
        nchunks = len(self._bounds) - 1
        self._utt_offsets = np.zeros(len(self._lengths) + 1, np.int64)   # global frame offsets
        np.cumsum(self._lengths, out=self._utt_offsets[1:])
        self._infos = []
        for c in range(nchunks):
            a, b = int(self._bounds[c]), int(self._bounds[c + 1])
            frames = int(self._utt_offsets[b] - self._utt_offsets[a])
            self._infos.append(ChunkInfo(c, frames if self.frame_mode else b - a, frames))
        self._chunk_of = np.repeat(np.arange(nchunks, dtype=np.int64), np.diff(self._bounds))
        order = np.argsort(self._keys, kind="stable")
        sk = self._keys[order]
        first = np.ones(len(sk), bool)
        first[1:] = sk[1:] != sk[:-1]            # a key given twice: its first utterance wins
        self._sorted_keys, self._sorted_utts = sk[first], order[first]

    def chunk_infos(self) -> list[ChunkInfo]:
        return list(self._infos)

    def _chunk_groups(self, chunk_ids: np.ndarray) -> tuple[list[int], np.ndarray]:
        """The distinct chunks of a selection, ascending, and each selected sequence's position in
        that list: one pass over a table of the corpus's chunks, not a sort or hash of the selection."""
        present = np.zeros(len(self._infos), bool)
        present[chunk_ids] = True
        uniq = np.flatnonzero(present)
        if len(uniq) == 1:
            return uniq.tolist(), np.zeros(len(chunk_ids), np.int64)
        rank = np.cumsum(present) - 1
        return uniq.tolist(), rank[chunk_ids]

    def _frame_map(self, c: int) -> np.ndarray:
        """Frame mode: per frame of chunk ``c``, its utterance within the chunk (uint16: a chunk
        holds at most 65535 utterances), kept with the chunk's raw data while the window holds it
        (2 bytes a frame), so that a selection's frames are found by a lookup, not a search."""
        a, b = self._chunk_utts(c)
        return np.repeat(np.arange(b - a, dtype=np.uint16), self._lengths[a:b])

    def _frames_at(self, chunk_ids: np.ndarray, indices: np.ndarray, which: np.ndarray,
                   maps: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Frame mode: the utterance (corpus index), the frame within it and the utterance within
        its chunk of each selected sequence (``indices``: frames counted from the start of chunk
        ``chunk_ids``; ``which``: the position of that chunk in ``maps``, the chunks'
        :meth:`_frame_map`), for the whole selection at once: one C lookup across the chunks (one
        NumPy lookup per chunk without the C core; one binary search where a map is missing)."""
        first = self._bounds[chunk_ids]
        if any(m is None for m in maps):
            g = self._utt_offsets[first] + indices
            utt = np.searchsorted(self._utt_offsets, g, side="right") - 1
            return utt, g - self._utt_offsets[utt], utt - first
        local = np.empty(len(indices), np.int64)
        c_lookup = native("htk")
        if c_lookup is not None:
            c_lookup.gather_u16(local, maps, np.ascontiguousarray(which, np.int64),
                                np.ascontiguousarray(indices, np.int64))
        else:
            for j, m in enumerate(maps):
                sel = np.flatnonzero(which == j) if len(maps) > 1 else slice(None)
                local[sel] = m[indices[sel]]
        utt = first + local
        return utt, indices - (self._utt_offsets[utt] - self._utt_offsets[first]), local

    def _chunk_utts(self, c: int) -> tuple[int, int]:
        return int(self._bounds[c]), int(self._bounds[c + 1])

    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        a, b = self._chunk_utts(chunk_id)
        if not self.frame_mode:
            return SequenceTable(self._keys[a:b], self._lengths[a:b].astype(np.int64))
        lens = self._lengths[a:b]
        n = int(lens.sum())
        keys = np.empty(n, FRAME_KEY)
        keys["utt"] = np.repeat(self._keys[a:b], lens)
        starts = self._utt_offsets[a:b] - self._utt_offsets[a]
        keys["frame"] = np.arange(n, dtype=np.int64) - np.repeat(starts, lens)
        return SequenceTable(keys, np.ones(n, np.int64))

    def _find_utts(self, hashes: np.ndarray) -> np.ndarray:
        """The utterance index of each key hash, -1 where absent."""
        sk = self._sorted_keys
        if len(sk) == 0:
            return np.full(len(hashes), -1, np.int64)
        pos = np.searchsorted(sk, hashes)
        pos_c = np.minimum(pos, len(sk) - 1)
        found = sk[pos_c] == hashes
        return np.where(found, self._sorted_utts[pos_c], -1)

    def key_origins(self, keys: np.ndarray) -> list[str]:
        """Where each of this deserializer's keys comes from, for a message (the composite's
        reconcile error): the utterance's file and line (and frame in frame mode)."""
        keys = np.asarray(keys)
        utts = self._find_utts(keys["utt"] if keys.dtype.names else keys.astype(np.uint64))
        frames = keys["frame"].tolist() if keys.dtype.names else [None] * len(utts)
        return [(self._origin(int(u)) if u >= 0 else "?") + (f" frame {f}" if f is not None else "")
                for u, f in zip(utts.tolist(), frames)]

    def _origin(self, u: int) -> str:
        return f"utterance {u}"

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sequences by key: utterance hashes (sequence mode), frame keys (frame mode), or
        utterance names as str (a string-keyed deserializer of another format)."""
        keys = np.asarray(keys)
        if keys.dtype.names:
            hashes, frames = keys["utt"], keys["frame"].astype(np.int64)
        elif keys.dtype.kind == "u":
            hashes, frames = keys, None
        else:
            names = [str(k) for k in keys]
            hashes, frames = (numeric_names(names)[0] if getattr(self, "numeric_keys", False)
                              else hash_names(names)), None
        if frames is None:
            if self.frame_mode:
                raise ValueError("an HTK deserializer in frame mode joins only with frame-mode keys (the "
                                 "primary deserializer must also deliver one sequence per frame)")
            utt = self._find_utts(hashes)
            ok = utt >= 0
            u = np.where(ok, utt, 0)
            chunk = np.where(ok, self._chunk_of[u] if len(self._chunk_of) else 0, -1)
            index = np.where(ok, u - self._bounds[np.maximum(chunk, 0)], -1)
            return chunk, index
        if not self.frame_mode:
            raise ValueError("frame keys reached an HTK deserializer built without frame mode")
        n = len(hashes)
        heads = np.flatnonzero(np.concatenate(([True], hashes[1:] != hashes[:-1]))) if n > 1 else np.arange(n)
        # frame keys come in runs (a chunk's keys: an utterance's frames): the utterance is found
        # once per run, its chunk, first frame in the chunk and length repeated over the run
        runs = len(heads) < n // 2
        chunk, base, ulen = self._utterance_refs(hashes[heads] if runs else hashes)
        if runs:
            counts = np.diff(heads, append=n)
            chunk, base, ulen = np.repeat(chunk, counts), np.repeat(base, counts), np.repeat(ulen, counts)
        f = np.zeros_like(frames) if self.broadcast else frames
        ok = (f >= 0) & (f < ulen)
        return np.where(ok, chunk, -1), np.where(ok, base + f, -1)

    def _utterance_refs(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per utterance hash: its chunk (-1 where absent), its first frame counted from the start
        of that chunk and its length (0 where absent)."""
        utt = self._find_utts(hashes)
        if len(self._lengths) == 0:        # no utterance (an MLF without a closed entry): none found
            none = np.full(len(hashes), -1, np.int64)
            return none, none, np.zeros(len(hashes), np.int64)
        ok = utt >= 0
        u = np.where(ok, utt, 0)
        chunk = np.where(ok, self._chunk_of[u] if len(self._chunk_of) else 0, -1)
        first = self._bounds[np.maximum(chunk, 0)]
        base = self._utt_offsets[u] - self._utt_offsets[first]
        return chunk, base, np.where(ok, self._lengths[u], 0)
