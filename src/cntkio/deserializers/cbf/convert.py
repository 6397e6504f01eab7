"""The converters ``ctf2bin`` (CTF -> CBF, through :class:`~cntkio.deserializers.cbf.writer.CBFWriter`)
and ``bin2ctf`` (CBF -> CTF), and the stream definitions they take (CNTK ``ctf2bin.py``'s header
file, a list, or streams guessed from the CTF text). Outputs are written under a temporary name
and renamed when complete.
"""
from __future__ import annotations

import concurrent.futures as cf
import math
import os
import re
from collections import deque
from typing import Any, Iterable, Mapping

import numpy as np

from ...errors import ConfigError, FormatError, raise_naming_output
from ..protocol import ChunkData, DenseStream, SparseStream
from .layout import FLOAT64, CBFStream
from .parallel_scan import ParallelScanBackend
from .writer import DEFAULT_CHUNK_SIZE, CBFWriter, _temp_name

__all__ = ["ctf2bin", "bin2ctf", "infer_ctf_streams", "read_header_file"]

#: CTF text parsed per step by ctf2bin when it cuts the CBF chunks itself: small steps keep the
#: parse threads and the encoder/writer busy together (the output does not depend on it)
_CTF_STEP_BYTES = 8 * 1024 * 1024

#: files larger than this show a progress bar by default
_PROGRESS_MIN_BYTES = 64 * 1024 * 1024



# ------------------------------------------------------------------------------------------------
# stream definitions for the converter

