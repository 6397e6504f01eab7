"""Checks the actions and validation share: writable outputs, a network's inputs, the tensors of
a minibatch against the network, torch's own errors named with the streams and nodes involved,
and model files loaded with errors that name the config key and line that named the file (clear
errors instead of torch's shape errors and tracebacks)."""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ..errors import CntkioError, ConfigError

__all__ = ["check_writable", "network_inputs", "input_dim_values", "check_batch", "torch_errors", "load_command_model",
           "locate_misaligned"]


def check_writable(path: str) -> str | None:
    """Why a file cannot be written at ``path`` (None when it can): its directory, or the nearest
    existing ancestor that would be created from, must be a writable directory; an existing
    ``path`` must be a writable file. A URL (other than ``file://``) is not written: cntkio's
    outputs are local files (docs/remote.md)."""
    from ..values import is_url
    if is_url(path) and not path.lower().startswith("file://"):
        return f"{path} is a URL: cntkio writes its outputs to local files only, never to an object store"
    full = os.path.abspath(path)
    if os.path.isdir(full):
        return f"{path} is a directory"
    if os.path.exists(full):
        return None if os.access(full, os.W_OK) else f"{path} exists and is not writable"
    parent = os.path.dirname(full)
    while parent and not os.path.exists(parent):
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    if not os.path.isdir(parent):
        return f"{parent} is not a directory, so {path} cannot be created"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"the directory {parent} is not writable"
    return None


def network_inputs(net) -> dict[str, int]:
    """The input nodes of a network (SimpleNetwork, NDL or BrainScript) and their dimensions."""
    spec = getattr(net, "spec", None)
    if spec is not None and hasattr(spec, "layer_sizes"):
        if not hasattr(spec, "feature_node"):
            return {}       # a recurrent SimpleNetworkBuilder network: its inputs depend on rnnType
        return {spec.feature_node: int(spec.layer_sizes[0]), spec.label_node: int(spec.layer_sizes[-1])}
    out: dict[str, int] = {}
    shapes = getattr(net, "shapes", {})
    names = [getattr(spec, "feature_node", None), getattr(spec, "label_node", None),
             *getattr(net, "extra_inputs", [])]
    for n in names:
        if n and n in shapes:
            size = 1
            for d in shapes[n]:
                size *= int(d)
            out[n] = size
    return out



def _dim_value(reader, stream: str):
    """The ``dim`` ConfigValue of ``stream`` in the reader section ``reader`` (``input.<stream>.dim``,
    or a composite reader's ``deserializers[i].input.<stream>.dim``), None when not found."""
    if reader is None or not hasattr(reader, "exists"):
        return None
    key = f"input.{stream}.dim"
    try:
        nodes = [reader]
        if hasattr(reader, "exists_current") and reader.exists_current("deserializers"):
            nodes = [d for d in reader("deserializers").as_array() if hasattr(d, "exists")] + nodes
        for node in nodes:
            if node.exists(key):
                return node(key)
    except (CntkioError, TypeError, IndexError):
        pass
    return None


def input_dim_values(reader: Any, net) -> dict:
    """``{input node: the dim ConfigValue of its stream in the reader section reader}`` (None where
    not written), read once before a minibatch loop so errors name the file and line of each dim."""
    return {node: _dim_value(reader, node) for node in network_inputs(net)}


def check_batch(net, tensors: dict, where: str, reader: Any = None, *, dims: dict | None = None) -> None:
    """The features and labels of one minibatch against the network: their dimensions, and as
    many label samples as feature samples. A ConfigError names the streams, the nodes and both
    dimensions (``where``: the reader section's key path; ``dims``: :func:`input_dim_values`, or
    ``reader``: that section, whose ``dim`` keys give the file and line, and, for streams that
    disagree, the data files whose first such sequence :func:`locate_misaligned` names)."""
    inputs = network_inputs(net)
    for node, dim in inputs.items():
        t = tensors.get(node)
        if t is None or t.ndim < 2:
            continue
        got = 1
        for d in t.shape[1:]:
            got *= int(d)
        if got != dim:
            v = dims.get(node) if dims is not None else _dim_value(reader, node)
            raise ConfigError(f"stream {node!r} delivers samples of dim {got} but the network's input node "
                              f"{node!r} has dim {dim}", path=f"{where}.input.{node}.dim",
                              file=getattr(v, "file", None), line=getattr(v, "line", None),
                              hint="make the reader's dim and the network's size agree "
                                   "(cntkio validate configFile=... checks this before any work)")
    if not hasattr(getattr(net, "spec", None), "layer_sizes") or not inputs:
        return      # an NDL/BrainScript network may read one label per sequence
    sizes = {n: int(t.shape[0]) for n, t in tensors.items() if n in inputs and t is not None}
    if len(set(sizes.values())) > 1:
        detail = ", ".join(f"{n!r}: {k} samples" for n, k in sizes.items())
        first = locate_misaligned(reader, where, list(sizes)) if hasattr(reader, "exists") else None
        raise ConfigError(f"the streams of one minibatch have different numbers of samples ({detail}): "
                          "features and labels are not aligned"
                          + (f"; the first sequence whose streams disagree: {first}" if first else ""), path=where,
                          hint="each sequence must carry as many label samples as feature samples "
                               "(a label per sequence needs a sequence-level criterion)")


