"""CNTK's Network Description Language (NDL) on PyTorch.

``build(text_or_path, run=..., load=..., macros=...)`` returns the network as a
``torch.nn.Module`` (an :class:`NDLNetwork`) whose nodes are named by their NDL dot paths; the
``NDLNetworkBuilder`` of a train command builds it from a config (:func:`build_from_config`).
The language, the passes and the node functions are described in ``docs/ndl.md``.
"""
from __future__ import annotations

from .builder import build, build_from_config, build_graph
from .evaluator import Evaluator, MacroLibrary
from .graph import Graph, GraphNetwork, NodeDef
from .network import NDLNetwork
from .parser import NDLError, parse_ndl

__all__ = ["build", "build_from_config", "build_graph", "Graph", "GraphNetwork", "NodeDef", "NDLNetwork",
           "NDLError", "Evaluator", "MacroLibrary", "parse_ndl"]
