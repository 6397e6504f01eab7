"""NDL networks for plain PyTorch code (this module imports torch).

``cntkio.ndl.build(text_or_path, run=..., load=..., macros=...)`` returns a ``torch.nn.Module``
built from CNTK's Network Description Language; ``cntkio.ndl.run_mel(script, macros=...)`` runs
a Model Editing Language script. See ``docs/ndl.md``.
"""
from __future__ import annotations

from .networks.mel import run_mel
from .networks.ndl import NDLError, NDLNetwork, build, build_graph

__all__ = ["build", "build_graph", "run_mel", "NDLNetwork", "NDLError"]
