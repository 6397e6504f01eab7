"""The ``write`` action in the HTKMLFReader's dataset-processing mode: a reader section with a
``write`` sub-section, or a ``writer = [writerType = HTKMLFWriter ...]`` section, writes network
outputs as HTK feature files.

::

    reader = [ readerType = HTKMLFReader
               features = [ dim = 363 ; scpFile = test.scp ]
               write = [ out = [ dim = 132 ; path = outdir ; ext = mfc ; nodeName = HLast
                                 type = scaledLogLikelihood ; scpFile = out.scp ] ] ]

Each sub-section of ``write`` is one output: the values of node ``nodeName`` (default: the
sub-section's name) of every utterance of the feature section's SCP file go to
``<path>/<utterance>.<ext>`` (``ext`` default ``mfc``), an HTK file of kind USER with the source
file's frame period; ``dim`` (optional) must equal the node's dimension; ``type =
scaledLogLikelihood`` subtracts the log of the network's ``Prior`` node (a Mean of the labels, as
CNTK's NDL speech networks have); ``scpFile`` (optional) receives the list of files written. Every
file is written to a temporary name and renamed.

``writerType = HTKMLFWriter`` (CNTK's ``HTKMLFWriter``, Source/Readers/HTKMLFReader/HTKMLFWriter.cpp):
the writer's ``outputNodeNames`` (found from the writer section up: the command's) name the nodes;
each has a writer sub-section of its name with ``dim`` and ``scpFile`` (or ``file``): a list of
output file paths, one a line, the n-th utterance going to the n-th path (kind USER, a frame
period of 100000, as CNTK wrote them); ``type`` must be ``Real``.

As CNTK's reader in this mode, the utterances are read whole and in SCP order, whatever the
section's ``frameMode``/``randomize``/``truncated`` say (they serve training); each utterance's
frame count is checked against its SCP line, so an utterance the reader skipped is an error, not
a shifted file name.
"""
from __future__ import annotations

import sys

import numpy as np

from ..integrations.torch_backend import torch

from .._log import get_logger
from ..remote import is_remote
from ..deserializers.htk.writer import HTKOutputWriter, scp_utterances, write_htk
from ..errors import CntkioError
from .checks import check_batch, load_command_model, torch_errors
from ._common import Dist, batch_tensors, dist_context, epoch_minibatches, report, resolve_device, resolve_dtype
from ._params import get_int, get_list, get_str, key_path, minibatch_size
from .network import feed_layout, sequence_layout
from .sgd import config_error

__all__ = ["has_htk_write", "write_htk_outputs"]

_log = get_logger("actions.htkwrite")


def has_htk_write(section) -> bool:
    """Whether the section's reader is in the dataset-processing mode (has a ``write`` section),
    or the section writes through ``writer = [writerType = HTKMLFWriter ...]``."""
    if _htkmlf_writer(section) is not None:
        return True
    if not section.exists("reader"):
        return False
    reader = section("reader")
    return hasattr(reader, "exists_current") and reader.exists_current("write")


def _htkmlf_writer(section):
    """The section's ``writer`` when its ``writerType`` is ``HTKMLFWriter``, else None."""
    if not section.exists_current("writer"):
        return None
    writer = section("writer")
    if not hasattr(writer, "exists") or not writer.exists_current("writerType"):
        return None
    return writer if (get_str(writer, "writerType") or "").lower() == "htkmlfwriter" else None


class _ListedOutputs:
    """An HTKMLFWriter output: the utterances' HTK files go, in order, to the paths its ``scpFile``
    lists, one a line (CNTK's HTKMLFWriter::InitFromConfig and SaveData)."""

    def __init__(self, scp: str, where) -> None:
        try:
            with open(scp, encoding="utf-8") as f:
                self.paths = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
        except OSError as e:
            raise where("scpFile", f"cannot read the output SCP file {scp}: {e.strerror}") from e
        self.path, self.scp_file, self.done = scp, None, 0

    def write(self, name: str, frames: np.ndarray, period: int = 0) -> str:
        if self.done >= len(self.paths):
            raise CntkioError(f"index for output scp file out of range: {self.path} lists {len(self.paths)} files "
                              f"and utterance {self.done + 1} ({name}) has no file to go to")
        target = self.paths[self.done]
        write_htk(target, frames, period=100000)     # CNTK's writer: sampPeriod = 100000
        self.done += 1
        return target

    def close(self) -> None:
        pass


