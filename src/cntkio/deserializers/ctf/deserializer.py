"""``CNTKTextFormatDeserializer``: the CTF deserializer behind ``CTFDeserializer(...)`` configs.

It indexes the file once (``index.py``; ``cacheIndex`` reuses a cached index), and loads a chunk
by reading its byte range (``pread``, never a memory map: a file cut short by another process is
an error naming it, not SIGBUS) and parsing it with the C parser (``cntkio._native._ctf``) or, under
``CNTKIO_PURE_PYTHON=1``, the reference parser (``_reference``). Chunk data is columnar
(``DenseStream``/``SparseStream``). Malformed samples and lines are skipped, logged at traceLevel
>= 1 and counted against ``maxErrors``; past it, ``MaxErrorsExceeded`` is raised. Each chunk's
errors are counted once, however often the chunk is loaded (every sweep loads it again).
"""
from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from typing import Any, Mapping

import numpy as np

from ..._paths import missing_file_error
from ..._log import TraceLogger
from ..._native import native
from ...constants import DEFAULT_CHUNK_SIZE_IN_BYTES
from ...errors import ConfigError, FormatError, MaxErrorsExceeded
from ...streams import StreamInformation
from ...remote import read_path, remote_for
from ...values import local_path, to_bool, to_choice, to_dims, to_int, to_path
from ..base import DeserializerBase
from ..protocol import ChunkData, ChunkInfo, DenseStream, RandomAccessDeserializer, SequenceTable, SparseStream
from ..ranges import SCRATCH, BytesRanges, FileRanges, ObjectRanges, Ranges
from . import _reference as ref
from .index import CTFIndex, build_index
from .issues import ENCODING_NAMES as _ENCODING_NAMES, describe_issue
from .remote import RemoteChunks
from .undeclared import UndeclaredInputs

__all__ = ["CNTKTextFormatDeserializer", "CTFStreamSpec", "ctf_backend", "available_backends",
           "parse_options",
           "MAX_ERRORS_MESSAGE"]

#: CNTK's text when the error budget is exhausted (the file's base name is filled in).
MAX_ERRORS_MESSAGE = "Reached the maximum number of allowed errors while reading the input file ({})."

DEFAULT_CHUNK_SIZE = DEFAULT_CHUNK_SIZE_IN_BYTES
_WARNINGS_LOGGED_PER_CHUNK = 20
_REPEATS_LOGGED = 20


def ctf_backend():
    """The parser module in use: the C module when it is built (and provides ``scan_index`` and
    ``parse_chunk``), else the pure-Python reference (always under ``CNTKIO_PURE_PYTHON=1``)."""
    mod = native("ctf")
    if mod is not None and hasattr(mod, "scan_index") and hasattr(mod, "parse_chunk"):
        return mod
    return ref


def available_backends() -> list:
    """Every parser module usable here: the reference, plus the C module when it is built and
    complete (for tests that must cover both)."""
    backends = [ref]
    try:
        from ..._native import _ctf  # type: ignore[attr-defined]
    except ImportError:
        return backends
    if hasattr(_ctf, "scan_index") and hasattr(_ctf, "parse_chunk"):
        backends.append(_ctf)
    return backends


class CTFStreamSpec:
    """One declared input: stream name, alias in the file, dim, sample shape, sparse flag."""

    __slots__ = ("name", "alias", "dim", "shape", "sparse", "defines_mb_size")

    def __init__(self, name: str, alias: str, shape: tuple[int, ...], sparse: bool,
                 defines_mb_size: bool) -> None:
        self.name, self.alias, self.shape = name, alias, shape
        self.dim = int(math.prod(shape))
        self.sparse, self.defines_mb_size = sparse, defines_mb_size

    def __repr__(self) -> str:
        return (f"CTFStreamSpec({self.name!r}, alias={self.alias!r}, shape={self.shape}, "
                f"sparse={self.sparse}, defines_mb_size={self.defines_mb_size})")


# ------------------------------------------------------------------------------------------------
# options

def _ci(mapping: Mapping) -> dict[str, tuple[str, Any]]:
    """Case-insensitive view of a config mapping: lower-case key -> (original key, value)."""
    return {str(k).lower(): (str(k), v) for k, v in mapping.items()}


def _get(opts: dict, key: str, default: Any = None) -> Any:
    item = opts.get(key.lower())
    return default if item is None else item[1]


