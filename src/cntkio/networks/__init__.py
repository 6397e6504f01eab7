"""Networks that CNTK config files describe, as PyTorch modules, and their model files.

``SimpleNetworkBuilder`` sections become :class:`SimpleNetwork`, ``NDLNetworkBuilder`` sections
an :class:`~.ndl.NDLNetwork` (``ndl/``, on the node library ``nodes/``); MEL edits them
(``mel.py``). Model files (``modelPath``, ``modelPath.N``) are written and read by
:func:`save_model`/:func:`load_model`.
"""
from .modelfile import ModelFile, epoch_model_path, load_model, save_model
from .simple import EVAL_CRITERIA, LAYER_TYPES, TRAINING_CRITERIA, NetworkSpec, SimpleNetwork

__all__ = ["NetworkSpec", "SimpleNetwork", "ModelFile", "save_model", "load_model", "epoch_model_path",
           "LAYER_TYPES", "TRAINING_CRITERIA", "EVAL_CRITERIA"]
