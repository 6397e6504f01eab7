"""Fixtures of the action tests: ``setup``, a small train:test configuration (a SimpleNetworkBuilder
network on two generated CTF files) written with replacements."""
from __future__ import annotations

import pytest

from fakes import write_classes_ctf

from train_config import CONFIG


@pytest.fixture
def setup(tmp_path):
    """``(tmp_path, write)``: ``write(epochs=2, model=None, **{old: new})`` writes :data:`CONFIG`
    (with ``old`` replaced by ``new``; each must occur) to a new file and returns its path."""
    write_classes_ctf(tmp_path / "train.ctf")
    write_classes_ctf(tmp_path / "test.ctf", n=12, seed=1)
    written: list = []

    def write(epochs=2, model=None, **replace):
        text = CONFIG.format(model=model or tmp_path / "out" / "m.dnn", epochs=epochs,
                             train=tmp_path / "train.ctf", test=tmp_path / "test.ctf")
        for old, new in replace.items():
            assert old in text, old
            text = text.replace(old, new)
        p = tmp_path / f"c{len(written) or ''}.cntk"     # a new file each time
        written.append(p)
        p.write_text(text)
        return p
    return tmp_path, write
