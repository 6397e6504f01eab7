"""CNTK's BrainScript network descriptions on PyTorch.

``build(text_or_path)`` returns the network as a ``torch.nn.Module`` (the node library's
network, as NDL's); the ``BrainScriptNetworkBuilder`` of a train command builds it from a config
(:func:`build_from_config`). The language and the layers are described in ``docs/brainscript.md``.
"""
from __future__ import annotations

from .config import build, build_from_config, build_graph
from .syntax import BrainScriptError

__all__ = ["build", "build_from_config", "build_graph", "BrainScriptError"]