def _writer_outputs(section, writer, net, per_sample):
    """The outputs of an HTKMLFWriter section: ``outputNodeNames`` (looked up from the writer
    section up), each a sub-section of the writer with ``dim`` and ``scpFile`` (or ``file``)."""
    names = [str(n) for n in (get_list(writer, "outputNodeNames", None) or [])]
    if not names:
        raise config_error(writer, "outputNodeNames", "writer needs at least one outputNodeName specified in config")
    outputs = []
    for node in names:
        if not writer.exists_current(node):
            raise config_error(writer, node, f"the writer has no section {node!r} (dim, scpFile) for the output node")
        sub = writer(node)

        def err(key, msg, sub=sub):
            return config_error(sub, key, msg)
        if node not in per_sample:
            raise config_error(writer, node, f"{node!r} is not a node of the model (nodes: {', '.join(net.node_names())})")
        if not sub.exists_current("dim"):
            raise err("dim", "HTKMLFWriter::Init: writer need to specify dim of output")
        key = "file" if sub.exists_current("file") else "scpFile"
        if not sub.exists_current(key):
            raise err("scpFile", "HTKMLFWriter::Init: writer needs to specify scpFile for output")
        if (get_str(sub, "type", "Real") or "Real") != "Real":
            raise err("type", "HTKMLFWriter::Init: output type for writer output expected to be Real")
        outputs.append((node, node, get_int(sub, "dim", 0), None, _ListedOutputs(get_str(sub, key), err), sub))
    counts = {len(o[4].paths) for o in outputs}
    if len(counts) > 1:
        raise config_error(writer, names[0], "HTKMLFWriter: the output SCP files list different numbers of files "
                           f"({', '.join(str(len(o[4].paths)) for o in outputs)})")
    return outputs


def _feature_section(reader, name: str):
    for parent in (reader, reader("input") if reader.exists_current("input") else None):
        if parent is not None and parent.exists_current(name):
            return parent(name)
    raise config_error(reader, name, f"the reader has no feature section {name!r} (the network's input)")


def _prior(net, where, key: str):
    """The network's ``Prior`` node: an NDL/BrainScript graph's node, or SimpleNetworkBuilder's
    ``needPrior = true`` buffer (both are saved in the model)."""
    graph = getattr(net, "graph", None)
    names = [n for n in (graph.nodes if graph is not None else net.node_names()) if n.lower() == "prior"]
    if not names:
        raise where(key, "type=scaledLogLikelihood needs the network's Prior node (e.g. Prior = Mean(labels) in NDL, "
                    "or needPrior = true with SimpleNetworkBuilder), which this model does not have")
    value = net.tensor(names[0]) if graph is not None else getattr(net, names[0])
    return value.detach().reshape(-1)


