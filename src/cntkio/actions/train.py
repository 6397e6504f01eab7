"""The ``train`` and ``adapt`` actions: SGD training of a SimpleNetworkBuilder network on PyTorch.

A train command has a network builder (``SimpleNetworkBuilder``), a trainer (``SGD``) and a
``reader``; parameters are looked up through the parent sections, so ``modelPath`` at the root is
shared with the test command, and ``minibatchSize``/``epochSize`` may sit in the command section.

* Epochs are CNTK's config-reader epochs: consecutive slices of ``epochSize`` samples of one
  timeline (0 = one sweep), read in minibatches of ``minibatchSize`` samples (one value per epoch,
  the last repeating).
* After epoch N the model is written to ``modelPath.N`` (``modelPath`` itself after the last
  epoch), with the optimizer state and the reader checkpoint. With ``makeMode=true`` (default) a
  rerun starts at the first epoch whose file is missing, restoring all of that state, so it reads
  and computes exactly what an uninterrupted run would; when the final model exists nothing is
  trained. ``makeMode=false`` starts from scratch.
* ``cvReader`` (optional) is evaluated after every epoch (``[Validate]`` results).
* Under ``torchrun``/an initialised torch.distributed, every process reads its own part of each
  minibatch through cntkio and the summed gradients (and criteria) are all-reduced before each
  update: the update is the one of the whole minibatch, as with CNTK's data-parallel SGD.
  Process 0 writes the model files and prints the results.

``adapt`` is ``train`` starting from ``originalModelFileName`` instead of a network builder;
with ``adaptationRegType=KL`` the training targets are interpolated with the original model's
output at ``refNodeName``: ``(1 - adaptationRegWeight) * labels + adaptationRegWeight *
ref(features)`` (CNTK's KL-divergence regularised adaptation).

The SGD options (``sgd.py``), ``AutoAdjust`` with ``autoAdjustLR=AdjustAfterEpoch``
(:class:`~.train_loop.LearningRateState`), ``dropoutRate`` and ``parallelTrain`` (``parallel/``) are
applied here; the minibatch loop itself, with its settings read once, is
:class:`~.train_loop.TrainLoop`; ``docs/actions.md`` lists every key.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..source_protocol import is_truncated
from ..integrations.torch_backend import torch

from .._log import get_logger
from ..errors import CntkioError, ConfigError
from ..networks import SimpleNetwork, epoch_model_path, load_model, save_model
from ._common import (Dist, batch_tensors, dist_context, epoch_minibatches, open_reader,
                      report, resolve_device, resolve_dtype)
from ._params import get_bool, get_str, has, key_path, section
from .checks import check_writable, load_command_model
from .eval import EvalResult, evaluate
from .fingerprint import FINGERPRINT_KEY, SETTINGS_KEY, check_final_model, check_resume, config_fingerprint, config_settings
from .network import build_network
from .parallel import Parallel, ParallelParams, check_reader_split, describe as describe_parallel
from .sgd import SGDParams, config_error, set_dropout_rate
from .board import open_board
from .train_loop import LearningRateState, TrainLoop

__all__ = ["train", "adapt", "TrainResult", "first_missing_epoch", "kl_targets", "initial_model_path"]

_log = get_logger("actions.train")


@dataclass
class TrainResult:
    """What a train/adapt command did: the epochs it trained (1-based), per-epoch training
    results, the final model file."""

    model_path: str
    start_epoch: int
    max_epochs: int
    epochs: list[EvalResult] = field(default_factory=list)
    validation: list[EvalResult] = field(default_factory=list)

    @property
    def trained(self) -> bool:
        return bool(self.epochs)


def initial_model_path(model_path: str) -> str:
    """``modelPath.0``: the model a train command in makeMode starts from when no epoch is done
    (CNTK's ``GetModelNameForEpoch(-1)``)."""
    return f"{model_path}.0"


def first_missing_epoch(model_path: str, max_epochs: int) -> int:
    """How many epochs are done: the largest N whose model file exists (``modelPath.N``, or
    ``modelPath`` for the last epoch), 0 when none (CNTK's ``DetermineStartEpoch`` in makeMode)."""
    for e in range(max_epochs, 0, -1):
        if os.path.exists(epoch_model_path(model_path, e, max_epochs)):
            return e
    return 0


def train(section, name: str = "train") -> TrainResult:
    """The ``train`` action (see the module docstring for the parameters and the resume rule)."""
    return _run(section, name, adapt=False)


def adapt(section, name: str = "adapt") -> TrainResult:
    """The ``adapt`` action: continue training ``originalModelFileName`` on the section's reader
    with the section's SGD parameters, writing ``modelPath`` files as ``train`` does
    (``adaptationRegType=KL``: see the module docstring)."""
    return _run(section, name, adapt=True)


class KLTargets:
    """``adaptationRegType=KL``: targets ``(1-w) * labels + w * ref_net(x)[refNodeName]``."""

    def __init__(self, ref_net, node: str, weight: float) -> None:
        self.net, self.node, self.weight = ref_net, node, float(weight)
        self.net.eval()
        for p in self.net.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        ref = self.net.nodes(x)[self.node].to(y.dtype).reshape(y.shape)
        return (1.0 - self.weight) * y + self.weight * ref


def kl_targets(command, sgd_cfg, device, dtype) -> KLTargets | None:
    """The KL adaptation of an adapt command (None without ``adaptationRegType=KL``)."""
    cfg = command if command.exists("adaptationRegType") else sgd_cfg
    reg = (get_str(cfg, "adaptationRegType", "none") or "none").lower()
    if reg in ("none", ""):
        return None
    if reg != "kl":
        raise config_error(cfg, "adaptationRegType", f"unknown adaptationRegType {get_str(cfg, 'adaptationRegType')!r}",
                           hint="None or KL")
    if not has(command, "originalModelFileName"):
        raise config_error(cfg, "adaptationRegType", "KL adaptation needs the reference model: "
                           "originalModelFileName is not set")
    if not has(command, "refNodeName"):
        raise config_error(cfg, "adaptationRegType", "KL adaptation needs refNodeName (the node of the original "
                           "model whose output regularises the targets, e.g. PosteriorProb)")
    w_cfg = command if command.exists("adaptationRegWeight") else sgd_cfg
    weight = float(get_str(w_cfg, "adaptationRegWeight", "0") or 0)
    if not 0 <= weight <= 1:
        raise config_error(w_cfg, "adaptationRegWeight", f"must be in [0, 1], found {weight}")
    node = get_str(command, "refNodeName")
    ref = load_command_model(command, "originalModelFileName", device=device, dtype=dtype).network
    if node not in ref.node_names():
        raise ConfigError(f"refNodeName {node!r} is not a node of the original model (nodes: {', '.join(ref.node_names())})",
                  path=key_path(command, "refNodeName"))
    return KLTargets(ref, node, weight)


def _check_criterion_names(net, params: SGDParams, cfg) -> None:
    """``trainCriterionNodeName``/``evalCriterionNodeName`` must name the network's criteria."""
    for key, given, actual in (("trainCriterionNodeName", params.train_criterion_node, net.spec.training_criterion),
                               ("evalCriterionNodeName", params.eval_criterion_node, net.eval_node_name)):
        if given is not None and given != actual:
            raise config_error(cfg, key, f"{key}={given} but the network's node is {actual!r}",
                               hint="cntkio trains the network's own criterion nodes (NDL tags "
                                    "criterion/eval, SimpleNetworkBuilder trainingCriterion/evalCriterion)")


def _finish_early(net, opt, model_path: str, epoch: int, params: SGDParams, dist: Dist, name: str) -> None:
    """Training stopped before ``maxEpochs`` (minLearningRatePerSample): the last model becomes the
    final model file ``modelPath``, as CNTK."""
    if epoch == 0 or not dist.is_main:
        dist.barrier()
        return
    last = epoch_model_path(model_path, epoch, params.max_epochs)
    mf = load_model(last)
    save_model(model_path, mf.network, epoch=epoch, optimizer=mf.optimizer, reader_checkpoint=mf.reader_checkpoint,
               info=dict(mf.info, stopped_early=True))
    dist.barrier()


def _gather_object(obj, dist: Dist) -> list:
    if not dist.active:
        return [obj]
    out: list = [None] * dist.world_size
    torch.distributed.all_gather_object(out, obj)
    return out


def _run(command, name: str, adapt: bool) -> TrainResult:
    dist = dist_context()
    device, dtype = resolve_device(command, dist), resolve_dtype(command)
    sgd_cfg = section(command, "SGD", required=False) or command
    params = SGDParams.from_config(sgd_cfg, command)
    model_path = get_str(sgd_cfg, "modelPath")
    par_params = ParallelParams.from_config(command, sgd_cfg, dist.world_size, dtype == torch.float64)
    kl = kl_targets(command, sgd_cfg, device, dtype) if adapt else None       # checked before anything runs
    make_mode = get_bool(command, "makeMode", True)
    start = first_missing_epoch(model_path, params.max_epochs) if make_mode else 0
    result = TrainResult(model_path=model_path, start_epoch=start + 1, max_epochs=params.max_epochs)
    if start >= params.max_epochs:
        check_final_model(command, name, model_path, adapt)     # trained with these settings, or stop
        report(f"{name}: the final model {model_path} exists; no further training is necessary "
               "(makeMode=true)", dist=dist)
        return result
    unwritable = check_writable(model_path)     # before any work, not after the first epoch
    if unwritable is not None:
        raise config_error(sgd_cfg, "modelPath", f"the model file cannot be written: {unwritable}")
    fingerprint = config_fingerprint(command, adapt)
    settings = config_settings(command, adapt)
    check_resume(command, name, model_path, start, params.max_epochs, adapt)

    source = open_reader(command, "reader", name)
    check_reader_split(par_params, source, dist.world_size, [params.mb_size(e) for e in range(start, params.max_epochs)],
                       command, sgd_cfg)
    resumed = None
    if start > 0:
        path = epoch_model_path(model_path, start, params.max_epochs)
        resumed = load_command_model(sgd_cfg, "modelPath", path, device=device, dtype=dtype)
        if resumed.epoch != start:
            raise CntkioError(f"{path} holds epoch {resumed.epoch}, expected {start}")
        net = resumed.network
        report(f"{name}: resuming from {path} at epoch {start + 1} of {params.max_epochs}", dist=dist)
    elif make_mode and not adapt and os.path.exists(initial_model_path(model_path)):
        # CNTK's makeMode also starts from "modelPath.0", the initial model another command wrote
        # (a MEL edit adding a layer, an SVD): DetermineStartEpoch looks down to epoch -1, whose
        # file is modelPath.0, and the network is loaded, not built (SGD.cpp, TrainActions.cpp)
        path = initial_model_path(model_path)
        net = load_command_model(sgd_cfg, "modelPath", path, device=device, dtype=dtype).network
        report(f"{name}: starting from the initial model {path}", dist=dist)
    else:
        net = build_network(command, device=device, dtype=dtype, adapt=adapt)
        if (net.spec.apply_mean_var_norm or getattr(net.spec, "need_prior", False)) and not adapt:
            _mean_var_norm(net, command, name, dtype, device, dist)
    _check_criterion_names(net, params, sgd_cfg)
    opt = params.make_optimizer(net.parameters())
    par = Parallel(par_params, dist, [p for p in net.parameters() if p.requires_grad], opt)
    describe_parallel(par.p, dist, name)
    board = open_board(command, dist.is_main)       # tensorBoardLogDir: TensorBoard scalars
    loop = TrainLoop.from_command(command, name, net=net, opt=opt, source=source, params=params, dtype=dtype,
                                  device=device, dist=dist, par=par, kl=kl)
    loop.board = board
    try:
        _epochs(command, name, loop, lr_state=_lr_state(params, start, resumed, opt, par, source, dist, name),
                result=result, fingerprint=fingerprint, settings=settings)
    finally:
        if board is not None:
            board.close()
    return result


def _lr_state(params, start, resumed, opt, par, source, dist, name) -> LearningRateState:
    """The learning-rate state at epoch ``start``, with the resumed model file's SGD, parallel,
    reader and random state restored."""
    lr_state = LearningRateState()
    lr_state.prev_mb = params.mb_size(start)            # CNTK's start value; a checkpoint's replaces it
    if resumed is not None:
        if resumed.optimizer is not None:
            opt.load_state_dict(resumed.optimizer)
            lr_state.load(resumed.optimizer.get("lr_state"))
            ranks = resumed.optimizer.get("parallel") or []
            if len(ranks) == dist.world_size:
                par.load_state_dict(ranks[dist.rank])
        _restore_reader(source, resumed.reader_checkpoint, dist, name)
        if resumed.rng_state is not None:
            torch.set_rng_state(resumed.rng_state)
    return lr_state


def _epochs(command, name: str, loop: TrainLoop, *, lr_state: LearningRateState, result: TrainResult,
            fingerprint: dict, settings: dict) -> None:
    """The epochs from ``result.start_epoch``: learning rate, minibatch size, the epoch, the cvReader,
    the model file."""
    net, opt, params, dist, par, source = loop.net, loop.opt, loop.params, loop.dist, loop.par, loop.source
    device, dtype, board = loop.device, loop.dtype, loop.board
    start, model_path = result.start_epoch - 1, result.model_path
    cv_source = open_reader(command, "cvReader", name) if has(command, "cvReader") else None

    lr_adjustment = 1.0                                  # the last SearchBeforeEpoch rate over the rate before it
    for epoch in range(start, params.max_epochs):
        before = lr_state.lr if lr_state.lr is not None else 0.5 / params.mb_size(start)
        lr = lr_state.learning_rate(params, epoch)
        if lr is None:
            lr = lr_state.lr = loop.search_learning_rate(epoch, lr_state)
            lr_adjustment = lr / before
        if lr < params.min_learning_rate_per_sample:
            report(f"{name}: learning rate per sample for epoch {epoch + 1} = {lr:.8g} is less than "
                   f"minLearningRatePerSample {params.min_learning_rate_per_sample:.8g}; training complete",
                   dist=dist)
            _finish_early(net, opt, model_path, epoch, params, dist, name)
            break
        rate = params.dropout_of(epoch)
        if rate is not None and set_dropout_rate(net, rate) == 0 and epoch == start:
            _log.info("%s: dropoutRate is set but the network has no Dropout nodes (SimpleNetworkBuilder: "
                      "addDropoutNodes=true; NDL: Dropout(x)): it changes nothing", name)
        mb_size = params.mb_size(epoch)
        if params.auto_adjust.adjust_minibatch and epoch >= len(params.minibatch_size):
            mb_size = loop.adapt_minibatch_size(epoch, lr, lr_adjustment, lr_state)
            if mb_size != lr_state.prev_mb:
                report(f"{name}: Minibatch size adapted to {mb_size}.", dist=dist)
            lr_state.prev_mb = mb_size
        par.start_epoch(epoch)
        res = loop.run_epoch(epoch, lr, mb_size=mb_size)
        par.end_epoch(epoch)
        if board is not None:
            board.epoch(epoch + 1, res, lr)
        if par.active(epoch) and par.p.method == "dataparallelsgd":
            report(f"{name}: epoch {epoch + 1}: this process sent {par.bytes_sent} gradient bytes "
                   f"(gradientBits={par.p.gradient_bits})", dist=dist)
            par.bytes_sent = 0
        result.epochs.append(res)
        cv = None
        if cv_source is not None:
            cv = evaluate(net, epoch_minibatches(cv_source, minibatch_size=params.mb_size(epoch), epoch_size=0,
                                                 epoch=epoch, dist=dist),
                          nodes=[net.eval_node_name, net.spec.training_criterion], dtype=dtype, device=device,
                          dist=dist, where=key_path(command, "cvReader"))
            result.validation.append(cv)
            report(f"Finished Epoch[{epoch + 1} of {params.max_epochs}]: [Validate] {cv}", dist=dist)
            if board is not None:
                board.validate(epoch + 1, cv)
        rolled_back = lr_state.after_epoch(params, epoch, res, cv, net, opt, model_path, device, dtype, dist, name)
        checkpoint = _gather_checkpoint(source, dist)
        par_states = _gather_object(par.state_dict(), dist)
        path = epoch_model_path(model_path, epoch + 1, params.max_epochs)
        if dist.is_main:
            state = dict(opt.state_dict(), lr_state=lr_state.state(), parallel=par_states)
            if rolled_back:
                _log.info("%s: epoch %d's model is the rolled-back best model", name, epoch + 1)
            save_model(path, net, epoch=epoch + 1, optimizer=state, reader_checkpoint=checkpoint,
                       info={"command": name, "samples": res.samples,
                             "criteria": {k: v for k, v in res.averages.items()},
                             FINGERPRINT_KEY: fingerprint, SETTINGS_KEY: settings})
            _log.info("%s: saved %s", name, path)
        dist.barrier()


def _mean_var_norm(net: SimpleNetwork, command, name: str, dtype, device, dist: Dist) -> None:
    """SimpleNetworkBuilder's pre-computed nodes over one sweep of the training data (in float64;
    under torch.distributed each process sums its part and the sums are all-reduced):
    ``applyMeanVarNorm``'s mean and variance of the features, ``needPrior``'s mean of the labels."""
    source = open_reader(command, "reader", name)
    feats, labels = net.spec.feature_node, net.spec.label_node
    norm, prior = net.spec.apply_mean_var_norm, net.spec.need_prior
    dim, out = net.input_dim, net.output_dim
    need = ([feats] if norm else []) + ([labels] if prior else [])
    s = torch.zeros(2 * dim + out + 1, dtype=torch.float64, device=device)
    for mb in epoch_minibatches(source, minibatch_size=65536, epoch_size=0, epoch=0, dist=dist):
        if not mb:                 # this process has no data in this minibatch (distributed)
            continue
        t = batch_tensors(mb, need, torch.float64, device, required=need, where=key_path(command, "reader"))
        if norm:
            x = t[feats]
            s[:dim] += x.sum(0)
            s[dim:2 * dim] += (x * x).sum(0)
        if prior:
            s[2 * dim:-1] += t[labels].sum(0)
        s[-1] += t[need[0]].shape[0]
    dist.all_reduce_(s)
    n = s[-1].item()
    if n == 0:
        raise CntkioError(f"{name}: {'applyMeanVarNorm' if norm else 'needPrior'} read no samples from the reader")
    if norm:
        mean = s[:dim] / n
        var = s[dim:2 * dim] / n - mean * mean
        net.set_mean_var_norm(mean.to(dtype), var.to(dtype))
        _log.info("%s: mean/variance normalisation computed over %d samples", name, int(n))
    if prior:
        net.set_prior((s[2 * dim:-1] / n).to(dtype))
        _log.info("%s: the label prior computed over %d samples", name, int(n))


def _gather_checkpoint(source, dist: Dist):
    """Every process's reader checkpoint (process 0 stores them all in the model file)."""
    state = source.get_checkpoint_state()
    if not dist.active:
        return {"world_size": 1, "ranks": [state]}
    states: list = [None] * dist.world_size
    torch.distributed.all_gather_object(states, state)
    return {"world_size": dist.world_size, "ranks": states}


def _restore_reader(source, checkpoint, dist: Dist, name: str) -> None:
    if checkpoint is None:
        return
    if checkpoint.get("world_size") != dist.world_size:
        if not is_truncated(source):
            # model files are written at epoch ends, and every epoch seeks the reader to its own
            # start on the global timeline, which is the same for any number of processes
            _log.info("%s: the model file was written by %s processes, this run has %d: each reader starts "
                      "at the epoch's global timeline position", name, checkpoint.get("world_size"), dist.world_size)
            return
        raise ConfigError(f"{name}: the model file was written by {checkpoint.get('world_size')} processes but "
                          f"this run has {dist.world_size}; the reader position cannot be restored exactly",
                          hint="truncated BPTT keeps per-process sequence state: resume with the same number "
                               "of processes, or makeMode=false to restart")
    source.restore_from_checkpoint(checkpoint["ranks"][dist.rank])
