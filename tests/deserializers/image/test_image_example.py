"""examples/images: a small CNN trained through ``cntkio configFile=examples/images/shapes.cntk`` on
images read from a zip archive with random crops and colour jitter, then tested."""
from __future__ import annotations

import re

import pytest

pytest.importorskip("cv2")

import paths  # noqa: E402
from cntkio.cli import main  # noqa: E402


def test_the_shapes_example_trains_and_tests(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(paths.REPO)
    assert main([f"configFile={paths.REPO / 'examples' / 'images' / 'shapes.cntk'}", f"outDir={tmp_path}"]) == 0
    out = capsys.readouterr()
    text = out.out + out.err
    final = re.search(r"Final Results: Minibatch\[1-1\]: Err = ([0-9.]+)% \* 80", text)
    assert final, text[-2000:]
    assert float(final.group(1)) <= 5.0             # 4 shapes in 80 test images: learnt
    assert (tmp_path / "shapes.dnn").exists()
