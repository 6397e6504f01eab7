"""``cntkio convert``: data files to and from the CNTK text format.

::

    cntkio convert ctf2bin IN.ctf OUT.cbf [...]          CTF -> CBF (docs/binary.md)
    cntkio convert bin2ctf IN.cbf OUT.ctf                CBF -> CTF
    cntkio convert csv2ctf IN.csv OUT.ctf [--label-column K] [--label-dim N] [--features NAME]
                                          [--labels NAME] [--delimiter ,] [--header auto|yes|no]
    cntkio convert svm2ctf IN.svm OUT.ctf [--dim N] [--zero-based auto|yes|no] [--features NAME]
                                          [--labels NAME]
    cntkio convert npz2ctf IN.npz OUT.ctf
    cntkio convert ctf2npz IN.ctf OUT.npz [--stream NAME:ALIAS:dense|sparse:DIM ...] [--csr NAME]

Every output is written under a temporary name beside the target and renamed when complete. The
numbers are read by NumPy's C reader (CSV) or cntkio's C CTF parser (svmlight, CTF) and written
by :mod:`cntkio.tools.ctf_text` (NumPy, no Python object per value).

The ``.npz`` layout (written by ctf2npz, read by npz2ctf): ``keys`` and ``lengths`` (one per
sequence); per dense stream ``NAME`` ``[samples, dim]``; per sparse stream ``NAME.indptr``,
``NAME.indices``, ``NAME.data`` (CSR over the samples) and ``NAME.dim``; ``NAME.offsets`` (the
first sample of each sequence, plus the end) for every stream. npz2ctf also takes plain arrays:
every 2-D array (or 1-D, one value a sample) one dense stream, one sample per sequence, all with
the same number of rows. ``--csr NAME`` writes instead one sparse stream as the
``scipy.sparse.save_npz`` file of its ``[samples, dim]`` CSR matrix.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Sequence

import numpy as np

from ..deserializers.protocol import DenseStream, SparseStream
from ..errors import ConfigError, FormatError, raise_naming_output
from ..remote import is_remote
from ._common import add_common, fail, open_file, output_problem, progress, stream_def
from .ctf_text import write_ctf

__all__ = ["main", "csv_to_ctf", "svmlight_to_ctf", "npz_to_ctf", "ctf_to_npz"]


class _Replace:
    """A file opened under a temporary name beside ``path``, renamed to ``path`` on success."""

    def __init__(self, path: str, mode: str = "xb") -> None:
        from ..deserializers.cbf.writer import _temp_name
        self.path, self.tmp, self.mode = os.fspath(path), _temp_name(path), mode

    def __enter__(self):
        self.f = open(self.tmp, self.mode)
        return self.f

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.f.close()
            if exc_type is None:
                os.replace(self.tmp, self.path)
                return
        except OSError as e:            # the last buffer's write on a full disk
            exc = e
        if os.path.exists(self.tmp):
            os.unlink(self.tmp)
        if isinstance(exc, OSError):    # a full disk: the message names the output file
            raise_naming_output(exc, self.path, any_errno=False)


def _one_sample_each(n: int) -> np.ndarray:
    return np.arange(n + 1, dtype=np.int64)


# --- CSV ---------------------------------------------------------------------------------------------

def csv_to_ctf(src: str, dst: str, *, label_column: int | None = None, label_dim: int | None = None,
               features: str = "features", labels: str = "labels", delimiter: str = ",",
               header: str = "auto", bar=None) -> dict:
    """One sequence of one sample per CSV row: the columns as the dense stream ``features``, but
    ``label_column`` (negative counts from the end) as ``labels``: its value as one dense number,
    or with ``label_dim`` as a one-hot sparse sample (the value an integer class in
    ``0..label_dim-1``)."""
    skip = 0
    with open(src, "rb") as f:
        first = f.readline().decode("utf-8", "replace")
    if header == "yes" or (header == "auto" and _has_letters(first, delimiter)):
        skip = 1
    try:
        table = np.loadtxt(src, delimiter=delimiter, dtype=np.float32, skiprows=skip, ndmin=2)
    except ValueError as e:
        raise FormatError(f"not a numeric CSV table: {e}", file=src,
                          expected=f"numbers separated by {delimiter!r}") from e
    n, ncol = table.shape
    streams = []
    if label_column is not None:
        k = label_column if label_column >= 0 else ncol + label_column
        if not 0 <= k < ncol:
            raise ConfigError(f"--label-column {label_column}: the table has {ncol} columns", path="label-column")
        lab = table[:, k]
        table = np.delete(table, k, axis=1)
        if label_dim is not None:
            cls = lab.astype(np.int64)
            bad = np.flatnonzero((cls != lab) | (cls < 0) | (cls >= label_dim))
            if len(bad):
                raise FormatError(f"label {float(lab[bad[0]])!r} is not a class in 0..{label_dim - 1}",
                                  file=src, line=int(bad[0]) + 1 + skip)
            streams.append((labels, SparseStream(_one_sample_each(n), cls.astype(np.int32),
                                                 np.ones(n, np.float32), _one_sample_each(n), label_dim)))
        else:
            streams.append((labels, DenseStream(lab.reshape(n, 1), _one_sample_each(n))))
    streams.insert(0, (features, DenseStream(table, _one_sample_each(n))))
    with _Replace(dst) as out:
        write_ctf(out, np.arange(n, dtype=np.int64), np.ones(n, np.int64), streams, bar)
    return {"sequences": n, "samples": n, "streams": _describe(streams)}


def _has_letters(line: str, delimiter: str = ",") -> bool:
    """Whether a first line is a header: some field is not a number."""
    for field in line.strip().split(delimiter):
        try:
            float(field)
        except ValueError:
            return True
    return False


# --- svmlight ------------------------------------------------------------------------------------------

def svmlight_to_ctf(src: str, dst: str, *, dim: int | None = None, zero_based: str = "auto",
                    features: str = "features", labels: str = "labels", bar=None) -> dict:
    """svmlight / libsvm lines ``label idx:value idx:value ...`` (``# comments`` dropped) as one
    sequence each: the label as a dense number, the pairs as a sparse stream. Indices are
    1-based unless ``zero_based`` is ``yes`` (``auto``: 0-based when some index is 0); ``dim``
    defaults to the largest index + 1. The text is parsed by cntkio's C CTF parser."""
    from ..deserializers.ctf.deserializer import CNTKTextFormatDeserializer
    raw = np.fromfile(src, dtype=np.uint8)
    if b"qid:" in raw.tobytes():
        raise FormatError("qid:N (ranking groups) is not supported", file=src,
                          expected="label idx:value ...")
    ctf = _svm_as_ctf(raw)
    from ..deserializers.cbf.writer import _temp_name
    tmp = _temp_name(dst)
    try:
        with open(tmp, "xb") as f:      # a temporary CTF text beside the output
            f.write(ctf)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise_naming_output(e, tmp)
    try:
        d = CNTKTextFormatDeserializer({"file": tmp, "input": {
            "y": {"alias": "y", "dim": 1, "format": "dense"},
            "x": {"alias": "x", "dim": 0x7FFFFFFF, "format": "sparse"}}}, trace_level=0)  # errors raise
        try:
            chunks = [d.get_chunk(c.id) for c in d.chunk_infos()]
        finally:
            d.close()
    except (FormatError, RuntimeError) as e:  # the lines are the input's: name it, not the temp file
        text = getattr(e, "reason", str(e))
        for a, b in ((os.path.abspath(tmp), os.path.abspath(src)), (tmp, src), (os.path.basename(tmp), src)):
            text = text.replace(a, b)
        raise FormatError(text, file=src if getattr(e, "file", None) else None, line=getattr(e, "line", None),
                          expected=getattr(e, "expected", None), found=getattr(e, "found", None)) from e
    finally:
        os.unlink(tmp)
    if not chunks:
        raise FormatError("no line to convert", file=src, expected="label idx:value ...")
    y = np.concatenate([np.asarray(c.streams["y"].values).reshape(-1) for c in chunks])
    xs = [c.streams["x"] for c in chunks]
    counts = np.concatenate([np.diff(np.asarray(x.indptr, np.int64)) for x in xs])
    indices = np.concatenate([np.asarray(x.indices)[int(x.indptr[0]):int(x.indptr[-1])] for x in xs]).astype(np.int64)
    data = np.concatenate([np.asarray(x.data)[int(x.indptr[0]):int(x.indptr[-1])] for x in xs])
    n = len(y)
    if len(counts) != n:
        raise FormatError("a line has no label", file=src, expected="label idx:value ...")
    one_based = zero_based == "no" or (zero_based == "auto" and (not len(indices) or int(indices.min()) > 0))
    if one_based:
        if len(indices) and int(indices.min()) < 1:
            raise FormatError("index 0 in a 1-based file (use --zero-based yes)", file=src)
        indices -= 1
    top = int(indices.max()) + 1 if len(indices) else 1
    if dim is None:
        dim = top
    elif top > dim:
        raise FormatError(f"index {top - 1 + one_based} is past --dim {dim}", file=src)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    streams = [(labels, DenseStream(y.reshape(n, 1), _one_sample_each(n))),
               (features, SparseStream(indptr, indices.astype(np.int32), data, _one_sample_each(n), dim))]
    with _Replace(dst) as out:
        write_ctf(out, np.arange(n, dtype=np.int64), np.ones(n, np.int64), streams, bar)
    return {"sequences": n, "samples": n, "streams": _describe(streams), "one_based": one_based}


def _svm_as_ctf(raw: np.ndarray) -> bytes:
    """``label pairs`` lines as ``|y label |x pairs``: the bytes with ``|y `` inserted at every
    non-blank line's start and `` |x`` after its first token, ``#`` comments cut (NumPy inserts)."""
    if len(raw) and raw[-1] != ord("\n"):
        raw = np.append(raw, np.uint8(ord("\n")))
    raw = raw.copy()
    raw[raw == ord("\r")] = ord(" ")
    nl = np.flatnonzero(raw == ord("\n"))
    starts = np.concatenate([[0], nl[:-1] + 1])
    # comments: blank from '#' to the line's end
    hashes = np.flatnonzero(raw == ord("#"))
    if len(hashes):
        ends = nl[np.searchsorted(nl, hashes)]
        keep = np.ones(len(raw) + 1, np.int64)
        mark = np.zeros(len(raw) + 1, np.int64)
        np.add.at(mark, hashes, 1)
        np.add.at(mark, ends, -1)
        blank = np.cumsum(mark)[:-1] > 0
        raw[blank] = ord(" ")
        del keep
    ws = (raw == ord(" ")) | (raw == ord("\t")) | (raw == ord("\n"))
    nonws = np.flatnonzero(~ws)
    # the first token of each line: its first non-blank byte, and the blank after it
    first = nonws[np.searchsorted(nonws, starts)] if len(nonws) else np.zeros(0, np.int64)
    line_end = nl
    has = np.zeros(len(starts), bool)
    if len(nonws):
        ok = np.searchsorted(nonws, starts) < len(nonws)
        has[ok] = first[ok] < line_end[ok]
    first = first[has] if len(nonws) else first
    wsp = np.flatnonzero(ws)
    after = wsp[np.searchsorted(wsp, first)]
    ins_pos = np.concatenate([np.repeat(first, 3), np.repeat(after, 3)])
    ins_val = np.concatenate([np.tile(np.frombuffer(b"|y ", np.uint8), len(first)),
                              np.tile(np.frombuffer(b" |x", np.uint8), len(after))])
    order = np.argsort(ins_pos, kind="stable")
    return np.insert(raw, ins_pos[order], ins_val[order]).tobytes()


# --- npz -----------------------------------------------------------------------------------------------

def npz_to_ctf(src: str, dst: str, bar=None) -> dict:
    """An ``.npz`` in the layout of :func:`ctf_to_npz`, or of plain arrays (module docstring)."""
    with np.load(src, allow_pickle=False) as z:
        files = {k: z[k] for k in z.files}
    streams = []
    if "lengths" in files:
        lengths = files.pop("lengths").astype(np.int64)
        keys = files.pop("keys", np.arange(len(lengths), dtype=np.int64))
        names = [k for k in files if "." not in k] + sorted({k.split(".")[0] for k in files if k.endswith(".indptr")})
        for name in names:
            off = files.get(name + ".offsets")
            if off is None:
                raise FormatError(f"stream {name!r} has no {name}.offsets", file=src)
            if name + ".indptr" in files:
                streams.append((name, SparseStream(files[name + ".indptr"].astype(np.int64),
                                                   files[name + ".indices"].astype(np.int32),
                                                   files[name + ".data"], off.astype(np.int64),
                                                   int(files[name + ".dim"]))))
            else:
                streams.append((name, DenseStream(files[name], off.astype(np.int64))))
    else:
        rows = {k: v.shape[0] if v.ndim else -1 for k, v in files.items()}
        if not files or len(set(rows.values())) != 1 or -1 in rows.values():
            raise FormatError("expected arrays with the same number of rows (one sample per sequence), "
                              "or the layout ctf2npz writes", file=src,
                              found=", ".join(f"{k}: {v.shape}" for k, v in files.items()) or "no arrays")
        n = next(iter(rows.values()))
        lengths, keys = np.ones(n, np.int64), np.arange(n, dtype=np.int64)
        for name, v in files.items():
            if v.dtype.kind not in "fiub":
                raise FormatError(f"array {name!r} is {v.dtype}, not numbers", file=src)
            streams.append((name, DenseStream(v.reshape(n, -1).astype(np.float32 if v.dtype.kind != "f" else v.dtype),
                                              _one_sample_each(n))))
    with _Replace(dst) as out:
        write_ctf(out, keys, lengths, streams, bar)
    return {"sequences": int(len(lengths)), "samples": int(lengths.sum()), "streams": _describe(streams)}


def ctf_to_npz(src: str, dst: str, *, streams=None, csr: str | None = None, show_progress=None) -> dict:
    """Every sequence of a CTF (or CBF) file into one ``.npz`` (module docstring), or with ``csr``
    that sparse stream as a ``scipy.sparse.save_npz`` CSR matrix ``[samples, dim]``."""
    d = open_file(src, streams)
    try:
        infos = d.stream_infos()
        names = [s.name for s in infos]
        chunks = d.chunk_infos()
        parts = [d.get_chunk(c.id) for c in progress(chunks, len(chunks), f"ctf2npz {os.path.basename(src)}",
                                                       show_progress)]
    finally:
        d.close()
    if csr is not None and csr not in names:
        raise ConfigError(f"--csr {csr}: no such stream (streams: {', '.join(names)})", path="csr")
    keys = np.concatenate([np.asarray(p.sequences.keys) for p in parts]) if parts else np.zeros(0, np.int64)
    lengths = np.concatenate([np.asarray(p.sequences.lengths, np.int64) for p in parts]) if parts \
        else np.zeros(0, np.int64)
    out: dict[str, np.ndarray] = {"keys": keys, "lengths": lengths}
    for info in infos:
        name = info.name
        sts = [p.streams[name] for p in parts]
        off = _join_offsets([np.asarray(s.offsets, np.int64) for s in sts])
        out[name + ".offsets"] = off
        dim = int(np.prod(info.sample_shape, dtype=np.int64)) if info.sample_shape else 1
        if info.is_sparse:
            ptrs = [np.asarray(s.indptr, np.int64) for s in sts]
            out[name + ".indices"] = np.concatenate([np.asarray(s.indices)[p[0]:p[-1]] for s, p in zip(sts, ptrs)]) \
                if sts else np.zeros(0, np.int32)
            out[name + ".data"] = np.concatenate([np.asarray(s.data)[p[0]:p[-1]] for s, p in zip(sts, ptrs)]) \
                if sts else np.zeros(0, np.float32)
            out[name + ".indptr"] = _join_offsets([p - p[0] for p in ptrs])
            out[name + ".dim"] = np.int64(dim)
        else:
            out[name] = np.concatenate([np.asarray(s.values).reshape(len(s.values), -1) for s in sts]) \
                if sts else np.zeros((0, dim), np.float32)
    with _Replace(dst) as f:
        if csr is not None:
            import scipy.sparse as sp
            info = next(i for i in infos if i.name == csr)
            if not info.is_sparse:
                raise ConfigError(f"--csr {csr}: the stream is dense", path="csr")
            ptr = out[csr + ".indptr"]
            m = sp.csr_matrix((out[csr + ".data"], out[csr + ".indices"], ptr),
                              shape=(len(ptr) - 1, int(out[csr + ".dim"])))
            sp.save_npz(f, m, compressed=False)
        else:
            np.savez(f, **out)
    return {"sequences": int(len(lengths)), "samples": int(lengths.sum()), "streams": names,
            "format": "csr" if csr else "npz"}


def _join_offsets(parts: list) -> np.ndarray:
    """Per-chunk offsets (each from its own 0) as one array over all chunks."""
    if not parts:
        return np.zeros(1, np.int64)
    out = [np.zeros(1, np.int64)]
    base = 0
    for p in parts:
        out.append(p[1:] - p[0] + base)
        base += int(p[-1] - p[0])
    return np.concatenate(out)


def _describe(streams) -> list:
    return [(n, "sparse" if isinstance(s, SparseStream) else "dense",
             s.dim if isinstance(s, SparseStream) else (int(np.prod(s.values.shape[1:])) if s.values.ndim > 1 else 1))
            for n, s in streams]


# --- the command line --------------------------------------------------------------------------------

_NEW = ("csv2ctf", "svm2ctf", "npz2ctf", "ctf2npz")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cntkio convert", description="Convert data files: CTF <-> CBF "
                                "(ctf2bin, bin2ctf), CSV, svmlight and .npz -> CTF, CTF -> .npz or a scipy "
                                "CSR .npz. Each direction has its own --help.")
    common = argparse.ArgumentParser(add_help=False)
    add_common(common, "print the summary as JSON")
    sub = p.add_subparsers(dest="direction", required=True)
    a = sub.add_parser("ctf2bin", help="CTF -> CBF", parents=[common])
    a.add_argument("input")
    a.add_argument("output")
    a.add_argument("--chunk-size", type=int, default=None,
                   help="bytes per CBF chunk (default 32 MiB); 0 keeps the CTF reader's chunks")
    a.add_argument("--header", help="CNTK ctf2bin.py header file: one 'name alias dense|sparse dim' a line")
    a.add_argument("--stream", action="append", default=[], metavar="NAME:ALIAS:FORMAT:DIM",
                   help="a stream definition (repeatable); without --header/--stream the streams are "
                        "guessed from the file")
    a.add_argument("--precision", choices=["float", "double"], default="float")
    b = sub.add_parser("bin2ctf", help="CBF -> CTF (for inspection)", parents=[common])
    b.add_argument("input")
    b.add_argument("output")
    c = sub.add_parser("csv2ctf", help="CSV -> CTF, one sequence per row", parents=[common])
    c.add_argument("input")
    c.add_argument("output")
    c.add_argument("--label-column", type=int, help="the column (negative from the end) of the labels")
    c.add_argument("--label-dim", type=int, help="labels as one-hot sparse samples of this dim")
    c.add_argument("--features", default="features", help="the features' stream name")
    c.add_argument("--labels", default="labels", help="the labels' stream name")
    c.add_argument("--delimiter", default=",")
    c.add_argument("--header", choices=["auto", "yes", "no"], default="auto",
                   help="skip a header line (auto: when the first line has letters)")
    s = sub.add_parser("svm2ctf", help="svmlight/libsvm -> CTF, one sequence per line", parents=[common])
    s.add_argument("input")
    s.add_argument("output")
    s.add_argument("--dim", type=int, help="the features' dim (default: the largest index + 1)")
    s.add_argument("--zero-based", choices=["auto", "yes", "no"], default="auto",
                   help="index base (auto: 0-based when some index is 0)")
    s.add_argument("--features", default="features")
    s.add_argument("--labels", default="labels")
    n = sub.add_parser("npz2ctf", help=".npz -> CTF", parents=[common])
    n.add_argument("input")
    n.add_argument("output")
    t = sub.add_parser("ctf2npz", help="CTF (or CBF) -> .npz, or one sparse stream -> scipy CSR .npz",
                       parents=[common])
    t.add_argument("input")
    t.add_argument("output")
    t.add_argument("--stream", action="append", default=[], metavar="NAME:ALIAS:FORMAT:DIM",
                   help="a CTF stream definition (repeatable; default: guessed from the file)")
    t.add_argument("--csr", metavar="NAME", help="write only this sparse stream, as scipy.sparse.save_npz")
    return p


