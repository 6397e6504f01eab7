"""NumPy arrays to torch tensors: the leaf the core may call (``MinibatchData.to_torch``) without the bridge.

Imports torch (through :mod:`~cntkio.integrations.torch_backend`) and NumPy only, never another
cntkio module, so calling it from the core closes no import circle.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .torch_backend import torch

__all__ = ["tensor", "csr_tensor", "warm_csr", "place", "arrays_to_tensor"]

_from_numpy = torch.from_numpy
_sparse_csr = torch.sparse_csr_tensor
_csr_warned = False  # torch warns once per process that sparse CSR is in beta


def tensor(arr: np.ndarray) -> Any:
    """``torch.from_numpy(arr)`` (no copy), or of a copy when ``arr`` is read-only or not
    C-contiguous (torch needs both)."""
    if not arr.flags.writeable or not arr.flags.c_contiguous:
        arr = np.array(arr, copy=True, order="C")
    return _from_numpy(arr)


def csr_tensor(crow: Any, col: Any, values: Any, size) -> Any:
    """A sparse CSR tensor over these tensors (not checked: cntkio's packer made them; without
    ``check_invariants=False`` torch would warn that checks are implicitly disabled)."""
    global _csr_warned
    if _csr_warned:
        return _sparse_csr(crow, col, values, size, check_invariants=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        t = _sparse_csr(crow, col, values, size=size, check_invariants=False)
    _csr_warned = True
    return t


def warm_csr() -> None:
    """Let torch's once-per-process "sparse CSR is in beta" warning happen now, silenced (call on
    the caller's thread, where the warning filters can be set safely), so that per-item code can
    call ``torch.sparse_csr_tensor`` directly."""
    if not _csr_warned:
        z = np.zeros(1, np.int32)
        csr_tensor(tensor(z), tensor(z[:0]), tensor(np.zeros(0, np.float32)), (0, 1))


def place(t: Any, device: Any, pin_memory: bool) -> Any:
    """``t`` in page-locked memory when ``pin_memory`` (for a fast, ``non_blocking`` copy to a
    GPU; an error where torch sees no CUDA device), then on ``device`` when given."""
    if pin_memory:
        if not torch.cuda.is_available():
            raise RuntimeError("to_torch(pin_memory=True): pinned memory is for copies to a CUDA device, and "
                               "torch sees none here; leave pin_memory off on a CPU-only machine")
        t = t.pin_memory()
    if device is None:
        return t
    return t.to(device, non_blocking=pin_memory)


def arrays_to_tensor(parts: tuple, device: Any = None, pin_memory: bool = False) -> Any:
    """One stream's tensor from its arrays: ``("dense", padded)`` or ``("csr", crow, col, values,
    (rows, dim))`` (what ``Value.tensor_arrays`` gives)."""
    if parts[0] == "dense":
        t = tensor(parts[1])
    else:
        _, crow, col, values, size = parts
        t = csr_tensor(tensor(crow), tensor(col), tensor(values), size)
    return place(t, device, pin_memory)
