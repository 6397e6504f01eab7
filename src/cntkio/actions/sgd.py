"""The ``SGD`` section: CNTK's per-sample SGD and its options, as PyTorch update rules.

CNTK's criteria are sums over the samples of a minibatch and its learning rates are per sample, so
an update is ``lr_per_sample * sum_of_gradients``; ``learningRatesPerMB`` is converted with the
minibatch size of the epoch (``lr_per_sample = lr_per_MB / minibatchSize``). Momentum is per sample
too: ``momentumPerMB`` m gives ``m ** (1/minibatchSize)`` per sample, ``momentumAsTimeConstant`` T
gives ``exp(-1/T)``, and a minibatch of ``n`` samples uses ``momentum_per_sample ** n``.

One update of a minibatch of ``n`` samples, in CNTK's order (``SGD::UpdateWeights``):

1. ``clippingThresholdPerSample`` t: each gradient element truncated to ``±t*n``
   (``gradientClippingWithTruncation=true``) or the parameter's gradient rescaled to 2-norm
   ``t*n`` (``false``);
2. ``L2RegWeight`` w: ``w * n * W`` added to the gradient;
3. the update of ``gradUpdateType``:

   * ``None`` (default): unit-gain momentum (``unitGain=true``, default; ``ug = 1-m``, else 1)::

         smoothed = m * smoothed + ug * lr * g ;  W -= smoothed                     (useNAG=false)
         W -= m * smoothed_new + ug * lr * g                                         (useNAG=true)

   * ``AdaGrad``: ``acc += g*g``; ``g /= sqrt(acc + 1e-16)``; ``W -= lr / ave * g`` where ``ave``
     is the mean over the parameter of ``1/sqrt(acc + 1e-16)`` (``normWithAveMultiplier=true``,
     default) or 1; no momentum;
   * ``RmsProp``: CNTK's sign-adaptive RMSProp: ``avar = gamma*avar + (1-gamma)*g*g``; a
     per-element step grows by ``rms_wgt_inc`` (up to ``rms_wgt_max``) while the gradient keeps
     its sign, else shrinks by ``rms_wgt_dec`` (down to ``rms_wgt_min``); ``g *= step /
     sqrt(avar + 1e-6)``; ``W -= lr / ave * g`` (``ave`` the mean multiplier as for AdaGrad);
     the first update starts ``avar`` at ``g*g`` and the steps at 0.02;
   * ``FSAdaGrad``: AdaGrad with a decaying square average (time constant 720000 samples) and a
     target denominator of 1, then unit-gain momentum (CNTK's legacy SGD constants);

4. ``gaussianNoiseInjectStd`` s: Gaussian noise of deviation s added to the weights;
5. ``L1RegWeight`` l: proximal step, every weight soft-thresholded by ``lr * l * n``.

torch.optim is not used for these rules: its SGD momentum is not unit-gain and does not rescale
with the minibatch size, its Adagrad and RMSprop put epsilon elsewhere and know neither the mean
multiplier nor the sign-adaptive step sizes; the tests check each rule against torch.optim where
they coincide (classic momentum, Nesterov, AdaGrad without the multiplier).

Every key of the section is declared in :data:`SGD_KEYS`: honoured, accepted with one warning
(an option about CNTK's memory management with no effect on the result), or refused with an
error naming the key when set to a value that would change training in a way cntkio does not do.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..integrations.torch_backend import torch

from .._log import get_logger
from ..errors import ConfigError, NotImplementedInCntkio
from ._params import get_bool, get_float, get_int, get_schedule, get_str, has, key_path, schedule_value

__all__ = ["SGDParams", "CntkSGD", "AutoAdjust", "SGD_KEYS", "INFO_KEYS", "NOTED_KEYS", "config_error",
           "set_dropout_rate", "GRAD_UPDATE_TYPES"]

_log = get_logger("actions.sgd")

GRAD_UPDATE_TYPES = ("none", "adagrad", "rmsprop", "fsadagrad")

#: FSAdaGrad's constants in CNTK's legacy SGD (not configurable there either)
FSADAGRAD_VARIANCE_TIME_CONSTANT = 2 * 3600 * 100
FSADAGRAD_TARGET_AV_DENOM = 1.0

#: keys of the SGD section (and its AutoAdjust sub-section) that the trainer honours
SGD_KEYS = (
    "modelPath", "minibatchSize", "epochSize", "maxEpochs", "learningRatesPerMB", "learningRatesPerSample",
    "minLearningRatePerSample", "momentumPerMB", "momentumPerSample", "momentumAsTimeConstant", "unitGain",
    "useNAG", "L2RegWeight", "L1RegWeight", "clippingThresholdPerSample", "gradientClippingWithTruncation",
    "gaussianNoiseInjectStd", "numMBsToShowResult", "gradUpdateType", "normWithAveMultiplier", "rms_wgt_inc",
    "rms_wgt_dec", "rms_wgt_max", "rms_wgt_min", "rms_gamma", "dropoutRate", "AutoAdjust", "autoAdjustLR",
    "reduceLearnRateIfImproveLessThan", "learnRateDecreaseFactor", "increaseLearnRateIfImproveMoreThan",
    "learnRateIncreaseFactor", "loadBestModel", "learnRateAdjustInterval", "useCVSetControlLRIfCVExists",
    "useEvalCriterionControlLR", "numPrevLearnRates", "autoAdjustMinibatch", "trainCriterionNodeName",
    "evalCriterionNodeName", "parallelTrain", "traceLevel", "numSamples4Search", "keepCheckPointFiles", "truncated",
    "doGradientCheck", "adaptationRegType", "adaptationRegWeight",
)

#: keys accepted with one warning (at every traceLevel): they steer CNTK's memory use or files, not the result
INFO_KEYS = {
    "maxTempMemSizeInSamplesForCNN": "PyTorch sizes its own convolution workspace",
    "numSubminibatches": "a minibatch is computed in one piece (the summed gradient is the same)",
    "maxSamplesInRAM": "a minibatch is computed in one piece (the summed gradient is the same)",
    "keepCheckPointFiles": "cntkio keeps the checkpoint (SGD state, reader position) inside every epoch's "
                           "model file; there are no separate .ckp files to keep or delete",
    "useAllDataForPreComputedNode": "pre-computed nodes are always computed over one whole sweep",
    "disableWkInBatchNormal": "BatchNormalization parameters take L2RegWeight like the others in cntkio",
    "prefetchTrainingData": "cntkio's readers prefetch on their own threads",
}

#: keys refused when set to anything but their "off" values, with why
_REFUSED = {
    "doGradientCheck": (("false", "f", "0", "no"), "numerical gradient checking is not implemented in cntkio "
                        "(PyTorch's torch.autograd.gradcheck serves)"),
    "truncated": (("false", "f", "0", "no"), "truncated BPTT is the reader's option in cntkio: set "
                  "truncated=true (and truncationLength) in the reader section; SGD's truncated=true is "
                  "accepted only with the reader's truncated=true (as CNTK requires: 'The Truncated option "
                  "is duplicated in the reader and must be set to the same there', SGD.h)"),
}

def _reader_truncated(command) -> bool:
    """Whether the command's reader reads truncated (its own ``truncated``, or one it inherits)."""
    if command is None or not has(command, "reader"):
        return False
    reader = command("reader")
    return hasattr(reader, "exists") and reader.exists("truncated") and \
        (get_str(reader, "truncated") or "").lower() not in ("false", "f", "0", "no")