def parse_options(config: Mapping, **source_options: Any) -> dict[str, Any]:
    """Validate a ``CNTKTextFormatDeserializer`` config dict and return normalised options.

    Keys are matched case-insensitively, and values may be strings as read from a CNTK config
    file (``"true"``, ``"10000"``), converted by :mod:`cntkio.values`. Raises ``ConfigError``
    naming the key path.
    """
    opts = _ci(config)
    file = _get(opts, "file")
    if file is None or str(file) == "":
        raise ConfigError("the input file is not specified", path="file",
                          hint="set file = \"path/to/data.ctf\"")
    inputs = _get(opts, "input")
    if not isinstance(inputs, Mapping) or not inputs:
        raise ConfigError("no inputs declared", path="input",
                          hint="declare input = [name = [dim = N; format = \"dense\"]]")
    specs: list[CTFStreamSpec] = []
    aliases: dict[str, str] = {}
    for name, decl in inputs.items():
        path = f"input.{name}"
        if not isinstance(decl, Mapping):
            raise ConfigError(f"expected a section with dim and format, found {decl!r}", path=path)
        d = _ci(decl)
        dim = _get(d, "dim")
        if dim is None:
            raise ConfigError("dim is required", path=path + ".dim")
        shape = to_dims(dim, path + ".dim")
        fmt = to_choice(_get(d, "format", "dense"), path + ".format", ("dense", "sparse"))
        alias = _get(d, "alias")
        alias = str(name) if alias is None or str(alias) == "" else str(alias)
        if any(c in alias for c in " \t\r\n|") or alias.startswith("#"):
            raise ConfigError(f"an alias cannot contain white space or '|' or start with '#', "
                              f"found {alias!r}", path=path + ".alias")
        if alias in aliases:
            raise ConfigError(f"alias {alias!r} is also used by input {aliases[alias]!r}",
                              path=path + ".alias")
        aliases[alias] = str(name)
        defines = to_bool(_get(d, "definesMBSize", False), path + ".definesMBSize")
        specs.append(CTFStreamSpec(str(name), alias, shape, fmt == "sparse", defines))
    defining = [i for i, s in enumerate(specs) if s.defines_mb_size]
    if len(defining) > 1:
        raise ConfigError("more than one input defines the minibatch size: "
                          + ", ".join(specs[i].name for i in defining),
                          path="input", hint="set definesMBSize on one input only")
    precision = to_choice(_get(opts, "precision", source_options.get("precision", "float")), "precision",
                          ("float", "double"))
    trace = _get(opts, "traceLevel", source_options.get("trace_level", 1))
    cache_chunks = _get(opts, "numChunksToCache", 0)
    return {
        "file": local_path(to_path(file, "file")),
        "streams": specs,
        "defining_stream": defining[0] if defining else -1,
        "skip_ids": to_bool(_get(opts, "skipSequenceIds", False), "skipSequenceIds"),
        "max_errors": to_int(_get(opts, "maxErrors", 0), "maxErrors", minimum=0),
        "trace_level": to_int(trace, "traceLevel"),
        "chunk_size": to_int(_get(opts, "chunkSizeInBytes", DEFAULT_CHUNK_SIZE),
                             "chunkSizeInBytes", minimum=1),
        "keep_in_memory": to_bool(_get(opts, "keepDataInMemory", False), "keepDataInMemory"),
        "cache_index": to_bool(_get(opts, "cacheIndex", False), "cacheIndex"),
        "double": precision == "double",
        "frame_mode": to_bool(_get(opts, "frameMode", source_options.get("frame_mode", False)),
                              "frameMode"),
        "chunks_to_cache": to_int(cache_chunks, "numChunksToCache", minimum=0),
    }


# ------------------------------------------------------------------------------------------------

