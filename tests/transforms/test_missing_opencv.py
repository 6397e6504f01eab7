"""Missing OpenCV is handled like missing torch (issue 31, item 7): one line saying what to
install, from the Python API, from a run, and from ``validate`` for a config with image readers."""
from __future__ import annotations

import sys

import pytest

import cntkio as io
from cntkio.actions.validate import validate_commands
from cntkio.cli import main
from cntkio.config import load_config
from cntkio.errors import CntkioError

import paths

SHAPES = paths.REPO / "examples" / "images"


@pytest.fixture
def no_opencv(monkeypatch):
    monkeypatch.setitem(sys.modules, "cv2", None)      # `import cv2` raises ImportError


def test_the_python_api_says_what_to_install(no_opencv):
    with pytest.raises(ImportError) as err:            # an ImportError still, and cntkio's own error
        io.MinibatchSource(io.ImageDeserializer(str(SHAPES / "train_map.txt"), io.StreamDefs(
            features=io.StreamDef(field="image", transforms=[]), labels=io.StreamDef(field="label", shape=4))))
    assert isinstance(err.value, CntkioError)
    assert str(err.value) == ("the image deserializers and transforms need OpenCV, which is not installed: "
                              "pip install 'cntkio[image]' (the package opencv-python-headless)")


def test_validate_reports_it_for_a_config_with_image_readers(no_opencv, tmp_path):
    report = validate_commands(load_config([f"configFile={SHAPES / 'shapes.cntk'}", f"dataDir={SHAPES}",
                                            f"outDir={tmp_path}"]), raise_errors=False)
    texts = [str(p) for p in report.problems]
    assert len(texts) == 2, texts                       # the train and the test reader, each once
    assert all("need OpenCV" in t and "pip install 'cntkio[image]'" in t for t in texts)
    assert "shapesTrain.reader" in texts[0] and "shapesTest.reader" in texts[1]


def test_a_run_prints_one_line(no_opencv, tmp_path, capsys):
    assert main([f"configFile={SHAPES / 'shapes.cntk'}", f"dataDir={SHAPES}", f"outDir={tmp_path}"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "pip install 'cntkio[image]'" in err
