"""BrainScript networks for plain PyTorch code (this module imports torch).

``cntkio.brainscript.build(text_or_path, dropout_rate=...)`` returns a ``torch.nn.Module`` built
from a BrainScript network description (the members of a ``BrainScriptNetworkBuilder`` record, a
``.bs`` file, or ``new ComputationNetwork {...}``). See ``docs/brainscript.md``.
"""
from __future__ import annotations

from .networks.brainscript import BrainScriptError, build, build_graph
from .networks.ndl import NDLNetwork

__all__ = ["build", "build_graph", "BrainScriptError", "NDLNetwork"]
