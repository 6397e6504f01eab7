"""cntk.io's module constants and TraceLevel."""
from __future__ import annotations

import enum

__all__ = ["INFINITELY_REPEAT", "FULL_DATA_SWEEP", "DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS", "TraceLevel",
           "DEFAULT_CHUNK_SIZE_IN_BYTES", "LEGACY_RANDOMIZATION_WINDOW_IN_BYTES", "RANDOMIZE_AUTO",
           "POSITION_KEY", "TBPTT_KEY", "TBPTT_SWEEP_END_KEY", "LT_BASE_KEYS", "LT_NO_RANDOMIZER_KEYS", "LT_TUMBLING_KEYS"]

#: No limit on samples or sweeps (SIZE_MAX), the default of both.
INFINITELY_REPEAT: int = 2**64 - 1
#: A value for ``max_samples`` meaning exactly one sweep.
FULL_DATA_SWEEP: int = 2**64 - 2
#: Default randomization window in chunks (4 GB of 32 MB chunks).
DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS: int = 128
#: CNTK's ``randomizeAuto`` (= ``requestDataSize``), ``((size_t) -1) >> 2``: the randomization window a
#: config reader uses when none is given ("the whole data set", Source/Common/Include/DataReader.h:108
#: and 116; CompositeDataReader.cpp:137, HTKDeserializers/ConfigHelper.cpp:186). As a window it is wider
#: than any corpus: every chunk's window holds every chunk, which a window of the corpus' own size
#: (half of it on each side) does not.
RANDOMIZE_AUTO: int = (2**64 - 1) >> 2

# --- sizes ------------------------------------------------------------------------------------------
#: Default chunk size of the CTF deserializer (``chunkSizeInBytes``): 32 MiB.
DEFAULT_CHUNK_SIZE_IN_BYTES: int = 32 * 1024 * 1024
#: A legacy CNTKTextFormatReader section without ``randomizationWindow`` randomizes over this many
#: bytes' worth of chunks (ctf-text-format-reader: 4 GB, 128 of the default chunks).
LEGACY_RANDOMIZATION_WINDOW_IN_BYTES: int = 4 * 1024 ** 3

# --- checkpoint state keys (cntk-io-semantics 2.7) -------------------------------------------------
#: A global-timeline source's position: the global sample position after the last minibatch.
POSITION_KEY: str = "minibatchSourcePosition"
#: cntkio: the truncated-BPTT slots (sequences in flight and their offsets), both timelines.
TBPTT_KEY: str = "truncatedBpttSlots"
#: cntkio: the sequences in the slots whose fetch carried CNTK's sweep-end flag.
TBPTT_SWEEP_END_KEY: str = "truncatedBpttSweepEnds"
#: A local-timeline (UserDeserializer) source's counts at the cursor.
LT_BASE_KEYS: tuple[str, ...] = ("baseSweepCount", "baseSampleCount", "baseCurrentSequencePositionInWindow")
#: ... plus the window position of the LT no-randomizer ...
LT_NO_RANDOMIZER_KEYS: tuple[str, ...] = ("currentChunkPosition", "currentSequencePosition")
#: ... or of the LT tumbling-window randomizer.
LT_TUMBLING_KEYS: tuple[str, ...] = ("chunkPosition", "sweepIndex")


class TraceLevel(enum.IntEnum):
    """Verbosity of log messages: info lines from 2 (Info); warnings and errors show at every
    level (cntkio._log: traceLevel governs info and progress, not warnings)."""

    Error = 0
    Warning = 1
    Info = 2