def main(argv: Sequence[str]) -> int:
    """Run ``cntkio convert ...``; returns the exit status (0 done, 1 data error, 2 bad usage)."""
    from ..errors import CntkioError
    from ._common import emit

    argv = list(argv)
    if any(is_remote(a) for a in argv):    # inputs fetched, the output uploaded (tools/remote_io.py)
        from .remote_io import with_urls
        try:
            return with_urls(argv, main)
        except (CntkioError, OSError) as e:
            return fail("convert", str(e))
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    why = output_problem(args.output)
    if why is not None:
        return fail("convert", why)
    try:
        if args.direction in ("ctf2bin", "bin2ctf"):
            info = _cbf(args)
            if isinstance(info, int):
                return info
        elif args.direction == "csv2ctf":
            if args.label_dim is not None and args.label_column is None:
                return fail("convert", "--label-dim needs --label-column", 2)
            info = _with_bar(lambda bar: csv_to_ctf(args.input, args.output, label_column=args.label_column,
                                                    label_dim=args.label_dim, features=args.features,
                                                    labels=args.labels, delimiter=args.delimiter,
                                                    header=args.header, bar=bar), args)
        elif args.direction == "svm2ctf":
            info = _with_bar(lambda bar: svmlight_to_ctf(args.input, args.output, dim=args.dim,
                                                         zero_based=args.zero_based, features=args.features,
                                                         labels=args.labels, bar=bar), args)
        elif args.direction == "npz2ctf":
            info = _with_bar(lambda bar: npz_to_ctf(args.input, args.output, bar), args)
        else:
            try:
                streams = [stream_def(s) for s in args.stream] or None
            except argparse.ArgumentTypeError as e:
                return fail("convert", str(e), 2)
            info = ctf_to_npz(args.input, args.output, streams=streams, csr=args.csr,
                              show_progress=args.progress)
    except (CntkioError, OSError) as e:
        return fail("convert", str(e))
    info["output"] = args.output
    if args.direction == "bin2ctf":
        text = f"{args.output}: {info['sequences']} sequences; streams {', '.join(info['streams'])}"
    else:
        text = (f"{args.output}: {info['sequences']} sequences, {info['samples']} samples"
                + (f" in {info['chunks']} chunks" if args.direction == "ctf2bin" else "") + "; streams "
                + ", ".join(s if isinstance(s, str) else f"{s[0]} ({s[1]}, dim {s[2]})" for s in info["streams"]))
    emit(info, args.json, text)
    return 0


