"""The networks of a config's commands, built without training them (``cntkio show-network``,
:mod:`cntkio.tools.show_network`): nodes, functions and inputs, dimensions, parameter counts.

What it must never do: read data or train: pre-computed statistics are not computed.

A command with an ``NDLNetworkBuilder``, ``BrainScriptNetworkBuilder`` or ``SimpleNetworkBuilder``
section gives the network it would build; any other command with a ``modelPath`` whose file exists
gives that model.
"""
from __future__ import annotations

import os
from typing import Iterator

from ..errors import CntkioError
from ..networks import SimpleNetwork, load_model
from ..networks.mel import MelModel
from ..networks.ndl import build_from_config
from ..networks.nodes import lookup
from ..networks.simple_rnn import RecurrentSpec, build_recurrent
from .network import spec_from_config, build_brainscript_network, has_brainscript
from ..integrations.torch_backend import torch
from ._params import get_str, has, section

__all__ = ["command_networks", "describe", "describe_dict"]


def _graph(net):
    """An NDL network, or a SimpleNetwork as its equivalent graph."""
    if isinstance(net, SimpleNetwork):
        net = MelModel.from_network("simple", net).network()
    return net


def describe(net) -> str:
    """The summary of an NDL network, or of a SimpleNetwork as its equivalent graph."""
    return _graph(net).summary()


def describe_dict(net) -> dict:
    """The summary as plain data: ``nodes`` (name, operation, inputs, shape, per_sample, values,
    learnable) in evaluation order, ``groups`` (feature, label, criterion... nodes) and the
    parameter counts."""
    g = _graph(net)
    nodes = []
    for n in g.order:
        node = g.graph.nodes[n]
        param = lookup(node.op).kind == "param"
        count = 1
        for d in g.shapes[n]:
            count *= int(d)
        nodes.append({"name": n, "operation": node.op, "inputs": list(node.inputs),
                      "shape": [int(d) for d in g.shapes[n]], "per_sample": bool(g.sample[n]),
                      "values": count if param else 0, "learnable": bool(param and node.grad)})
    return {"nodes": nodes, "groups": {k: list(v) for k, v in g.graph.groups.items() if v},
            "parameters": sum(p.numel() for p in g.parameters()),
            "learnable": sum(p.numel() for p in g.parameters() if p.requires_grad)}


def command_networks(cfg, section_name: str | None = None) -> Iterator[tuple[str, str, object]]:
    """``(command name, builder or model file, network)`` for each command (or the one named) of the
    loaded configuration ``cfg`` that has a network builder or an existing model file."""
    from ..config import command_sections
    shown = 0
    for cmd in command_sections(cfg):
        if section_name is not None and cmd.name != section_name:
            continue
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
        shown += 1
        yield cmd.name, what, net
    if not shown:
        raise CntkioError("show-network: " + (f"the command {section_name!r} has no" if section_name else
                                              "no command of this config has a")
                          + " network builder or existing modelPath")
