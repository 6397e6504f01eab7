"""``cntkio convert``: CTF <-> CBF conversion from the command line.

::

    cntkio convert ctf2bin IN.ctf OUT.cbf [--chunk-size BYTES] [--header FILE | --stream NAME:ALIAS:dense|sparse:DIM ...]
                                          [--precision float|double] [--progress | --no-progress]
    cntkio convert bin2ctf IN.cbf OUT.ctf
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cntkio convert", description="Convert between the CNTK text "
                                "format (CTF) and the CNTK binary format (CBF).")
    sub = p.add_subparsers(dest="direction", required=True)
    a = sub.add_parser("ctf2bin", help="CTF -> CBF")
    a.add_argument("input")
    a.add_argument("output")
    a.add_argument("--chunk-size", type=int, default=None,
                   help="bytes per CBF chunk (default 32 MiB); 0 keeps the CTF reader's chunks")
    a.add_argument("--header", help="CNTK ctf2bin.py header file: one 'name alias dense|sparse dim' a line")
    a.add_argument("--stream", action="append", default=[], metavar="NAME:ALIAS:FORMAT:DIM",
                   help="a stream definition (repeatable); without --header/--stream the streams are "
                        "guessed from the file")
    a.add_argument("--precision", choices=["float", "double"], default="float")
    a.add_argument("--progress", dest="progress", action="store_true", default=None)
    a.add_argument("--no-progress", dest="progress", action="store_false")
    b = sub.add_parser("bin2ctf", help="CBF -> CTF (for inspection)")
    b.add_argument("input")
    b.add_argument("output")
    b.add_argument("--progress", dest="progress", action="store_true", default=None)
    b.add_argument("--no-progress", dest="progress", action="store_false")
    return p


def _stream(text: str) -> tuple[str, str, bool, int]:
    parts = text.split(":")
    if len(parts) != 4 or parts[2].lower() not in ("dense", "sparse") or not parts[3].isdigit() \
            or int(parts[3]) < 1:
        raise argparse.ArgumentTypeError(f"--stream {text!r}: expected NAME:ALIAS:dense|sparse:DIM")
    return parts[0], parts[1], parts[2].lower() == "sparse", int(parts[3])


def main(argv: Sequence[str]) -> int:
    """Run ``cntkio convert ...``; returns the exit status (0 done, 1 data error, 2 bad usage)."""
    from ...errors import CntkioError
    from .convert import bin2ctf, ctf2bin
    from .writer import DEFAULT_CHUNK_SIZE

    parser = _parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as e:
        return int(e.code or 0)
    try:
        if args.direction == "ctf2bin":
            try:
                streams = [_stream(s) for s in args.stream] or None
            except argparse.ArgumentTypeError as e:
                sys.stderr.write(f"cntkio convert: error: {e}\n")
                return 2
            if streams and args.header:
                sys.stderr.write("cntkio convert: error: give --header or --stream, not both\n")
                return 2
            chunk = DEFAULT_CHUNK_SIZE if args.chunk_size is None else (args.chunk_size or None)
            if args.chunk_size is not None and args.chunk_size < 0:
                sys.stderr.write("cntkio convert: error: --chunk-size must be >= 0\n")
                return 2
            info = ctf2bin(args.input, args.output, streams, header=args.header, chunk_size=chunk,
                           precision=args.precision, progress=args.progress)
            desc = ", ".join(f"{n} ({f}, dim {d})" for n, f, d in info["streams"])
            sys.stdout.write(f"{args.output}: {info['sequences']} sequences, {info['samples']} samples "
                             f"in {info['chunks']} chunks; streams {desc}\n")
        else:
            info = bin2ctf(args.input, args.output, progress=args.progress)
            sys.stdout.write(f"{args.output}: {info['sequences']} sequences; streams "
                             f"{', '.join(info['streams'])}\n")
    except (CntkioError, OSError) as e:
        sys.stderr.write(f"cntkio convert: error: {e}\n")
        return 1
    return 0
