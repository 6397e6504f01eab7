"""Issue 19, friction 1: a sample skipped by a tolerated error (maxErrors > 0) would leave one
stream of its sequence shorter than the others. CNTK 2.7 delivers the shortened stream (measured
with the rig: sequence 0 of the file below came out with x = [[1, 2], [5, 6]] and y = [1, 2, 3],
silently misaligned); cntkio drops the whole sequence, names it (file, line, key) and counts it
against the source's max_errors (docs/differences.md)."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from cntkio import MinibatchSource
from cntkio.deserializers.ctf import CNTKTextFormatDeserializer

TEXT = """0 |x 1 2 |y 1
0 |x 3 zz |y 2
0 |x 5 6 |y 3
1 |x 7 8 |y 4
1 |x 9 1 |y 5
"""


def _source(path, max_errors):
    d = CNTKTextFormatDeserializer({"file": str(path), "maxErrors": 5,
                                    "input": {"x": {"dim": 2, "format": "dense"},
                                              "y": {"dim": 1, "format": "dense"}}})
    return MinibatchSource(d, randomize=False, max_sweeps=1, max_errors=max_errors)


def test_a_sequence_that_lost_a_sample_is_dropped_whole_and_named(tmp_path, caplog):
    path = tmp_path / "t.ctf"
    path.write_text(TEXT)
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        mb = _source(path, max_errors=5).next_minibatch(64)
    by = {k.name: v for k, v in mb.items()}
    assert by["x"].num_sequences == by["y"].num_sequences == 1
    np.testing.assert_array_equal(np.asarray(by["x"].asarray()), [[[7, 8], [9, 1]]])
    np.testing.assert_array_equal(np.asarray(by["y"].asarray()), [[[4], [5]]])
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert f"{path}:2:8: malformed value in input 'x'" in text
    assert f"{path}:1: sequence 0 is dropped: a sample of one of its streams was skipped" in text


def test_without_an_error_budget_at_the_source_it_is_an_error(tmp_path):
    path = tmp_path / "t.ctf"
    path.write_text(TEXT)
    with pytest.raises(RuntimeError, match="Number of invalid sequences '1'"):
        _source(path, max_errors=0).next_minibatch(64)


def test_a_whole_line_skipped_keeps_the_streams_aligned(tmp_path):
    # a bad prefix skips the whole line, every stream alike: the sequence stays, one line shorter
    path = tmp_path / "t.ctf"
    path.write_text(TEXT.replace("0 |x 3 zz |y 2", "0x |x 3 4 |y 2"))
    mb = _source(path, max_errors=5).next_minibatch(64)
    by = {k.name: v for k, v in mb.items()}
    assert by["x"].num_sequences == 2 and by["x"].num_samples == by["y"].num_samples == 4