def _sample_counts(d, streams: list[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Every sequence key of the deserializer ``d`` and, per stream of ``streams`` it delivers, the
    sequence's sample count (all its chunks parsed: an error path)."""
    keys, counts = [], {s: [] for s in streams}
    names = {i.name for i in d.stream_infos()}
    for c in d.chunk_infos():
        data = d.get_chunk(c.id)
        keys.append(np.asarray(data.sequences.keys))
        for s in streams:
            if s in names and s in data.streams:
                counts[s].append(np.diff(np.asarray(data.streams[s].offsets)))
    return (np.concatenate(keys) if keys else np.zeros(0, np.int64),
            {s: np.concatenate(v) for s, v in counts.items() if v})


def _where_sequence(d, key) -> str:
    """``file:line`` of the sequence ``key`` of ``d`` (CTF: its index's first line), or the file and key."""
    name = getattr(d, "filename", None) or getattr(d, "map_file", None) or getattr(d, "file", None) or type(d).__name__
    index = getattr(d, "index", None)
    lines, keys = getattr(index, "first_lines", None), getattr(index, "keys", None)
    if lines is not None and keys is not None:
        hit = np.flatnonzero(np.asarray(keys) == key)
        if len(hit):
            return f"{name}:{int(lines[hit[0]])}"
    return f"{name}"


def locate_misaligned(reader: Any, where: str, streams: list[str]) -> str | None:
    """The data file, line and sample counts of the first sequence (in file order) whose ``streams``
    have different numbers of samples, read again from the reader section ``reader`` (an error path:
    every chunk is parsed); None when none is found or the reader cannot be read so."""
    from .. import registry
    from ..readers import reader_spec
    try:
        spec = reader_spec(reader, path=where)
        kw = spec.source_kwargs
        ds = [registry.build_deserializer(d, frame_mode=kw.get("frame_mode", False), trace_level=0)
              for d in spec.deserializers]
        per = [(d, *_sample_counts(d, streams)) for d in ds]
    except (CntkioError, OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    owner = {s: (d, keys, c[s]) for d, keys, c in per for s in streams if s in c}
    if len(owner) < 2:
        return None
    (d0, k0, c0), *others = [owner[s] for s in streams if s in owner]
    bad = np.zeros(len(k0), bool)
    for d1, k1, c1 in others:
        if d1 is d0:
            bad |= c0 != c1
        else:
            _, i0, i1 = np.intersect1d(k0, k1, return_indices=True)
            bad[i0[c0[i0] != c1[i1]]] = True
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    key = k0[i]
    parts = []
    for s in streams:
        if s in owner:
            d, keys, c = owner[s]
            j = np.flatnonzero(keys == key)
            parts.append(f"{s!r} {int(c[j[0]]) if len(j) else 0} sample(s)")
    files = list(dict.fromkeys(_where_sequence(d, key) for d, _, _ in (owner[s] for s in streams if s in owner)))
    return f"{' and '.join(files)} (sequence id {key}: {', '.join(parts)})"


def _describe(stream: str, tensor) -> str:
    shape = tuple(int(d) for d in getattr(tensor, "shape", ()))
    return f"stream {stream!r} (node {stream!r}, tensor {shape})"


@contextmanager
def torch_errors(action: str, features: tuple[str, Any], labels: tuple[str, Any] | None = None,
                 where: str | None = None) -> Iterator[None]:
    """Run the network inside this block: a RuntimeError or IndexError from torch becomes a
    CntkioError naming the action, the streams and nodes fed (``(name, tensor)``; the reader's
    streams are named after the network's input nodes) with their tensor shapes, and ``where``
    (the reader section's key path), torch's message kept and chained. cntkio's own errors and
    torch's out-of-memory error pass unchanged (a caller may retry with a smaller minibatch)."""
    from ..integrations.torch_backend import torch
    oom = getattr(torch, "OutOfMemoryError", ())
    try:
        yield
    except CntkioError:
        raise
    except (RuntimeError, IndexError) as e:
        if oom and isinstance(e, oom):
            raise
        text = f"{action}: computing the network from {_describe(*features)}"
        if labels is not None:
            text += f" against {_describe(*labels)}"
        if where:
            text += f" of {where}"
        raise CntkioError(f"{text} failed: {e}") from e


def load_command_model(cfg, key: str = "modelPath", path: str | None = None, **kwargs):
    """:func:`cntkio.networks.load_model` of the file that ``key`` of ``cfg`` names (``path``:
    a file derived from it, e.g. an epoch file ``modelPath.N``): a missing or unreadable file is a
    ConfigError naming the key and the file and line where it was written, the path said once."""
    from ..networks.modelfile import ModelFileError, load_model
    from ._params import get_str, key_path
    file = path if path is not None else get_str(cfg, key)
    try:
        return load_model(file, **kwargs)
    except ModelFileError as e:
        v = None
        try:
            v = cfg(key) if cfg is not None and cfg.exists(key) else None
        except CntkioError:
            pass
        raise ConfigError(e.reason, path=getattr(v, "path", None) or key_path(cfg, key),
                          file=getattr(v, "file", None), line=getattr(v, "line", None)) from e
