"""What the actions need for NDL networks (``models/ndl``).

* ``build_ndl_network``: the ``NDLNetworkBuilder`` of a train command; the pre-computed nodes
  (``Mean``, ``InvStdDev``) are computed over the command's reader, as CNTK did before the first
  epoch. Every process reads the whole training data for them, so all hold the same statistics.
* ``feed_layout``: the sequence layout of a minibatch (each sample's position in its sequence and
  its sequence's length, its row, whether it continues a sequence of the previous minibatch),
  which delay nodes (``PastValue``/``FutureValue``) need; the train, test and write actions hand
  it to an NDL network before computing it. With the reader's truncated BPTT a row holds several
  sequences end to end (each start marked 2 in the mask) and a row starting with 1 continues the
  previous minibatch's row, whose ``PastValue`` state the network carries over.
"""
from __future__ import annotations

import numpy as np

from ..integrations.torch_backend import torch

from .._log import get_logger
from ..errors import ConfigError
from .models.ndl import NDLNetwork, build_from_config
from .models.nodes import lookup
from ._common import Dist, batch_tensors, epoch_minibatches, open_reader
from ._params import key_path, section

__all__ = ["build_ndl_network", "precompute_from_reader", "sequence_layout", "sequence_state", "feed_layout", "extra_inputs",
           "describe_ndl_nodes"]

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
            if net.extra_inputs:
                t.update(extra_inputs(net, mb, device, where))
            yield (t, *sequence_layout(mb, feats, device))
    pending = net.pending_precompute()
    n = net.precompute(batches)
    _log.info("pre-computed %s over %d samples", ", ".join(pending), n)
    return n


def sequence_layout(minibatch, stream: str, device=None):
    """``(positions, lengths)`` of the samples of ``stream`` in the order ``batch_tensors`` gives
    them (rows concatenated), from the minibatch's mask; ``(None, None)`` when the stream is not
    there. A position counts from the sequence's start (a 2 in the mask), or from the row's
    start for a sequence continued from the previous minibatch; a length is the number of the
    sequence's samples in this minibatch."""
    return sequence_state(minibatch, stream, device)[:2]


def sequence_state(minibatch, stream: str, device=None):
    """``(positions, lengths, rows, continued, num_rows)`` of the samples of ``stream``
    (see :func:`sequence_layout`): ``rows[i]`` the row of sample ``i``, ``continued[i]`` whether
    its sequence started in an earlier minibatch; all None (and 0 rows) when the stream is not
    there. Whole-array operations on the mask."""
    data = next((v for k, v in minibatch.items() if (k if isinstance(k, str) else getattr(k, "name", str(k))) == stream),
                None)
    if data is None:
        return None, None, None, None, 0
    mask = np.asarray(data.mask)
    S, T = mask.shape
    valid = mask != 0
    cols = np.broadcast_to(np.arange(T, dtype=np.int64), mask.shape)
    start_col = np.maximum.accumulate(np.where(mask == 2, cols, 0), axis=1)
    seg = np.cumsum(mask == 2, axis=1)                      # 0: the part continued from before
    key = (np.arange(S, dtype=np.int64)[:, None] * (T + 1) + seg)[valid]
    lens = np.bincount(key, minlength=S * (T + 1))[key] if key.size else key
    rows = np.broadcast_to(np.arange(S, dtype=np.int64)[:, None], mask.shape)[valid]

    def t(a):
        return torch.from_numpy(np.ascontiguousarray(a)).to(device)
    return (t((cols - start_col)[valid]), t(lens.astype(np.int64)), t(rows), t(seg[valid] == 0), S)


def feed_layout(net, minibatch, stream: str, device=None, where: str = "reader") -> None:
    """Give an NDL network what it needs of the minibatch it computes next besides its first
    feature and label streams (other networks need nothing): its other Input nodes, each from
    the reader stream of the same name (CNTK mapped streams to inputs by name; a feature node
    without its stream is a ConfigError naming the streams the reader delivers), and, with delay
    nodes, the sequence layout of ``stream``."""
    if not isinstance(net, NDLNetwork):
        return
    if net.extra_inputs:
        net.set_inputs(extra_inputs(net, minibatch, device, where))
    if net.has_delays:
        net.set_layout(*sequence_state(minibatch, stream, device))


def extra_inputs(net: NDLNetwork, minibatch, device, where: str = "reader") -> dict:
    """The values of ``net.extra_inputs`` the minibatch delivers (a feature node's stream is
    required; a missing label or other input is an error only where a computation reads it)."""
    required = [n for n in net.extra_inputs if n in net.spec.feature_nodes]
    vals = batch_tensors(minibatch, net.extra_inputs, net._dtype, device, required=required, where=where)
    counts = {k: int(t.shape[0]) for k, t in vals.items()}
    first = next((v for k, v in minibatch.items() if getattr(k, "name", k) == net.spec.feature_node), None)
    if first is not None:
        counts[net.spec.feature_node] = int(first.num_samples)
    if len(set(counts.values())) > 1:
        raise ConfigError("the network's inputs read streams with different sample counts in one minibatch ("
                          + ", ".join(f"{k}: {c}" for k, c in counts.items()) + ")", path=where,
                          hint="the streams an NDL network reads must have the same sequence lengths")
    return vals


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
