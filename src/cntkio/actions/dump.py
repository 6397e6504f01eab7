"""The ``dumpReader`` action and the minibatch dump format of CNTK's reader unit tests.

CNTK's reader tests (``Tests/UnitTests/ReaderTests``) pull minibatches from a reader and write
them as text, one line per sample, which is then compared with a control file. This module writes
that exact text (conformance README, section 2), so that any reader configuration can be checked
against CNTK's controls, and so that a user can see what a reader section delivers:

* per minibatch, per stream in the requested order, the stream's sequences are laid out as
  CNTK's sequence packer lays them out (first-fit rows of length ``T`` = the longest sequence,
  in delivery order), and the columns are walked time-major, skipping gaps;
* each sample is one line: its values (sparse samples expanded to dense) formatted as C++
  iostream's default ``%g`` with precision 6 (``format(float(v), '.6g')`` of the value widened to
  double), separated by one space, ending with ``\\n``.

``dump_minibatches`` works on any iterable of minibatch dicts (as ``MinibatchSource.next_minibatch``
returns); the ``dumpReader`` action builds the reader from a config section and iterates the
epochs with CNTK's config-reader semantics (:mod:`cntkio.readers.epochs`).
"""
from __future__ import annotations

import io
import os
from typing import Any, Iterable, Mapping, Sequence, TextIO

import numpy as np

from .._log import get_logger

__all__ = ["first_fit_layout", "format_minibatch", "format_stream", "dump_minibatches", "dump_reader", "dump_epochs"]

_log = get_logger("actions.dump")

#: How many minibatches per epoch CNTK's test harness dumps (``m_maxMiniBatchCount``).
DEFAULT_MAX_MINIBATCHES_PER_EPOCH = 10


