"""cntk.io's module constants (cntk-io-semantics 1.1) and TraceLevel."""
from __future__ import annotations

import enum

__all__ = ["INFINITELY_REPEAT", "FULL_DATA_SWEEP", "DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS", "TraceLevel"]

#: No limit on samples or sweeps (SIZE_MAX), the default of both.
INFINITELY_REPEAT: int = 2**64 - 1
#: A value for ``max_samples`` meaning exactly one sweep.
FULL_DATA_SWEEP: int = 2**64 - 2
#: Default randomization window in chunks (4 GB of 32 MB chunks).
DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS: int = 128


class TraceLevel(enum.IntEnum):
    """Verbosity of log messages: 0 errors, 1 warnings, 2 info."""

    Error = 0
    Warning = 1
    Info = 2
