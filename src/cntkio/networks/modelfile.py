"""Model files: ``modelPath`` and the per-epoch ``modelPath.N`` files of the train action.

CNTK names the file of epoch ``N`` (1-based) ``<modelPath>.N`` and the file of the last epoch
``<modelPath>`` itself; an interrupted training resumes at the first epoch whose file is missing.
For that resume to read and compute exactly what an uninterrupted run would, each file holds, besides
the network, everything the next epoch starts from: the optimizer state (momentum buffers), the
reader checkpoint (the randomizer position), the torch RNG state and the running totals.

A file is written to ``<path>.tmp-<pid>`` and renamed into place, so a file that exists is complete:
a run killed while saving leaves no truncated model that a resume would trust.

The format is one ``torch.save`` dictionary loaded with ``weights_only=True`` (no pickled code):
tensors, numbers, strings, lists and dicts; the reader checkpoint is stored as JSON text.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from ..integrations.torch_backend import torch

from .._paths import missing_file_text
from ..errors import CntkioError
from .ndl.network import NDLNetwork
from .simple import NetworkSpec, SimpleNetwork

__all__ = ["ModelFile", "ModelFileError", "save_model", "load_model", "epoch_model_path", "FORMAT", "VERSION"]

FORMAT = "cntkio-model"
VERSION = 1


class ModelFileError(CntkioError):
    """A model file that is missing or cannot be read; ``reason`` names the file once (the
    actions add the config key and line that named it)."""

    def __init__(self, reason: str, path: str) -> None:
        super().__init__(reason)
        self.reason, self.model_path = reason, path


def epoch_model_path(model_path: str, epoch: int, max_epochs: int | None = None) -> str:
    """The file of (1-based) ``epoch``: ``modelPath.N``, or ``modelPath`` for the last epoch."""
    if max_epochs is not None and epoch >= max_epochs:
        return model_path
    return f"{model_path}.{epoch}"


@dataclass
class ModelFile:
    """A loaded model file: the network and the training state saved with it."""

    network: SimpleNetwork | NDLNetwork
    epoch: int = 0
    optimizer: dict[str, Any] | None = None
    reader_checkpoint: Any = None
    rng_state: torch.Tensor | None = None
    info: dict[str, Any] = field(default_factory=dict)


def _json_default(o):
    try:
        import numpy as np
        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            return float(o)
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(o, (set, tuple)):
        return list(o)
    raise TypeError(f"reader checkpoint value of type {type(o).__name__} cannot be stored in a model file")


def save_model(path: str, network: SimpleNetwork | NDLNetwork, *, epoch: int, optimizer: dict | None = None,
               reader_checkpoint: Any = None, info: dict | None = None) -> None:
    """Write a model file atomically (temp name, then rename); creates missing directories
    (CNTK creates the directory of ``modelPath`` too)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    payload = {
        "format": FORMAT, "version": VERSION,
        "network": network.to_record() if isinstance(network, NDLNetwork) else
        {"type": "SimpleNetworkBuilder", "spec": network.spec.to_dict(),
         "dtype": str(next(network.parameters()).dtype).replace("torch.", "")},
        "state_dict": {k: v.detach().cpu() for k, v in network.state_dict().items()},
        "epoch": int(epoch),
        "optimizer": optimizer,
        "reader_checkpoint": None if reader_checkpoint is None else json.dumps(reader_checkpoint,
                                                                              default=_json_default),
        "rng_state": torch.get_rng_state(),
        "info": info or {},
    }
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _foreign(path: str, err: Exception) -> str:
    """What a file torch.load refused looks like, in a few words (torch's own text, with its advice
    about ``weights_only``, is kept as the chained exception)."""
    import zipfile
    if zipfile.is_zipfile(path):
        if "weights_only" in str(err) or "Unpickler" in str(err):
            return "a PyTorch file holding Python objects, e.g. a pickled module"
        return f"a zip archive torch.load cannot read: {str(err).splitlines()[0][:200]}"
    with open(path, "rb") as f:
        head = f.read(64)
    if not head:
        return "an empty file"
    try:
        text = head.decode("utf-8")
        return f"a text file starting {text.splitlines()[0][:40]!r}"
    except UnicodeDecodeError:
        return f"a binary file torch.load cannot read ({type(err).__name__})"


def load_model(path: str, *, device: torch.device | str = "cpu", dtype: torch.dtype | None = None) -> ModelFile:
    """Read a model file written by :func:`save_model`; the network is moved to ``device`` and cast
    to ``dtype`` (default: the dtype it was saved in)."""
    if not os.path.exists(path):
        raise ModelFileError(missing_file_text("model file", path) + " (expected a file written by the train action)",
                             path)
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # corrupt or foreign file
        raise ModelFileError(f"model file {path} is not a cntkio model file ({_foreign(path, e)}; cntkio's "
                             "model files are written by the train action)", path) from e
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ModelFileError(f"model file {path} is not a cntkio model file (expected format {FORMAT!r}, found "
                             f"{payload.get('format') if isinstance(payload, dict) else type(payload).__name__})",
                             path)
    if payload.get("version", 0) > VERSION:
        raise ModelFileError(f"model file {path} has version {payload['version']}, newer than this cntkio "
                             f"reads (expected <= {VERSION})", path)
    net = payload["network"]
    saved_dtype = getattr(torch, net.get("dtype", "float32"))
    if net.get("type") == NDLNetwork.builder:      # an NDL (or MEL-edited) network: its graph
        network = NDLNetwork.from_record(net, dtype or saved_dtype)
    else:
        network = SimpleNetwork(NetworkSpec.from_dict(net["spec"]), dtype=dtype or saved_dtype)
    network.load_state_dict({k: v.to(dtype or saved_dtype) for k, v in payload["state_dict"].items()})
    network.to(device)
    ckpt = payload.get("reader_checkpoint")
    return ModelFile(network=network, epoch=int(payload.get("epoch", 0)), optimizer=payload.get("optimizer"),
                     reader_checkpoint=None if ckpt is None else json.loads(ckpt),
                     rng_state=payload.get("rng_state"), info=payload.get("info") or {})
