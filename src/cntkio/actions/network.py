"""The network of a command section: built from ``SimpleNetworkBuilder``, ``NDLNetworkBuilder`` or
``BrainScriptNetworkBuilder``, or loaded from a model; and what the actions hand a network besides
its first feature and label streams.

CNTK chose the network builder by which sub-section is present. cntkio builds
``SimpleNetworkBuilder``, ``NDLNetworkBuilder`` (``networks/ndl``) and ``BrainScriptNetworkBuilder``
(``ExperimentalNetworkBuilder``, ``networks/brainscript``) networks; their pre-computed nodes
(``Mean``/``InvStdDev``, SimpleNetworkBuilder's ``applyMeanVarNorm`` statistics and ``needPrior``
label prior) are computed over the command's reader before training (every process reads the whole
training data for them, so all hold the same statistics).

* ``feed_layout``: the sequence layout of a minibatch (each sample's position in its sequence and
  its sequence's length, its row, whether it continues a sequence of the previous minibatch),
  which delay nodes (``PastValue``/``FutureValue``) need; the train, test and write actions hand
  it to an NDL network before computing it. With the reader's truncated BPTT a row holds several
  sequences end to end (each start marked 2 in the mask) and a row starting with 1 continues the
  previous minibatch's row, whose ``PastValue`` state the network carries over.
"""
from __future__ import annotations

import numpy as np

from ..integrations.torch_backend import torch

from ..errors import ConfigError, NotImplementedInCntkio
from ..networks import NetworkSpec, SimpleNetwork
from ..networks.brainscript.config import BUILDER_KEYS, build_from_config as build_bs_from_config
from ..networks.ndl import NDLNetwork, build_from_config as build_ndl_from_config
from ..networks.nodes import lookup
from ..networks.simple_rnn import RecurrentSpec, build_recurrent
from .._log import get_logger
from ._common import Dist, batch_tensors, epoch_minibatches, open_reader
from ._params import get_bool, get_float, get_int, get_list, get_str, has, key_path, section

__all__ = ["spec_from_config", "build_network", "UNSUPPORTED_BUILDERS", "SIMPLE_NETWORK_KEYS", "BUILDER_KEYS",
           "build_ndl_network", "build_brainscript_network", "has_brainscript", "precompute_from_reader",
           "sequence_layout", "sequence_state", "feed_layout", "extra_inputs", "describe_ndl_nodes",
           "brainscript_holder"]

_log = get_logger("actions.network")

#: network builders named in CNTK configs that cntkio does not implement
UNSUPPORTED_BUILDERS = ("BrainScriptNetworkBuilder", "ExperimentalNetworkBuilder")

_ALL = None
_RECURRENT = ("SIMPLERNN", "LSTM", "CLASSLSTM", "CLASSLM", "LBLM", "NPLM", "CLSTM")
_LSTMS = ("LSTM", "CLASSLSTM", "CLSTM")

