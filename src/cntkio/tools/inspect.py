"""``cntkio inspect``: what is in a data file or in the reader sections of a configuration.

::

    cntkio inspect FILE [--stream NAME:ALIAS:dense|sparse:DIM ...] [--head N] [--json]
    cntkio inspect configFile=x.cntk [name=value ...] [--section NAME] [--head N] [--json]

FILE is CTF (streams guessed from its first 4 MB unless given) or CBF (told by its magic). For
every deserializer: the streams (name, dense/sparse, element type, sample shape), sequences,
samples, per stream the samples and non-zeros (density: non-zeros over samples x dim), a
histogram of sequence lengths and the first ``--head`` sequences' values. Every chunk is loaded
once (a progress bar on stderr); the counting is NumPy over each chunk's arrays.
"""
from __future__ import annotations

import argparse
from typing import Any, Sequence

import numpy as np

from ._common import add_common, config_args, emit, fail, open_config_readers, open_file, progress, stream_def

__all__ = ["main", "inspect_deserializer", "length_histogram"]


def length_histogram(lengths: np.ndarray, bins: int = 10) -> list[dict]:
    """``[{"from": a, "to": b, "count": n}]``: sequences with ``a <= length <= b``, at most
    ``bins`` rows of equal integer width (one row per length when there are few)."""
    if not len(lengths):
        return []
    lo, hi = int(lengths.min()), int(lengths.max())
    width = max(1, -(-(hi - lo + 1) // bins))
    edges = np.arange(lo, hi + width + 1, width)
    counts = np.bincount((lengths - lo) // width, minlength=len(edges) - 1)
    return [{"from": int(a), "to": int(min(a + width - 1, hi)), "count": int(c)}
            for a, c in zip(edges[:-1], counts) if a <= hi]


def _record(chunk, i: int, names: list[str]) -> dict:
    out: dict[str, Any] = {"key": chunk.sequences.keys[i].item()}
    for name in names:
        st = chunk.streams[name]
        a, b = int(st.offsets[i]), int(st.offsets[i + 1])
        if st.is_sparse:
            ptr = st.indptr
            out[name] = [{"indices": st.indices[ptr[r]:ptr[r + 1]].tolist(),
                          "values": st.data[ptr[r]:ptr[r + 1]].tolist()} for r in range(a, b)]
        else:
            out[name] = np.asarray(st.values[a:b]).reshape(b - a, -1).tolist()
    return out


def inspect_deserializer(d, head: int = 3, show_progress: bool | None = None, label: str = "") -> dict:
    """The summary of one deserializer (see the module docstring) as a JSON-ready dict."""
    infos = d.stream_infos()
    names = [s.name for s in infos]
    chunks = d.chunk_infos()
    lengths = []
    samples = {n: 0 for n in names}
    nnz = {n: 0 for n in names}
    records: list[dict] = []
    for c in progress(chunks, len(chunks), f"inspect {label}".strip(), show_progress):
        data = d.get_chunk(c.id)
        lengths.append(np.asarray(data.sequences.lengths, np.int64))
        for n in names:
            st = data.streams[n]
            k = int(st.offsets[-1]) - int(st.offsets[0]) if len(st.offsets) else 0
            samples[n] += k
            if st.is_sparse:
                nnz[n] += int(st.indptr[-1]) - int(st.indptr[0]) if len(st.indptr) else 0
            else:
                vals = np.asarray(st.values)
                nnz[n] += int(np.count_nonzero(vals))
        i = 0
        while len(records) < head and i < len(data.sequences):
            records.append(_record(data, i, names))
            i += 1
    all_lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    streams = []
    for s in infos:
        dim = int(np.prod(s.sample_shape, dtype=np.int64)) if s.sample_shape else 1
        cells = samples[s.name] * dim
        streams.append({"name": s.name, "storage": "sparse" if s.is_sparse else "dense",
                        "dtype": np.dtype(s.dtype).name, "shape": list(s.sample_shape), "dim": dim,
                        "samples": samples[s.name], "nonzeros": nnz[s.name],
                        "density": (nnz[s.name] / cells) if cells else 0.0})
    return {"chunks": len(chunks), "sequences": int(len(all_lengths)), "samples": int(all_lengths.sum()),
            "min_length": int(all_lengths.min()) if len(all_lengths) else 0,
            "max_length": int(all_lengths.max()) if len(all_lengths) else 0,
            "streams": streams, "length_histogram": length_histogram(all_lengths), "head": records}


def _text(label: str, r: dict) -> str:
    lines = [f"{label}: {r['sequences']} sequences, {r['samples']} samples, {r['chunks']} chunks; "
             f"sequence length {r['min_length']}..{r['max_length']}"]
    lines.append("  streams:")
    for s in r["streams"]:
        lines.append(f"    {s['name']}: {s['storage']} {s['dtype']} shape {tuple(s['shape'])}, "
                     f"{s['samples']} samples, {s['nonzeros']} non-zeros (density {s['density']:.4g})")
    lines.append("  sequence lengths:")
    top = max((h["count"] for h in r["length_histogram"]), default=0)
    for h in r["length_histogram"]:
        span = str(h["from"]) if h["from"] == h["to"] else f"{h['from']}-{h['to']}"
        bar = "#" * (round(40 * h["count"] / top) if top else 0)
        lines.append(f"    {span:>11} {h['count']:>9}  {bar}")
    if r["head"]:
        lines.append(f"  first {len(r['head'])} sequences:")
        for rec in r["head"]:
            parts = []
            for k, v in rec.items():
                if k == "key":
                    continue
                parts.append(f"{k}={_short(v)}")
            lines.append(f"    key {rec['key']}: " + "  ".join(parts))
    return "\n".join(lines)


def _short(v: Any, limit: int = 60) -> str:
    text = str(v)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cntkio inspect", description="Summarize a CTF/CBF file or the "
                                "readers of a configuration: streams, dims, density, sequences, "
                                "samples, a length histogram and the first records.")
    p.add_argument("target", nargs="+", metavar="FILE | name=value",
                   help="a data file, or configFile=FILE [name=value ...]")
    p.add_argument("--section", help="the command section whose reader to inspect (default: every "
                                     "section named by command that has a reader)")
    p.add_argument("--stream", action="append", default=[], metavar="NAME:ALIAS:FORMAT:DIM",
                   help="a CTF stream definition (repeatable; default: guessed from the file)")
    p.add_argument("--head", type=int, default=3, help="first sequences to show (default 3)")
    add_common(p)
    return p


def main(argv: Sequence[str]) -> int:
    from ..errors import CntkioError

    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as e:
        return int(e.code or 0)
    if args.head < 0:
        return fail("inspect", "--head must be >= 0", 2)
    try:
        if config_args(args.target):
            opened = open_config_readers(args.target, args.section)
        elif len(args.target) == 1:
            streams = [stream_def(s) for s in args.stream] or None
            opened = [(args.target[0], [open_file(args.target[0], streams)])]
        else:
            return fail("inspect", "give one data file, or configFile=FILE [name=value ...]", 2)
        results = []
        for label, ds in opened:
            for i, d in enumerate(ds):
                name = label if len(ds) == 1 else f"{label}.deserializers[{i}]"
                try:
                    results.append((name, inspect_deserializer(d, args.head, args.progress, name)))
                finally:
                    d.close()
    except argparse.ArgumentTypeError as e:
        return fail("inspect", str(e), 2)
    except (CntkioError, OSError, ValueError) as e:
        return fail("inspect", str(e))
    emit({name: r for name, r in results}, args.json, "\n\n".join(_text(n, r) for n, r in results))
    return 0