def _cbf(args):
    """ctf2bin / bin2ctf (:mod:`cntkio.deserializers.cbf.convert`): the summary, or an exit status."""
    from ..deserializers.cbf.convert import bin2ctf, ctf2bin
    from ..deserializers.cbf.writer import DEFAULT_CHUNK_SIZE
    if args.direction == "bin2ctf":
        return bin2ctf(args.input, args.output, progress=args.progress)
    try:
        streams = [stream_def(s) for s in args.stream] or None
    except argparse.ArgumentTypeError as e:
        return fail("convert", str(e), 2)
    if streams and args.header:
        return fail("convert", "give --header or --stream, not both", 2)
    if args.chunk_size is not None and args.chunk_size < 0:
        return fail("convert", "--chunk-size must be >= 0", 2)
    chunk = DEFAULT_CHUNK_SIZE if args.chunk_size is None else (args.chunk_size or None)
    return ctf2bin(args.input, args.output, streams, header=args.header, chunk_size=chunk,
                   precision=args.precision, progress=args.progress)


def _with_bar(run, args):
    """``run(bar)`` with a tqdm bar over the sequences written (None when progress is off)."""
    enabled = args.progress if args.progress is not None else sys.stderr.isatty()
    if not enabled:
        return run(None)
    from tqdm import tqdm
    with tqdm(desc=f"{args.direction} {os.path.basename(args.input)}", unit="seq", file=sys.stderr) as bar:
        return run(bar)
