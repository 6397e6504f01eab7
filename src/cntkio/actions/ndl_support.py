"""What the actions need for NDL networks (``models/ndl``).

* ``build_ndl_network``: the ``NDLNetworkBuilder`` of a train command; the pre-computed nodes
  (``Mean``, ``InvStdDev``) are computed over the command's reader, as CNTK did before the first
  epoch. Every process reads the whole training data for them, so all hold the same statistics.
* ``feed_layout``: the sequence layout of a minibatch (each sample's position in its sequence and
  its sequence's length), which delay nodes (``PastValue``/``FutureValue``) need; the train, test
  and write actions hand it to an NDL network before computing it.
"""
from __future__ import annotations

import numpy as np

from ..integrations.torch_backend import torch

from .._log import get_logger
from .models.ndl import NDLNetwork, build_from_config
from .models.nodes import lookup
from ._common import Dist, batch_tensors, epoch_minibatches, open_reader
from ._params import key_path, section

__all__ = ["build_ndl_network", "precompute_from_reader", "sequence_layout", "feed_layout", "describe_ndl_nodes"]

_log = get_logger("actions.ndl")


def build_ndl_network(command, *, device: torch.device, dtype: torch.dtype) -> NDLNetwork:
    builder = section(command, "NDLNetworkBuilder")
    net = build_from_config(builder, dtype=dtype).to(device)
    net.check_trainable(key_path(command, "NDLNetworkBuilder"))
    if net.pending_precompute():
        precompute_from_reader(net, command, dtype=dtype, device=device)
    return net


def precompute_from_reader(net: NDLNetwork, command, *, dtype, device, key: str = "reader") -> int:
    """Fill ``net``'s pending pre-computed nodes from one sweep of the command's ``reader``."""
    name = command.name if hasattr(command, "name") else "train"
    feats, labels = net.spec.feature_node, net.spec.label_node
    where = key_path(command, key)

    def batches():
        source = open_reader(command, key, name)
        for mb in epoch_minibatches(source, minibatch_size=65536, epoch_size=0, epoch=0, dist=Dist()):
            t = batch_tensors(mb, [feats, labels], dtype, device, required=[feats, labels], where=where)
            yield (t, *sequence_layout(mb, feats, device))
    pending = net.pending_precompute()
    n = net.precompute(batches)
    _log.info("pre-computed %s over %d samples", ", ".join(pending), n)
    return n


def sequence_layout(minibatch, stream: str, device=None):
    """``(positions, lengths)`` of the samples of ``stream`` in the order ``batch_tensors`` gives
    them (sequences concatenated), from the minibatch's mask; ``(None, None)`` when the stream is
    not there."""
    data = next((v for k, v in minibatch.items() if (k if isinstance(k, str) else getattr(k, "name", str(k))) == stream),
                None)
    if data is None:
        return None, None
    valid = np.asarray(data.mask) != 0
    cols = np.broadcast_to(np.arange(valid.shape[1], dtype=np.int64), valid.shape)
    lens = np.broadcast_to(valid.sum(1, dtype=np.int64)[:, None], valid.shape)
    return (torch.from_numpy(np.ascontiguousarray(cols[valid])).to(device),
            torch.from_numpy(np.ascontiguousarray(lens[valid])).to(device))


def feed_layout(net, minibatch, stream: str, device=None) -> None:
    """Give an NDL network with delay nodes the sequence layout of the minibatch it computes next
    (other networks need none)."""
    if isinstance(net, NDLNetwork) and net.has_delays:
        net.set_layout(*sequence_layout(minibatch, stream, device))


def describe_ndl_nodes(net: NDLNetwork) -> dict:
    """``{node: (operation, inputs text or dimensions, values or None)}`` of an NDL network in
    evaluation order, for the ``dumpnode`` action (CNTK's operation names; parameters are
    ``LearnableParameter`` and inputs ``InputValue``)."""
    out = {}
    for n in net.order:
        node = net.graph.nodes[n]
        kind = lookup(node.op).kind
        dims = "[" + ",".join(str(d) for d in net.shapes[n]) + "]"
        if kind == "param":
            out[n] = ("LearnableParameter", dims, _matrix(net.tensor(n)))
        elif kind in ("constant", "precompute"):
            out[n] = (node.op, dims, _matrix(net.tensor(n)))
        elif kind == "input":
            out[n] = ("InputValue", dims, None)
        else:
            out[n] = (node.op, "( " + " , ".join(node.inputs) + " )", None)
    return out


def _matrix(t):
    a = t.detach().cpu().numpy()
    return a.reshape(a.shape[0], -1) if a.ndim else a.reshape(1, 1)
