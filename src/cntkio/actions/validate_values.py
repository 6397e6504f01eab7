"""The typed values of a command's sections, each checked on its own before work, so that validation
reports every bad value at once (not the first of a section) with the file and line that wrote it.

What it must never do: read a value with another conversion than the action's (the getters of
:mod:`cntkio.actions._params` are the ones the actions use), or report a key that is absent.

:data:`SGD_VALUES` are the SGD section's numbers, flags and schedules (``SGDParams.from_config``
reads them with the same getters; its checks across keys run once these pass);
:data:`ADJUST_VALUES` those of its ``AutoAdjust`` sub-section; :data:`ACTION_VALUES` what each
action reads from its command section when it runs (``minibatchSize`` of a test section, ...).
"""
from __future__ import annotations

from typing import Callable

from ..errors import CntkioError, ConfigError
from ._params import get_bool, get_float, get_int, get_schedule, key_path, minibatch_size

__all__ = ["SGD_VALUES", "ADJUST_VALUES", "ACTION_VALUES", "check_values", "value_error"]


def _int(minimum: int | None = None) -> Callable:
    def check(cfg, key):
        v = get_int(cfg, key)
        if minimum is not None and v is not None and v < minimum:
            raise ConfigError(f"expected an integer >= {minimum}, found {v}", path=key_path(cfg, key))
    return check


def _float(cfg, key) -> None:
    get_float(cfg, key)


def _bool(cfg, key) -> None:
    get_bool(cfg, key)


def _schedule(positive: bool = False) -> Callable:
    def check(cfg, key):
        values = get_schedule(cfg, key)
        if positive and values is not None and any(v <= 0 for v in values):
            raise ConfigError(f"expected values > 0, found {':'.join(f'{v:g}' for v in values)}",
                              path=key_path(cfg, key))
    return check


def _minibatch_size(cfg, key) -> None:
    minibatch_size(cfg)


#: the SGD section's typed keys and their checks (the conversions of SGDParams.from_config)
SGD_VALUES: dict[str, Callable] = {
    "minibatchSize": _schedule(positive=True), "epochSize": _int(0), "maxEpochs": _int(1),
    "learningRatesPerMB": _schedule(), "learningRatesPerSample": _schedule(),
    "minLearningRatePerSample": _float, "momentumPerMB": _schedule(), "momentumPerSample": _schedule(),
    "momentumAsTimeConstant": _schedule(), "unitGain": _bool, "useNAG": _bool, "L2RegWeight": _float,
    "L1RegWeight": _float, "clippingThresholdPerSample": _float, "gradientClippingWithTruncation": _bool,
    "gaussianNoiseInjectStd": _float, "numMBsToShowResult": _int(0), "normWithAveMultiplier": _bool,
    "rms_wgt_inc": _float, "rms_wgt_dec": _float, "rms_wgt_max": _float, "rms_wgt_min": _float,
    "rms_gamma": _float, "dropoutRate": _schedule(),
}

#: the AutoAdjust sub-section's typed keys (read from the SGD section when there is none)
ADJUST_VALUES: dict[str, Callable] = {
    "reduceLearnRateIfImproveLessThan": _float, "learnRateDecreaseFactor": _float,
    "increaseLearnRateIfImproveMoreThan": _float, "learnRateIncreaseFactor": _float, "loadBestModel": _bool,
    "learnRateAdjustInterval": _int(1), "useCVSetControlLRIfCVExists": _bool, "useEvalCriterionControlLR": _bool,
    "numPrevLearnRates": _int(1), "numMiniBatch4LRSearch": _schedule(positive=True), "numBestSearchEpoch": _int(0),
    "autoAdjustMinibatch": _bool, "minibatchSizeTuningFrequency": _int(1), "minibatchSizeTuningMax": _int(1),
    "minibatchSearchCriterionErrorMargin": _int(0), "numSamples4Search": _schedule(positive=True),
}

_EVAL = {"minibatchSize": _minibatch_size, "epochSize": _int(0), "numMBsToShowResult": _int(0)}
_EVERY = {"progressBar": _bool, "numCPUThreads": _int(0)}

#: what each action reads from its command section when it runs, beyond what validation reads
#: through the action's own code (the train actions' SGD values are SGD_VALUES)
ACTION_VALUES: dict[str, dict[str, Callable]] = {
    "train": {**_EVERY, "makeMode": _bool, "forceResume": _bool},
    "adapt": {**_EVERY, "makeMode": _bool, "forceResume": _bool, "adaptationRegWeight": _float},
    "test": {**_EVERY, **_EVAL}, "eval": {**_EVERY, **_EVAL},
    "cv": {**_EVERY, **_EVAL, "sleepTimeBetweenRuns": _float},
    "write": {**_EVERY, **_EVAL}, "testunroll": {**_EVERY, **_EVAL},
    "dumpnode": {**_EVERY, "printMetadata": _bool, "printValues": _bool},
    "dumpreader": {**_EVERY, "maxEpochs": _int(1), "maxMinibatchesPerEpoch": _int(0), "numSubsets": _int(1),
                   "subsetNum": _int(0), "minibatchSize": _minibatch_size, "epochSize": _int(0)},
    "createlabelmap": {**_EVERY, "minibatchSize": _minibatch_size},
    "edit": dict(_EVERY),
}


def value_error(cfg, key: str, err: CntkioError) -> ConfigError:
    """``err`` (from reading ``key`` of ``cfg``) as a ConfigError naming the key's path and the
    file and line where its value was written."""
    v = None
    try:
        v = cfg(key) if cfg.exists(key) else None
    except CntkioError:
        pass
    reason = getattr(err, "reason", None) or str(err)
    return ConfigError(reason, path=getattr(v, "path", None) or getattr(err, "path", None) or key_path(cfg, key),
                       file=getattr(v, "file", None), line=getattr(v, "line", None), hint=getattr(err, "hint", None))


def check_values(cfg, table: dict[str, Callable]) -> list[ConfigError]:
    """Every key of ``table`` set in ``cfg`` (or a parent section) read with its check; the
    errors, one per bad value."""
    out = []
    for key, check in table.items():
        if not cfg.exists(key):
            continue
        try:
            check(cfg, key)
        except (CntkioError, ValueError, TypeError) as e:
            out.append(value_error(cfg, key, e if isinstance(e, CntkioError) else ConfigError(str(e))))
    return out
