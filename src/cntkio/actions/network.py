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
from .models import NetworkSpec, SimpleNetwork
from .models.simple_rnn import RecurrentSpec, build_recurrent
from .ndl_support import build_ndl_network, precompute_from_reader
from .brainscript_support import build_brainscript_network, has_brainscript
from .._log import get_logger
from ._params import get_bool, get_float, get_int, get_list, get_str, has, key_path, section

__all__ = ["spec_from_config", "build_network", "UNSUPPORTED_BUILDERS", "SIMPLE_NETWORK_KEYS"]

_log = get_logger("actions.network")

#: network builders named in CNTK configs that cntkio does not implement
UNSUPPORTED_BUILDERS = ("BrainScriptNetworkBuilder", "ExperimentalNetworkBuilder")

_ALL = None
_RECURRENT = ("SIMPLERNN", "LSTM", "CLASSLSTM", "CLASSLM", "LBLM", "NPLM", "CLSTM")
_LSTMS = ("LSTM", "CLASSLSTM", "CLSTM")

#: Every key of a SimpleNetworkBuilder section that CNTK 2.7's builder read (and cntkio's
#: ``randomSeedOffset``), in one table: key -> (the rnnTypes whose network uses it, None for all;
#: why it has no effect elsewhere). A key set for a network that does not use it is accepted with
#: one info line giving that reason (CNTK read it and built nothing from it); the keys of
#: :data:`_REFUSED` are refused instead when set to anything but their "off" value.
SIMPLE_NETWORK_KEYS: dict[str, tuple[tuple[str, ...] | None, str]] = {
    "layerSizes": (_ALL, ""), "trainingCriterion": (_ALL, ""),
    "layerTypes": (("SIMPLENET", "SIMPLERNN", "LSTM", "CLASSLSTM", "CLASSLM", "NPLM", "CLSTM"),
                   "the log-bilinear network's layers are linear"),
    "evalCriterion": (_ALL, ""), "initValueScale": (_ALL, ""), "uniformInit": (_ALL, ""),
    "applyMeanVarNorm": (_ALL, ""), "needPrior": (_ALL, ""), "addDropoutNodes": (_ALL, ""),
    "randomSeedOffset": (_ALL, ""), "rnnType": (_ALL, ""), "deviceId": (_ALL, ""),
    "lookupTableOrder": (_ALL, ""),     # a ConfigError for the kinds that have no embedding
    "recurrentLayer": (("SIMPLERNN", "LSTM", "CLASSLM", "LBLM", "NPLM"),
                       "CLASSLSTM and CLSTM make every hidden layer an LSTM and SIMPLENET has no recurrence "
                       "(CNTK's builders for them did not look at it)"),
    "defaultHiddenActivity": (_RECURRENT, "a feed-forward network has no PastValue node"),
    "inputGateInitVal": (_LSTMS, "the network has no LSTM"),
    "forgetGateInitVal": (_LSTMS, "the network has no LSTM"),
    "outputGateInitVal": (_LSTMS, "the network has no LSTM"),
    "constInputGateValue": (_LSTMS, "the network has no LSTM"),
    "constForgetGateValue": (_LSTMS, "the network has no LSTM"),
    "constOutputGateValue": (_LSTMS, "the network has no LSTM"),
    "nbrClass": (("CLASSLSTM", "CLASSLM", "CLSTM"), "only the class-based networks have word classes"),
    "vocabSize": (_RECURRENT, "CNTK checked it only against a recurrent network's output size"),
    "maOrder": (("LBLM",), "only the log-bilinear network (rnnType=LBLM) has the delayed-input terms"),
    "auxfeatdim": (("CLSTM",), "only the conditional LSTM (rnnType=CLSTM) has the binaryFeature input"),
    "noise_number": ((), "it sizes the labels of rnnType=NCELSTM, which cntkio does not build"),
    "directConnect": ((), "CNTK's NCELSTM builder alone read it (cntkio does not build NCELSTM)"),
    "sparseinput": ((), "CNTK chose a sparse or dense input node with it; cntkio's Input node takes the stream "
                        "as the reader delivers it, sparse or dense, with the same result"),
    "labelEmbeddingSize": ((), "CNTK 2.7's builder read it, but none of its networks used it"),
    "word2cls": ((), "CNTK 2.7's builder read the file name, but none of its networks used it: the word "
                     "classes come from the reader (the LMSequenceReader's wordclass file)"),
    "cls2index": ((), "CNTK 2.7's builder read the file name, but none of its networks used it: the word "
                      "classes come from the reader (the LMSequenceReader's wordclass file)"),
    "outputLayerSize": ((), "CNTK used it only when converting a DBN.exe model file; the output size is "
                            "layerSizes' last entry"),
    "streamSizes": ((), "CNTK 2.7 read it, but only the multi-stream encoder/decoder LSTM builders it no "
                        "longer offered used it"),
    "lookupTableOrderSizes": ((), "CNTK 2.7 read it, but only the multi-stream encoder/decoder LSTM builders "
                                  "it no longer offered used it"),
}

