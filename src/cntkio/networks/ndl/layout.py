"""Parameters held in the shape their kernel takes.

CNTK's parameters are matrices: a bias is ``[rows, 1]``, a convolution's filters are
``[outputChannels, channels·kernelHeight·kernelWidth]``. The graph keeps those dimensions (shape
inference, ``show-network``, model files, MEL, ``dumpnode``), but in a network built with
``kernel_layout=True`` (BrainScript's: CNTK 2's ``ParameterTensor {outDim}`` is a vector, its
filters ``(kW:kH:C:outC)`` are ``[outC, C, kH, kW]`` reversed) a parameter that every reader takes
in one other shape is held in that shape by the module:

* a bias read only by ``Plus`` nodes with a per-sample value as ``[rows]`` (the bias argument of
  ``linear`` and ``conv2d``);
* filters read only by ``Convolution`` nodes as ``[out, in, kernelHeight, kernelWidth]``;
* the scale, bias and running statistics of ``BatchNormalization`` as ``[channels]``.

So a training step reshapes no parameter (a reshape is one view operation in the forward pass
and one in the backward pass, each an autograd node): it runs the operations the same network
written by hand with ``nn.Linear``/``nn.Conv2d`` runs. The readers' functions reshape their
parameter operands to what they need (a no-op on a value already in shape is skipped), so any
plan (fused or not, the step loop) computes the same values.

The state dict keeps CNTK's dimensions (model files are unchanged, and a state dict of either
shape loads); :meth:`GraphNetwork.tensor` gives the held tensor (``reshape`` it to
``net.shapes[name]`` for CNTK's dimensions).
"""
from __future__ import annotations

from ...integrations.torch_backend import nn
from ..nodes import lookup
from ..nodes.base import numel

__all__ = ["addmm", "kernel_shapes", "keep_cntk_dims"]


def addmm(w, x, b):
    """``Plus(Times(W, x), b)`` in one kernel (``b`` held as a vector, else reshaped)."""
    x = x if x.dim() == 2 else x.reshape(x.shape[0], -1)
    return nn.functional.linear(x, w, b if b.dim() == 1 else b.reshape(-1))


def _wanted(user, k: int, shape: tuple, shapes: dict, sample: dict) -> tuple | None:
    """The shape reader ``user`` takes its input ``k`` (a parameter of ``shape``) in, or None."""
    n = numel(shape)
    if user.op == "Plus" and len(user.inputs) == 2 and user.inputs[1 - k] != user.inputs[k]:
        if sample[user.inputs[1 - k]] and shape[0] == n:
            return (n,)
        return None
    if user.op == "Convolution" and k == 0 and len(user.inputs) == 2:
        want = lookup(user.op).held_weights(user.attrs, shapes[user.inputs[1]])
        return want if want is not None and numel(want) == n else None
    if user.op == "BatchNormalization" and 1 <= k <= 4 and shape[0] == n:
        return (n,)
    return None


def kernel_shapes(graph, shapes: dict, sample: dict) -> dict[str, tuple]:
    """``{parameter: the shape to hold it in}`` for the parameters whose readers all take them in
    one shape other than the graph's."""
    users: dict[str, list] = {}
    for node in graph.nodes.values():
        for k, i in enumerate(node.inputs):
            users.setdefault(i, []).append((node, k))
    out: dict[str, tuple] = {}
    for name, node in graph.nodes.items():
        if lookup(node.op).kind != "param" or name not in users:
            continue
        shape = tuple(shapes[name])
        want = {_wanted(user, k, shape, shapes, sample) for user, k in users[name]}
        if len(want) == 1:
            w = want.pop()
            if w is not None and w != shape:
                out[name] = w
    return out


def _save(module, state_dict, prefix, local_metadata):
    for name, (cntk, _) in module.__dict__.get("_kernel_layout", {}).items():
        key = prefix + name
        v = state_dict.get(key)
        if v is not None and tuple(v.shape) != cntk:
            state_dict[key] = v.reshape(cntk)


def _load(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
    for name, (_, held) in module.__dict__.get("_kernel_layout", {}).items():
        key = prefix + name
        v = state_dict.get(key)
        if v is not None and tuple(v.shape) != held and numel(tuple(v.shape)) == numel(held):
            state_dict[key] = v.reshape(held)


def keep_cntk_dims(net, layout: dict[str, tuple]) -> None:
    """The state dict of ``net`` (a GraphNetwork holding the parameters of ``layout`` in their
    kernel shapes) in CNTK's dimensions; loading takes either."""
    if not layout:
        return
    net.__dict__["_kernel_layout"] = {n: (tuple(net.shapes[n]), held) for n, held in layout.items()}
    net.register_state_dict_post_hook(_save)
    net.register_load_state_dict_pre_hook(_load)
