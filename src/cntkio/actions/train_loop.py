"""One train/adapt command's minibatch loop: its settings read from the config once
(:class:`TrainLoop`), an epoch of SGD updates, the learning-rate and minibatch-size searches'
trial epochs, and the learning rate across epochs (:class:`LearningRateState`); it never reads a
config section inside the loop and never writes model files."""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..integrations.torch_backend import torch

from ..errors import CntkioError
from ..networks import epoch_model_path, load_model
from ._common import (Dist, batch_tensors, epoch_minibatches, fmt_criteria, progress_bar, progress_enabled, report,
                      sweep_total)
from ._params import key_path
from .checks import check_batch, input_dim_values, torch_errors
from .eval import EvalResult, percent_nodes
from .mbsearch import round_to_64, search_minibatch_size, sizing_bounds
from .network import feed_layout
from .parallel import Parallel, ParallelParams
from .sgd import CntkSGD, SGDParams

__all__ = ["TrainLoop", "LearningRateState"]


@dataclass
class TrainLoop:
    """What the minibatch loop of one train/adapt command trains with, read from its config once:
    the network, its optimizer, the reader, the SGD parameters, the parallel method, the device and
    dtype, the KL targets of ``adapt`` (None otherwise), and what the loop reports and checks with:
    the command's name, the reader section's key path (``reader_where``) with its streams'
    ``dim`` values (``dims``, for errors that name file and line), whether progress bars show, and
    the reader section itself (``reader``: streams that disagree are located in its data files), and
    the TensorBoard scalars' writer (``board``, :mod:`.board`, or None) with the minibatches trained
    so far (``minibatches_done``, its step)."""

    name: str
    net: Any
    opt: CntkSGD
    source: Any
    params: SGDParams
    dtype: Any
    device: Any
    dist: Dist
    par: Parallel
    kl: Callable | None = None
    reader_where: str = "reader"
    dims: dict | None = None
    progress: bool | None = None
    reader: Any = None
    board: Any = None
    minibatches_done: int = 0

    @classmethod
    def from_command(cls, command, name: str, **kw) -> "TrainLoop":
        """The loop of ``command`` (``kw``: the objects built from it: net, opt, source, params,
        dtype, device, dist, par, kl)."""
        reader = command("reader") if command.exists("reader") else None
        return cls(name=name, reader_where=key_path(command, "reader"), dims=input_dim_values(reader, kw["net"]),
                   progress=progress_enabled(command, kw["dist"]), reader=reader, **kw)

    def run_epoch(self, epoch: int, lr: float, *, limit: int = 0, quiet: bool = False, mb_size: int = 0,
                  par: Parallel | None = None) -> EvalResult:
        """One epoch (``limit`` > 0: only its first ``limit`` samples; ``quiet``: no output; ``mb_size``:
        the minibatch size when not the schedule's, autoAdjustMinibatch's; ``par``: the parallel method
        when not the loop's own, the searches' exact one)."""
        net, opt, params, dist, device, dtype, kl = self.net, self.opt, self.params, self.dist, self.device, self.dtype, self.kl
        name, where = self.name, self.reader_where
        par = par or self.par
        mb_size = mb_size or params.mb_size(epoch)
        mom = params.momentum_per_sample_of(epoch)
        feats, labels = net.spec.feature_node, net.spec.label_node
        evals = list(getattr(net, "eval_node_names", None) or [net.eval_node_name])
        crit_names = [net.spec.training_criterion, *evals]
        k = len(crit_names)
        acc = torch.zeros(k + 1, dtype=torch.float64, device=device)  # criterion, each eval node, samples
        window = torch.zeros_like(acc)
        show = 0 if quiet else params.num_mbs_to_show_result
        bar = None if quiet else progress_bar(self.progress, total=params.epoch_size or sweep_total(self.source),
                                              desc=f"Epoch[{epoch + 1} of {params.max_epochs}]")
        it = iter(epoch_minibatches(self.source, minibatch_size=mb_size, epoch_size=params.epoch_size, epoch=epoch, dist=dist))
        t0 = time.perf_counter()
        n_mb, first = 0, 1
        net.train()
        try:
            while True:
                # under torch.distributed epoch_minibatches yields the same number of minibatches on
                # every process (the global sample count decides the end), so all end together and
                # every process takes part in each update, data or not
                mb = next(it, None)
                if mb is None:
                    break
                opt.zero_grad()
                par.begin_minibatch(epoch)              # gradient buckets go out during the backward pass
                t_mb = time.perf_counter()
                stats = torch.zeros(k + 1, dtype=torch.float64, device=device)
                if mb:
                    t = batch_tensors(mb, [feats, labels], dtype, device, required=[feats, labels], where=where)
                    feed_layout(net, mb, feats, device)
                    check_batch(net, t, where, self.reader, dims=self.dims)
                    x, y = t[feats], t[labels]
                    if kl is not None and x.shape[0]:
                        y = kl(x, y)
                    if x.shape[0]:
                        with torch_errors(name, (feats, x), (labels, y)):   # torch's own error, named
                            hlast = net(x)
                            loss = net.criterion(hlast, y)
                            loss.backward()
                        stats[0] = loss.detach().to(torch.float64)
                        if len(evals) == 1:
                            stats[1] = net.evaluation(hlast.detach(), y).to(torch.float64)
                        else:
                            stats[1:k] = torch.stack(net.evaluations(hlast.detach(), y)).to(torch.float64)
                        stats[k] = float(x.shape[0])
                par.time_minibatch(time.perf_counter() - t_mb, epoch)
                stats, n_step = par.aggregate(stats, epoch)
                n = int(stats[k].item())
                if n == 0:
                    continue
                opt.step(n_step, lr, mom)
                par.after_update(epoch)
                acc += stats
                window += stats
                n_mb += 1
                if bar is not None:
                    bar.update(n)
                if show and n_mb % show == 0:
                    w = window.tolist()
                    report(f" Epoch[{epoch + 1} of {params.max_epochs}]-Minibatch[{first:4d}-{n_mb:4d}]: "
                           + fmt_criteria(dict(zip(crit_names, w[:k])), int(w[k]), percent_nodes(net)), dist=dist)
                    if self.board is not None:
                        self.board.window(self.minibatches_done + n_mb, dict(zip(crit_names, w[:k])), int(w[k]),
                                          percent_nodes(net))
                    window.zero_()
                    first = n_mb + 1
                if limit and acc[k].item() >= limit:
                    break
        finally:
            if hasattr(it, "close"):
                it.close()
            if bar is not None:
                bar.close()
        a = acc.tolist()
        res = EvalResult(totals=dict(zip(crit_names, a[:k])), samples=int(a[k]), minibatches=n_mb,
                         percent=percent_nodes(net))
        if res.samples == 0:
            raise CntkioError(f"{name}: epoch {epoch + 1} read no samples (is the reader's data empty?)")
        if quiet:
            return res
        secs = res.seconds = time.perf_counter() - t0
        self.minibatches_done += n_mb
        report(f"Finished Epoch[{epoch + 1} of {params.max_epochs}]: [Training] {res}; "
               f"learningRatePerSample = {lr:.8g}; epochTime = {secs:.3f}s; "
               f"throughput = {res.samples / secs if secs > 0 else 0.0:.1f} samples/s", dist=dist)
        return res

    def trial_runner(self, epoch: int, samples: int):
        """``trial(rate, mb_size)``: the training criterion per sample of ``samples`` samples of
        ``epoch`` trained at ``rate`` (and ``mb_size``, None for the schedule's), then the network, the
        optimizer and the random generators put back as they were: the learning-rate and minibatch-size
        searches' trial epochs (their statistics aggregated exactly across processes)."""
        net, opt, device = self.net, self.opt, self.device
        tensors = [p for p in net.parameters() if p.requires_grad]
        exact = Parallel(ParallelParams(), self.dist, tensors, opt)
        saved = (copy.deepcopy(net.state_dict()), copy.deepcopy(opt.state_dict()), torch.get_rng_state(),
                 torch.cuda.get_rng_state_all() if device.type == "cuda" else None)

        def trial(rate: float, mb_size: int | None) -> float:
            extra = {} if mb_size is None else {"mb_size": mb_size}
            res = self.run_epoch(epoch, rate, limit=samples, quiet=True, par=exact, **extra)
            net.load_state_dict(saved[0])
            opt.load_state_dict(saved[1])
            torch.set_rng_state(saved[2])
            if saved[3] is not None:
                torch.cuda.set_rng_state_all(saved[3])
            return res.totals[net.spec.training_criterion] / res.samples
        return trial


    def search_learning_rate(self, epoch: int, lr_state: LearningRateState) -> float:
        """``autoAdjustLR = SearchBeforeEpoch``: CNTK's search. Each trial trains the epoch's first
        ``numMiniBatch4LRSearch`` minibatches from the current model and SGD state with one rate, takes
        the average training criterion, and restores model, SGD state and random state. The reference
        is a trial with rate 0, raised towards the previous epoch's criterion (weight
        ``sqrt(trial samples / epochSize)``, 0.3 for epochSize = 0). The rate starts at the largest of
        the last ``numPrevLearnRates`` chosen rates / 0.618**2 (none yet: 1/8/0.618/sqrt(minibatchSize))
        and shrinks by 0.618 until a trial is no worse than the reference (or the rate is below 0.3 x
        minLearningRatePerSample). In the first ``numBestSearchEpoch`` epochs a search between
        0.01/minibatchSize and that rate then keeps the better side, moving the worse end by 0.618,
        until the ends are within a factor 1.2."""
        params, name, dist = self.params, self.name, self.dist
        a = params.auto_adjust
        mb = params.mb_size(epoch)
        samples = params.search_samples(epoch)        # CNTK 2.7's numSamples4Search (numMiniBatch4LRSearch x mb)
        trial_epoch = self.trial_runner(epoch, samples)

        def trial(rate: float) -> float:
            return trial_epoch(rate, None)

        base = trial(0.0)
        prev = base if math.isinf(lr_state.prev) else lr_state.prev
        ratio = math.sqrt(samples / params.epoch_size) if params.epoch_size else 0.3
        base = max(ratio * prev + (1 - ratio) * base, base)
        largest = max(lr_state.prev_lrs[-a.num_prev_learn_rates:], default=-1.0)
        rate = largest / 0.618 / 0.618 if largest > 0 else 1.0 / 8.0 / 0.618 / math.sqrt(mb)
        floor = params.min_learning_rate_per_sample * 0.3
        while True:
            rate *= 0.618
            if rate < 1e-30:
                raise CntkioError(f"{name}: SearchBeforeEpoch found no learning rate for epoch {epoch + 1}: the "
                                  "criterion of every trial is not a number (is the model already NaN?)")
            crit = trial(rate)
            if not (math.isnan(crit) or (crit > base and rate > floor)):
                break
        best = rate
        if epoch < a.num_best_search_epoch:
            left, right, right_crit = 0.01 / mb, rate, crit
            left_crit = trial(left)
            while right > left * 1.2:
                if right_crit > left_crit:
                    right *= 0.618
                    right_crit = trial(right)
                else:
                    left /= 0.618
                    left_crit = trial(left)
            best = left if left_crit < right_crit else right
        lr_state.prev_lrs = (lr_state.prev_lrs + [best])[-a.num_prev_learn_rates:]
        report(f"{name}: SearchForBestLearnRate Epoch[{epoch + 1}]: best learningRatePerSample = {best:.10g}, "
               f"baseCriterion = {base:.10g}", dist=dist)
        return best


    def adapt_minibatch_size(self, epoch: int, lr: float, lr_adjustment: float, lr_state: LearningRateState) -> int:
        """``autoAdjustMinibatch = true``: CNTK's adaptive minibatch sizing (rule in :mod:`.mbsearch`);
        each trial trains the epoch's first ``numSamples4Search`` samples with rate ``lr`` from the
        current model, SGD state and random state and restores them."""
        params, name, dist = self.params, self.name, self.dist
        a = params.auto_adjust
        b = sizing_bounds(epoch, params.mb_size(epoch), lr_state.prev_mb, params.lr_per_sample(epoch),
                          params.lr_per_sample(0), lr_adjustment, a.mb_tuning_frequency, a.mb_tuning_max)
        if b.reset:
            report(f"{name}: Before Epoch[2], previous minibatchSize {lr_state.prev_mb} is considered invalid -> "
                   "resetting", dist=dist)
        if b.keep is not None:
            report(f"{name}: AdaptiveMinibatchSearch: search for a better minibatchSize in epoch {epoch + 1} skipped, "
                   f"keeping minibatchSize of {b.keep}", dist=dist)
            return b.keep
        samples = params.search_samples(epoch)
        trial_epoch = self.trial_runner(epoch, samples)

        def trial(size: int) -> float:
            return trial_epoch(lr, size)

        report(f"{name}: AdaptiveMinibatchSearch Epoch[{epoch + 1}]: evaluating minibatchSizes "
               f"{round_to_64(b.low)}..{round_to_64(b.high)}", dist=dist)
        chosen = search_minibatch_size(b.low, b.high, trial, a.mb_search_margin,
                                       log=lambda m: report(f"{name}: AdaptiveMinibatchSearch Epoch[{epoch + 1}]: {m}",
                                                            dist=dist))
        report(f"{name}: AdaptiveMinibatchSearch Epoch[{epoch + 1}]: search successful, new minibatchSize is {chosen}",
               dist=dist)
        return chosen


