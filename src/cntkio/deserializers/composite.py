"""Several deserializers joined by sequence key (CNTK's Bundler, cntk-io-semantics 2.8).

The first deserializer is primary: its chunks and sequence order define the corpus. Every primary
sequence is looked up by key in each other deserializer; a sequence some secondary lacks is
dropped from the corpus (counted and logged), chunks left empty are dropped, and when nothing
survives construction raises CNTK's error (a :class:`~cntkio.errors.DataError` naming the files and
a few keys of each). Stream names must be unique over all
deserializers. The joined timeline length of a sequence is the defining stream's deserializer's
length when one stream ``defines_mb_size``, else the maximum over the deserializers (2.2).

The composite is itself a :class:`~cntkio.deserializers.protocol.Deserializer` (and a
:class:`~cntkio.deserializers.protocol.RandomAccessDeserializer`, supported when every part
supports it), so the randomizers and packers see one protocol whatever the number of inputs.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError, DataError
from ..streams import StreamInformation
from .._log import get_logger
from .base import DeserializerBase
from .protocol import (ChunkData, ChunkInfo, DenseStream, Deserializer, FetchAheadDeserializer,
                       GlobalRandomizationDeserializer, SequenceTable, SparseStream,
                       SweepDependentDeserializer, depends_on_sweep, fetches_ahead, gather_stream, has_random_access,
                       supports_global_randomization,
                       PartBoundDeserializer)

__all__ = ["CompositeDeserializer", "RECONCILE_ERROR", "describe"]

log = get_logger("deserializers.composite")

RECONCILE_ERROR = ("Could not reconcile data between different deserializers. "
                   "Keys of logical sequences do not match.")


def describe(d: Deserializer) -> str:
    """A deserializer for a message: its type, its input file (when it has one) and its streams."""
    file = next((v for v in (getattr(d, a, None) for a in ("map_file", "file", "scp_file", "path"))
                 if isinstance(v, str)), None)
    try:
        names = ", ".join(repr(s.name) for s in d.stream_infos())
    except Exception:           # noqa: BLE001 - only for a message
        names = "?"
    parts = getattr(d, "parts", None)
    if file is None and isinstance(parts, list):        # a composite of its own (HTKMLFReader)
        return "; ".join(describe(p) for p in parts)
    return f"{type(d).__name__}{f' {file}' if file else ''} (streams {names})"


def _sample_keys(d: Deserializer, n: int = 3) -> np.ndarray | None:
    """The first few sequence keys of a deserializer, in its own key array's dtype (for a message),
    or None when it has none."""
    out: list = []
    got = 0
    for info in d.chunk_infos():
        keys = d.sequence_infos(info.id).keys[:n - got]
        out.append(keys)
        got += len(keys)
        if got >= n:
            break
    return np.concatenate(out) if got else None


def _shown_keys(d: Deserializer, keys: np.ndarray | None) -> str:
    """Keys for a message: where they come from when the deserializer says (hashed keys: HTK's
    ``key_origins``), else their values."""
    if keys is None:
        return "none"
    origins = getattr(d, "key_origins", None)
    shown = origins(keys) if origins is not None else list(map(repr, keys.tolist()))
    return ", ".join(shown) + ", ..."


def _lookup(secondary: Deserializer, keys: np.ndarray, primary_kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Find primary keys in a secondary, converting between numeric and string keys."""
    kind = secondary.key_kind
    if kind == primary_kind:
        return secondary.lookup(keys)
    if kind == "string":
        return secondary.lookup(np.array([str(k) for k in keys], dtype=object))
    # numeric secondary, string primary: only decimal strings can match
    numeric = np.array([k.isdigit() for k in keys], bool) if len(keys) else np.zeros(0, bool)
    as_int = np.array([int(k) if ok else 0 for k, ok in zip(keys, numeric)], np.int64)
    chunk, index = secondary.lookup(as_int)
    return np.where(numeric, chunk, -1), np.where(numeric, index, -1)


