"""The one place cntkio imports PyTorch.

The torch integration (``integrations/torch.py``) and the config actions and their networks
(``actions/``, ``networks/``) take ``torch``, ``nn`` and ``distributed`` from here, so the
dependency is named once. Nothing in the core imports this module: ``import cntkio`` and the
reader-only actions never load torch. When torch is missing, importing this raises the
``ModuleNotFoundError`` for ``torch`` unchanged (the action table turns it into "action X needs
the Python package 'torch'").
"""
from __future__ import annotations

import torch
import torch.distributed as distributed
from torch import nn

__all__ = ["torch", "nn", "distributed", "summary_writer_class"]


def summary_writer_class():
    """torch's ``torch.utils.tensorboard.SummaryWriter`` (it needs the ``tensorboard`` package, the
    ``tensorboard`` extra; imported on first use only): ImportError when it is missing."""
    from torch.utils.tensorboard import SummaryWriter
    return SummaryWriter