class LearningRateState:
    """The learning rate across epochs: the schedule while it lasts; after it, with
    ``autoAdjustLR=AdjustAfterEpoch``, CNTK's rule: every ``learnRateAdjustInterval`` epochs the
    average of the control criterion (training criterion, or the cvReader's with
    ``useCVSetControlLRIfCVExists``; the evaluation criterion with ``useEvalCriterionControlLR``)
    is compared with the previous one; if it got worse the best model is reloaded
    (``loadBestModel``); if it improved by at most ``reduceLearnRateIfImproveLessThan`` (relative)
    the rate is multiplied by ``learnRateDecreaseFactor``, if by more than
    ``increaseLearnRateIfImproveMoreThan`` by ``learnRateIncreaseFactor``."""

    def __init__(self) -> None:
        self.lr: float | None = None
        self.prev = math.inf
        self.avg = math.inf
        self.not_counted = 0
        self.prev_lrs: list[float] = []         # SearchBeforeEpoch: the rates it chose, newest last
        self.prev_mb = 0                        # autoAdjustMinibatch: the previous chosen size (CNTK's checkpoint)

    def state(self) -> dict:
        return {"lr": self.lr, "prev": self.prev, "avg": self.avg, "not_counted": self.not_counted,
                "prev_lrs": list(self.prev_lrs), "prev_mb": self.prev_mb}

    def load(self, state) -> None:
        if state:
            self.lr, self.prev, self.avg = state["lr"], state["prev"], state["avg"]
            self.not_counted = int(state.get("not_counted", 0))
            self.prev_lrs = list(state.get("prev_lrs", []))
            self.prev_mb = int(state.get("prev_mb", self.prev_mb))

    def learning_rate(self, params: SGDParams, epoch: int) -> float | None:
        """The rate of ``epoch``; None when SearchBeforeEpoch must search it."""
        a = params.auto_adjust
        if epoch < params.lr_schedule_length or a.method == "none":
            self.lr = params.lr_per_sample(epoch)
        elif a.search:
            return None
        elif self.lr is None:
            self.lr = params.lr_per_sample(epoch)
        return self.lr

    def after_epoch(self, params: SGDParams, epoch: int, res: EvalResult, cv, net, opt, model_path: str,
                    device, dtype, dist: Dist, name: str) -> bool:
        a = params.auto_adjust
        if a.search:
            self.prev = list(res.averages.values())[0]       # the search's reference criterion
            return False
        if not a.active:
            return False
        source = cv if (cv is not None and a.use_cv) else res
        values = list(source.averages.values())
        crit = values[1] if a.use_eval and len(values) > 1 else values[0]
        since = epoch % a.adjust_interval + 1
        if math.isinf(self.avg):
            self.avg = crit
        else:
            self.avg = ((since - 1 - self.not_counted) * self.avg + crit) / (since - self.not_counted)
        loaded = False
        if params.lr_schedule_length <= epoch and since == a.adjust_interval:
            prev, avg = self.prev, self.avg
            if math.isnan(avg) or (prev - avg < 0 and not math.isinf(prev)):
                if a.load_best_model:
                    best = epoch_model_path(model_path, epoch + 1 - a.adjust_interval, params.max_epochs)
                    mf = load_model(best, device=device, dtype=dtype)
                    net.load_state_dict(mf.network.state_dict())
                    opt.load_state_dict(mf.optimizer)
                    saved = (mf.optimizer or {}).get("lr_state") or {}
                    self.lr = saved.get("lr", self.lr)
                    self.prev = saved.get("prev", self.prev)
                    self.prev_mb = int(saved.get("prev_mb", self.prev_mb))
                    report(f"{name}: loading (rolling back to) previous model with best training-criterion value: "
                           f"{best}", dist=dist)
                    loaded = True
            prev = self.prev
            if math.isnan(avg) or (not math.isinf(prev) and prev - avg <= a.reduce_if_improve_less_than * prev):
                self.lr *= a.decrease_factor
                report(f"{name}: learnRatePerSample reduced to {self.lr:.8g}", dist=dist)
            elif not math.isinf(prev) and prev - avg > a.increase_if_improve_more_than * prev:
                self.lr *= a.increase_factor
                report(f"{name}: learnRatePerSample increased to {self.lr:.8g}", dist=dist)
        elif math.isnan(self.avg):
            raise CntkioError(f"{name}: the training criterion is not a number (NaN) after epoch {epoch + 1}")
        if not loaded and since == a.adjust_interval:
            self.prev = self.avg
            self.not_counted = 0
        return loaded