#: keys of CNTK's LSTM builder that change the network in a way cntkio does not build, with the values
#: that mean "off" (refused when set otherwise, not ignored)
_REFUSED = {"constInputGateValue": ("false", "0"), "constForgetGateValue": ("false", "0"),
            "constOutputGateValue": ("false", "0")}


def _announce_unused_keys(builder, rnn: str) -> None:
    """One info line per key of :data:`SIMPLE_NETWORK_KEYS` that is set but has no effect on an
    ``rnn`` network (none is silently ignored)."""
    for key, (users, why) in SIMPLE_NETWORK_KEYS.items():
        if users is None or rnn in users or key in _REFUSED or not builder.exists(key):
            continue
        _log.info("%s=%s is accepted and has no effect in cntkio for rnnType=%s: %s", key_path(builder, key),
                  get_str(builder, key), rnn, why)



def _common_keys(builder) -> dict:
    """The SimpleNetworkBuilder keys the feed-forward and the recurrent networks read alike."""
    return dict(
        layer_types=[str(v) for v in get_list(builder, "layerTypes", "Sigmoid")],
        training_criterion=get_str(builder, "trainingCriterion", "CrossEntropyWithSoftmax"),
        eval_criterion=get_str(builder, "evalCriterion", "ClassificationError"),
        init_value_scale=get_float(builder, "initValueScale", 1.0),
        uniform_init=get_bool(builder, "uniformInit", True),
        apply_mean_var_norm=get_bool(builder, "applyMeanVarNorm", False),
    )

def _recurrent_spec(builder, sizes: list[int]) -> RecurrentSpec:
    """A SimpleNetworkBuilder section with ``rnnType`` other than SIMPLENET (``models/simple_rnn.py``)."""
    path = getattr(builder, "path", None) or "SimpleNetworkBuilder"
    layers = [int(float(v)) for v in get_list(builder, "recurrentLayer", "")] if has(builder, "recurrentLayer") else []
    rnn = (get_str(builder, "rnnType") or "").upper()
    vocab = get_int(builder, "vocabSize", -1)
    if vocab != -1 and vocab != sizes[-1]:
        raise ConfigError(f"vocabSize {vocab} differs from the output layer size {sizes[-1]} (the vocabulary is "
                          "the output layer, as CNTK required)", path=key_path(builder, "vocabSize"),
                          hint=f"vocabSize={sizes[-1]} or the matching last layerSizes entry")
    return RecurrentSpec(
        rnn_type=get_str(builder, "rnnType"), layer_sizes=sizes,
        **_common_keys(builder),
        need_prior=get_bool(builder, "needPrior", False),
        add_dropout_nodes=get_bool(builder, "addDropoutNodes", False),
        lookup_table_order=get_int(builder, "lookupTableOrder", 0),
        recurrent_layers=layers,
        default_hidden_activity=get_float(builder, "defaultHiddenActivity", 0.1),
        input_gate_init=get_float(builder, "inputGateInitVal", -1.0),
        forget_gate_init=get_float(builder, "forgetGateInitVal", -1.0),
        output_gate_init=get_float(builder, "outputGateInitVal", -1.0),
        nbr_class=get_int(builder, "nbrClass", -1),
        ma_order=get_int(builder, "maOrder", 0) if builder.exists("maOrder") and rnn == "LBLM" else 0,
        aux_feat_dim=get_int(builder, "auxfeatdim", 20) if rnn == "CLSTM" else 20, path=path)