#: sequence-training keys (SequenceWithSoftmax criteria, which cntkio does not build)
_SEQUENCE_KEYS = ("hsmoothingWeight", "frameDropThresh", "doReferenceAlign", "seqGammarAMF", "seqGammarLMF",
                  "seqGammarWP", "seqGammarBMMIFactor", "seqGammarUsesMBR")


#: SearchBeforeEpoch / autoAdjustMinibatch keys: read (a warning) when those are off
_SEARCH_KEYS = ("numMiniBatch4LRSearch", "numBestSearchEpoch", "minibatchSizeTuningFrequency",
                "minibatchSizeTuningMax", "minibatchSearchCriterionErrorMargin")

#: keys accepted with a warning of their own (the sequence-training and search keys)
NOTED_KEYS = _SEQUENCE_KEYS + _SEARCH_KEYS


def config_error(cfg, key: str, message: str, hint: str | None = None) -> ConfigError:
    """A ConfigError naming ``key`` of ``cfg`` with the file and line where it was written."""
    v = cfg(key) if cfg is not None and cfg.exists(key) else None
    return ConfigError(message, path=getattr(v, "path", None) or key_path(cfg, key),
                       file=getattr(v, "file", None), line=getattr(v, "line", None), hint=hint)


def _refused(cfg, key: str, message: str) -> NotImplementedInCntkio:
    v = cfg(key)
    where = f"{v.file}:{v.line}: " if getattr(v, "file", None) and getattr(v, "line", None) else ""
    return NotImplementedInCntkio(f"{where}{key_path(cfg, key)}={get_str(cfg, key)}: {message}")


