"""``cntkio bench``: how fast a data file or a configuration's reader is read.

::

    cntkio bench FILE [--stream NAME:ALIAS:FORMAT:DIM ...] [--minibatch-size N]
                      [--randomize [block|global]] [--sweeps N] [--json]
    cntkio bench configFile=x.cntk [name=value ...] [--section NAME] [--minibatch-size N]
                      [--sweeps N] [--json]

Stages, each timed on its own: **guess** (a CTF file's streams guessed from its first 4 MB, when
no ``--stream`` is given), **index** (building the deserializers: the file's index),
**parse** (every chunk loaded once by the deserializer alone, one after another: the parser's
own speed), and **read** (``--sweeps`` sweeps through a ``MinibatchSource``: parsing,
randomizing and packing pipelined on the source's threads, as training reads), whose
``MinibatchSource.stats()`` (minibatches, sequences, samples, seconds inside ``next_minibatch``,
prefetch depth, errors, and the seconds of the parse, randomize and pack stages summed over the
threads they ran on, with the bytes loaded) is printed with it. Throughput is samples/s, and MB/s of the input file
where there is one file.

**shuffle** (randomized reading): how well the first sweep is shuffled, from its delivery order
(``MinibatchSource.sweep_order``): the rank correlation between a sequence's place in storage
and its place in delivery (1 in storage order, about 0 for a uniform shuffle), and the distance
a sequence moves, as a fraction of the sweep (mean and median; about 1/3 and 0.29 for a uniform
shuffle, 0 in storage order). A randomization window of a few chunks keeps the correlation near 1:
a sequence never moves much farther than the window; so a window can be picked knowingly.
``--randomize global`` reads with cntkio's global randomization instead (``global_randomization``:
a keyed bijection over every sequence per sweep, CBF files), whose figures are those of a
uniform shuffle.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Sequence

from ._common import add_common, config_args, emit, fail, open_config_readers, open_file, progress, stream_def

__all__ = ["main", "bench_file", "bench_config"]


def _parse_stage(ds, show_progress, label) -> dict:
    t0 = time.perf_counter()
    samples = 0
    for d in ds:
        chunks = d.chunk_infos()
        for c in progress(chunks, len(chunks), f"parse {label}", show_progress):
            d.get_chunk(c.id)
            samples += c.num_samples
    return {"seconds": time.perf_counter() - t0, "samples": samples}


def _read_stage(source, size: int, show_progress, label) -> dict:
    enabled = show_progress if show_progress is not None else sys.stderr.isatty()
    bar = None
    if enabled:
        from tqdm import tqdm
        bar = tqdm(desc=f"read {label}", unit="mb", file=sys.stderr)
    t0 = time.perf_counter()
    while source.next_minibatch(size):
        if bar is not None:
            bar.update(1)
    seconds = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    return {"seconds": seconds, "stats": source.stats()}


def shuffle_quality(order) -> dict:
    """How far a delivery order (storage ordinals of the sequences, one per delivery position) is
    from storage order: ``rank_correlation`` (Spearman's: Pearson's of the positions and the
    ordinals, both ranks), ``mean_distance`` and ``median_distance`` (``|ordinal - position|`` over
    the number of sequences)."""
    import numpy as np
    order = np.asarray(order, np.float64)
    n = len(order)
    if n < 2:
        return {"sequences": n, "rank_correlation": 1.0, "mean_distance": 0.0, "median_distance": 0.0}
    pos = np.arange(n, dtype=np.float64)
    dist = np.abs(order - pos) / n
    return {"sequences": n, "rank_correlation": float(np.corrcoef(pos, order)[0, 1]),
            "mean_distance": float(dist.mean()), "median_distance": float(np.median(dist))}


def _summary(index_s: float, parse: dict, read: dict, nbytes: int | None) -> dict:
    out = {"index_seconds": index_s, "parse_seconds": parse["seconds"], "read_seconds": read["seconds"],
           "stats": read["stats"]}
    samples = read["stats"]["samples"]
    out["read_samples_per_second"] = samples / read["seconds"] if read["seconds"] else 0.0
    out["parse_samples_per_second"] = parse["samples"] / parse["seconds"] if parse["seconds"] else 0.0
    if nbytes:
        out["input_bytes"] = nbytes
        out["parse_mb_per_second"] = nbytes / 1e6 / parse["seconds"] if parse["seconds"] else 0.0
        sweeps = samples / parse["samples"] if parse["samples"] else 0.0
        out["read_mb_per_second"] = nbytes * sweeps / 1e6 / read["seconds"] if read["seconds"] else 0.0
    return out


def bench_file(path: str, streams=None, size: int = 256, randomize: bool | str = False, sweeps: int = 1,
               show_progress=None) -> dict:
    """``randomize``: False, True or ``"block"`` (CNTK's block randomizer, a window of 4 chunks), or
    ``"global"`` (global randomization)."""
    from ..source import MinibatchSource
    from ._common import file_format
    guess_s = 0.0
    if streams is None and file_format(path) == "ctf":  # the stream guess, timed on its own
        from ..deserializers.cbf.convert import infer_ctf_streams
        t0 = time.perf_counter()
        streams = infer_ctf_streams(path)
        guess_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    d = open_file(path, streams)
    index_s = time.perf_counter() - t0
    try:
        parse = _parse_stage([d], show_progress, os.path.basename(path))
    finally:
        d.close()
    d = open_file(path, streams)
    kw: dict = ({"randomize": False} if not randomize else {"global_randomization": True} if randomize == "global"
                else {"randomization_window_in_chunks": 4})
    with MinibatchSource(d, max_sweeps=sweeps, **kw) as source:
        read = _read_stage(source, size, show_progress, os.path.basename(path))
        order = source.sweep_order(0) if randomize else None
    out = _summary(index_s, parse, read, os.path.getsize(path))
    if order is not None:
        out["shuffle"] = shuffle_quality(order)
    if guess_s:
        out["guess_streams_seconds"] = guess_s
    return out


def bench_config(argv: Sequence[str], section: str | None, size: int | None, sweeps: int = 1,
                 show_progress=None) -> dict:
    from ..config import load_config
    from ..constants import INFINITELY_REPEAT
    from ..readers.factory import build_reader
    from ._common import reader_sections

    out = {}
    t0 = time.perf_counter()
    opened = open_config_readers(argv, section)
    index_s = time.perf_counter() - t0
    cfg = load_config(list(argv))
    for (path, ds), (_, sec) in zip(opened, reader_sections(cfg, section)):
        try:
            parse = _parse_stage(ds, show_progress, path)
        finally:
            for d in ds:
                d.close()
        mb = size or _config_minibatch_size(cfg, path.split(".")[0])
        source = build_reader(sec, path, max_sweeps=sweeps, max_samples=INFINITELY_REPEAT)
        try:
            read = _read_stage(source, mb, show_progress, path)
            shuffle = shuffle_quality(source.sweep_order(0)) if source.randomize and \
                source.has_global_timeline() else None
        finally:
            source.close()
        out[path] = _summary(index_s, parse, read, None)
        if shuffle is not None:
            out[path]["shuffle"] = shuffle
        out[path]["minibatch_size"] = mb
    return out


def _config_minibatch_size(cfg, section: str) -> int:
    """The section's minibatchSize (its first value), else 256."""
    sec = cfg.get(section)
    for holder in (sec.get("SGD") if sec is not None and "SGD" in sec else None, sec):
        if holder is not None and "minibatchSize" in holder:
            text = str(holder["minibatchSize"]).split(":")[0].split("*")[0]
            try:
                return max(1, int(float(text)))
            except ValueError:
                break
    return 256


def _text(label: str, r: dict) -> str:
    st = r["stats"]
    lines = [f"{label}:"]
    if "guess_streams_seconds" in r:
        lines.append(f"  guess  {r['guess_streams_seconds']:.3f} s  (the CTF streams, from the first 4 MB; "
                     "--stream skips it)")
    lines += [f"  index  {r['index_seconds']:.3f} s",
             f"  parse  {r['parse_seconds']:.3f} s  {r['parse_samples_per_second']:.0f} samples/s"
             + (f"  {r['parse_mb_per_second']:.1f} MB/s" if "parse_mb_per_second" in r else ""),
             f"  read   {r['read_seconds']:.3f} s  {r['read_samples_per_second']:.0f} samples/s"
             + (f"  {r['read_mb_per_second']:.1f} MB/s" if "read_mb_per_second" in r else ""),
             f"  stats  {st['minibatches']} minibatches, {st['sequences']} sequences, {st['samples']} samples; "
             f"{st['seconds_in_calls']:.3f} s inside next_minibatch; prefetch depth {st['prefetch_depth']}; "
             f"{st['errors']} errors"]
    if "seconds_parse" in st:
        lines.append(f"  stages parse {st['seconds_parse']:.3f} s, randomize {st['seconds_randomize']:.3f} s, "
                     f"pack {st['seconds_pack']:.3f} s (summed over threads); "
                     f"{st['bytes_loaded'] / 1e6:.1f} MB loaded")
    if "shuffle" in r:
        q = r["shuffle"]
        lines.append(f"  shuffle rank correlation {q['rank_correlation']:.3f} (1: storage order, ~0: uniform), "
                     f"distance moved {q['mean_distance']:.3f} mean, {q['median_distance']:.3f} median "
                     f"(fraction of the sweep; uniform ~0.333, ~0.293) over {q['sequences']} sequences")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cntkio bench", description="Time reading a CTF/CBF file or a "
                                "configuration's readers: index, parse and read (MinibatchSource) stages.")
    p.add_argument("target", nargs="+", metavar="FILE | name=value")
    p.add_argument("--section", help="the command section whose reader to time")
    p.add_argument("--stream", action="append", default=[], metavar="NAME:ALIAS:FORMAT:DIM")
    p.add_argument("--minibatch-size", type=int, help="samples per minibatch (default 256, or the "
                                                      "section's minibatchSize)")
    p.add_argument("--randomize", nargs="?", const="block", choices=("block", "global"),
                   help="FILE: read randomized, with CNTK's block randomizer (a window of 4 chunks; the "
                        "default) or with global randomization; prints the shuffle's quality")
    p.add_argument("--sweeps", type=int, default=1, help="sweeps to read (default 1)")
    add_common(p)
    return p


def main(argv: Sequence[str]) -> int:
    from ..errors import CntkioError

    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as e:
        return int(e.code or 0)
    if args.sweeps < 1 or (args.minibatch_size is not None and args.minibatch_size < 1):
        return fail("bench", "--sweeps and --minibatch-size must be >= 1", 2)
    try:
        if config_args(args.target):
            results = bench_config(args.target, args.section, args.minibatch_size, args.sweeps, args.progress)
        elif len(args.target) == 1:
            streams = [stream_def(s) for s in args.stream] or None
            results = {args.target[0]: bench_file(args.target[0], streams, args.minibatch_size or 256,
                                                  args.randomize or False, args.sweeps, args.progress)}
        else:
            return fail("bench", "give one data file, or configFile=FILE [name=value ...]", 2)
    except argparse.ArgumentTypeError as e:
        return fail("bench", str(e), 2)
    except (CntkioError, OSError, ValueError) as e:
        return fail("bench", str(e))
    emit(results, args.json, "\n".join(_text(k, r) for k, r in results.items()))
    return 0