def spec_from_config(builder) -> NetworkSpec | RecurrentSpec:
    """A ``SimpleNetworkBuilder`` section -> :class:`NetworkSpec`.

    Parameters: ``layerSizes`` (required, ``in:hidden...:out``), ``layerTypes`` (``Sigmoid``
    default, ``Tanh``, ``RectifiedLinear``; one for all hidden layers or one per layer),
    ``trainingCriterion`` (``CrossEntropyWithSoftmax`` default, ``CrossEntropy``, ``SquareError``,
    ``Logistic``), ``evalCriterion`` (``ClassificationError``/``ErrorPrediction`` default, or a
    training criterion), ``initValueScale`` (1), ``uniformInit`` (true), ``applyMeanVarNorm``
    (false), ``randomSeedOffset`` (0), ``needPrior`` (false: with true, the label prior and the
    ``ScaledLogLikelihood`` output node). ``rnnType`` other than ``SIMPLENET`` (``LSTM``,
    ``CLASSLSTM``, ``SIMPLERNN``) gives a :class:`RecurrentSpec` (with ``lookupTableOrder``,
    ``recurrentLayer``, ``defaultHiddenActivity``, the gates' ``*GateInitVal``, ``nbrClass``).
    """
    for key, off in _REFUSED.items():
        if builder.exists(key) and (get_str(builder, key) or "").lower() not in off:
            raise NotImplementedInCntkio(
                f"{key_path(builder, key)}={get_str(builder, key)} is not implemented in cntkio "
                "(CNTK's LSTM with a constant gate; cntkio builds the LSTM with all three gates)")
    if not has(builder, "layerSizes"):
        raise ConfigError("SimpleNetworkBuilder needs layerSizes", path=key_path(builder, "layerSizes"),
                          hint="e.g. layerSizes=784:256:10 (input, hidden layers, output)")
    try:
        sizes = [int(float(v)) for v in get_list(builder, "layerSizes")]
    except ValueError:
        raise ConfigError(f"expected integers, found {get_str(builder, 'layerSizes')!r}",
                          path=key_path(builder, "layerSizes")) from None
    rnn = (get_str(builder, "rnnType", "SIMPLENET") or "SIMPLENET").upper()
    _announce_unused_keys(builder, rnn)
    if rnn != "SIMPLENET":
        return _recurrent_spec(builder, sizes)
    if get_int(builder, "lookupTableOrder", 0) != 0:
        raise ConfigError("lookupTableOrder applies to rnnType LSTM and CLASSLSTM (CNTK's feed-forward builder did "
                          "not read it)", path=key_path(builder, "lookupTableOrder"),
                          hint="set rnnType=LSTM for an embedding followed by an LSTM, or remove lookupTableOrder")
    return NetworkSpec(
        layer_sizes=sizes,
        **_common_keys(builder),
        random_seed_offset=get_int(builder, "randomSeedOffset", 0),
        need_prior=get_bool(builder, "needPrior", False),
        add_dropout_nodes=get_bool(builder, "addDropoutNodes", False),
    )


def build_network(command, *, device: torch.device, dtype: torch.dtype, adapt: bool = False) -> SimpleNetwork:
    """The initial network of a train (``SimpleNetworkBuilder``) or adapt (``originalModelFileName``)
    command."""
    if adapt:
        from .checks import load_command_model
        return load_command_model(command, "originalModelFileName", device=device, dtype=dtype).network
    if command.exists("SimpleNetworkBuilder"):
        builder = section(command, "SimpleNetworkBuilder")
        spec = spec_from_config(builder)
        if isinstance(spec, RecurrentSpec):
            net = build_recurrent(spec, dtype=dtype, seed_offset=get_int(builder, "randomSeedOffset", 0)).to(device)
            net.check_trainable(key_path(command, "SimpleNetworkBuilder"))
            if net.pending_precompute():
                precompute_from_reader(net, command, dtype=dtype, device=device)
            return net
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
