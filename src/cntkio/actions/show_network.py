"""``cntkio show-network configFile=... [name=value ...]``: print the networks of a config's
commands (nodes, functions and inputs, dimensions, parameter counts) without training them.

A command with an ``NDLNetworkBuilder`` or ``SimpleNetworkBuilder`` section shows the network it
would build (pre-computed statistics are not computed); any other command with a ``modelPath``
whose file exists shows that model.
"""
from __future__ import annotations

import os
import sys
from typing import Sequence

from ..config import command_sections, load_config
from ..errors import CntkioError
from ..networks import SimpleNetwork, load_model
from ..networks.mel import MelModel
from ..networks.ndl import build_from_config
from ..networks.simple_rnn import RecurrentSpec, build_recurrent
from .network import spec_from_config, build_brainscript_network, has_brainscript
from ..integrations.torch_backend import torch
from ._params import get_str, has, section

__all__ = ["main", "describe"]


def describe(net) -> str:
    """The summary of an NDL network, or of a SimpleNetwork as its equivalent graph."""
    if isinstance(net, SimpleNetwork):
        net = MelModel.from_network("simple", net).network()
    return net.summary()


def main(argv: Sequence[str], out=None) -> int:
    out = out or sys.stdout
    cfg = load_config(list(argv))
    shown = 0
    for cmd in command_sections(cfg):
        sec = cmd.section
        net = None
        if sec.exists("NDLNetworkBuilder"):
            net = build_from_config(section(sec, "NDLNetworkBuilder"))
            what = "NDLNetworkBuilder"
        elif has_brainscript(sec):
            net = build_brainscript_network(sec, device=torch.device("cpu"), dtype=torch.float32, precompute=False)
            what = "BrainScriptNetworkBuilder"
        elif sec.exists("SimpleNetworkBuilder"):
            spec = spec_from_config(section(sec, "SimpleNetworkBuilder"))
            net = build_recurrent(spec) if isinstance(spec, RecurrentSpec) else SimpleNetwork(spec)
            what = "SimpleNetworkBuilder"
        elif has(sec, "modelPath") and os.path.exists(get_str(sec, "modelPath")):
            what = get_str(sec, "modelPath")
            net = load_model(what).network
        if net is None:
            continue
        out.write(f"== {cmd.name}: {what}\n{describe(net)}\n")
        shown += 1
    if not shown:
        raise CntkioError("show-network: no command of this config has a network builder or an existing modelPath")
    return 0