def read_header_file(path: str) -> list[tuple[str, str, bool, int]]:
    """CNTK ``ctf2bin.py``'s header file: one stream a line, ``name alias dense|sparse dim``
    (white-space separated; blank lines and ``#`` comments skipped)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            parts = text.split()
            if len(parts) != 4 or parts[2].lower() not in ("dense", "sparse") or not parts[3].isdigit() \
                    or int(parts[3]) < 1:
                raise ConfigError("expected 'name alias dense|sparse dim'", file=path, line=no,
                                  path="header", hint=f"found {text!r}")
            out.append((parts[0], parts[1], parts[2].lower() == "sparse", int(parts[3])))
    if not out:
        raise ConfigError("the header file declares no stream", file=path, path="header")
    return out


_SAMPLE = re.compile(rb"\|\s*([^\s|#][^\s|]*)([^|\n]*)")


def infer_ctf_streams(path: str, probe_bytes: int = 4 * 1024 * 1024) -> list[tuple[str, str, bool, int]]:
    """Stream definitions guessed from the first ``probe_bytes`` of a CTF file: every alias seen,
    sparse when its values are ``index:value`` pairs, the dim the largest value count (dense) or
    index + 1 (sparse) seen. ``(name, alias, is_sparse, dim)`` with name = alias, in order of
    first appearance. A sparse dim is raised to the largest index of the whole file by ctf2bin."""
    with open(path, "rb") as f:
        head = f.read(probe_bytes)
    if len(head) == probe_bytes:
        cut = head.rfind(b"\n")
        head = head[:cut + 1] if cut >= 0 else head
    found: dict[bytes, list] = {}
    for m in _SAMPLE.finditer(head):
        alias, vals = m.group(1), m.group(2).split()
        entry = found.setdefault(alias, [False, 0, False])
        if not vals:
            continue
        if b":" in vals[0]:
            entry[0] = True
            try:
                top = max(int(v.split(b":", 1)[0]) for v in vals)
            except ValueError:
                continue
            entry[1] = max(entry[1], top + 1)
        else:
            entry[2] = True
            entry[1] = max(entry[1], len(vals))
    out = []
    for alias, (sparse, dim, _) in found.items():
        name = alias.decode("utf-8", "replace")
        out.append((name, name, sparse, max(dim, 1)))
    if not out:
        raise FormatError("no stream found to convert", file=path,
                          expected="samples such as '|x 1 2 3' or '|y 4:1'",
                          found="no '|name' in the first " + f"{len(head)} bytes")
    return out


def _normalize_streams(streams) -> list[tuple[str, str, bool, int]]:
    """``(name, alias, is_sparse, dim)`` from a config ``input`` section ({name: {alias, dim,
    format}}), a StreamDefs mapping, or a list of tuples."""
    if isinstance(streams, Mapping):
        out = []
        for name, d in streams.items():
            if hasattr(d, "stream_alias") or (isinstance(d, Mapping) and "stream_alias" in d):
                alias = d["stream_alias"] or name
                dim, sparse = d.get("dim"), bool(d.get("is_sparse", False))
            elif isinstance(d, Mapping):
                low = {str(k).lower(): v for k, v in d.items()}
                alias = low.get("alias") or name
                dim = low.get("dim")
                sparse = str(low.get("format", "dense")).strip().lower() == "sparse"
            else:
                raise ConfigError(f"expected a stream definition, found {d!r}", path=f"input.{name}")
            if dim is None:
                raise ConfigError("dim is required", path=f"input.{name}.dim")
            dim = int(math.prod(dim)) if isinstance(dim, (list, tuple)) else int(dim)
            out.append((str(name), str(alias), sparse, dim))
        return out
    out = []
    for t in streams:
        if len(t) != 4:
            raise ConfigError(f"expected (name, alias, is_sparse, dim), found {t!r}", path="streams")
        name, alias, sparse, dim = t
        if isinstance(sparse, str):
            sparse = sparse.strip().lower() == "sparse"
        out.append((str(name), str(alias), bool(sparse), int(dim)))
    return out


# ------------------------------------------------------------------------------------------------
# converters

def _progress(total: int, desc: str, enabled: bool | None):
    if enabled is None:
        enabled = total >= _PROGRESS_MIN_BYTES
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, unit="B", unit_scale=True, desc=desc)


def ctf2bin(input_path: str, output_path: str, streams: Any = None, *, header: str | None = None,
            chunk_size: int | None = DEFAULT_CHUNK_SIZE, precision: str = "float",
            ctf_chunk_size: int | None = None, ctf_options: Mapping | None = None,
            progress: bool | None = None) -> dict:
    """Convert a CTF file to CBF.

    Streams: ``streams`` (a config ``input`` section ``{name: {alias, dim, format}}``, a
    ``StreamDefs`` mapping, or ``(name, alias, is_sparse, dim)`` tuples), or ``header`` (CNTK
    ``ctf2bin.py``'s header file), or else guessed from the file (:func:`infer_ctf_streams`; a
    guessed sparse dim becomes the largest index in the file + 1). The CTF is parsed by cntkio's
    CTF deserializer, chunk by chunk (``ctf_chunk_size`` bytes of text; by default 8 MiB steps,
or the deserializer's own default with ``chunk_size=None``), the next chunks parsed on threads
while one is encoded and written;
    ``chunk_size=None`` keeps those chunks as the CBF chunks (the same randomization as reading
    the CTF with that ``chunkSizeInBytes``). Returns a summary dict.
    """
    from ..ctf.deserializer import CNTKTextFormatDeserializer, ctf_backend

    guessed = streams is None and header is None
    if header is not None:
        defs = read_header_file(header)
    elif streams is not None:
        defs = _normalize_streams(streams)
    else:
        defs = infer_ctf_streams(input_path)
    names = [d[0] for d in defs]
    if len(set(names)) != len(names):
        raise ConfigError("two streams have the same name: " + ", ".join(names), path="streams")
    big = 0x7FFFFFFF
    inputs = {name: {"alias": alias, "dim": (big if (guessed and sparse) else dim),
                     "format": "sparse" if sparse else "dense"}
              for name, alias, sparse, dim in defs}
    config: dict[str, Any] = {"type": "CNTKTextFormatDeserializer", "file": os.fspath(input_path),
                              "input": inputs, "precision": precision}
    if ctf_chunk_size is not None:
        config["chunkSizeInBytes"] = ctf_chunk_size
    elif chunk_size is not None:  # the writer cuts the chunks: parse in small steps
        config["chunkSizeInBytes"] = _CTF_STEP_BYTES
    if ctf_options:
        config.update(ctf_options)
    # the index scan on the parse threads too (the same index: parallel_scan.py)
    scanner = ParallelScanBackend(ctf_backend(), _PARSE_THREADS)
    try:
        reader = CNTKTextFormatDeserializer(config, backend=scanner)
    finally:
        scanner.close()
    size = os.path.getsize(input_path)
    bar = _progress(size, f"ctf2bin {os.path.basename(input_path)}", progress)
    # a guessed sparse dim is the largest index + 1 (given dims: the parser checks each index)
    max_index = {name: -1 for name, _, sparse, _ in defs if sparse and guessed}
    # the parser checked every sparse index against the writer's dims (unless ctf_options
    # replaced the inputs): the writer need not check them again
    checked = not any(str(k).lower() == "input" for k in (ctf_options or {}))
    try:
        writer = CBFWriter(output_path, [(n, (d if not (guessed and sp) else big), sp)
                                         for n, _, sp, d in defs],
                           precision=precision, chunk_size=chunk_size)
        try:
            def load(chunk_id: int):
                # on a parse thread: parsed, encoded, and the sparse streams' largest indices
                chunk = reader.get_chunk(chunk_id)
                top = {}
                for name in max_index:
                    ix = chunk.streams[name].indices
                    top[name] = int(ix.max()) if len(ix) else -1
                return writer.encode(chunk, names, indices_checked=checked), top

            for info, (encoded, top) in _parsed_ahead(reader, load):
                for name, m in top.items():
                    max_index[name] = max(max_index[name], m)
                try:
                    writer.write(None, encoded=encoded)
                except OSError as e:        # a full disk: the message names the output file
                    raise_naming_output(e, output_path)
                del encoded
                if bar is not None:
                    a, b, _ = reader._chunks[info.id]
                    bar.update(int(reader.index.starts[b]) - int(reader.index.starts[a]))
            if guessed:  # the header is written last: a guessed sparse dim is the largest index + 1
                writer.streams = [CBFStream(s.name, s.sparse, s.element_type,
                                            max(max_index[s.name] + 1, 1) if s.sparse else s.dim)
                                  for s in writer.streams]
            try:
                writer.close()
            except OSError as e:
                raise_naming_output(e, output_path)
        except BaseException:
            writer.abort()
            raise
    finally:
        reader.close()
        if bar is not None:
            bar.close()
    return {"sequences": writer.num_sequences, "samples": writer.num_samples,
            "chunks": len(writer._table), "fsync_seconds": writer.fsync_seconds,
            "direct_io": writer.direct_io,
            "streams": [(s.name, "sparse" if s.sparse else "dense", s.dim) for s in writer.streams]}


#: ctf2bin's parse threads, and the chunks parsed or in parse ahead of the encoder/writer
_PARSE_THREADS = 2
_PARSE_AHEAD = 2


def _parsed_ahead(reader, load=None, ahead: int | None = None, threads: int | None = None):
    """``(chunk info, load(chunk id))`` of every chunk in order (``load`` is
    ``reader.get_chunk`` by default), the next ``ahead`` chunks loaded on ``threads`` threads
    meanwhile (the C parser releases the GIL: the caller writes one chunk while the next ones
    are parsed and encoded)."""
    load = reader.get_chunk if load is None else load
    ahead = _PARSE_AHEAD if ahead is None else ahead
    threads = _PARSE_THREADS if threads is None else threads
    infos = list(reader.chunk_infos())
    with cf.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="cntkio-ctf2bin") as pool:
        pending = deque((info, pool.submit(load, info.id)) for info in infos[:ahead])
        try:
            for k in range(len(infos)):
                info, fut = pending.popleft()
                if k + ahead < len(infos):
                    nxt = infos[k + ahead]
                    pending.append((nxt, pool.submit(load, nxt.id)))
                yield info, fut.result()  # not kept here while the caller writes the next one
                del fut
        finally:
            for _, fut in pending:
                fut.cancel()


def _fmt(values: np.ndarray, double: bool) -> list[str]:
    spec = "%.17g" if double else "%.9g"
    return [spec % v for v in values.tolist()]


def bin2ctf(input_path: str, output_path: str, *, progress: bool | None = None) -> dict:
    """Write a CBF file as CTF text (for inspection): one line per sample position, the sequence's
    ordinal as its id, each stream under its CBF name; float32 values with 9 significant digits
    (they read back to the same float32), float64 with 17."""
    from .deserializer import CNTKBinaryFormatDeserializer

    reader = CNTKBinaryFormatDeserializer({"file": os.fspath(input_path), "precision": "double"})
    double = any(s.element_type == FLOAT64 for s in reader.header.streams)
    names = [s.name for s in reader.header.streams]
    bar = _progress(reader.header.size, f"bin2ctf {os.path.basename(input_path)}", progress)
    tmp = _temp_name(output_path)
    nseq = 0
    try:
        try:
            with open(tmp, "x", encoding="utf-8", newline="\n") as out:
                for info in reader.chunk_infos():
                    chunk = reader.get_chunk(info.id)
                    out.write(_chunk_text(chunk, names, reader, double))
                    nseq += info.num_sequences
                    if bar is not None:
                        c = reader._chunk_ids[info.id]
                        bar.update(int(reader.header.ends[c]) - int(reader.header.offsets[c]))
        except OSError as e:      # a full disk (the block also reads the input: only then named)
            raise_naming_output(e, output_path, any_errno=False)
        os.replace(tmp, output_path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    finally:
        reader.close()
        if bar is not None:
            bar.close()
    return {"sequences": nseq, "streams": names}


def _chunk_text(chunk: ChunkData, names: Iterable[str], reader, double: bool) -> str:
    lines: list[str] = []
    keys = chunk.sequences.keys
    streams = [(n, chunk.streams[n]) for n in names]
    text = {}
    for name, st in streams:
        if isinstance(st, DenseStream):
            flat = _fmt(np.asarray(st.values).reshape(-1), double)
            dim = int(np.prod(st.values.shape[1:]))
            text[name] = [" ".join(flat[r * dim:(r + 1) * dim]) for r in range(len(st.values))]
        else:
            assert isinstance(st, SparseStream)
            vals = _fmt(np.asarray(st.data), double)
            idx = st.indices.tolist()
            ptr = st.indptr.tolist()
            text[name] = [" ".join(f"{idx[e]}:{vals[e]}" for e in range(ptr[r], ptr[r + 1]))
                          for r in range(len(ptr) - 1)]
    for i, key in enumerate(keys.tolist()):
        for t in range(int(chunk.sequences.lengths[i])):
            parts = [str(key)]
            for name, st in streams:
                a, b = int(st.offsets[i]), int(st.offsets[i + 1])
                if t < b - a:
                    sample = text[name][a + t]
                    parts.append(f"|{name} {sample}" if sample else f"|{name}")
            lines.append(" ".join(parts))
    return "\n".join(lines) + "\n" if lines else ""