def first_fit_layout(lengths: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
    """CNTK's packed layout of sequences of the given lengths (``MBLayout::InitAsPackedSequences``).

    ``T`` is the longest length; each sequence, in the given (delivery) order, goes into the first
    existing row with room for it (``used + len <= T``), otherwise into a new row.
    Returns ``(rows, offsets, P, T)``: the row and the start time of every sequence, the number of
    rows and the number of time steps. The loop is per sequence, never per sample.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    rows = np.zeros(n, dtype=np.int64)
    offsets = np.zeros(n, dtype=np.int64)
    T = int(lengths.max()) if n else 0
    used: list[int] = []          # per row: time steps taken
    open_rows: list[int] = []     # rows with used < T, ascending (full rows can never take more,
    #                               except 0-length sequences, which fit row 0 whenever it exists)
    for i, ln in enumerate(lengths.tolist()):
        if ln == 0 and used:
            rows[i], offsets[i] = 0, used[0]
            continue
        row = -1
        for k, r in enumerate(open_rows):  # noqa: B007 (k is used after the loop)
            if used[r] + ln <= T:
                row = r
                break
        if row < 0:
            row = len(used)
            used.append(0)
            open_rows.append(row)
            k = len(open_rows) - 1
        rows[i], offsets[i] = row, used[row]
        used[row] += ln
        if used[row] >= T:
            del open_rows[k]
    return rows, offsets, len(used), T


def _stream_values(data: Any) -> np.ndarray:
    """The valid samples of one stream's MinibatchData as a dense ``(num_samples, dim)`` array in
    row-major order (row 0's samples, then row 1's, ...); sparse samples are expanded to dense."""
    dim = int(np.prod(data.stream.sample_shape, dtype=np.int64)) if data.stream.sample_shape else 1
    if data.is_sparse:
        csr = data.as_csr()
        n = csr.shape[0]
        dense = np.zeros((n, dim), dtype=csr.dtype)
        counts = np.diff(csr.indptr)
        dense[np.repeat(np.arange(n), counts), csr.indices] = csr.data
        return dense
    seqs = data.as_sequences()
    if not seqs:
        return np.zeros((0, dim), dtype=data.dtype)
    return np.concatenate([np.asarray(s).reshape(-1, dim) for s in seqs], axis=0)


def _sample_order(mask: np.ndarray, layout: str) -> np.ndarray:
    """Indices into the compact (row-major) valid samples, in the dump's time-major order."""
    mask = np.asarray(mask)
    S, T = mask.shape
    lengths = np.count_nonzero(mask, axis=1).astype(np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    if layout == "rows":
        # the rows as the packer made them (truncated BPTT slots, frame mode): walk time-major
        cells = np.flatnonzero(mask.reshape(-1))
        s, t = np.divmod(cells, T)
        return np.argsort(t * S + s, kind="stable")
    if layout != "first_fit":
        raise ValueError(f"unknown dump layout {layout!r} (expected 'first_fit' or 'rows')")
    rows, offsets, P, _ = first_fit_layout(lengths)
    seq_of_sample = np.repeat(np.arange(S), lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    j = np.arange(total) - starts[seq_of_sample]
    key = (offsets[seq_of_sample] + j) * P + rows[seq_of_sample]
    return np.argsort(key, kind="stable")


def format_stream(data: Any, layout: str = "first_fit") -> str:
    """The dump text of one stream's part of a minibatch (one line per sample, time-major).

    ``layout='first_fit'`` lays whole sequences out as CNTK's sequence packer does (the default,
    for sequence and frame mode); ``'rows'`` keeps the rows of the MinibatchData as they are (for
    truncated BPTT, where the packer's slots are the layout).
    """
    order = _sample_order(data.mask, layout)
    if len(order) == 0:
        return ""
    values = _stream_values(data)[order].astype(np.float64, copy=False)
    if values.shape[1] == 0:
        return "\n" * values.shape[0]
    line = " ".join(["%.6g"] * values.shape[1]) + "\n"
    return "".join([line % tuple(row) for row in values.tolist()])


def _stream_name(key: Any) -> str:
    return key if isinstance(key, str) else getattr(key, "name", str(key))


def format_minibatch(minibatch: Mapping[Any, Any], stream_order: Sequence[str] | None = None,
                     layout: str = "first_fit") -> str:
    """The dump text of one minibatch: every stream in ``stream_order`` (default: the dict's
    order), each as :func:`format_stream` writes it. A stream with no samples writes nothing."""
    by_name = {_stream_name(k): v for k, v in minibatch.items()}
    names = list(by_name) if stream_order is None else list(stream_order)
    parts = []
    for name in names:
        if name not in by_name:
            raise KeyError(f"stream {name!r} is not in the minibatch (streams: {', '.join(by_name)})")
        parts.append(format_stream(by_name[name], layout))
    return "".join(parts)


def dump_minibatches(minibatches: Iterable[Mapping[Any, Any]], out: str | os.PathLike | TextIO,
                     stream_order: Sequence[str] | None = None, *, layout: str = "first_fit") -> int:
    """Write minibatches in the text format of CNTK's reader unit tests; return the line count.

    ``minibatches`` is any iterable of ``{stream (StreamInformation or name): MinibatchData}``
    dicts (empty dicts are skipped); ``out`` a path (the file is deleted and recreated, as the CNTK
    harness does) or an open text file; ``stream_order`` the stream names to write, in order
    (default: each minibatch's own order). The text compares equal, token by token, with CNTK's
    control files (``shared/conformance/cntk``), which is what makes this the conformance oracle
    of every reader configuration.
    """
    lines = 0
    own = not hasattr(out, "write")
    fh: TextIO = open(out, "w", encoding="ascii", newline="\n") if own else out  # type: ignore[arg-type]
    try:
        for mb in minibatches:
            if not mb:
                continue
            text = format_minibatch(mb, stream_order, layout)
            lines += text.count("\n")
            fh.write(text)
    finally:
        if own:
            fh.close()
    return lines


def dump_reader(section: Any, name: str = "dumpReader") -> int:
    """The ``dumpReader`` action: build the section's ``reader``, read ``maxEpochs`` epochs of
    ``epochSize`` samples in minibatches of ``minibatchSize``, write at most
    ``maxMinibatchesPerEpoch`` (default 10, as CNTK's harness) minibatches per epoch to
    ``outputFile`` in the dump format. Returns the number of lines written.

    Section keys (looked up through the parent sections, as every CNTK config key):
    ``reader`` (required), ``outputFile`` (required), ``minibatchSize`` (required),
    ``epochSize`` (default 0 = one sweep), ``maxEpochs`` (default 1), ``streams`` (names to write,
    in order; default: the reader's inputs in config order), ``maxMinibatchesPerEpoch`` (0 = all),
    ``numSubsets``/``subsetNum`` (read one worker's part, default 1/0), ``sortOutput`` (sort the
    lines byte-wise, for randomized readers whose order is not fixed; default false),
    ``dumpLayout`` (``firstFit``, default, or ``rows``).
    """
    from ..readers import as_section, build_reader, reader_spec

    sec = as_section(section, name, lazy=True)
    out_path = sec.str("outputFile")
    mb_size = sec.int("minibatchSize", minimum=1)
    epoch_size = sec.int("epochSize", 0, minimum=0)
    max_epochs = sec.int("maxEpochs", 1, minimum=0)
    cap = sec.int("maxMinibatchesPerEpoch", DEFAULT_MAX_MINIBATCHES_PER_EPOCH, minimum=0)
    num_subsets = sec.int("numSubsets", 1, minimum=1)
    subset_num = sec.int("subsetNum", 0, minimum=0)
    if subset_num >= num_subsets:
        raise sec.error("subsetNum", f"subsetNum must be below numSubsets ({num_subsets}), found {subset_num}")
    layout_name = sec.str("dumpLayout", "firstFit").lower()
    layouts = {"firstfit": "first_fit", "first_fit": "first_fit", "rows": "rows"}
    if layout_name not in layouts:
        raise sec.error("dumpLayout", f"dumpLayout must be firstFit or rows, found {layout_name!r}")
    sort_output = sec.bool("sortOutput", False)

    reader_sec = sec.section("reader", inherit=True)
    order = ([str(v).strip() for v in sec.list("streams") if str(v).strip()] if sec.exists("streams")
             else reader_spec(reader_sec).stream_names)
    source = build_reader(reader_sec)
    try:
        written = dump_epochs(source, order, out_path, mb_size=mb_size, epoch_size=epoch_size,
                              max_epochs=max_epochs, cap=cap, num_subsets=num_subsets, subset_num=subset_num,
                              layout=layouts[layout_name], sort_output=sort_output, sec=sec)
    finally:
        source.close()
    _log.info("%s: wrote %d lines to %s", name, written, out_path)
    return written


def dump_epochs(source: Any, order: list[str], out_path: str, *, mb_size: int, epoch_size: int,
                max_epochs: int, cap: int = DEFAULT_MAX_MINIBATCHES_PER_EPOCH, num_subsets: int = 1,
                subset_num: int = 0, layout: str = "first_fit", sort_output: bool = False, sec: Any = None) -> int:
    """CNTK's reader-test harness on a built source (``HelperWriteReaderContentToFile`` of
    ``Tests/UnitTests/ReaderTests/Common/ReaderTestHelper.h``): ``max_epochs`` epochs of
    ``epoch_size`` samples in minibatches of ``mb_size`` (:class:`~cntkio.readers.EpochReader`), at
    most ``cap`` minibatches per epoch (0: all; the harness fetches one more before it stops),
    the streams ``order`` written to ``out_path`` (deleted first) in the dump format; ``sort_output``
    sorts the lines byte-wise (``SortLinesInFile``). Returns the number of lines written. ``sec``
    (optional) is the section whose ``streams`` key named ``order``, for the error message."""
    from ..errors import ConfigError
    from ..readers.epochs import EpochReader

    known = [s.name for s in source.stream_infos()]
    for s in order:
        if s not in known:
            message = f"stream {s!r} is not delivered by the reader (streams: {', '.join(known)})"
            if sec is not None:
                raise sec.error("streams", message)
            raise ConfigError(message, path="streams")
    epochs = EpochReader(source, minibatch_size=mb_size, epoch_size=epoch_size,
                         num_subsets=num_subsets, subset_num=subset_num)

    def minibatches():
        for epoch in range(max_epochs):
            count = 0
            for mb in epochs.epoch(epoch):
                # the harness fetches before it checks the count: the (cap+1)-th minibatch is
                # read and thrown away, and reading stops there
                if cap and count >= cap:
                    break
                count += 1
                yield mb

    out_dir = os.path.dirname(out_path)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    if os.path.exists(out_path):
        os.remove(out_path)
    if sort_output:
        buf = io.StringIO()
        dump_minibatches(minibatches(), buf, order, layout=layout)
        lines = sorted(buf.getvalue().splitlines(keepends=False), key=lambda s: s.encode("ascii"))
        with open(out_path, "w", encoding="ascii", newline="\n") as fh:
            fh.write("".join(line + "\n" for line in lines))
        return len(lines)
    return dump_minibatches(minibatches(), out_path, order, layout=layout)
