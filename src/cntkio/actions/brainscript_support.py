"""What the actions need for BrainScript networks (``models/brainscript``).

``build_brainscript_network``: the ``BrainScriptNetworkBuilder`` (or ``ExperimentalNetworkBuilder``)
of a train command, built on the node library as NDL networks are; pre-computed nodes (``Mean``,
``InvStdDev``) are computed over the command's reader as for NDL.
"""
from __future__ import annotations

from ..integrations.torch_backend import torch

from .models.brainscript.config import BUILDER_KEYS, build_from_config
from .models.ndl import NDLNetwork
from .ndl_support import precompute_from_reader
from ._params import key_path

__all__ = ["build_brainscript_network", "has_brainscript", "BUILDER_KEYS"]


def has_brainscript(command) -> bool:
    return any(command.exists_current(k) for k in BUILDER_KEYS)


def build_brainscript_network(command, *, device: torch.device, dtype: torch.dtype,
                              precompute: bool = True) -> NDLNetwork:
    key = next(k for k in BUILDER_KEYS if command.exists_current(k))
    net = build_from_config(command, dtype=dtype).to(device)
    if precompute:
        net.check_trainable(key_path(command, key))
        if net.pending_precompute():
            precompute_from_reader(net, command, dtype=dtype, device=device)
    return net
