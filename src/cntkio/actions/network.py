"""The network of a command section: built from ``SimpleNetworkBuilder`` or ``NDLNetworkBuilder``,
or loaded from a model.

CNTK chose the network builder by which sub-section is present. cntkio builds
``SimpleNetworkBuilder``, ``NDLNetworkBuilder`` (``models/ndl``) and ``BrainScriptNetworkBuilder``
(``ExperimentalNetworkBuilder``, ``models/brainscript``) networks; their pre-computed nodes
(``Mean``/``InvStdDev``, SimpleNetworkBuilder's ``applyMeanVarNorm`` statistics and ``needPrior``
label prior) are computed over the command's reader before training.
"""
from __future__ import annotations

from ..integrations.torch_backend import torch

from ..errors import ConfigError, NotImplementedInCntkio
from .models import NetworkSpec, SimpleNetwork, load_model
from .ndl_support import build_ndl_network
from .brainscript_support import build_brainscript_network, has_brainscript
from ._params import get_bool, get_float, get_int, get_list, get_str, has, key_path, section

__all__ = ["spec_from_config", "build_network", "UNSUPPORTED_BUILDERS"]

#: network builders named in CNTK configs that cntkio does not implement
UNSUPPORTED_BUILDERS = ("BrainScriptNetworkBuilder", "ExperimentalNetworkBuilder")

#: SimpleNetworkBuilder parameters that would change the network in ways cntkio does not build,
#: with the values that mean "off" (these are refused, not ignored)
_REFUSED = {"rnnType": ("simplenet",), "lookupTableOrder": ("0",)}


def spec_from_config(builder) -> NetworkSpec:
    """A ``SimpleNetworkBuilder`` section -> :class:`NetworkSpec`.

    Parameters: ``layerSizes`` (required, ``in:hidden...:out``), ``layerTypes`` (``Sigmoid``
    default, ``Tanh``, ``RectifiedLinear``; one for all hidden layers or one per layer),
    ``trainingCriterion`` (``CrossEntropyWithSoftmax`` default, ``CrossEntropy``, ``SquareError``,
    ``Logistic``), ``evalCriterion`` (``ClassificationError``/``ErrorPrediction`` default, or a
    training criterion), ``initValueScale`` (1), ``uniformInit`` (true), ``applyMeanVarNorm``
    (false), ``randomSeedOffset`` (0), ``needPrior`` (false: with true, the label prior and the
    ``ScaledLogLikelihood`` output node).
    """
    for key, off in _REFUSED.items():
        if builder.exists(key) and (get_str(builder, key) or "").lower() not in off:
            raise NotImplementedInCntkio(
                f"{key_path(builder, key)}={get_str(builder, key)} is not implemented in cntkio "
                "(cntkio builds feed-forward SimpleNetworkBuilder networks: rnnType = SIMPLENET, no lookup table)")
    if not has(builder, "layerSizes"):
        raise ConfigError("SimpleNetworkBuilder needs layerSizes", path=key_path(builder, "layerSizes"),
                          hint="e.g. layerSizes=784:256:10 (input, hidden layers, output)")
    try:
        sizes = [int(float(v)) for v in get_list(builder, "layerSizes")]
    except ValueError:
        raise ConfigError(f"expected integers, found {get_str(builder, 'layerSizes')!r}",
                          path=key_path(builder, "layerSizes")) from None
    return NetworkSpec(
        layer_sizes=sizes,
        layer_types=[str(v) for v in get_list(builder, "layerTypes", "Sigmoid")],
        training_criterion=get_str(builder, "trainingCriterion", "CrossEntropyWithSoftmax"),
        eval_criterion=get_str(builder, "evalCriterion", "ClassificationError"),
        init_value_scale=get_float(builder, "initValueScale", 1.0),
        uniform_init=get_bool(builder, "uniformInit", True),
        apply_mean_var_norm=get_bool(builder, "applyMeanVarNorm", False),
        random_seed_offset=get_int(builder, "randomSeedOffset", 0),
        need_prior=get_bool(builder, "needPrior", False),
        add_dropout_nodes=get_bool(builder, "addDropoutNodes", False),
    )


def build_network(command, *, device: torch.device, dtype: torch.dtype, adapt: bool = False) -> SimpleNetwork:
    """The initial network of a train (``SimpleNetworkBuilder``) or adapt (``originalModelFileName``)
    command."""
    if adapt:
        path = get_str(command, "originalModelFileName")
        return load_model(path, device=device, dtype=dtype).network
    if command.exists("SimpleNetworkBuilder"):
        spec = spec_from_config(section(command, "SimpleNetworkBuilder"))
        return SimpleNetwork(spec, dtype=dtype).to(device)
    if command.exists("NDLNetworkBuilder"):
        return build_ndl_network(command, device=device, dtype=dtype)
    if has_brainscript(command):
        return build_brainscript_network(command, device=device, dtype=dtype)
    for b in UNSUPPORTED_BUILDERS:
        if command.exists(b):
            raise NotImplementedInCntkio(
                f"{key_path(command, b)}: the {b} is not implemented in cntkio; describe the network "
                "with a SimpleNetworkBuilder section (layerSizes, layerTypes, trainingCriterion, ...)")
    raise ConfigError("no network builder: the train action needs a SimpleNetworkBuilder or NDLNetworkBuilder "
                      "section", path=key_path(command, "SimpleNetworkBuilder"),
                      hint="add SimpleNetworkBuilder=[layerSizes=...] to the command section")
