"""The ``write`` action: the values of a model's nodes for every sample of a reader, as text.

Parameters: ``modelPath``, ``reader``, ``outputPath`` (required; node ``X`` goes to
``<outputPath>.X`` as in CNTK, ``-`` writes to stdout), ``outputNodeNames`` (default: the network's
output node ``HLast``), ``minibatchSize`` (40960), ``epochSize`` (0 = one sweep),
``precisionFormat`` (a printf format of one value, ``%.9g`` for float and ``%.17g`` for double by
default so that values read back exactly), ``deviceId``, ``precision``.

Each sample is one line, its values separated by one space. Nodes with a value per sample can be
written: ``features``, ``MVNormalizedFeatures``, ``H1``..., ``HLast``, ``PosteriorProb`` (or
``Sigmoid`` for Logistic networks), ``ScaledLogLikelihood`` (``needPrior=true``: ``HLast -
log(Prior)``, then the default output node) and ``labels``. A ``writer`` section (``writerType = ...``,
found through :func:`cntkio.registry.writer_factory`, e.g. ``BinaryReader``) writes through
that :class:`cntkio.legacy.DataWriter` instead: its sub-sections name the nodes written
(``HLast = [sectionType = data; dim = 10; wfile = out.bin]``) and ``outputPath`` is not used.
"""
from __future__ import annotations

import os
import re
import sys

import numpy as np
from ..integrations.torch_backend import torch

from ..errors import ConfigError
from .checks import check_batch, load_command_model, torch_errors
from .network import build_brainscript_network, has_brainscript, feed_layout
from ._common import (Dist, batch_tensors, dist_context, epoch_minibatches, open_reader, progress_bar,
                      progress_enabled, report, resolve_device, resolve_dtype, sweep_total)
from ._params import get_int, get_list, get_str, has, key_path, minibatch_size
from ._params import section as get_section

__all__ = ["write", "format_rows"]

_FORMAT_RE = re.compile(r"^%?[-+ #0]*\d*(\.\d+)?[eEfFgG]$")


def format_rows(values: np.ndarray, fmt: str) -> str:
    """``values[N, dim]`` as text, one line per row, values separated by one space (one formatting
    call for the whole array)."""
    values = np.asarray(values, dtype=np.float64).reshape(values.shape[0], -1)
    n, dim = values.shape
    if n == 0:
        return ""
    line = " ".join([fmt] * dim) + "\n"
    return (line * n) % tuple(values.ravel().tolist())


def write(section, name: str = "write") -> dict[str, int]:
    """Write ``outputNodeNames`` for the section's reader; returns ``{output file: lines}``."""
    from .htkwrite import has_htk_write, write_htk_outputs
    if has_htk_write(section):      # HTKMLFReader's dataset-processing mode (reader.write = [...])
        return write_htk_outputs(section, name)
    dist = dist_context()
    writer = None
    if has(section, "writer"):
        # a writer section (writerType = BinaryReader, ...): its sections name the nodes written
        from ..legacy import DataWriter
        writer = DataWriter(get_section(section, "writer"))
    device, dtype = resolve_device(section, dist), resolve_dtype(section)
    if has_brainscript(section):     # CNTK builds a write command's BrainScriptNetworkBuilder (e.g. BS.Network.Load)
        net = build_brainscript_network(section, device=device, dtype=dtype, precompute=False)
    else:
        net = load_command_model(section, "modelPath", device=device, dtype=dtype).network
    out_path = get_str(section, "outputPath") if writer is None else None
    fmt = get_str(section, "precisionFormat", "%.17g" if dtype == torch.float64 else "%.9g")
    if not _FORMAT_RE.match(fmt):
        raise ConfigError(f"expected a printf format of one number (e.g. %.6g, .4f), found {fmt!r}",
                          path=key_path(section, "precisionFormat"))
    if not fmt.startswith("%"):
        fmt = "%" + fmt
    names = [str(n) for n in (get_list(section, "outputNodeNames", None) or net.output_nodes)]
    if writer is not None:
        names = list(writer.get_sections())
    per_sample = [n for n in net.node_names() if n not in _not_per_sample(net)]
    for n in names:
        if n not in per_sample:
            raise ConfigError(f"{n!r} is not a node with a value per sample (writable nodes: "
                              f"{', '.join(per_sample)})", path=key_path(section, "outputNodeNames"))
    mb_size = minibatch_size(section)
    epoch_size = get_int(section, "epochSize", 0)
    source = open_reader(section, "reader", name)
    feats, labels = net.spec.feature_node, net.spec.label_node
    need = [feats] + ([labels] if labels in names else [])

    if not dist.is_main:   # one process writes; the others have nothing to do
        dist.barrier()
        return {}
    if writer is not None:
        return _write_through(writer, net, source, names, need, feats, labels, section, name, dist, dtype, device,
                              mb_size, epoch_size)
    files = {}
    handles = {}
    try:
        for n in names:
            if out_path == "-":
                handles[n] = sys.stdout
                files[n] = "-"
            else:
                p = f"{out_path}.{n}"
                d = os.path.dirname(p)
                if d:
                    os.makedirs(d, exist_ok=True)
                handles[n] = open(p, "w", encoding="ascii", newline="\n")
                files[n] = p
        counts = {n: 0 for n in names}
        for arrays in _node_arrays(net, source, names, need, feats, labels, section, dtype, device, mb_size,
                                   epoch_size, name):
            for n, arr in arrays.items():
                handles[n].write(format_rows(arr, fmt))
                counts[n] += arr.shape[0]
    finally:
        for h in handles.values():
            if h is not sys.stdout:
                h.close()
    for n in names:
        report(f"{name}: wrote {counts[n]} samples of node {n} to {files[n]}", dist=dist, stream=sys.stderr)
    dist.barrier()
    return {files[n]: counts[n] for n in names}


