"""HTKMLFDeserializer: frame labels of utterances from MLF files, as sparse one-hot samples.

One stream per deserializer, configured by::

    input = [ labels = [ dim = 132                       # or labelDim
                         mlfFile = "train.mlf"            # or mlfFileList = ("a.mlf":"b.mlf"),
                                                          # or mlfFileList = "mlfs.txt" (one path a line)
                         labelMappingFile = "state.list"
                         phoneBoundaries = false ] ]

Each frame is a one-hot vector of ``dim`` (value 1.0; with ``phoneBoundaries`` the first frame of
every segment has 2.0, what CNTK gave for CTC training); with a ``labelToTargetMappingFile`` (the old
HTKMLFReader's) it is the label's target row, which may hold several 1s. Utterances are joined to the feature
deserializer's by key; in frame mode each frame is a sequence. An utterance whose segments do not
start at 0 or are not contiguous is an invalid sequence, counted against ``max_errors``.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

import numpy as np

from ...remote import is_remote, local_copy, read_path, resolve
from ...errors import ConfigError, FormatError
from ...streams import StreamInformation
from ...values import to_bool, to_int, to_path
from ..._native import native
from ..protocol import ChunkData, RandomAccessDeserializer, SequenceTable, SparseStream
from .common import FRAME_KEY, UtteranceCorpus
from .mlf import MLFIndex, parse_mlf_files, read_state_list
from .mlfbin import parse_binary_mlf_files
from .options import dtype_of, numeric_keys_of, one_input, option, paths_of
from .text import numeric_names

__all__ = ["HTKMLFDeserializerImpl", "HTKMLFBinaryDeserializerImpl", "TYPE_NAME", "BINARY_TYPE_NAME"]

TYPE_NAME = "HTKMLFDeserializer"
BINARY_TYPE_NAME = "HTKMLFBinaryDeserializer"
log = logging.getLogger("cntkio.deserializers.htk")


def mlf_paths(spec: Mapping, name: str, config: Mapping | None = None) -> list[str]:
    """The MLF files of a stream, as CNTK's ConfigHelper took them: ``mlfFile`` (one file, or a
    list from Python), else ``mlfFileList``: an array ``("a.mlf":"b.mlf")`` (or a Python list), or
    a text file listing the MLF files one a line (a string without ``:``, or a URL: read with the
    remote options of ``config``, the relative paths it lists taken from its folder)."""
    if option(spec, None, "mlfFile", "mlf", "file") is not None:
        return paths_of(spec, ("mlfFile", "mlf", "file"), f"input.{name}.mlfFile")
    value = option(spec, None, "mlfFileList")
    if isinstance(value, str) and (":" not in value or is_remote(value)) and not value.startswith("("):
        listing = to_path(value, f"input.{name}.mlfFileList")
        if is_remote(listing):   # a list at a URL (its errors name it): relative paths from its folder
            files = [resolve(listing, ln.strip()) for ln in
                     read_path(listing, config).decode("utf-8", "surrogateescape").splitlines() if ln.strip()]
        else:
            try:
                with open(listing, encoding="utf-8") as f:
                    files = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
            except OSError as e:
                raise FormatError(f"cannot open the mlfFileList file (a list of MLF files, one a line): "
                                  f"{e.strerror}", file=listing) from e
        if not files:
            raise FormatError("the mlfFileList file lists no MLF file", file=listing)
        return files
    return paths_of(spec, ("mlfFileList",), f"input.{name}.mlfFile")


class HTKMLFDeserializerImpl(UtteranceCorpus, RandomAccessDeserializer):
    """See the module docstring."""

    _where_is_line = True       # MLFIndex.where holds (file, line); binary files: (file, byte offset)
    #: multi-hot targets (labelToTargetMappingFile): (row pointers per label, target indices); None: one-hot
    _targets: tuple[np.ndarray, np.ndarray] | None = None

    def __init__(self, config: Mapping[str, Any], frame_mode: bool = False, trace_level: int = 1,
                 **_ignored: Any) -> None:
        name, spec = one_input(config, TYPE_NAME)
        self.name = name
        self.frame_mode = bool(frame_mode)
        self.dtype = dtype_of(config)
        self.label_dim = to_int(option(spec, None, "labelDim", "dim", "shape"), f"input.{name}.dim", minimum=1)
        target_file = option(spec, None, "labelToTargetMappingFile")
        self.phone_boundaries = to_bool(option(spec, config, "phoneBoundaries", "phone_boundaries", default=False),
                                        f"input.{name}.phoneBoundaries")
        mlfs = [local_copy(p, config) for p in mlf_paths(spec, name, config)]   # at URLs: copies in cacheDir
        self.numeric_keys = numeric_keys_of(config, spec)
        self.mlf = idx = self._index(name, spec, config, mlfs)
        if target_file is not None:     # CNTK's old HTKMLFReader: labels delivered as target vectors
            self._map_targets(name, spec, config, local_copy(
                to_path(target_file, f"input.{name}.labelToTargetMappingFile"), config))
        self._keys = idx.keys
        if self.numeric_keys:      # useNumericSequenceKeys: the keys' numbers ("007" is 7), as CNTK
            self._keys, ok = numeric_names(idx.names)
            if not ok.all():
                u = int(np.flatnonzero(~ok)[0])
                at = {"line": idx.where[u][1]} if self._where_is_line else {}
                raise FormatError(f"Invalid numeric sequence id '{idx.names[u]}' (useNumericSequenceKeys = true)",
                                  file=idx.where[u][0], expected="a key that starts with a number",
                                  found=repr(idx.names[u]), **at)
        durations = np.maximum(idx.seg_ends - idx.seg_starts, 0)
        self._seg_durations = durations
        cs = np.concatenate(([0], np.cumsum(durations))).astype(np.int64)
        self._lengths = cs[idx.seg_offsets[1:]] - cs[idx.seg_offsets[:-1]]
        self._init_chunks()
        self._stream = StreamInformation(name, 0, "sparse", self.dtype, (self.label_dim,))

    @property
    def file(self) -> str:
        """The MLF file(s), for messages."""
        return ", ".join(dict.fromkeys(w[0] for w in self.mlf.where))

    def _origin(self, u: int) -> str:
        f, at = self.mlf.where[u]
        return f"{f}:{at} {self.mlf.names[u]!r}" if self._where_is_line else f"{f} {self.mlf.names[u]!r}"

    def bind_composite(self, parts: list) -> None:
        """Check the utterances' frames against the feature deserializers joined with this one
        (called by the composite before it reads a chunk): an utterance whose labels claim more
        frames than its features hold is an invalid sequence (counted against ``max_errors``, as
        CNTK's HTKMLFReader skipped a "duration mismatch", utterancesourcemulti.h:1080-1087), cut
        to the features' length, so that no array is sized by what the MLF alone claims."""
        from .features import HTKFeatureDeserializerImpl
        feats = [d for d in parts if isinstance(d, HTKFeatureDeserializerImpl)
                 and bool(d.numeric_keys) == bool(self.numeric_keys)]
        if not feats or len(self._keys) == 0:
            return
        bound = np.full(len(self._keys), -1, np.int64)     # the longest feature utterance of each key
        for d in feats:
            order = np.argsort(d._keys, kind="stable")
            sk = d._keys[order]
            pos = np.minimum(np.searchsorted(sk, self._keys), len(sk) - 1)
            found = sk[pos] == self._keys
            bound = np.maximum(bound, np.where(found, d._lengths[order][pos], -1))
        bound[bound < 0] = np.iinfo(np.int64).max          # no features: the join drops it
        over = np.flatnonzero(self._lengths > bound)
        if len(over) == 0:
            return
        idx = self.mlf
        for u in over[:5].tolist():
            file, at = idx.where[u]
            where = f"{file}:{at}" if self._where_is_line else f"{file} (byte offset {at})"
            log.warning("%s: duration mismatch (%d frames in the labels of '%s' vs. %d in its features): an "
                        "invalid sequence, its labels cut to the features' length", where,
                        int(self._lengths[u]), idx.names[u], int(bound[u]))
        if len(over) > 5:
            log.warning("... and %d more utterance(s) whose labels are longer than their features", len(over) - 5)
        idx.valid[over] = False
        # cut each segment at the utterance's feature length: durations from the clipped running sum
        seg_utt = np.repeat(np.arange(len(self._keys)), np.diff(idx.seg_offsets))
        cs = np.cumsum(self._seg_durations) - np.repeat(np.concatenate(([0], np.cumsum(self._lengths)))[:-1],
                                                         np.diff(idx.seg_offsets))
        cut = np.minimum(cs, bound[seg_utt])
        prev = np.concatenate(([0], cut[:-1]))
        firsts = idx.seg_offsets[:-1][np.diff(idx.seg_offsets) > 0]
        prev[firsts] = 0
        self._seg_durations = np.maximum(cut - prev, 0)
        dcs = np.concatenate(([0], np.cumsum(self._seg_durations))).astype(np.int64)
        self._lengths = dcs[idx.seg_offsets[1:]] - dcs[idx.seg_offsets[:-1]]
        self._init_chunks()

    def _index(self, name: str, spec: Mapping, config: Mapping, mlfs: list[str]) -> MLFIndex:
        """The utterances of the MLF files (text MLF through the state list)."""
        mapping = option(spec, config, "labelMappingFile", "label_mapping_file")
        if self.phone_boundaries and self.frame_mode:
            raise ConfigError("frameMode and phoneBoundaries are mutually exclusive options.",
                              path=f"input.{name}.phoneBoundaries")
        if mapping is None:     # CNTK 2.7: without a state list the MLF's fourth column is the class id
            return parse_mlf_files(mlfs, None, self.label_dim)
        states = read_state_list(local_copy(to_path(mapping, f"input.{name}.labelMappingFile"), config))
        return parse_mlf_files(mlfs, states, self.label_dim)

    def _map_targets(self, name: str, spec: Mapping, config: Mapping, path: str) -> None:
        """``labelToTargetMappingFile``/``targetDim``, as CNTK's old HTKMLFReader read them: one line
        per state-list label, in its order, ``label 0010...`` (the target vector as ``targetDim``
        characters 0/1); every frame's label becomes its target row: a class when each row holds
        one 1 (a state -> class map), else the row's 1s (multi-hot; none for a row of 0s)."""
        where = f"input.{name}.labelToTargetMappingFile"
        mapping = option(spec, config, "labelMappingFile", "label_mapping_file")
        if mapping is None:
            raise ConfigError("HTKMLFReader::ReadLabelToTargetMappingFile(): cannot read labelToTargetMappingFile "
                              "without a labelMappingFile!", path=where)
        tdim = option(spec, None, "targetDim")
        if tdim is None:
            raise ConfigError("output must specify targetDim if labelToTargetMappingFile specified!",
                              path=f"input.{name}.targetDim")
        tdim = to_int(tdim, f"input.{name}.targetDim", minimum=1)
        with open(local_copy(to_path(mapping, where), config), encoding="utf-8", errors="surrogateescape") as f:
            labels = [ln.strip() for ln in f.read().splitlines()]
        try:
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                rows = f.read().splitlines()
        except OSError as e:
            raise FormatError(f"cannot open the labelToTargetMappingFile: {e.strerror}", file=path) from e
        rows = [r for r in rows if r.strip()]
        labels = [lb for lb in labels if lb]
        if len(rows) != len(labels):
            raise FormatError("HTKMLFReader::ReadLabelToTargetMappingFile(): mismatch between lengths of "
                              "labelMappingFile vs labelToTargetMappingFile", file=path,
                              expected=f"{len(labels)} lines (the state list)", found=f"{len(rows)} lines")
        ptr = np.zeros(len(rows) + 1, np.int64)     # the 1s of label i's target row: hot[ptr[i]:ptr[i + 1]]
        hot: list[int] = []
        width = None
        for i, (row, want) in enumerate(zip(rows, labels)):
            token, _, bits = row.partition(" ")
            if token != want:
                raise FormatError("HTKMLFReader::ReadLabelToTargetMappingFile(): mismatch between labelMappingFile "
                                  "and labelToTargetMappingFile", file=path, line=i + 1, expected=repr(want),
                                  found=repr(token))
            width = len(bits) if width is None else width
            if len(bits) != width:
                raise FormatError("HTKMLFReader::ReadLabelToTargetMappingFile(): inconsistent target length among "
                                  "records", file=path, line=i + 1, expected=f"{width} characters",
                                  found=f"{len(bits)}")
            if set(bits) - {"0", "1"}:
                raise FormatError("HTKMLFReader::ReadLabelToTargetMappingFile(): expecting label2target mapping to "
                                  "contain only 1's or 0's", file=path, line=i + 1, found=repr(bits))
            ones = [j for j, b in enumerate(bits) if b == "1"]
            ptr[i + 1] = ptr[i] + len(ones)
            hot.extend(ones)
        if width != tdim:
            raise FormatError("mismatch between targetDim and dim found in labelToTargetMappingFile", file=path,
                              expected=f"targetDim {tdim}", found=f"{width} characters a line")
        hot_ = np.asarray(hot, np.int32)
        if np.array_equal(np.diff(ptr), np.ones(len(rows), np.int64)):   # a state -> class map: one-hot
            self.mlf.seg_labels = hot_[self.mlf.seg_labels]
        else:      # multi-hot (or all-zero) rows: each frame's label expands to its row's 1s
            self._targets = (ptr, hot_)
        self.label_dim = tdim

    def _label_stream(self, labels: np.ndarray, values: np.ndarray, offsets: np.ndarray) -> SparseStream:
        """The sparse label stream of frames with these labels and values: one non-zero a frame,
        or with a multi-hot ``labelToTargetMappingFile`` the 1s of the label's target row (CNTK
        copied the row, 0s and 1s, into the frame's column; a row of 0s is a frame without
        non-zeros), each with the frame's value."""
        total = len(labels)
        if self._targets is None:
            return SparseStream(np.arange(total + 1, dtype=np.int64), labels, values, offsets, self.label_dim)
        ptr, hot = self._targets
        first = ptr[labels]
        counts = ptr[labels + 1] - first
        indptr = np.zeros(total + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        return SparseStream(indptr, hot[_ranges(first, counts)], np.repeat(values, counts), offsets, self.label_dim)

    def stream_infos(self) -> list[StreamInformation]:
        return [self._stream]

    def _raw(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        """Per frame of the chunk: the label index and the value (1, or 2 at a segment start)."""
        a, b = self._chunk_utts(c)
        idx = self.mlf
        s0, s1 = int(idx.seg_offsets[a]), int(idx.seg_offsets[b])
        dur = self._seg_durations[s0:s1]
        labels = np.repeat(idx.seg_labels[s0:s1], dur)
        values = np.ones(len(labels), self.dtype)
        if self.phone_boundaries and len(dur):
            firsts = (np.cumsum(dur) - dur)[dur > 0]
            values[firsts] = 2.0
        return labels, values

    def _valid(self, utts: np.ndarray) -> np.ndarray:
        return self.mlf.valid[utts]

    def _select_frames(self, raws, chunk_ids: np.ndarray, indices: np.ndarray) -> ChunkData:
        """Frame mode: one frame a sequence, located for the whole selection at once and copied
        by one C gather (per stream, across the chunks) or one NumPy gather per chunk."""
        n = len(chunk_ids)
        uniq, which = self._chunk_groups(chunk_ids)
        utt, frames, _ = self._frames_at(chunk_ids, indices, which,
                                         [raws[c][2] if len(raws[c]) > 2 else None for c in uniq])
        keys = np.empty(n, FRAME_KEY)
        keys["utt"] = self._keys[utt]
        keys["frame"] = frames
        invalid = ~self._valid(utt)
        labels = np.empty(n, np.int32)
        values = np.empty(n, self.dtype)
        labs = [raws[c][0] for c in uniq]
        vals = [raws[c][1] for c in uniq]
        c_gather = native("htk")
        if (c_gather is not None and self.dtype == np.float32
                and all(a.dtype == np.int32 and a.flags.c_contiguous for a in labs)):
            which, rows = np.ascontiguousarray(which, np.int64), np.ascontiguousarray(indices, np.int64)
            c_gather.gather_rows(labels, labs, which, rows, 1, 1)
            c_gather.gather_rows(values, vals, which, rows, 1, 1)
        else:
            for j in range(len(uniq)):
                m = np.flatnonzero(which == j) if len(uniq) > 1 else slice(None)
                labels[m] = labs[j][indices[m]]
                values[m] = vals[j][indices[m]]
        stream = self._label_stream(labels, values, np.arange(n + 1, dtype=np.int64))
        return ChunkData(SequenceTable(keys, np.ones(n, np.int64)), {self.name: stream},
                         invalid if invalid.any() else None)

    def _select(self, raws, chunk_ids: np.ndarray, indices: np.ndarray) -> ChunkData:
        if self.frame_mode:
            return self._select_frames(raws, chunk_ids, indices)
        n = len(chunk_ids)
        keys = np.empty(n, np.uint64)
        lengths = np.empty(n, np.int64)
        invalid = np.zeros(n, bool)
        parts = []
        for c in np.unique(chunk_ids).tolist():
            m = np.flatnonzero(chunk_ids == c)
            a, b = self._chunk_utts(c)
            cum = self._utt_offsets[a:b + 1] - self._utt_offsets[a]
            local = indices[m]
            lengths[m] = self._lengths[a + local]
            keys[m] = self._keys[a + local]
            parts.append((m, c, cum[local], lengths[m]))
            invalid[m] = ~self._valid(a + local)
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        total = int(offsets[-1])
        labels = np.empty(total, np.int32)
        values = np.empty(total, self.dtype)
        for m, c, first, lens in parts:
            lab, val = raws[c][:2]
            if _runs_on(m, first, lens):     # consecutive utterances to consecutive rows: one slice
                d0, s0, k = int(offsets[m[0]]), int(first[0]), int(lens.sum())
                labels[d0:d0 + k] = lab[s0:s0 + k]
                values[d0:d0 + k] = val[s0:s0 + k]
                continue
            src = _ranges(first, lens)
            dest = _ranges(offsets[m], lens)
            labels[dest] = lab[src]
            values[dest] = val[src]
        stream = self._label_stream(labels, values, offsets)
        return ChunkData(SequenceTable(keys, lengths), {self.name: stream}, invalid if invalid.any() else None)

    def get_chunk(self, chunk_id: int) -> ChunkData:
        table = self.sequence_infos(chunk_id)
        labels, values = self._raw(chunk_id)
        offsets = np.zeros(len(table) + 1, np.int64)
        np.cumsum(table.lengths, out=offsets[1:])
        a, b = self._chunk_utts(chunk_id)
        valid = self.mlf.valid[a:b]
        if self.frame_mode:
            valid = np.repeat(valid, self._lengths[a:b])
        stream = self._label_stream(labels, values, offsets)
        return ChunkData(table, {self.name: stream}, None if valid.all() else ~valid)

    def supports_random_access(self) -> bool:
        return True

    def read_bytes(self, chunk_id: int):
        """The chunk's per-frame labels and values; in frame mode also each frame's utterance
        within the chunk (:meth:`_frame_map`)."""
        raw = self._raw(chunk_id)
        return raw + (self._frame_map(chunk_id),) if self.frame_mode else raw

    def read_sequences(self, raw, chunk_ids: np.ndarray, indices: np.ndarray) -> ChunkData:
        return self._select(raw, np.asarray(chunk_ids, np.int64), np.asarray(indices, np.int64))


def _runs_on(positions: np.ndarray, first: np.ndarray, lengths: np.ndarray) -> bool:
    """Whether the selected ranges ``[first, first + lengths)`` follow each other and land at
    consecutive positions (sequence mode in input order): then they are one slice."""
    n = len(positions)
    if n == 0 or int(positions[-1]) - int(positions[0]) != n - 1:
        return False
    return n == 1 or bool(np.array_equal(first[1:], first[:-1] + lengths[:-1]))


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)


class HTKMLFBinaryDeserializerImpl(HTKMLFDeserializerImpl):
    """``HTKMLFBinaryDeserializer``: the same labels from binary MLF files (:mod:`.mlfbin`), whose
    runs carry state indices (a ``labelMappingFile`` is accepted, as CNTK did, and not needed).
    ``phoneBoundaries`` is refused with CNTK 2.7's error."""

    _where_is_line = False

    def _index(self, name: str, spec: Mapping, config: Mapping, mlfs: list[str]) -> MLFIndex:
        if self.phone_boundaries:
            raise ConfigError("phoneBoundaries is not supported with binary MLF files (CNTK 2.7: 'TODO: "
                              "implement phoneBoundaries setting in Binary MLF deserializer.')",
                              path=f"input.{name}.phoneBoundaries")
        return parse_binary_mlf_files(mlfs, self.label_dim)
