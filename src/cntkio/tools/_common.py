"""What the tools share: telling a data file from ``configFile=...`` arguments, opening either as
deserializers, progress bars and the ``--json`` / text output."""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Iterable, Sequence

from .._paths import missing_file_error
from ..errors import ConfigError

__all__ = ["config_args", "open_file", "open_config_readers", "progress", "emit", "fail", "stream_def",
           "output_problem"]

#: data files larger than this get a progress bar by default
PROGRESS_MIN_BYTES = 64 * 1024 * 1024
_CBF_MAGIC = (0x636E746B5F62696E).to_bytes(8, "little")


def config_args(args: Sequence[str]) -> bool:
    """Whether the positional arguments are ``name=value`` config arguments (``configFile=...``)
    rather than one data file."""
    return bool(args) and all("=" in a for a in args)


def file_format(path: str) -> str:
    """``"cbf"`` when the file starts with CNTK's binary-format magic, else ``"ctf"``."""
    with open(path, "rb") as f:
        head = f.read(8)
    return "cbf" if head == _CBF_MAGIC else "ctf"


def open_file(path: str, streams: Any = None):
    """A deserializer over one data file: CBF (its header names the streams) or CTF (the streams
    given as ``(name, alias, is_sparse, dim)``, or guessed from the file's first 4 MB)."""
    if os.path.isdir(path):
        raise IsADirectoryError(21, "the input is a directory, not a file", os.fspath(path))
    if not os.path.isfile(path):
        raise missing_file_error("input file", path)
    if file_format(path) == "cbf":
        from ..deserializers.cbf.deserializer import CNTKBinaryFormatDeserializer
        return CNTKBinaryFormatDeserializer({"file": os.fspath(path)})
    from ..deserializers.cbf.convert import infer_ctf_streams
    from ..deserializers.ctf.deserializer import CNTKTextFormatDeserializer
    defs = streams or infer_ctf_streams(path)
    inputs = {n: {"alias": a, "dim": d, "format": "sparse" if sp else "dense"} for n, a, sp, d in defs}
    return CNTKTextFormatDeserializer({"type": "CNTKTextFormatDeserializer", "file": os.fspath(path),
                                       "input": inputs})


def reader_sections(cfg, section: str | None) -> list[tuple[str, Any]]:
    """``(key path, reader section)`` of the named command section, or of every section named by
    ``command`` that has a ``reader``."""
    if section is not None:
        names = [section]
    else:
        command = cfg.get("command")
        names = [n for n in str(command).split(":") if n] if command is not None else []
    out = []
    for name in names:
        sec = cfg.get(name)
        if sec is None or not hasattr(sec, "items"):
            raise ConfigError(f"no section {name!r} in the configuration", path=name)
        if "reader" in sec:
            out.append((f"{name}.reader", sec["reader"]))
    if not out:
        raise ConfigError("no reader section found" + (f" in {section!r}" if section else
                          " in the sections named by command"), path=section or "command",
                          hint="name one with --section NAME")
    return out


def open_config_readers(argv: Sequence[str], section: str | None):
    """``[(key path, [deserializers])]`` for the reader sections of a configuration."""
    from .. import registry
    from ..config import load_config
    from ..readers.factory import reader_spec

    cfg = load_config(list(argv))
    out = []
    for path, sec in reader_sections(cfg, section):
        spec = reader_spec(sec, path)
        kw = spec.source_kwargs
        ds = [registry.build_deserializer(d, frame_mode=kw.get("frame_mode", False),
                                          trace_level=kw.get("trace_level", 1))
              for d in spec.deserializers]
        out.append((path, ds))
    return out


def progress(iterable: Iterable, total: int, desc: str, enabled: bool | None, unit: str = "chunk"):
    """``iterable`` under a tqdm bar (on stderr) when ``enabled``, or by default when stderr is a
    terminal."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return iterable
    from tqdm import tqdm
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=sys.stderr)


def emit(result: Any, as_json: bool, text: str) -> None:
    """Print ``result`` as JSON (``--json``) or ``text``."""
    if as_json:
        sys.stdout.write(json.dumps(result, indent=1, default=_plain) + "\n")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _plain(o: Any) -> Any:
    import numpy as np
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def stream_def(text: str) -> tuple[str, str, bool, int]:
    """``--stream NAME:ALIAS:dense|sparse:DIM`` as ``(name, alias, is_sparse, dim)``."""
    import argparse
    parts = text.split(":")
    if len(parts) != 4 or parts[2].lower() not in ("dense", "sparse") or not parts[3].isdigit() \
            or int(parts[3]) < 1:
        raise argparse.ArgumentTypeError(f"--stream {text!r}: expected NAME:ALIAS:dense|sparse:DIM")
    return parts[0], parts[1], parts[2].lower() == "sparse", int(parts[3])


def output_problem(path: str) -> str | None:
    """Why an output file cannot be written at ``path`` (its folder is missing or not writable, or
    it is a folder), named as the user wrote it; None when it can. Checked before any work, so that
    an error never names the hidden temporary file the output is first written to."""
    from .._paths import relative_note
    if os.path.isdir(path):
        return f"the output {path} is a folder"
    folder = os.path.dirname(os.fspath(path)) or "."
    if not os.path.isdir(folder):
        return f"the output folder {folder} does not exist{relative_note(folder)}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the output folder {folder} is not writable"
    return None


def fail(tool: str, message: str, status: int = 1) -> int:
    sys.stderr.write(f"cntkio {tool}: error: {message}\n")
    return status


def add_common(p, json_help: str = "print the result as JSON") -> None:
    p.add_argument("--json", action="store_true", help=json_help)
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show a progress bar (default: when stderr is a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false")
