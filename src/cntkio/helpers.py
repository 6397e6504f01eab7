"""Small helpers of cntk.io (cntk-io-semantics 1.11): writing one sequence as CTF text.

``sequence_to_cntk_text_format`` turns NumPy tensors (dense) or lists of ``{index: value}`` dicts
(sparse) into the lines of one CTF sequence, so that data built in Python can be written to a
file the CTF deserializer reads back.
"""
from __future__ import annotations

import numbers
from typing import Any, Callable, Mapping

import numpy as np

__all__ = ["sequence_to_cntk_text_format"]


def _is_tensor(data: Any) -> bool:
    """Whether ``data`` is a dense tensor: a NumPy array, or nested Python lists whose innermost
    elements are numbers. A list holding NumPy arrays (or anything else) is not."""
    if isinstance(data, np.ndarray):
        return True
    if not isinstance(data, list):
        return False
    while len(data) > 0:
        first = data[0]
        if isinstance(first, list):
            data = first
            continue
        return isinstance(first, (numbers.Number, np.number)) and not isinstance(first, np.ndarray)
    return True


def _dense_to_str(sample: np.ndarray) -> str:
    return " ".join(np.asarray(sample).ravel(order="C").astype(str).tolist())


def _sparse_to_str(sample: Mapping) -> str:
    return " ".join(f"{k}:{v}" for k, v in sorted(sample.items()))


def sequence_to_cntk_text_format(seq_idx: int, alias_tensor_map: Mapping[str, Any]) -> str:
    """One sequence in CNTK Text Format, as cntk.io's function of the same name.

    ``alias_tensor_map`` maps each alias to the sequence's samples along the first axis: a dense
    tensor (NumPy array or nested lists of numbers; each sample is flattened in C order) or, for
    sparse inputs, a list of ``{index: value}`` dicts. Line ``i`` is ``"<seq_idx>\\t|"`` followed
    by ``alias v1 v2 ...`` for every alias (sorted by name) that still has an ``i``-th sample,
    joined by ``" |"``. Lines are joined by ``"\\n"`` without a trailing newline; if every alias
    is empty the result is ``''``. Anything else raises ValueError.
    """
    if not alias_tensor_map:
        return ""
    converted = []
    to_str: Callable[[Any], str]
    for alias, tensor in sorted(alias_tensor_map.items()):
        if _is_tensor(tensor):
            tensor = np.asarray(tensor)
            to_str = _dense_to_str
        elif isinstance(tensor, list) and len(tensor) > 0 and isinstance(tensor[0], dict):
            to_str = _sparse_to_str
        else:
            raise ValueError("expected a tensor (dense) or list of dicts (sparse), but got "
                             f"\"{type(tensor)}\" for alias {alias!r}")
        converted.append((alias, tensor, to_str))
    max_len = max(len(t) for _, t, _ in converted)
    lines = []
    for i in range(max_len):
        parts = [f"{alias} {to_str(t[i])}" for alias, t, to_str in converted if i < len(t)]
        lines.append("%i\t|" % seq_idx + " |".join(parts))
    return "\n".join(lines)