class CompositeDeserializer(DeserializerBase, GlobalRandomizationDeserializer, SweepDependentDeserializer,
                            FetchAheadDeserializer):
    """Deserializers joined by sequence key, the first one primary (see module docstring)."""

    #: frame mode: join again per chunk read instead of keeping per-frame tables (``lazy``)
    lazy_frames = True

    def __init__(self, deserializers: list[Deserializer], trace_level: int = 1) -> None:
        if not deserializers:
            raise ValueError("MinibatchSource needs at least one deserializer")
        self.parts = list(deserializers)
        self.primary = self.parts[0]
        self._by_sweep = [depends_on_sweep(d) for d in self.parts]
        # secondaries whose one-sample sequences stand for the whole primary sequence (HTK
        # expandToUtterance in sequence mode; frame mode resolves it per frame key)
        self._broadcast = [i > 0 and bool(getattr(d, "broadcast", False)) and not getattr(d, "frame_mode", False)
                           for i, d in enumerate(self.parts)]
        self.trace_level = int(trace_level)
        self.key_kind = "string" if any(d.key_kind == "string" for d in self.parts) \
            else "numeric"
        # streams: unique names, ids renumbered in order
        infos: list[StreamInformation] = []
        self._stream_owner: dict[str, int] = {}
        for di, d in enumerate(self.parts):
            for si in d.stream_infos():
                if si.name in self._stream_owner:
                    other = self._stream_owner[si.name]
                    raise ConfigError(f"Two streams with the same name '{si.name}' have been found. Please "
                                      f"rename the duplicate: deserializer {other} ({describe(self.parts[other])}) "
                                      f"and deserializer {di} ({describe(d)})", path=f"input.{si.name}")
                self._stream_owner[si.name] = di
                infos.append(si.with_id(len(infos)))
        self._stream_infos = infos
        definers = sorted({self._stream_owner[s.name] for s in infos if s.defines_mb_size})
        if len(definers) > 1:
            raise ConfigError("Only a single deserializer is allowed to define minibatch size, but streams of "
                              + ", ".join(f"deserializer {i} ({describe(self.parts[i])})" for i in definers)
                              + " define it", path="definesMBSize")
        self._definer = definers[0] if definers else None
        for d in self.parts:      # a part that bounds its sequences by another part's (HTK labels by features)
            if isinstance(d, PartBoundDeserializer):
                d.bind_composite(self.parts)
        self._build_index()

    # --- index --------------------------------------------------------------------------------
    def _join(self, table: SequenceTable, sec_tables: list[dict[int, SequenceTable]], with_lengths: bool = True):
        """One primary chunk's join: ``(keep, refs, lengths)``: the surviving sequence indices
        (None: all), per secondary its ``(chunk, index)`` of every surviving sequence, and their
        joined lengths (None when none survives or ``with_lengths`` is false)."""
        secondaries = self.parts[1:]
        n = len(table)
        if not secondaries:
            return None, [], np.asarray(table.lengths, np.int64)
        found = np.ones(n, bool)
        refs = []
        for s in secondaries:
            chunk, index = _lookup(s, table.keys, self.primary.key_kind)
            found &= chunk >= 0
            refs.append((np.asarray(chunk, np.int64), np.asarray(index, np.int64)))
        keep = np.flatnonzero(found)
        if len(keep) == 0:
            return keep, [], None
        if len(keep) < n:
            refs = [(c[keep], i[keep]) for c, i in refs]
        if not with_lengths:
            return (None if len(keep) == n else keep), refs, None
        lengths_per_part = [table.lengths if len(keep) == n else table.lengths[keep]]
        for si, (s, (c, i)) in enumerate(zip(secondaries, refs)):
            lens = np.empty(len(keep), np.int64)
            for sc in _distinct(c):
                t = sec_tables[si].get(int(sc))
                if t is None:
                    t = sec_tables[si][int(sc)] = s.sequence_infos(int(sc))
                m = c == sc
                lens[m] = t.lengths[i[m]]
            lengths_per_part.append(lens)
        if self._definer is not None:
            lengths = lengths_per_part[self._definer]
        else:
            lengths = np.max(np.stack(lengths_per_part), axis=0)
        return (None if len(keep) == n else keep), refs, np.asarray(lengths, np.int64)

    def _build_index(self) -> None:
        secondaries = self.parts[1:]
        # frame mode (one sequence per frame): the join is not kept per frame but done again when
        # a chunk is read (its keys come from the primary's utterance tables), and lengths of 1
        # are one value, so the index holds a few numbers per chunk (docs/architecture.md, memory)
        self.lazy = self.lazy_frames and bool(getattr(self.primary, "frame_mode", False))
        sec_tables: list[dict[int, SequenceTable]] = [dict() for _ in secondaries]
        self._chunks: list[int] = []          # primary chunk id of each corpus chunk
        self._keep: list[np.ndarray | None] = []  # surviving sequence indices (None: all)
        self._sec_refs: list[list[tuple[np.ndarray, np.ndarray]]] = []
        self._tables: list[SequenceTable] = []
        self._lengths: list[np.ndarray] = []  # lazy: the joined lengths of each corpus chunk
        dropped = 0
        for info in self.primary.chunk_infos():
            table = self.primary.sequence_infos(info.id)
            n = len(table)
            if n == 0:
                continue
            if self.lazy:
                sec_tables = [dict() for _ in secondaries]   # a chunk's secondary tables, then dropped
            keep, refs, lengths = self._join(table, sec_tables)
            kept = n if keep is None else len(keep)
            dropped += n - kept
            if kept == 0:
                continue
            self._chunks.append(info.id)
            if self.lazy:
                self._lengths.append(_compact(lengths))
                continue
            self._keep.append(keep)
            self._sec_refs.append(refs)
            self._tables.append(table if keep is None and not secondaries
                                else SequenceTable(table.keys if keep is None else table.keys[keep], lengths))
        self._chunk_ids = np.asarray(self._chunks, np.int64)
        self.dropped_sequences = dropped
        if dropped:             # a warning at every trace level (cntkio._log)
            log.warning("%d sequence(s) of the primary deserializer have no match by key in another "
                        "deserializer and were dropped from the corpus", dropped)
        if not self._chunks:
            if secondaries:
                self._reconcile_error()
            raise DataError(f"The primary deserializer delivered no sequences: the input is empty "
                            f"({describe(self.primary)})", file=getattr(self.primary, "file", None))

    def _reconcile_error(self) -> None:
        """CNTK's error when no primary sequence is found in every other deserializer, naming the
        files and a few keys of each side."""
        primary = _sample_keys(self.primary)
        lines = [f"the primary deserializer 0 ({describe(self.primary)}) has keys {_shown_keys(self.primary, primary)}"]
        for i, s in enumerate(self.parts[1:], start=1):
            found = (_lookup(s, primary, self.primary.key_kind)[0] >= 0 if primary is not None
                     else np.zeros(0, bool))
            if not found.all():
                lines.append(f"deserializer {i} ({describe(s)}) has keys {_shown_keys(s, _sample_keys(s))}")
        raise DataError(f"{RECONCILE_ERROR} " + "; ".join(lines),
                        file=getattr(self.primary, "map_file", None) or getattr(self.primary, "file", None))

    def _joined(self, chunk_id: int):
        """``(keep, refs, table)`` of a corpus chunk: kept, or (lazy) joined again now."""
        if not self.lazy:
            return self._keep[chunk_id], self._sec_refs[chunk_id], self._tables[chunk_id]
        table = self.primary.sequence_infos(self._chunks[chunk_id])
        keep, refs, _ = self._join(table, [dict() for _ in self.parts[1:]], with_lengths=False)
        lengths = self._lengths[chunk_id]
        if keep is None and not self.parts[1:]:
            return None, refs, table
        return keep, refs, SequenceTable(table.keys if keep is None else table.keys[keep], lengths)

    # --- protocol -----------------------------------------------------------------------------
    def stream_infos(self) -> list[StreamInformation]:
        return list(self._stream_infos)

    def chunk_infos(self) -> list[ChunkInfo]:
        return [ChunkInfo(i, len(x), int(x.sum())) for i, x in enumerate(self._all_lengths())]

    def _all_lengths(self) -> list[np.ndarray]:
        return self._lengths if self.lazy else [t.lengths for t in self._tables]

    def sequence_lengths(self, chunk_id: int) -> np.ndarray:
        """The joined lengths of a corpus chunk's sequences (without building its key table)."""
        return self._all_lengths()[chunk_id]

    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        return self._joined(chunk_id)[2]

    def fetches_ahead(self) -> bool:
        """True when the primary part reads a URL (:func:`fetches_ahead`): its chunks are the
        corpus chunks (a secondary's are found by key when a chunk is read)."""
        return fetches_ahead(self.parts[0])

    def fetch_ahead(self, chunk_ids: list[int]) -> None:
        """The primary part's chunks of these corpus chunks, fetched ahead."""
        self.parts[0].fetch_ahead([self._chunks[c] for c in chunk_ids])

    def depends_on_sweep(self) -> bool:
        """True when a part's chunk data depends on the sweep (:func:`depends_on_sweep`)."""
        return any(self._by_sweep)

    def _load(self, part: int, chunk_id: int, sweep: int) -> ChunkData:
        d = self.parts[part]
        return d.get_chunk(chunk_id, sweep=sweep) if self._by_sweep[part] else d.get_chunk(chunk_id)

    def get_chunk(self, chunk_id: int, sweep: int = 0) -> ChunkData:
        """A corpus chunk; ``sweep`` reaches the parts whose data depends on it."""
        base = self._load(0, self._chunks[chunk_id], sweep)
        keep, sec_refs, table = self._joined(chunk_id)
        streams: dict[str, object] = {}
        invalid, dropped = base.invalid, base.dropped
        for name, st in base.streams.items():
            streams[name] = st if keep is None else gather_stream(st, keep)
        if keep is not None and invalid is not None:
            invalid = invalid[keep]
        if keep is not None and dropped is not None:
            dropped = dropped[keep]
        reasons = _moved_reasons(base.reasons, keep)
        for p, (c, i) in enumerate(sec_refs, start=1):
            n = len(c)
            parts: dict[str, list] = {}
            order = np.empty(n, np.int64)
            pos = 0
            sec_invalid = np.zeros(n, bool)
            sec_dropped = np.zeros(n, bool)
            uniq = np.unique(c)
            for sc in uniq:
                m = np.flatnonzero(c == sc)
                data = self._load(p, int(sc), sweep)
                for name, st in data.streams.items():
                    parts.setdefault(name, []).append(gather_stream(st, i[m]))
                if data.invalid is not None:
                    sec_invalid[m] = data.invalid[i[m]]
                if data.dropped is not None:
                    sec_dropped[m] = data.dropped[i[m]]
                if data.reasons:
                    for row, index in zip(m.tolist(), i[m].tolist()):
                        if index in data.reasons:
                            reasons = reasons or {}
                            reasons.setdefault(row, data.reasons[index])
                order[m] = np.arange(pos, pos + len(m))
                pos += len(m)
            for name, pieces in parts.items():
                merged = pieces[0] if len(pieces) == 1 else _concat(pieces)
                streams[name] = merged if len(uniq) == 1 else gather_stream(merged, order)
                if self._broadcast[p]:
                    streams[name] = _broadcast(streams[name], table.lengths)
            if sec_invalid.any():
                invalid = sec_invalid if invalid is None else (invalid | sec_invalid)
            if sec_dropped.any():
                dropped = sec_dropped if dropped is None else (dropped | sec_dropped)
        return ChunkData(table, streams, invalid, dropped, reasons)

    def supports_random_access(self) -> bool:
        """True when every part has random access (:func:`has_random_access`)."""
        return all(has_random_access(d) for d in self.parts)

    def supports_global_randomization(self) -> bool:
        """True when every part can be read with global randomization
        (:func:`supports_global_randomization`)."""
        return all(supports_global_randomization(d) for d in self.parts)

    def read_bytes(self, chunk_id: int):
        """Per deserializer, ``{its chunk id: its read_bytes}`` of the chunks this chunk joins."""
        joined = self._joined(chunk_id)
        out = _Raw([{self._chunks[chunk_id]: self.primary.read_bytes(self._chunks[chunk_id])}])
        for s, (c, _) in zip(self.parts[1:], joined[1]):
            out.append({sc: s.read_bytes(sc) for sc in np.unique(c).tolist()})
        out.joined = joined if self.lazy else None   # lazy: the join lives as long as the bytes
        return out

    def release_bytes(self, raw) -> None:
        for d, r in zip(self.parts, raw):
            for v in r.values():
                d.release_bytes(v)

    def read_sequences(self, raw, chunk_ids: np.ndarray, indices: np.ndarray) -> ChunkData | None:
        """The selected corpus sequences parsed by every deserializer from the chunks' bytes (see
        :meth:`RandomAccessDeserializer.read_sequences`); None as soon as one deserializer says None."""
        return self.begin_read_sequences(raw, chunk_ids, indices)()

    def begin_read_sequences(self, raw, chunk_ids: np.ndarray, indices: np.ndarray):
        """Every deserializer's read started (see :meth:`RandomAccessDeserializer.begin_read_sequences`)."""
        chunk_ids = np.asarray(chunk_ids, np.int64)
        indices = np.asarray(indices, np.int64)
        n = len(chunk_ids)
        if n == 0:
            return lambda: None
        p_chunk = self._chunk_ids[chunk_ids]
        if len(self.parts) == 1:  # one deserializer: its chunks' sequences, keys and lengths
            part_raw = {}
            for r in raw.values():
                part_raw.update(r[0])
            return self.primary.begin_read_sequences(part_raw, p_chunk, indices)
        p_index = indices.copy()
        sec = [(np.empty(n, np.int64), np.empty(n, np.int64)) for _ in self.parts[1:]]
        part_raw: list[dict] = [{} for _ in self.parts]
        keys = lengths = None
        for c in _distinct(chunk_ids).tolist():
            m = np.flatnonzero(chunk_ids == c)
            i = indices[m]
            joined = getattr(raw[c], "joined", None)
            keep, sec_refs, t = joined if joined is not None else self._joined(c)
            if keep is not None:
                p_index[m] = keep[i]
            for (sc, si), (rc, ri) in zip(sec, sec_refs):
                sc[m] = rc[i]
                si[m] = ri[i]
            for j, r in enumerate(raw[c]):
                part_raw[j].update(r)
            if keys is None:
                keys = np.empty(n, t.keys.dtype)
                lengths = np.empty(n, np.int64)
            keys[m] = t.keys[i]
            lengths[m] = t.lengths[i]
        pending = [self.primary.begin_read_sequences(part_raw[0], p_chunk, p_index)]
        pending += [s.begin_read_sequences(r, sc, si)
                    for s, (sc, si), r in zip(self.parts[1:], sec, part_raw[1:])]

        def finish() -> ChunkData | None:
            parts = [p() for p in pending]  # every one, so that none is left running
            if any(d is None for d in parts):
                return None
            streams: dict = {}
            invalid = dropped = reasons = None
            for j, d in enumerate(parts):
                streams.update({name: _broadcast(st, lengths) for name, st in d.streams.items()}
                               if self._broadcast[j] else d.streams)
                if d.invalid is not None:
                    invalid = d.invalid if invalid is None else (invalid | d.invalid)
                if d.dropped is not None:
                    dropped = d.dropped if dropped is None else (dropped | d.dropped)
                if d.reasons:
                    reasons = {**d.reasons, **(reasons or {})}
            return ChunkData(SequenceTable(keys, lengths), streams, invalid, dropped, reasons)
        return finish

    def close(self) -> None:
        for d in self.parts:
            d.close()