#: Every key of a SimpleNetworkBuilder section that CNTK 2.7's builder read (and cntkio's
#: ``randomSeedOffset``), in one table: key -> (the rnnTypes whose network uses it, None for all;
#: why it has no effect elsewhere). A key set for a network that does not use it is accepted with
#: one warning giving that reason (CNTK read it and built nothing from it); the keys of
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
    """One warning per key of :data:`SIMPLE_NETWORK_KEYS` that is set but has no effect on an
    ``rnn`` network (none is silently ignored)."""
    for key, (users, why) in SIMPLE_NETWORK_KEYS.items():
        if users is None or rnn in users or key in _REFUSED or not builder.exists(key):
            continue
        _log.warning("%s=%s is accepted and has no effect in cntkio for rnnType=%s: %s", key_path(builder, key),
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
    except ValueError as e:
        raise ConfigError(f"expected integers, found {get_str(builder, 'layerSizes')!r}",
                          path=key_path(builder, "layerSizes")) from e
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


# NDL networks

def build_ndl_network(command, *, device: torch.device, dtype: torch.dtype) -> NDLNetwork:
    builder = section(command, "NDLNetworkBuilder")
    net = build_ndl_from_config(builder, dtype=dtype).to(device)
    net.check_trainable(key_path(command, "NDLNetworkBuilder"))
    if net.pending_precompute():
        precompute_from_reader(net, command, dtype=dtype, device=device)
    return net


def precompute_from_reader(net: NDLNetwork, command, *, dtype, device, key: str = "reader") -> int:
    """Fill ``net``'s pending pre-computed nodes from one sweep of the command's ``reader``."""
    name = command.name if hasattr(command, "name") else "train"
    feats, labels = net.spec.feature_node, net.spec.label_node
    where = key_path(command, key)

    def batches():
        source = open_reader(command, key, name)
        for mb in epoch_minibatches(source, minibatch_size=65536, epoch_size=0, epoch=0, dist=Dist()):
            t = batch_tensors(mb, [feats, labels], dtype, device, required=[feats, labels], where=where)
            if net.extra_inputs:
                t.update(extra_inputs(net, mb, device, where))
            yield (t, *sequence_layout(mb, feats, device))
    pending = net.pending_precompute()
    n = net.precompute(batches)
    _log.info("pre-computed %s over %d samples", ", ".join(pending), n)
    return n


def sequence_layout(minibatch, stream: str, device=None):
    """``(positions, lengths)`` of the samples of ``stream`` in the order ``batch_tensors`` gives
    them (rows concatenated), from the minibatch's mask; ``(None, None)`` when the stream is not
    there. A position counts from the sequence's start (a 2 in the mask), or from the row's
    start for a sequence continued from the previous minibatch; a length is the number of the
    sequence's samples in this minibatch."""
    return sequence_state(minibatch, stream, device)[:2]


def sequence_state(minibatch, stream: str, device=None):
    """``(positions, lengths, rows, continued, num_rows)`` of the samples of ``stream``
    (see :func:`sequence_layout`): ``rows[i]`` the row of sample ``i``, ``continued[i]`` whether
    its sequence started in an earlier minibatch; all None (and 0 rows) when the stream is not
    there. Whole-array operations on the mask."""
    data = next((v for k, v in minibatch.items() if (k if isinstance(k, str) else getattr(k, "name", str(k))) == stream),
                None)
    if data is None:
        return None, None, None, None, 0
    mask = np.asarray(data.mask)
    S, T = mask.shape
    valid = mask != 0
    cols = np.broadcast_to(np.arange(T, dtype=np.int64), mask.shape)
    start_col = np.maximum.accumulate(np.where(mask == 2, cols, 0), axis=1)
    seg = np.cumsum(mask == 2, axis=1)                      # 0: the part continued from before
    key = (np.arange(S, dtype=np.int64)[:, None] * (T + 1) + seg)[valid]
    lens = np.bincount(key, minlength=S * (T + 1))[key] if key.size else key
    rows = np.broadcast_to(np.arange(S, dtype=np.int64)[:, None], mask.shape)[valid]

    def t(a):
        return torch.from_numpy(np.ascontiguousarray(a)).to(device)
    return (t((cols - start_col)[valid]), t(lens.astype(np.int64)), t(rows), t(seg[valid] == 0), S)


def feed_layout(net, minibatch, stream: str, device=None, where: str = "reader") -> None:
    """Give an NDL network what it needs of the minibatch it computes next besides its first
    feature and label streams (other networks need nothing): its other Input nodes, each from
    the reader stream of the same name (CNTK mapped streams to inputs by name; a feature node
    without its stream is a ConfigError naming the streams the reader delivers), and, with delay
    nodes, the sequence layout of ``stream``."""
    if not isinstance(net, NDLNetwork):
        return
    if net.extra_inputs:
        net.set_inputs(extra_inputs(net, minibatch, device, where))
    if net.has_delays:
        net.set_layout(*sequence_state(minibatch, stream, device))


def extra_inputs(net: NDLNetwork, minibatch, device, where: str = "reader") -> dict:
    """The values of ``net.extra_inputs`` the minibatch delivers (a feature node's stream is
    required; a missing label or other input is an error only where a computation reads it)."""
    required = [n for n in net.extra_inputs if n in net.spec.feature_nodes]
    vals = batch_tensors(minibatch, net.extra_inputs, net.dtype, device, required=required, where=where)
    counts = {k: int(t.shape[0]) for k, t in vals.items()}
    first = next((v for k, v in minibatch.items() if getattr(k, "name", k) == net.spec.feature_node), None)
    if first is not None:
        counts[net.spec.feature_node] = int(first.num_samples)
    if len(set(counts.values())) > 1:
        raise ConfigError("the network's inputs read streams with different sample counts in one minibatch ("
                          + ", ".join(f"{k}: {c}" for k, c in counts.items()) + ")", path=where,
                          hint="the streams an NDL network reads must have the same sequence lengths")
    return vals


def describe_ndl_nodes(net: NDLNetwork) -> dict:
    """``{node: (operation, inputs text or dimensions, values or None)}`` of an NDL network in
    evaluation order, for the ``dumpnode`` action (CNTK's operation names; parameters are
    ``LearnableParameter`` and inputs ``InputValue``)."""
    out = {}
    for n in net.order:
        node = net.graph.nodes[n]
        kind = lookup(node.op).kind
        dims = "[" + ",".join(str(d) for d in net.shapes[n]) + "]"
        if kind == "param":
            out[n] = ("LearnableParameter", dims, _matrix(net.tensor(n)))
        elif kind in ("constant", "precompute"):
            out[n] = (node.op, dims, _matrix(net.tensor(n)))
        elif kind == "input":
            out[n] = ("InputValue", dims, None)
        else:
            out[n] = (node.op, "( " + " , ".join(node.inputs) + " )", None)
    return out


def _matrix(t):
    a = t.detach().cpu().numpy()
    return a.reshape(a.shape[0], -1) if a.ndim else a.reshape(1, 1)


# BrainScript networks

def brainscript_holder(command):
    """The section holding the BrainScriptNetworkBuilder a command uses: the command itself or
    the nearest enclosing section (G2P.cntk defines it at the top level, "in outer scope"; CNTK
    looks the builder up through the parents: ``config.Exists``), or None."""
    node = command
    while node is not None:
        if any(node.exists_current(k) for k in BUILDER_KEYS):
            return node
        node = getattr(node, "parent", None)
    return None


def has_brainscript(command) -> bool:
    return brainscript_holder(command) is not None


def build_brainscript_network(command, *, device: torch.device, dtype: torch.dtype,
                              precompute: bool = True) -> NDLNetwork:
    holder = brainscript_holder(command)
    key = next(k for k in BUILDER_KEYS if holder.exists_current(k))
    net = build_bs_from_config(holder, dtype=dtype).to(device)
    if precompute:
        net.check_trainable(key_path(command, key))
        if net.pending_precompute():
            precompute_from_reader(net, command, dtype=dtype, device=device)
    return net
