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

``adapt`` is ``train`` starting from ``originalModelFileName`` instead of a network builder
(KL-divergence regularisation, ``adaptationRegType=KL``, is not implemented).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from ..integrations.torch_backend import torch

from .._log import get_logger
from ..errors import CntkioError, ConfigError, NotImplementedInCntkio
from .models import SimpleNetwork, epoch_model_path, load_model, save_model
from ._common import (Dist, batch_tensors, dist_context, epoch_minibatches, fmt_criteria, open_reader,
                      progress_bar, progress_enabled, report, resolve_device, resolve_dtype, sweep_total)
from ._params import get_bool, get_str, has, key_path, section
from .eval import EvalResult, evaluate
from .network import build_network
from .ndl_support import feed_layout
from .sgd import CntkSGD, SGDParams

__all__ = ["train", "adapt", "TrainResult", "first_missing_epoch"]

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
    with the section's SGD parameters, writing ``modelPath`` files as ``train`` does."""
    reg = (get_str(section, "adaptationRegType", "none") or "none").lower()
    if reg not in ("none", ""):
        raise NotImplementedInCntkio(f"{key_path(section, 'adaptationRegType')}={reg}: KL-divergence "
                                     "regularised adaptation is not implemented in cntkio")
    return _run(section, name, adapt=True)


def _run(command, name: str, adapt: bool) -> TrainResult:
    dist = dist_context()
    device, dtype = resolve_device(command, dist), resolve_dtype(command)
    sgd_cfg = section(command, "SGD", required=False) or command
    params = SGDParams.from_config(sgd_cfg, command)
    model_path = get_str(sgd_cfg, "modelPath")
    make_mode = get_bool(command, "makeMode", True)
    start = first_missing_epoch(model_path, params.max_epochs) if make_mode else 0
    result = TrainResult(model_path=model_path, start_epoch=start + 1, max_epochs=params.max_epochs)
    if start >= params.max_epochs:
        report(f"{name}: the final model {model_path} exists; no further training is necessary "
               "(makeMode=true)", dist=dist)
        return result

    source = open_reader(command, "reader", name)
    resumed = None
    if start > 0:
        path = epoch_model_path(model_path, start, params.max_epochs)
        resumed = load_model(path, device=device, dtype=dtype)
        if resumed.epoch != start:
            raise CntkioError(f"{path} holds epoch {resumed.epoch}, expected {start}")
        net = resumed.network
        report(f"{name}: resuming from {path} at epoch {start + 1} of {params.max_epochs}", dist=dist)
    else:
        net = build_network(command, device=device, dtype=dtype, adapt=adapt)
        if net.spec.apply_mean_var_norm and not adapt:
            _mean_var_norm(net, command, name, dtype, device, dist)
    opt = CntkSGD(net.parameters(), unit_gain=params.unit_gain, l2_reg_weight=params.l2_reg_weight,
                  clipping_threshold_per_sample=params.clipping_threshold_per_sample,
                  clipping_with_truncation=params.clipping_with_truncation)
    if resumed is not None:
        if resumed.optimizer is not None:
            opt.load_state_dict(resumed.optimizer)
        _restore_reader(source, resumed.reader_checkpoint, dist, name)
        if resumed.rng_state is not None:
            torch.set_rng_state(resumed.rng_state)
    cv_source = open_reader(command, "cvReader", name) if has(command, "cvReader") else None

    for epoch in range(start, params.max_epochs):
        res = _train_epoch(net, opt, source, params, epoch, dtype, device, dist, command, name)
        result.epochs.append(res)
        if cv_source is not None:
            cv = evaluate(net, epoch_minibatches(cv_source, minibatch_size=params.mb_size(epoch), epoch_size=0,
                                                 epoch=epoch, dist=dist),
                          nodes=[net.eval_node_name, net.spec.training_criterion], dtype=dtype, device=device,
                          dist=dist, where=key_path(command, "cvReader"))
            result.validation.append(cv)
            report(f"Finished Epoch[{epoch + 1} of {params.max_epochs}]: [Validate] {cv}", dist=dist)
        checkpoint = _gather_checkpoint(source, dist)
        path = epoch_model_path(model_path, epoch + 1, params.max_epochs)
        if dist.is_main:
            save_model(path, net, epoch=epoch + 1, optimizer=opt.state_dict(), reader_checkpoint=checkpoint,
                       info={"command": name, "samples": res.samples,
                             "criteria": {k: v for k, v in res.averages.items()}})
            _log.info("%s: saved %s", name, path)
        dist.barrier()
    return result


