"""The ``NDLNetworkBuilder`` of a train command: build the NDL network (``models/ndl``) and
compute its pre-computed nodes (``Mean``, ``InvStdDev``) over the command's reader, as CNTK did
before the first epoch. Every process reads the whole training data for them, so all hold the
same statistics."""
from __future__ import annotations

from ..integrations.torch_backend import torch

from .._log import get_logger
from .models.ndl import NDLNetwork, build_from_config
from ._common import Dist, batch_tensors, epoch_minibatches, open_reader
from ._params import key_path, section

__all__ = ["build_ndl_network", "precompute_from_reader"]

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
            yield t, None, None
    pending = net.pending_precompute()
    n = net.precompute(batches)
    _log.info("pre-computed %s over %d samples", ", ".join(pending), n)
    return n