@dataclass
class AutoAdjust:
    """``AutoAdjust`` (CNTK's names and defaults); ``method`` is ``none``, ``adjustafterepoch`` or
    ``searchbeforeepoch``."""

    method: str = "none"
    reduce_if_improve_less_than: float = 0.0
    decrease_factor: float = 0.618
    increase_if_improve_more_than: float = math.inf
    increase_factor: float = 1.382
    load_best_model: bool = True
    adjust_interval: int = 1
    use_cv: bool = True
    use_eval: bool = False
    num_prev_learn_rates: int = 5
    num_mb_search: list = field(default_factory=lambda: [500.0])
    num_best_search_epoch: int = 1
    adjust_minibatch: bool = False                       # autoAdjustMinibatch (actions/mbsearch.py)
    mb_tuning_frequency: int = 1
    mb_tuning_max: int = 1048576
    mb_search_margin: int = 1                            # percent
    num_samples_search: list | None = None               # numSamples4Search (None: numMiniBatch4LRSearch x mb)
    num_mb_search_given: bool = False                    # numMiniBatch4LRSearch written in the config

    @property
    def active(self) -> bool:
        return self.method == "adjustafterepoch"

    @property
    def search(self) -> bool:
        return self.method == "searchbeforeepoch"


@dataclass
class SGDParams:
    """The SGD parameters of a train/adapt command, resolved (schedules are per epoch)."""

    minibatch_size: list[int] = field(default_factory=lambda: [256])
    epoch_size: int = 0
    max_epochs: int = 1
    learning_rates_per_sample: list[float] | None = None
    learning_rates_per_mb: list[float] | None = None
    momentum_per_sample: list[float] | None = None
    momentum_per_mb: list[float] | None = None
    momentum_as_time_constant: list[float] | None = None
    unit_gain: bool = True
    use_nag: bool = False
    l2_reg_weight: float = 0.0
    l1_reg_weight: float = 0.0
    gaussian_noise_inject_std: float = 0.0
    clipping_threshold_per_sample: float = math.inf
    clipping_with_truncation: bool = True
    num_mbs_to_show_result: int = 10
    grad_update_type: str = "none"
    norm_with_ave_multiplier: bool = True
    rms: tuple = (1.2, 0.75, 10.0, 0.1, 0.99)         # inc, dec, max, min, gamma
    dropout_rate: list[float] | None = None
    min_learning_rate_per_sample: float = 1e-9
    auto_adjust: AutoAdjust = field(default_factory=AutoAdjust)
    train_criterion_node: str | None = None
    eval_criterion_node: str | None = None

    def mb_size(self, epoch: int) -> int:
        """Minibatch size of 0-based ``epoch``."""
        return int(schedule_value(self.minibatch_size, epoch))

    @property
    def lr_schedule_length(self) -> int:
        """Epochs the learning-rate schedule gives explicitly (AutoAdjust takes over after them)."""
        s = self.learning_rates_per_sample if self.learning_rates_per_sample is not None else self.learning_rates_per_mb
        return len(s) if s is not None else 0

    def lr_per_sample(self, epoch: int) -> float:
        if self.learning_rates_per_sample is not None:
            return float(schedule_value(self.learning_rates_per_sample, epoch))
        return float(schedule_value(self.learning_rates_per_mb, epoch)) / self.mb_size(epoch)

    def search_samples(self, epoch: int) -> int:
        """The samples of one minibatch-size trial of 0-based ``epoch`` (CNTK's: numMiniBatch4LRSearch
        x minibatchSize entry by entry when that key is given, else numSamples4Search, else 500 x
        minibatchSize; the last entry repeats; at most epochSize)."""
        a = self.auto_adjust
        if a.num_mb_search_given:           # CNTK: the deprecated key wins over numSamples4Search
            table = [int(v) * self.mb_size(k) for k, v in enumerate(a.num_mb_search)]
        elif a.num_samples_search is not None:
            table = [int(v) for v in a.num_samples_search]
        else:
            table = [500 * int(m) for m in self.minibatch_size]
        n = int(schedule_value(table, epoch))
        return min(n, self.epoch_size) if self.epoch_size else n

    def momentum_per_sample_of(self, epoch: int) -> float:
        if self.momentum_per_sample is not None:
            return float(schedule_value(self.momentum_per_sample, epoch))
        if self.momentum_as_time_constant is not None:
            tc = float(schedule_value(self.momentum_as_time_constant, epoch))
            return 0.0 if tc == 0 else math.exp(-1.0 / tc)
        m = float(schedule_value(self.momentum_per_mb if self.momentum_per_mb is not None else [0.9], epoch))
        return m ** (1.0 / self.mb_size(epoch)) if m > 0 else 0.0

    def dropout_of(self, epoch: int) -> float | None:
        """``dropoutRate`` of 0-based ``epoch``; None when the section does not set it (the
        network's Dropout nodes keep their own rates)."""
        return None if self.dropout_rate is None else float(schedule_value(self.dropout_rate, epoch))

    def make_optimizer(self, params) -> "CntkSGD":
        return CntkSGD(params, unit_gain=self.unit_gain, l2_reg_weight=self.l2_reg_weight,
                       l1_reg_weight=self.l1_reg_weight, clipping_threshold_per_sample=self.clipping_threshold_per_sample,
                       clipping_with_truncation=self.clipping_with_truncation, grad_update_type=self.grad_update_type,
                       norm_with_ave_multiplier=self.norm_with_ave_multiplier, use_nag=self.use_nag, rms=self.rms,
                       gaussian_noise_inject_std=self.gaussian_noise_inject_std)

    @classmethod
    def from_config(cls, sgd, command) -> "SGDParams":
        """Read the ``SGD`` section (``sgd``; parameters also found up the chain, e.g. in the
        command section ``command`` where CNTK configs often put ``minibatchSize``/``epochSize``)."""
        cfg = sgd if sgd is not None else command
        lr_mb = get_schedule(cfg, "learningRatesPerMB", None)
        lr_s = get_schedule(cfg, "learningRatesPerSample", None)
        if lr_mb is not None and lr_s is not None:
            raise ConfigError("both learningRatesPerSample and learningRatesPerMB are given",
                              path=key_path(cfg, "learningRatesPerMB"), hint="keep only one of them")
        adjust = _auto_adjust(cfg)
        if lr_mb is None and lr_s is None and not adjust.search:
            raise ConfigError("no learning rate given", path=key_path(cfg, "learningRatesPerMB"),
                              hint="set learningRatesPerMB or learningRatesPerSample, e.g. 0.1*2:0.05")
        moms = {k: get_schedule(cfg, k, None) for k in ("momentumPerMB", "momentumPerSample", "momentumAsTimeConstant")}
        given = [k for k, v in moms.items() if v is not None]
        if len(given) > 1:
            raise ConfigError(f"more than one momentum is given ({', '.join(given)})",
                              path=key_path(cfg, given[1]), hint="keep only one of them")
        for key, (off, why) in _REFUSED.items():
            sub = _adjust_section(cfg) if key == "autoAdjustMinibatch" else cfg
            if sub.exists(key) and (get_str(sub, key) or "").lower() not in off:
                if key == "truncated" and _reader_truncated(command):
                    continue        # the reader packs truncated: minibatchSize steps per row, as CNTK
                raise _refused(sub, key, why)
        for key, why in INFO_KEYS.items():
            if cfg.exists(key):
                _log.warning("%s=%s is accepted and has no effect in cntkio: %s", key_path(cfg, key),
                          get_str(cfg, key), why)
        for key in _SEQUENCE_KEYS:
            if cfg.exists(key):
                _log.warning("%s is accepted and has no effect in cntkio: it applies to SequenceWithSoftmax "
                          "criteria (sequence training), which cntkio does not build", key_path(cfg, key))
        gut = get_str_lower(cfg, "gradUpdateType", "none") or "none"
        if gut not in GRAD_UPDATE_TYPES:
            raise config_error(cfg, "gradUpdateType", f"unknown gradUpdateType {get_str(cfg, 'gradUpdateType')!r}",
                               hint="one of None, AdaGrad, RmsProp, FSAdaGrad")
        mbs = [int(v) for v in get_schedule(cfg, "minibatchSize", "256")]
        if any(m <= 0 for m in mbs):
            raise config_error(cfg, "minibatchSize", f"minibatchSize must be > 0, found {mbs}")
        dropout = get_schedule(cfg, "dropoutRate", None)
        if dropout is not None and not all(0 <= d < 1 for d in dropout):
            raise config_error(cfg, "dropoutRate", f"dropout rates must be in [0, 1), found {dropout}")
        rms = tuple(get_float(cfg, k, d) for k, d in (("rms_wgt_inc", 1.2), ("rms_wgt_dec", 0.75),
                                                      ("rms_wgt_max", 10.0), ("rms_wgt_min", 0.1),
                                                      ("rms_gamma", 0.99)))
        p = cls(
            minibatch_size=mbs,
            epoch_size=get_int(cfg, "epochSize", 0),
            max_epochs=get_int(cfg, "maxEpochs"),
            learning_rates_per_sample=lr_s, learning_rates_per_mb=lr_mb,
            momentum_per_sample=moms["momentumPerSample"], momentum_per_mb=moms["momentumPerMB"],
            momentum_as_time_constant=moms["momentumAsTimeConstant"],
            unit_gain=get_bool(cfg, "unitGain", True),
            use_nag=get_bool(cfg, "useNAG", False),
            l2_reg_weight=get_float(cfg, "L2RegWeight", 0.0),
            l1_reg_weight=get_float(cfg, "L1RegWeight", 0.0),
            gaussian_noise_inject_std=get_float(cfg, "gaussianNoiseInjectStd", 0.0),
            clipping_threshold_per_sample=get_float(cfg, "clippingThresholdPerSample", math.inf),
            clipping_with_truncation=get_bool(cfg, "gradientClippingWithTruncation", True),
            num_mbs_to_show_result=get_int(cfg, "numMBsToShowResult", 10),
            grad_update_type=gut,
            norm_with_ave_multiplier=get_bool(cfg, "normWithAveMultiplier", True),
            rms=rms,
            dropout_rate=dropout,
            min_learning_rate_per_sample=get_float(cfg, "minLearningRatePerSample", 1e-9),
            auto_adjust=adjust,
            train_criterion_node=get_str(cfg, "trainCriterionNodeName", None),
            eval_criterion_node=get_str(cfg, "evalCriterionNodeName", None),
        )
        if p.max_epochs <= 0:
            raise config_error(cfg, "maxEpochs", f"maxEpochs must be > 0, found {p.max_epochs}")
        if p.epoch_size < 0:
            raise config_error(cfg, "epochSize", f"epochSize must be >= 0, found {p.epoch_size}")
        for key, value in (("L1RegWeight", p.l1_reg_weight), ("L2RegWeight", p.l2_reg_weight),
                           ("gaussianNoiseInjectStd", p.gaussian_noise_inject_std)):
            if value < 0:
                raise config_error(cfg, key, f"{key} must be >= 0, found {value}")
        if p.auto_adjust.adjust_minibatch:
            sub = _adjust_section(cfg)
            if p.lr_schedule_length == 0:
                raise config_error(sub, "autoAdjustMinibatch", "autoAdjustMinibatch needs a learning-rate schedule "
                                   "(CNTK scales the search range by the epoch's scheduled rate over the first "
                                   "epoch's)", hint="give learningRatesPerSample or learningRatesPerMB")
            if p.max_epochs > len(p.minibatch_size) and p.minibatch_size[-1] < 32:
                raise config_error(cfg, "minibatchSize", f"autoAdjustMinibatch searches from the last minibatchSize "
                                   f"entry ({p.minibatch_size[-1]}) and rounds every trial size to a multiple of 64, "
                                   "so an entry under 32 rounds to 0", hint="minibatchSize >= 32")
        if p.use_nag and p.grad_update_type not in ("none",):
            raise config_error(cfg, "useNAG", f"useNAG applies to gradUpdateType=None (CNTK's momentum SGD), "
                               f"not to {get_str(cfg, 'gradUpdateType')}")
        return p


