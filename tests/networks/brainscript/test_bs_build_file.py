"""``cntkio.brainscript.build`` of a file that does not exist says so (issue 31, item 10): it was
parsed as BrainScript text ("expected '=' after the member name 'missing'")."""
from __future__ import annotations

import pytest
import torch

import cntkio.brainscript

import paths


@pytest.mark.parametrize("name", ["missing.bs", "nets/missing.bs", "missing_network"])
def test_a_missing_file_is_file_not_found(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as err:
        cntkio.brainscript.build(name)
    text = str(err.value)
    assert text.startswith("[Errno 2] BrainScript file does not exist (relative paths are taken from the working "
                           f"directory, {tmp_path})") and text.count(name) == 1


def test_the_shipped_file_builds_as_the_docs_show():
    net = cntkio.brainscript.build(str(paths.REPO / "examples" / "brainscript" / "net.bs"), dropout_rate=0.5)
    x, y = torch.rand(4, 64), torch.eye(10)[:4]
    out = net.evaluate({"features": x.reshape(4, 1, 8, 8), "labels": y}, ["ce", "errs"])
    assert {"ce", "errs"} <= set(out) and out["ce"].numel() == 1
