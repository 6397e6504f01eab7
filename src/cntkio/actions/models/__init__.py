"""Networks that CNTK config files describe, as PyTorch modules, and their model files.

``SimpleNetworkBuilder`` sections become :class:`SimpleNetwork`; model files (``modelPath``,
``modelPath.N``) are written and read by :func:`save_model`/:func:`load_model`. The NDL network
builder is not implemented (the train action says so when a config uses it).
"""
from .modelfile import ModelFile, epoch_model_path, load_model, save_model
from .simple import EVAL_CRITERIA, LAYER_TYPES, TRAINING_CRITERIA, NetworkSpec, SimpleNetwork

__all__ = ["NetworkSpec", "SimpleNetwork", "ModelFile", "save_model", "load_model", "epoch_model_path",
           "LAYER_TYPES", "TRAINING_CRITERIA", "EVAL_CRITERIA"]
