"""A file cut short under its reader ends the read with an error naming the file, never with a
signal: one trial per format (CBF, HTK archives in frame, sequence and context-window modes, a zip
of images, the legacy binary cache, UCIFastReader text, CTF), the file cut to half its size once the reader is built
(its index read), before it reads data, so that the cut is met on every run. The campaign (100
trials a format, random cuts at random moments of the reading; on the code before issue 30 the
HTK, cache and CTF trials died of SIGBUS) is ``python tests/fuzz/truncate_trials.py --trials 100``
(docs/reliability.md)."""
from __future__ import annotations

import importlib.util
import random

import pytest

import paths

spec = importlib.util.spec_from_file_location("truncate_trials", paths.TESTS / "fuzz" / "truncate_trials.py")
trials = importlib.util.module_from_spec(spec)
spec.loader.exec_module(trials)


@pytest.mark.parametrize("fmt", trials.FORMATS)
def test_a_file_cut_under_the_reader_is_an_error_naming_it(tmp_path, fmt):
    pytest.importorskip("cv2") if fmt == "image-zip" else None
    data = trials.make_data(fmt, str(tmp_path / "data"), scale=0.25)
    got = trials.trial(fmt, data, str(tmp_path / "work"), random.Random(0), 0, cut=0.5, delay=0.0, at_open=True)
    assert got["outcome"] not in ("signal", "hang"), got
    if fmt != "image-zip":      # its skipped images end in the engine's invalid-sequence limit
        assert got["outcome"] == "error", got