def _write_through(writer, net, source, names, need, feats, labels, section, name, dist, dtype, device, mb_size,
                   epoch_size) -> dict[str, int]:
    """The nodes' values for every sample, saved through a DataWriter (IDataWriter.SaveData)."""
    total = epoch_size or int(source.sweep_size)
    start = 0
    for arrays in _node_arrays(net, source, names, need, feats, labels, section, dtype, device, mb_size,
                               epoch_size, name):
        count = next(iter(arrays.values())).shape[0]
        if start + count > total:
            raise ConfigError(f"the reader delivered more than the {total} samples announced to the writer",
                              path=key_path(section, "epochSize"))
        writer.save_data(start, arrays, count, total)
        start += count
    writer.destroy()
    if start != total:
        raise ConfigError(f"the writer was announced {total} samples, the reader delivered {start}",
                          path=key_path(section, "epochSize"))
    report(f"{name}: wrote {start} samples of node(s) {', '.join(names)} through the "
           f"{get_str(get_section(section, 'writer'), 'writerType', 'BinaryReader')} writer", dist=dist,
           stream=sys.stderr)
    dist.barrier()
    return {n: start for n in names}


def _node_arrays(net, source, names, need, feats, labels, section, dtype, device, mb_size, epoch_size,
                 name="write"):
    """Per minibatch of one epoch, ``{node: NumPy values [samples, ...]}`` of the nodes ``names`` (a
    progress bar over the samples: ``progressBar``, or on a terminal)."""
    net.eval()
    bar = progress_bar(progress_enabled(section, Dist()), total=epoch_size or sweep_total(source), desc=name)
    try:
        yield from _node_values(net, source, names, need, feats, labels, section, dtype, device, mb_size,
                                epoch_size, name, bar)
    finally:
        if bar is not None:
            bar.close()


def _node_values(net, source, names, need, feats, labels, section, dtype, device, mb_size, epoch_size, name, bar):
    with torch.no_grad():
        for mb in epoch_minibatches(source, minibatch_size=mb_size, epoch_size=epoch_size, epoch=0, dist=Dist()):
            t = batch_tensors(mb, need, dtype, device, required=need, where=key_path(section, "reader"))
            feed_layout(net, mb, feats, device)
            check_batch(net, t, key_path(section, "reader"), section("reader"))
            with torch_errors(name, (feats, t[feats]), None, key_path(section, "reader")):
                values = net.nodes(t[feats])
            if labels in t:
                values[labels] = t[labels]
            if bar is not None:
                bar.update(int(t[feats].shape[0]))
            yield {n: _node_value(values, n, mb, section).detach().cpu().numpy() for n in names}


def _node_value(values: dict, node: str, minibatch, section):
    """The value of ``node``; a node not computed read an input whose stream the reader lacks."""
    v = values.get(node)
    if v is None:
        streams = ", ".join(sorted(getattr(k, "name", str(k)) for k in minibatch))
        raise ConfigError(f"node {node!r} reads an input node that no reader stream feeds (the reader delivers "
                          f"{streams})", path=key_path(section, "outputNodeNames"),
                          hint="name the reader's inputs after the network's Input nodes")
    return v


def _not_per_sample(net) -> set[str]:
    crit = {net.spec.training_criterion, "MeanOfFeatures", "InvStdOfFeatures", "Prior", "LogOfPrior"}
    if net.spec.training_criterion or getattr(net.spec, "eval_nodes", None):   # (a BrainScript write network may have none)
        crit.add(net.eval_node_name)
    params = {f"W{i}" for i in range(net.num_layers)} | {f"B{i}" for i in range(net.num_layers)}
    return crit | params