class CNTKTextFormatDeserializer(DeserializerBase, RandomAccessDeserializer, RemoteChunks):
    """Reads a CNTK Text Format file (the ``CNTKTextFormatDeserializer`` config type).

    ``config``: the dict from ``CTFDeserializer(filename, streams)`` plus any options (see
    ``parse_options``); ``source_options`` may carry ``trace_level``, ``frame_mode`` and
    ``precision`` from the MinibatchSource. ``backend`` (tests only) forces a parser module.

    The file is indexed once on construction; sequences with no sample of any declared input
    (or of the defining input) are dropped from what is delivered, and so are chunks left empty.
    Repeated ids after other ids are read as new sequences with the same key (as CNTK 2.7 did)
    and logged once each; a join by key then raises, as the join would be ambiguous.
    """

    key_kind = "numeric"

    def __init__(self, config: Mapping, backend=None, **source_options: Any) -> None:
        self.options = parse_options(config, **source_options)
        o = self.options
        self.filename: str = o["file"]
        self.basename = os.path.basename(self.filename)
        self.specs: list[CTFStreamSpec] = o["streams"]
        self.max_errors: int = o["max_errors"]
        self.trace = TraceLogger("deserializers.ctf", o["trace_level"])
        self.backend = backend if backend is not None else ctf_backend()
        self.dtype = np.dtype(np.float64 if o["double"] else np.float32)
        self._lock = threading.Lock()
        self._errors_total = 0
        self._chunk_errors: dict[int, int] = {}
        self._chunk_cache: OrderedDict[int, ChunkData] = OrderedDict()
        self._undeclared = UndeclaredInputs(self.filename, [s.name for s in self.specs],
                                            [s.alias for s in self.specs], self.trace)
        self._data: bytes | None = None
        self._remote = remote_for(self.filename, config, "CTF input file")  # a URL: cntkio.remote
        if self._remote is None and not os.path.exists(self.filename):
            raise missing_file_error("CTF input file", self.filename, "the 'file' of a CNTKTextFormatDeserializer")
        if self._remote is None and os.path.isdir(self.filename):
            raise IsADirectoryError(21, f"CTF input is a directory, not a file: {self.filename!r}",
                                    self.filename)
        if o["keep_in_memory"]:
            self._data = read_path(self.filename, config)
        aliases = [s.alias.encode("utf-8") for s in self.specs]
        self._stream_args = [(a, s.dim, s.sparse) for a, s in zip(aliases, self.specs)]
        index = build_index(self.filename, self.backend, aliases, o["skip_ids"],
                            o["defining_stream"], o["chunk_size"], o["cache_index"], self._data,
                            self._remote)
        self._check_index(index)
        self.index = index
        self._select(index)
        # read by ranges: pread (never mapped: a file cut short is then an error naming it), the
        # in-memory copy, or a URL's ranged GETs
        self._src: Ranges = (BytesRanges(self._data, self.filename, what="CTF file") if self._data is not None
                             else ObjectRanges(self._remote, self.filename, what="CTF file") if self._remote is not None
                             else FileRanges(self.filename, what="CTF file"))
        self.trace.info("%s: %d sequences in %d chunks (%s sequence ids), parser %s",
                        self.filename, self._num_kept, len(self._chunks),
                        "with" if index.ids_mode else "without",
                        getattr(self.backend, "__name__", str(self.backend)))

    # -- index ------------------------------------------------------------------------------

    def _check_index(self, index: CTFIndex) -> None:
        if index.encoding >= ref.ENCODING_UTF16LE:
            raise FormatError("the file is not UTF-8 text; CTF files must be UTF-8 (or ASCII)",
                              file=self.filename, line=1, column=1, offset=0,
                              expected="UTF-8 text, optionally with a UTF-8 byte order mark",
                              found=_ENCODING_NAMES[index.encoding])
        if index.num_sequences == 0:
            size = int(index.starts[-1])
            found = "an empty file" if size == 0 else "only blank lines and comments"
            raise FormatError("the file holds no data", file=self.filename,
                              expected="at least one line with a sample ('|name values')",
                              found=found)

    def _select(self, index: CTFIndex) -> None:
        """Drop length-0 sequences and empty chunks; warn about repeated ids."""
        keep = index.lengths > 0
        self._keep = keep
        n_dropped = int((~keep).sum())
        if n_dropped:
            first = int(index.first_lines[np.flatnonzero(~keep)[0]])
            self.trace.warning("%s: %d sequence(s) have no sample of the declared inputs%s and are "
                               "dropped (the first at line %d)", self.filename, n_dropped,
                               "" if self.options["defining_stream"] < 0 else
                               f" (of the defining input '{self.specs[self.options['defining_stream']].name}')",
                               first)
        if not keep.any():
            raise FormatError("no sequence has a sample of the declared inputs",
                              file=self.filename,
                              expected="samples of " + ", ".join(f"'|{s.alias}'" for s in self.specs),
                              found="only other inputs or malformed lines")
        if index.ids_mode:
            self._warn_repeated_ids(index, keep)
        # A chunk whose sequences are all dropped is not delivered; its bytes are parsed with the
        # delivered chunk before it (or, at the start of the file, after it), so that its errors
        # are still reported and counted.
        cs = index.chunk_starts
        chunks: list[tuple[int, int, np.ndarray]] = []
        pending_start = None
        for c in range(len(cs) - 1):
            a, b = int(cs[c]), int(cs[c + 1])
            kept = np.flatnonzero(keep[a:b]) + a
            if len(kept):
                if pending_start is not None:
                    a, pending_start = pending_start, None
                chunks.append((a, b, kept))
            elif chunks:
                chunks[-1] = (chunks[-1][0], b, chunks[-1][2])
            elif pending_start is None:
                pending_start = a
        self._chunks = chunks
        self._num_kept = int(keep.sum())
        self._chunk_infos = [ChunkInfo(i, len(k), int(index.lengths[k].sum()))
                             for i, (_, _, k) in enumerate(chunks)]
        self._tables = [SequenceTable(index.keys[k], index.lengths[k]) for _, _, k in chunks]
        # for read_sequences: the kept sequences of all chunks one after another, where each
        # chunk's start in that array, and which chunks hold exactly their kept sequences (a chunk
        # that also parses dropped sequences must be read whole: their errors count)
        self._kept_all = np.concatenate([k for _, _, k in chunks]).astype(np.int64)
        self._chunk_base = np.zeros(len(chunks) + 1, np.int64)
        np.cumsum([len(k) for _, _, k in chunks], out=self._chunk_base[1:])
        self._chunk_whole = np.array([len(k) == b - a for a, b, k in chunks], bool)

    def _warn_repeated_ids(self, index: CTFIndex, keep: np.ndarray) -> None:
        seqs = np.flatnonzero(keep)
        keys = index.keys[seqs]
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        dup = np.flatnonzero(sk[1:] == sk[:-1]) + 1
        if not len(dup):
            return
        repeats = np.sort(seqs[order[dup]])
        for s in repeats[:_REPEATS_LOGGED]:
            self.trace.warning("%s:%d: sequence id %d repeats after other ids; read as a new "
                               "sequence with the same key (ids must be unique)",
                               self.filename, int(index.first_lines[s]), int(index.keys[s]))
        if len(repeats) > _REPEATS_LOGGED:
            self.trace.warning("%s: %d more repeated sequence ids not shown", self.filename,
                               len(repeats) - _REPEATS_LOGGED)

    # -- protocol ---------------------------------------------------------------------------

    def stream_infos(self) -> list[StreamInformation]:
        """The declared inputs, in config order (sparse inputs have storage format 'sparse')."""
        return [StreamInformation(s.name, i, "sparse" if s.sparse else "dense", self.dtype,
                                  s.shape, s.defines_mb_size) for i, s in enumerate(self.specs)]

    def chunk_infos(self) -> list[ChunkInfo]:
        """Chunks of about chunkSizeInBytes, in file order, with their kept sequences."""
        return list(self._chunk_infos)

    def sequence_infos(self, chunk_id: int) -> SequenceTable:
        """Keys and timeline lengths of a chunk's sequences, from the index."""
        return self._tables[chunk_id]

    def get_chunk(self, chunk_id: int) -> ChunkData:
        """Read and parse a chunk. Thread-safe; raises MaxErrorsExceeded past maxErrors."""
        cache_size = self.options["chunks_to_cache"]
        if cache_size:
            with self._lock:
                hit = self._chunk_cache.get(chunk_id)
                if hit is not None:
                    self._chunk_cache.move_to_end(chunk_id)
                    return hit
        chunk = self._load(chunk_id)
        if cache_size:
            with self._lock:
                self._chunk_cache[chunk_id] = chunk
                while len(self._chunk_cache) > cache_size:
                    self._chunk_cache.popitem(last=False)
        return chunk

    def supports_random_access(self) -> bool:
        """Sequences can be parsed one by one (not with numChunksToCache: parsed chunks are then
        kept and reused)."""
        return not self.options["chunks_to_cache"] and self._remote is None

    def read_bytes(self, chunk_id: int):
        """The chunk's text, unparsed: ``(buffer, begin, end)``, its byte range read with one
        ``pread`` into memory of its own (held while the chunk is in the window, freed with the
        last reference: a parse in flight keeps it)."""
        a, b, _ = self._chunks[chunk_id]
        begin, end = int(self.index.starts[a]), int(self.index.starts[b])
        if self._data is not None:                # kept in memory: a view of it
            return np.frombuffer(self._data, np.uint8, end - begin, begin), begin, end
        buf = SCRATCH.take(end - begin)           # (pooled by the C core: back once unreferenced)
        self._src.read_into(buf, begin)
        return buf, begin, end

    def read_sequences(self, raw, chunk_ids: np.ndarray, indices: np.ndarray) -> ChunkData | None:
        """The sequences ``indices[i]`` of chunks ``chunk_ids[i]`` parsed, in that order, straight
        out of the file's mapping (``raw`` from :meth:`read_bytes`) into one ChunkData. None (the
        caller loads whole chunks with :meth:`get_chunk`, which counts and logs their issues) when
        the parse finds any error or warning, or when a chunk also parses dropped (length-0)
        sequences, whose errors count too."""
        return self.begin_read_sequences(raw, chunk_ids, indices)()

    def begin_read_sequences(self, raw, chunk_ids: np.ndarray, indices: np.ndarray):
        """:meth:`read_sequences` started: with the C parser the parse runs now on a thread of its
        own (``parse_chunk_async``: no GIL, no Python), and the returned function waits for it;
        less than 64 KiB of text is parsed by the returned function itself."""
        chunk_ids = np.asarray(chunk_ids, np.int64)
        indices = np.asarray(indices, np.int64)
        n = len(chunk_ids)
        if n == 0 or not self._chunk_whole[chunk_ids].all():
            return _nothing
        index = self.index
        g = self._kept_all[self._chunk_base[chunk_ids] + indices]
        starts, ends = index.starts[g], index.starts[g + 1]
        uniq = np.unique(chunk_ids)
        pooled = None
        if len(uniq) == 1:                         # parsed where the chunk's text was read to
            buf, base, _ = raw[int(uniq[0])]
            args = (buf, base, starts, index.first_lines[g], index.ids_mode, self._stream_args,
                    self.options["double"], 1, 0, ends)
        else:                                      # the sequences' text gathered into one buffer
            lengths = ends - starts
            at = np.zeros(n, np.int64)
            np.cumsum(lengths[:-1], out=at[1:])
            buf = pooled = SCRATCH.take(int(at[-1] + lengths[-1]))
            for c in uniq.tolist():
                m = np.flatnonzero(chunk_ids == c)
                text, base, _ = raw[c]
                _copy_segments(text, starts[m] - base, buf, at[m], lengths[m])
            args = (buf, 0, at, index.first_lines[g], index.ids_mode, self._stream_args,
                    self.options["double"], 1, 0, at + lengths)
        start = getattr(self.backend, "parse_chunk_async", None)
        if start is not None and len(buf) < _ASYNC_MIN_BYTES:
            start = None  # a thread costs more than parsing this little text when it is asked for
        job = start(*args) if start is not None else None
        table = SequenceTable(index.keys[g], index.lengths[g])

        def finish() -> ChunkData | None:
            outputs, issues, num_warnings, aborted = (job.result() if job is not None
                                                      else self.backend.parse_chunk(*args))
            if pooled is not None:
                SCRATCH.give(pooled)           # parsed: the outputs hold their own memory
            if issues or num_warnings or aborted:
                return None
            data = self._assemble(outputs, None, n, table)
            self._check_undeclared(data, g)
            return data
        return finish

    def _check_undeclared(self, data: ChunkData, seqs: np.ndarray) -> None:
        """Warn about input names the config does not declare (:class:`UndeclaredInputs`)."""
        self._undeclared.check(data, seqs, self._text_for_messages, self.index.starts,
                               self.index.first_lines, self.index.keys)

    def _text_for_messages(self) -> "_RangeText":
        return _RangeText(self._src)

    def _load(self, chunk_id: int) -> ChunkData:
        a, b, kept = self._chunks[chunk_id]
        index = self.index
        starts = index.starts[a:b + 1]
        base, stop = int(starts[0]), int(starts[-1])
        raw = SCRATCH.take(stop - base)
        self._src.read_into(raw, base)            # the chunk's text, read (not mapped)
        buf = memoryview(raw)
        try:
            with self._lock:
                counted = chunk_id in self._chunk_errors
                budget_left = self.max_errors - self._errors_total
            error_limit = -1 if counted else budget_left + 1
            outputs, issues, num_warnings, aborted = self.backend.parse_chunk(
                buf, base, starts, index.first_lines[a:b], index.ids_mode, self._stream_args,
                self.options["double"], error_limit, _WARNINGS_LOGGED_PER_CHUNK)
            if not counted:
                self._account(chunk_id, issues, num_warnings, aborted, buf, base)
        finally:
            buf.release()
        SCRATCH.give(raw)                      # parsed: the outputs hold their own memory
        data = self._assemble(outputs, kept - a, b - a, self._tables[chunk_id])
        self._check_undeclared(data, kept)
        if issues:
            damaged = self._damaged(issues, a, b, kept)
            if damaged is not None:
                data = ChunkData(data.sequences, data.streams, None, damaged)
        return data

    def _damaged(self, issues, a: int, b: int, kept: np.ndarray) -> np.ndarray | None:
        """Over the kept sequences of chunk ``a:b``: True for each one that lost a sample of one
        stream to a tolerated error (``maxErrors`` > 0). Such a sequence's streams would no longer
        be aligned sample by sample, so the source drops it whole (the error was counted against
        ``maxErrors`` and logged, naming the sequence, by :meth:`_account`). None when none is."""
        starts = self.index.starts
        bad = [int(np.searchsorted(starts[a:b + 1], i[4], side="right")) - 1 + a
               for i in issues if i[0] in _SAMPLE_ERRORS and i[1] >= 0]
        if not bad:
            return None
        damaged = np.isin(kept, np.asarray(bad, np.int64))
        return damaged if damaged.any() else None

    def _account(self, chunk_id, issues, num_warnings, aborted, buf, base) -> None:
        errors = [i for i in issues if ref.is_error(i[0])]
        a, b, _ = self._chunks[chunk_id]
        for issue in issues:
            message, expected, found = describe_issue(issue, buf, base, self.specs)
            self.trace.warning("%s:%d:%d: %s (expected %s, found %s)%s", self.filename, issue[2],
                               issue[3], message, expected, found, self._misaligned_note(issue, a, b))
        shown = len(issues) - len(errors)
        if num_warnings > shown:
            self.trace.warning("%s: %d more warnings in chunk %d not shown", self.filename,
                               num_warnings - shown, chunk_id)
        with self._lock:
            if chunk_id in self._chunk_errors:
                return
            total = self._errors_total + len(errors)
            if aborted or total > self.max_errors:
                over = errors[self.max_errors - self._errors_total] \
                    if 0 <= self.max_errors - self._errors_total < len(errors) else errors[-1]
                raise self._max_errors_exceeded(over, buf, base)
            self._chunk_errors[chunk_id] = len(errors)
            self._errors_total = total

    def _misaligned_note(self, issue, a: int, b: int) -> str:
        """For an error that skips one sample of one stream (tolerated: ``maxErrors`` > 0): the
        sequence it damages, by key. CNTK 2.7 delivers that stream one sample short, its streams
        no longer aligned sample by sample; cntkio drops the sequence whole (:meth:`_damaged`)."""
        if issue[0] not in _SAMPLE_ERRORS or issue[1] < 0:
            return ""
        starts = self.index.starts
        seq = int(np.searchsorted(starts[a:b + 1], issue[4], side="right")) - 1 + a
        if not a <= seq < b:
            return ""
        return (f"; sequence {int(self.index.keys[seq])} (line {int(self.index.first_lines[seq])}) is dropped: "
                f"stream {self.specs[issue[1]].name!r} lost a sample, which would leave its streams "
                "misaligned")

    def _max_errors_exceeded(self, issue, buf, base) -> MaxErrorsExceeded:
        message, expected, found = describe_issue(issue, buf, base, self.specs)
        detail = FormatError(message, file=self.filename, line=issue[2], column=issue[3],
                             expected=expected, found=found)
        exc = MaxErrorsExceeded(message, file=self.filename, line=issue[2], column=issue[3],
                                offset=issue[4], expected=expected, found=found)
        exc.args = (MAX_ERRORS_MESSAGE.format(self.basename) + " " + str(detail)
                    + f" (maxErrors = {self.max_errors})",)
        return exc

    def _assemble(self, outputs, kept_local: np.ndarray | None, n: int,
                  table: SequenceTable) -> ChunkData:
        drop = kept_local is not None and len(kept_local) != n
        streams: dict[str, Any] = {}
        for spec, out in zip(self.specs, outputs):
            if spec.sparse:
                indptr = _array(out[0], np.int64)
                indices = _array(out[1], np.int32)
                data = _array(out[2], self.dtype)
                offsets = _array(out[3], np.int64)
                if drop:
                    indptr, indices, data, offsets = _select_sparse(indptr, indices, data,
                                                                    offsets, kept_local)
                streams[spec.name] = SparseStream(indptr, indices, data, offsets, spec.dim)
            else:
                values = _array(out[0], self.dtype).reshape((-1,) + spec.shape)
                offsets = _array(out[1], np.int64)
                if drop:
                    counts = np.diff(offsets)
                    rows = np.repeat(np.isin(np.arange(n), kept_local), counts)
                    values = values[rows]
                    offsets = np.concatenate([[0], np.cumsum(counts[kept_local])]).astype(np.int64)
                streams[spec.name] = DenseStream(values, offsets)
        return ChunkData(table, streams)

    def close(self) -> None:
        """Close the file (chunks already loaded stay valid: they hold their own memory); a URL's
        fetches ahead not started yet are dropped."""
        self._src.close()
        if self._remote is not None:
            self._remote.close()

    def __getstate__(self) -> dict:
        # picklable for worker processes: no lock or module object (the file is
        # opened again by the unpickled ranges)
        state = self.__dict__.copy()
        state["_lock"] = None
        state.pop("_key_table_lock", None)
        state.pop("_key_table_cache", None)
        state["backend"] = self.backend.__name__
        return state

    def __setstate__(self, state: dict) -> None:
        import importlib
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self.backend = importlib.import_module(state["backend"])

    def __repr__(self) -> str:
        return f"CNTKTextFormatDeserializer({self.filename!r})"