def _adjust_section(cfg):
    return cfg("AutoAdjust") if cfg.exists("AutoAdjust") else cfg     # CNTK's sub-section


def _auto_adjust(cfg) -> AutoAdjust:
    sub = _adjust_section(cfg)
    method = get_str_lower(sub, "autoAdjustLR", "none") or "none"
    if method not in ("none", "adjustafterepoch", "searchbeforeepoch"):
        raise config_error(sub, "autoAdjustLR", f"unknown autoAdjustLR {get_str(sub, 'autoAdjustLR')!r}",
                           hint="one of None, AdjustAfterEpoch, SearchBeforeEpoch")
    a = AutoAdjust(
        method=method,
        reduce_if_improve_less_than=get_float(sub, "reduceLearnRateIfImproveLessThan", 0.0),
        decrease_factor=get_float(sub, "learnRateDecreaseFactor", 0.618),
        increase_if_improve_more_than=get_float(sub, "increaseLearnRateIfImproveMoreThan", math.inf),
        increase_factor=get_float(sub, "learnRateIncreaseFactor", 1.382),
        load_best_model=get_bool(sub, "loadBestModel", True),
        adjust_interval=get_int(sub, "learnRateAdjustInterval", 1),
        use_cv=get_bool(sub, "useCVSetControlLRIfCVExists", True),
        use_eval=get_bool(sub, "useEvalCriterionControlLR", False),
        num_prev_learn_rates=get_int(sub, "numPrevLearnRates", 5),
        num_mb_search=get_schedule(sub, "numMiniBatch4LRSearch", "500"),
        num_best_search_epoch=get_int(sub, "numBestSearchEpoch", 1),
        adjust_minibatch=get_bool(sub, "autoAdjustMinibatch", False),
        mb_tuning_frequency=get_int(sub, "minibatchSizeTuningFrequency", 1),
        mb_tuning_max=get_int(sub, "minibatchSizeTuningMax", 1048576),
        mb_search_margin=get_int(sub, "minibatchSearchCriterionErrorMargin", 1),
        num_samples_search=get_schedule(sub, "numSamples4Search", None),
        num_mb_search_given=bool(sub.exists("numMiniBatch4LRSearch")),
    )
    for key, value in (("minibatchSizeTuningFrequency", a.mb_tuning_frequency),
                       ("minibatchSizeTuningMax", a.mb_tuning_max)):
        if value < 1:
            raise config_error(sub, key, f"must be >= 1, found {value}")
    if a.mb_search_margin < 0:
        raise config_error(sub, "minibatchSearchCriterionErrorMargin", f"must be >= 0, found {a.mb_search_margin}")
    if a.num_samples_search is not None and any(v < 1 for v in a.num_samples_search):
        raise config_error(sub, "numSamples4Search", f"must be >= 1, found {a.num_samples_search}")
    if a.num_prev_learn_rates < 1:
        raise config_error(sub, "numPrevLearnRates", f"must be >= 1, found {a.num_prev_learn_rates}")
    if any(v < 1 for v in a.num_mb_search):
        raise config_error(sub, "numMiniBatch4LRSearch", f"must be >= 1, found {a.num_mb_search}")
    if a.adjust_interval < 1:
        raise config_error(sub, "learnRateAdjustInterval", f"must be >= 1, found {a.adjust_interval}")
    if not 0 < a.decrease_factor:
        raise config_error(sub, "learnRateDecreaseFactor", f"must be > 0, found {a.decrease_factor}")
    used = set()
    if a.search:
        used |= {"numMiniBatch4LRSearch", "numSamples4Search", "numBestSearchEpoch"}
    if a.adjust_minibatch:
        used |= {"numMiniBatch4LRSearch", "numSamples4Search", "minibatchSizeTuningFrequency",
                 "minibatchSizeTuningMax", "minibatchSearchCriterionErrorMargin"}
    for key in _SEARCH_KEYS + ("numSamples4Search",):
        if sub.exists(key) and key not in used:
            _log.warning("%s is accepted and has no effect: it belongs to SearchBeforeEpoch/autoAdjustMinibatch, "
                         "which this config does not use", key_path(sub, key))
    return a