def _train_epoch(net: SimpleNetwork, opt: CntkSGD, source, params: SGDParams, epoch: int, dtype, device,
                 dist: Dist, command, name: str) -> EvalResult:
    mb_size = params.mb_size(epoch)
    lr, mom = params.lr_per_sample(epoch), params.momentum_per_sample_of(epoch)
    feats, labels = net.spec.feature_node, net.spec.label_node
    crit_names = [net.spec.training_criterion, net.eval_node_name]
    tensors = [p for p in net.parameters()]
    acc = torch.zeros(3, dtype=torch.float64, device=device)      # criterion, eval, samples
    window = torch.zeros_like(acc)
    show = params.num_mbs_to_show_result
    bar = progress_bar(progress_enabled(command, dist), total=params.epoch_size or sweep_total(source),
                       desc=f"Epoch[{epoch + 1} of {params.max_epochs}]")
    it = iter(epoch_minibatches(source, minibatch_size=mb_size, epoch_size=params.epoch_size, epoch=epoch, dist=dist))
    t0 = time.perf_counter()
    n_mb, first = 0, 1
    net.train()
    try:
        while True:
            mb = next(it, None)
            if dist.active:            # every process takes part in each update, data or not
                more = torch.tensor([0.0 if mb is None else 1.0], device=device)
                if dist.all_reduce_(more).item() == 0:
                    break
            elif mb is None:
                break
            opt.zero_grad()
            stats = torch.zeros(3, dtype=torch.float64, device=device)
            if mb:
                t = batch_tensors(mb, [feats, labels], dtype, device, required=[feats, labels],
                                  where=key_path(command, "reader"))
                feed_layout(net, mb, feats, device)
                x, y = t[feats], t[labels]
                if x.shape[0]:
                    hlast = net(x)
                    loss = net.criterion(hlast, y)
                    loss.backward()
                    stats[0] = loss.detach().to(torch.float64)
                    stats[1] = net.evaluation(hlast.detach(), y).to(torch.float64)
                    stats[2] = float(x.shape[0])
            if dist.active:
                flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).to(torch.float64)
                                  for p in tensors] + [stats])
                dist.all_reduce_(flat)
                offset = 0
                for p in tensors:
                    k = p.numel()
                    p.grad = flat[offset:offset + k].reshape(p.shape).to(p.dtype)
                    offset += k
                stats = flat[offset:]
            n = int(stats[2].item())
            if n == 0:
                continue
            opt.step(n, lr, mom)
            acc += stats
            window += stats
            n_mb += 1
            if bar is not None:
                bar.update(n)
            if show and n_mb % show == 0:
                w = window.tolist()
                report(f" Epoch[{epoch + 1} of {params.max_epochs}]-Minibatch[{first:4d}-{n_mb:4d}]: "
                       + fmt_criteria(dict(zip(crit_names, w[:2])), int(w[2])), dist=dist)
                window.zero_()
                first = n_mb + 1
    finally:
        if bar is not None:
            bar.close()
    a = acc.tolist()
    res = EvalResult(totals=dict(zip(crit_names, a[:2])), samples=int(a[2]), minibatches=n_mb)
    if res.samples == 0:
        raise CntkioError(f"{name}: epoch {epoch + 1} read no samples (is the reader's data empty?)")
    report(f"Finished Epoch[{epoch + 1} of {params.max_epochs}]: [Training] {res}; "
           f"learningRatePerSample = {lr:.8g}; epochTime = {time.perf_counter() - t0:.3f}s", dist=dist)
    return res


def _mean_var_norm(net: SimpleNetwork, command, name: str, dtype, device, dist: Dist) -> None:
    """``applyMeanVarNorm``: mean and variance of the features over one sweep of the training data
    (in float64; under torch.distributed each process sums its part and the sums are all-reduced)."""
    source = open_reader(command, "reader", name)
    feats = net.spec.feature_node
    dim = net.input_dim
    s = torch.zeros(2 * dim + 1, dtype=torch.float64, device=device)
    for mb in epoch_minibatches(source, minibatch_size=65536, epoch_size=0, epoch=0, dist=dist):
        if not mb:                 # this process has no data in this minibatch (distributed)
            continue
        x = batch_tensors(mb, [feats], torch.float64, device, required=[feats],
                          where=key_path(command, "reader"))[feats]
        s[:dim] += x.sum(0)
        s[dim:2 * dim] += (x * x).sum(0)
        s[-1] += x.shape[0]
    dist.all_reduce_(s)
    n = s[-1].item()
    if n == 0:
        raise CntkioError(f"{name}: applyMeanVarNorm read no samples from the reader")
    mean = s[:dim] / n
    var = s[dim:2 * dim] / n - mean * mean
    net.set_mean_var_norm(mean.to(dtype), var.to(dtype))
    _log.info("%s: mean/variance normalisation computed over %d samples", name, int(n))


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
        raise ConfigError(f"{name}: the model file was written by {checkpoint.get('world_size')} processes but "
                          f"this run has {dist.world_size}; the reader position cannot be restored exactly",
                          hint="resume with the same number of processes, or makeMode=false to restart")
    source.restore_from_checkpoint(checkpoint["ranks"][dist.rank])