class _Raw(list):
    """A corpus chunk's raw bytes: per deserializer ``{its chunk id: its bytes}``; ``joined``
    (lazy join) the chunk's join, kept while the bytes are held."""

    joined = None


def _moved_reasons(reasons: dict[int, str] | None, keep: np.ndarray | None) -> dict[int, str] | None:
    """A chunk's reasons for invalid sequences, renumbered for the sequences ``keep`` kept."""
    if not reasons or keep is None:
        return reasons
    where = {int(k): j for j, k in enumerate(keep.tolist()) if int(k) in reasons}
    return {j: reasons[k] for k, j in where.items()} or None


def _distinct(chunk_ids: np.ndarray) -> np.ndarray:
    """The distinct chunk ids (non-negative, as few as the corpus has chunks), ascending, as
    ``np.unique`` gives them: one counting pass instead of a hash or sort of every selected id."""
    return np.flatnonzero(np.bincount(chunk_ids)) if len(chunk_ids) else np.zeros(0, np.int64)


def _compact(lengths: np.ndarray) -> np.ndarray:
    """Lengths all 1 as a read-only view of one value (no memory per sequence); others as given."""
    n = len(lengths)
    if n and bool((lengths == 1).all()):
        return np.broadcast_to(np.ones(1, np.int64), (n,))
    return lengths


def _broadcast(stream, lengths: np.ndarray):
    """A secondary's one-sample sequences repeated to the corpus sequences' lengths (an HTK
    ``expandToUtterance`` stream in sequence mode, as CNTK 2.7 delivered it)."""
    lengths = np.asarray(lengths, np.int64)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return DenseStream(np.repeat(stream.values[stream.offsets[:-1]], lengths, axis=0), offsets)


def _concat(pieces):
    """Concatenate chunk-stream containers (same stream) one after another."""
    counts = [p.offsets[-1] for p in pieces]
    offs = [pieces[0].offsets]
    shift = counts[0]
    for p, c in zip(pieces[1:], counts[1:]):
        offs.append(p.offsets[1:] + shift)
        shift += c
    offsets = np.concatenate(offs)
    if not pieces[0].is_sparse:
        return DenseStream(np.concatenate([p.values for p in pieces]), offsets)
    ip = [pieces[0].indptr]
    shift = pieces[0].indptr[-1]
    for p in pieces[1:]:
        ip.append(p.indptr[1:] + shift)
        shift += p.indptr[-1]
    return SparseStream(np.concatenate(ip), np.concatenate([p.indices for p in pieces]),
                        np.concatenate([p.data for p in pieces]), offsets, pieces[0].dim)