def get_str_lower(cfg, key: str, default: str) -> str:
    return (get_str(cfg, key, default) or "").lower()


def set_dropout_rate(net, rate: float) -> int:
    """Set every Dropout node of ``net`` to ``rate`` (CNTK: SGD's dropoutRate drives the network's
    dropout nodes); returns how many nodes there are."""
    count = 0
    setter = getattr(net, "set_dropout_rate", None)
    if setter is not None:
        return int(setter(rate))
    for fn in getattr(net, "_fns", {}).values():
        box = getattr(fn, "dropout_rate", None)
        if box is not None:
            box[0] = float(rate)
            count += 1
    return count


class CntkSGD:
    """CNTK's SGD update over a module's parameters (see the module docstring for the rules).

    ``step(n, lr_per_sample, momentum_per_sample)`` applies one update for a minibatch of ``n``
    samples whose summed-criterion gradients are in ``p.grad``. :meth:`state_dict` /
    :meth:`load_state_dict` store the per-parameter state in model files.
    """

    def __init__(self, params, *, unit_gain: bool = True, l2_reg_weight: float = 0.0, l1_reg_weight: float = 0.0,
                 clipping_threshold_per_sample: float = math.inf, clipping_with_truncation: bool = True,
                 grad_update_type: str = "none", norm_with_ave_multiplier: bool = True, use_nag: bool = False,
                 rms: tuple = (1.2, 0.75, 10.0, 0.1, 0.99), gaussian_noise_inject_std: float = 0.0) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.unit_gain = unit_gain
        self.l2 = float(l2_reg_weight)
        self.l1 = float(l1_reg_weight)
        self.clip = float(clipping_threshold_per_sample)
        self.truncate = bool(clipping_with_truncation)
        self.kind = grad_update_type.lower()
        if self.kind not in GRAD_UPDATE_TYPES:
            raise ValueError(f"unknown gradUpdateType {grad_update_type!r}")
        self.norm_ave = bool(norm_with_ave_multiplier)
        self.nag = bool(use_nag)
        self.rms = tuple(float(v) for v in rms)
        self.noise = float(gaussian_noise_inject_std)
        self.smoothed = [torch.zeros_like(p) for p in self.params]
        # RmsProp: sign of the previous gradient and the step sizes; FSAdaGrad: the momentum
        self.extra = [torch.zeros_like(p) for p in self.params] if self.kind in ("rmsprop", "fsadagrad") else []
        self.steps = [torch.zeros_like(p) for p in self.params] if self.kind == "rmsprop" else []
        self.counts = [0.0] * len(self.params)     # FSAdaGrad's smoothed sample counts; RmsProp: initialised
        self._bufs = [None] * len(self.params)     # RmsProp/FSAdaGrad work tensors (not state)
        self._rms_cache: dict = {}                 # RmsProp: (dtype, device) -> exact multiplier terms
        self.last_update_bytes = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def _clip(self, g: torch.Tensor, n: int) -> torch.Tensor:
        if not math.isfinite(self.clip):
            return g
        limit = self.clip * n
        if self.truncate:
            return g.clamp(-limit, limit)
        norm = torch.linalg.vector_norm(g)
        return g * (limit / norm) if norm > limit else g

    @torch.no_grad()
    def step(self, n: int, lr_per_sample: float, momentum_per_sample: float) -> None:
        if n <= 0:
            return
        m = momentum_per_sample ** n if momentum_per_sample > 0 else 0.0
        ug = (1.0 - m) if self.unit_gain else 1.0
        lr = float(lr_per_sample)
        for i, (p, s) in enumerate(zip(self.params, self.smoothed)):
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            g = self._clip(g, n)
            if self.l2 > 0:
                g = g + (self.l2 * n) * p
            if self.kind == "none":
                s.mul_(m).add_(g, alpha=ug * lr)
                if self.nag:
                    p.sub_(s, alpha=m).sub_(g, alpha=ug * lr)
                else:
                    p.sub_(s)
            elif self.kind == "adagrad":
                s.addcmul_(g, g)
                inv = torch.rsqrt(s + 1e-16)
                step = g * inv
                if self.norm_ave and inv.numel():
                    step.div_(inv.mean())           # a tensor: no device synchronisation
                p.sub_(step, alpha=lr)
            elif self.kind == "rmsprop":
                self._rmsprop(i, p, g, lr)
            else:
                self._fsadagrad(i, p, g, lr, m, ug, n)
            if self.noise > 0:
                p.add_(torch.randn_like(p) * self.noise)
            if self.l1 > 0:
                t = lr * self.l1 * n
                p.copy_(torch.sign(p) * torch.clamp(p.abs() - t, min=0))

    def _scratch(self, i: int, like):
        """A per-parameter work tensor reused by every step (no per-step allocation)."""
        buf = self._bufs[i]
        if buf is None or buf.shape != like.shape or buf.dtype != like.dtype or buf.device != like.device:
            buf = self._bufs[i] = torch.empty_like(like)
        return buf

    def _rmsprop(self, i: int, p, g, lr: float) -> None:
        # The rule of the module docstring, element for element the same arithmetic as the plain
        # formula (tests/actions/test_sgd_update_exact.py), in fewer passes and with no temporaries:
        # two tensors per parameter (the signs state and a work buffer) trade places every step.
        inc, dec, wmax, wmin, gamma = self.rms
        avar, signs, steps = self.smoothed[i], self.extra[i], self.steps[i]
        buf = self._scratch(i, p)
        if not self.counts[i]:
            torch.mul(g, g, out=avar)
            steps.fill_(0.02)
            self.counts[i] = 1.0
        avar.mul_(gamma).addcmul_(g, g, value=1.0 - gamma)
        torch.sign(g, out=buf)                          # the new signs
        signs.mul_(buf)                                 # old * new in {-1, 0, 1}: > 0 where the sign is kept
        factors = self._rms_factors(steps) if inc >= 1.0 >= dec and wmax >= 0.02 else None
        if factors is not None:
            # steps stay in [min, max] after the first update (which starts below min, shrinks and
            # is raised to min), so one clamp of both sides is CNTK's min/max per branch. The
            # multiplier inc or dec is dec + same * (inc - dec) with same = max(old * new, 0) in
            # {0, 1}, which is exactly inc or dec when _rms_factors found inc - dec exact in this
            # dtype (a torch.where on the mask is ten times slower on CPU: a branch per element)
            diff, low = factors
            steps.mul_(signs.clamp_(min=0).mul_(diff).add_(low)).clamp_(wmin, wmax)
        elif inc >= 1.0 >= dec and wmax >= 0.02:
            steps.mul_(torch.where(signs > 0, inc, dec)).clamp_(wmin, wmax)
        else:
            same = signs > 0
            steps.copy_(torch.where(same, torch.clamp(steps * inc, max=wmax), torch.clamp(steps * dec, min=wmin)))
        # the new signs become the state and the old state tensor the work buffer (no copy)
        self.extra[i], self._bufs[i], buf = buf, signs, signs
        a = torch.add(avar, 1e-6, out=buf).rsqrt_().mul_(steps)
        mean = a.mean() if self.norm_ave and a.numel() else None     # a tensor: no device synchronisation
        a.mul_(g)
        if mean is not None:
            a.div_(mean)
        p.sub_(a, alpha=lr)

    def _rms_factors(self, like):
        """(inc - dec, dec) as 0-dim tensors of ``like``'s dtype and device when dec + (inc - dec) is
        inc exactly in that dtype (so that dec + s * (inc - dec) for s in {0, 1} is exactly the
        multiplier torch.where would pick); None when it is not."""
        key = (like.dtype, like.device)
        if key not in self._rms_cache:
            # torch.where(mask, inc, dec) gives the default dtype (float32 multipliers for float64
            # parameters too): the terms are made in that dtype, and used only where the parameter's
            # dtype holds them (not for half precision, which takes the torch.where path)
            dtype = torch.get_default_dtype()
            inc, dec = (torch.tensor(v, dtype=dtype, device=like.device) for v in self.rms[:2])
            diff = inc - dec
            exact = torch.promote_types(like.dtype, dtype) == like.dtype and bool(dec + diff == inc)
            self._rms_cache[key] = (diff, dec) if exact else None
        return self._rms_cache[key]

    def _fsadagrad(self, i: int, p, g, lr: float, m: float, ug: float, n: int) -> None:
        # The rule of the module docstring, the same arithmetic as the plain formula
        # (tests/actions/test_sgd_update_exact.py) in one reused buffer: ada_mul / sqrt(ada) is +inf
        # exactly where ada == 0 (sqrt of the smallest positive float is far above ada_mul / max
        # float), so "1 where ada == 0" is nan_to_num's posinf=1 before the clamp at 10.
        var_m = math.exp(-n / FSADAGRAD_VARIANCE_TIME_CONSTANT)
        self.counts[i] = var_m * self.counts[i] + (1.0 - var_m) * n
        ada_mul = FSADAGRAD_TARGET_AV_DENOM * math.sqrt(self.counts[i])
        ada, mom = self.smoothed[i], self.extra[i]
        buf = self._scratch(i, p)
        ada.mul_(var_m).addcmul_(g, g, value=1.0 - var_m)
        w = torch.sqrt(ada, out=buf).reciprocal_().mul_(ada_mul)       # what ada_mul / tensor computes
        w.nan_to_num_(nan=math.nan, posinf=1.0).clamp_(max=10.0)
        gw = w.mul_(g)
        if m > 0:
            mom.mul_(m).add_(gw, alpha=ug)
            gw = mom
        p.sub_(gw, alpha=lr)

    def state_dict(self) -> dict:
        out = {"smoothed": [s.detach().cpu().clone() for s in self.smoothed], "kind": self.kind,
               "counts": [float(c) for c in self.counts]}
        if self.extra:
            out["extra"] = [s.detach().cpu().clone() for s in self.extra]
        if self.steps:
            out["steps"] = [s.detach().cpu().clone() for s in self.steps]
        return out

    def load_state_dict(self, state: dict) -> None:
        saved = state["smoothed"]
        if len(saved) != len(self.smoothed):
            raise ValueError(f"optimizer state has {len(saved)} tensors, expected {len(self.smoothed)}")
        kind = state.get("kind", "none")
        if kind != self.kind:
            raise ValueError(f"the optimizer state is of gradUpdateType {kind}, this run uses {self.kind}")
        for dst, key in ((self.smoothed, "smoothed"), (self.extra, "extra"), (self.steps, "steps")):
            for s, v in zip(dst, state.get(key, [])):
                if v.shape != s.shape and v.numel() == s.numel():
                    # saved before BrainScript parameters took their kernels' shapes (a bias [n, 1]
                    # now [n], filters [out, in*kh*kw] now [out, in, kh, kw]): same values, in order
                    v = v.reshape(s.shape)
                elif v.shape != s.shape:
                    raise ValueError(f"optimizer state {key}: a tensor of shape {tuple(v.shape)} for a "
                                     f"parameter of shape {tuple(s.shape)}")
                s.copy_(v.to(s.device, s.dtype))
        self.counts = [float(c) for c in state.get("counts", self.counts)]
