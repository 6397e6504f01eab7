"""TensorBoard scalars of a train command (``tensorBoardLogDir``, the name CNTK's Python API gave
its TensorBoard writer), through torch's own ``torch.utils.tensorboard.SummaryWriter``.

What it must never do: import TensorBoard unless ``tensorBoardLogDir`` is set (it is the
``tensorboard`` extra), or write from a process other than 0.

Tags, with the values as the log prints them (criteria per sample, classification errors as a
percentage): ``<criterion>/train`` and ``<criterion>/validate`` (the cvReader's) per epoch (step =
the epoch, 1-based), ``learningRatePerSample`` and ``samplesPerSecond`` per epoch, and
``<criterion>/minibatch`` for every ``numMBsToShowResult`` window (step = minibatches trained so
far in the run).
"""
from __future__ import annotations

from typing import Any, Mapping

from ..errors import ConfigError, MissingDependency
from ._params import get_str, key_path

__all__ = ["Board", "open_board", "board_problem", "TENSORBOARD_KEY"]

#: the config key naming the log directory
TENSORBOARD_KEY = "tensorBoardLogDir"


def _writer_class():
    from ..integrations.torch_backend import summary_writer_class
    try:
        SummaryWriter = summary_writer_class()
    except ImportError as e:
        raise MissingDependency(f"{TENSORBOARD_KEY} needs TensorBoard, which is not installed: "
                                "pip install 'cntkio[tensorboard]'") from e
    return SummaryWriter


def board_problem(command) -> ConfigError | None:
    """Why ``tensorBoardLogDir`` of ``command`` cannot be written (None when it can, or is not set)."""
    if not command.exists(TENSORBOARD_KEY):
        return None
    from .checks import check_writable
    v = command(TENSORBOARD_KEY)
    where = dict(path=getattr(v, "path", None) or key_path(command, TENSORBOARD_KEY),
                 file=getattr(v, "file", None), line=getattr(v, "line", None))
    try:
        _writer_class()
    except MissingDependency as e:
        return ConfigError(str(e), **where)
    why = check_writable(get_str(command, TENSORBOARD_KEY))
    return None if why is None else ConfigError(f"the TensorBoard log directory cannot be written: {why}", **where)


class Board:
    """The scalars of one train command (module docstring)."""

    def __init__(self, logdir: str) -> None:
        self.writer = _writer_class()(log_dir=logdir)

    @staticmethod
    def _values(totals: Mapping[str, float], count: int, percent) -> dict[str, float]:
        out = {}
        for k, v in totals.items():
            avg = v / count if count else float("nan")
            out[k] = 100.0 * avg if percent and k in percent else avg
        return out

    def epoch(self, epoch: int, res: Any, lr: float) -> None:
        for k, v in self._values(res.totals, res.samples, res.percent).items():
            self.writer.add_scalar(f"{k}/train", v, epoch)
        self.writer.add_scalar("learningRatePerSample", lr, epoch)
        if res.seconds > 0:
            self.writer.add_scalar("samplesPerSecond", res.samples / res.seconds, epoch)
        self.writer.flush()

    def validate(self, epoch: int, res: Any) -> None:
        for k, v in self._values(res.totals, res.samples, res.percent).items():
            self.writer.add_scalar(f"{k}/validate", v, epoch)
        self.writer.flush()

    def window(self, step: int, totals: Mapping[str, float], count: int, percent) -> None:
        for k, v in self._values(totals, count, percent).items():
            self.writer.add_scalar(f"{k}/minibatch", v, step)

    def close(self) -> None:
        self.writer.close()


def open_board(command, is_main: bool) -> Board | None:
    """The Board of ``command`` when it sets ``tensorBoardLogDir`` (on process 0), else None."""
    if not is_main or not command.exists(TENSORBOARD_KEY):
        return None
    return Board(get_str(command, TENSORBOARD_KEY))