def write_htk_outputs(section, name: str = "write") -> dict[str, int]:
    """Write the outputs of the reader's ``write`` section; returns ``{output name: utterances}``."""
    from ..readers import build_reader
    dist = dist_context()
    device, dtype = resolve_device(section, dist), resolve_dtype(section)
    net = load_command_model(section, "modelPath", device=device, dtype=dtype).network
    reader = section("reader")
    feats = net.spec.feature_node
    fsec = _feature_section(reader, feats)
    scp_key = "scpFile" if fsec.exists_current("scpFile") else "file"
    scp = get_str(fsec, scp_key)
    utts = scp_utterances(scp, get_str(fsec, "prefixPathInSCP", None))
    per_sample = set(net.node_names())
    htk_writer = _htkmlf_writer(section)
    outputs = [] if htk_writer is None else _writer_outputs(section, htk_writer, net, per_sample)
    wsec = reader("write") if htk_writer is None else None
    for out_name in (wsec.keys() if wsec is not None else ()):
        sub = wsec(out_name)
        if not hasattr(sub, "exists_current"):
            raise config_error(wsec, out_name, "expected a sub-section [ dim ; path ; ext ; nodeName ; type ; scpFile ]")

        def err(key, msg, sub=sub):
            return config_error(sub, key, msg)
        node = get_str(sub, "nodeName", out_name)
        if node not in per_sample:
            raise config_error(sub, "nodeName" if sub.exists_current("nodeName") else "path",
                               f"{node!r} is not a node of the model (nodes: {', '.join(net.node_names())})")
        kind = (get_str(sub, "type", "") or "").lower()
        if kind not in ("", "real", "scaledloglikelihood"):
            raise err("type", f"unknown output type {get_str(sub, 'type')!r} (expected scaledLogLikelihood or none)")
        prior = _prior(net, err, "type") if kind == "scaledloglikelihood" else None
        for key, what in (("path", "HTK output folder"), ("scpFile", "output SCP file")):   # local files only
            if sub.exists_current(key) and is_remote(get_str(sub, key)):
                raise err(key, f"{what} {get_str(sub, key)!r} is a URL: cntkio writes {what}s to local files "
                          "only, never to an object store")
        writer = HTKOutputWriter(get_str(sub, "path"), get_str(sub, "ext", "mfc"), get_str(sub, "scpFile", None))
        outputs.append((out_name, node, get_int(sub, "dim", 0), prior, writer, sub))

    if not dist.is_main:            # one process writes
        dist.barrier()
        return {}
    rcfg = reader.copy(parent=reader.parent)
    if rcfg.exists_current("write"):
        rcfg.remove("write")
    # in order, whole utterances: readMethod = rollingWindow (HTKMLFReader) or none (HTKDeserializers)
    # with randomize = none is the in-order reading of both
    legacy = (get_str(reader, "readerType", "HTKMLFReader") or "").lower() == "htkmlfreader"
    for key, value in (("frameMode", "false"), ("randomize", "none"), ("truncated", "false"),
                       ("readMethod", "rollingWindow" if legacy else "none")):
        rcfg.insert(key, value)
    source = build_reader(rcfg, path=key_path(section, "reader"))
    it = iter(utts)
    done = 0
    net.eval()
    with torch.no_grad():
        for mb in epoch_minibatches(source, minibatch_size=minibatch_size(section), epoch_size=0, epoch=0, dist=Dist()):
            x = batch_tensors(mb, [feats], dtype, device, required=[feats], where=key_path(section, "reader"))[feats]
            positions, _ = sequence_layout(mb, feats, device)
            feed_layout(net, mb, feats, device)
            check_batch(net, {feats: x}, key_path(section, "reader"))
            with torch_errors(name, (feats, x), None, key_path(section, "reader")):
                values = net.nodes(x)
            starts = (positions == 0).nonzero().flatten().tolist() + [x.shape[0]]
            if starts[0] != 0:
                raise CntkioError(f"{name}: the reader split an utterance across minibatches")
            for s, e in zip(starts[:-1], starts[1:]):
                utt = next(it, None)
                if utt is None:
                    raise CntkioError(f"{name}: the reader delivered more utterances than {scp} lists")
                uname, frames, period = utt
                if frames != e - s:
                    raise CntkioError(f"{name}: utterance {done + 1} ({uname}) of {scp} has {frames} frames but the "
                                      f"reader delivered a sequence of {e - s}: did the reader skip an utterance "
                                      "(e.g. one without labels)?")
                for _out, node, dim, prior, writer, sub in outputs:
                    v = values[node][s:e].reshape(e - s, -1)
                    if dim and v.shape[1] != dim:
                        raise config_error(sub, "dim", f"dim = {dim} but node {node!r} has {v.shape[1]} values per frame")
                    if prior is not None:
                        v = v - torch.log(prior.to(v.dtype))
                    writer.write(uname, v.cpu().numpy().astype(np.float32), period)
                done += 1
    if next(it, None) is not None:
        raise CntkioError(f"{name}: the reader delivered {done} utterances but {scp} lists {len(utts)}")
    for _out, node, _, _, writer, _ in outputs:
        writer.close()
        report(f"{name}: wrote {done} HTK files of node {node} "
               f"{'to the files listed in' if htk_writer is not None else 'to'} {writer.path}"
               + (f" (listed in {writer.scp_file})" if writer.scp_file else ""), dist=dist, stream=sys.stderr)
    dist.barrier()
    return {out_name: done for out_name, *_ in outputs}