#: error codes that skip one sample of one stream (the sequence's streams would be misaligned)
_SAMPLE_ERRORS = frozenset((ref.BAD_NUMBER, ref.MISSING_COLON, ref.BAD_INDEX, ref.INDEX_RANGE, ref.TOO_MANY_VALUES))

#: below this much text, begin_read_sequences parses when the result is asked for, not on a thread
_ASYNC_MIN_BYTES = 1 << 16


def _nothing() -> None:
    return None


class _RangeText:
    """The file's text sliced by offsets (``text[a:b]``), each slice read with ``pread``: the few
    sequences a warning quotes."""

    __slots__ = ("src",)

    def __init__(self, src: Ranges) -> None:
        self.src = src

    def __getitem__(self, s: slice) -> bytes:
        return self.src.read(s.start, s.stop - s.start).tobytes()


def _copy_segments(src: np.ndarray, src_starts: np.ndarray, dst: np.ndarray, dst_starts: np.ndarray,
                   lengths: np.ndarray) -> None:
    """``dst[d:d+n] = src[s:s+n]`` per segment (C memcpy without the GIL when built)."""
    mod = native("rand")
    if mod is not None:
        mod.copy_segments(src, np.ascontiguousarray(src_starts, np.int64), dst,
                          np.ascontiguousarray(dst_starts, np.int64), np.ascontiguousarray(lengths, np.int64))
        return
    for s, d, k in zip(src_starts.tolist(), dst_starts.tolist(), lengths.tolist()):
        dst[d:d + k] = src[s:s + k]


def _array(obj, dtype) -> np.ndarray:
    if isinstance(obj, np.ndarray) and obj.dtype == dtype:
        return obj
    return np.frombuffer(obj, dtype=dtype)


def _select_sparse(indptr, indices, data, offsets, kept):
    """Keep the sequences ``kept`` of a CSR-over-samples stream."""
    n = len(offsets) - 1
    seq_counts = np.diff(offsets)
    sample_keep = np.repeat(np.isin(np.arange(n), kept), seq_counts)
    nnz = np.diff(indptr)
    value_keep = np.repeat(sample_keep, nnz)
    new_indptr = np.concatenate([[0], np.cumsum(nnz[sample_keep])]).astype(np.int64)
    new_offsets = np.concatenate([[0], np.cumsum(seq_counts[kept])]).astype(np.int64)
    return new_indptr, indices[value_keep], data[value_keep], new_offsets
