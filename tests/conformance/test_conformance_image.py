"""CNTK's ImageReader conformance cases (``shared/conformance/cntk/README.md``, section 5), run from
the command line as ``cntkio configFile=... command=<section> <section>=[action=dumpReader ...]``
with the working directory at ``Data/`` (the configs' ``RootDir = .``).

The controls were written by an older CNTK whose randomizer put the 4 images in one chunk; CNTK 2.7
gives every image a chunk of its own (measured with the cntk27 rig: 4 images, seed 0 -> map lines
1, 2, 0, 3), and so does cntkio. The README allows another order; the lines are compared as a
multiset and the order is CNTK 2.7's. JPEG pixels are compared within 1 (README's tolerance), the
PNG exactly.
"""
from __future__ import annotations

import numpy as np
import pytest

import paths
from cntkio.cli import main

ROOT = paths.CONFORMANCE
CONFIG = ROOT / "Config"
DATA = ROOT / "Data"
CONTROL = ROOT / "Control"

pytestmark = [pytest.mark.skipif(not (CONFIG / "ImageReaderSimple_Config.cntk").exists(),
                                 reason="CNTK's conformance data is not here"),
              pytest.mark.filterwarnings("ignore")]
pytest.importorskip("cv2")


def _dump(monkeypatch, tmp_path, name, section, epoch_size, mb_size) -> list[np.ndarray]:
    out = tmp_path / f"{section}_Output.txt"
    monkeypatch.chdir(DATA)
    status = main([f"configFile={CONFIG / f'ImageReader{name}_Config.cntk'}", f"command={section}",
                   f"{section}=[action=dumpReader; outputFile={out}; epochSize={epoch_size}; "
                   f"minibatchSize={mb_size}; maxEpochs=1; streams=features]"])
    assert status == 0
    return [np.array(line.split(), np.float64) for line in out.read_text().splitlines()]


def _control(name) -> list[np.ndarray]:
    text = (CONTROL / f"ImageReader{name}_Control.txt").read_text()
    return [np.array(line.split(), np.float64) for line in text.splitlines() if line.strip()]


def test_simple_matches_the_control_in_cntk27s_order(monkeypatch, tmp_path):
    got = _dump(monkeypatch, tmp_path, "Simple", "Simple_Test", 4, 4)
    want = _control("Simple")                      # green, black, blue, red (map lines 2, 0, 1, 3)
    assert [g.size for g in got] == [96] * 4
    by_line = {0: want[1], 1: want[2], 2: want[0], 3: want[3]}
    for g, line in zip(got, [1, 2, 0, 3]):         # CNTK 2.7's randomized order (rig)
        np.testing.assert_allclose(g, by_line[line], atol=1, rtol=1e-5)


def test_grayscale_matches_the_control(monkeypatch, tmp_path):
    got = _dump(monkeypatch, tmp_path, "Grayscale", "Grayscale_Test", 1, 1)
    np.testing.assert_array_equal(got[0], _control("Grayscale")[0])


@pytest.mark.parametrize("name,message", [
    ("BadMap", "Invalid map file format, must contain 2 or 3 tab-delimited columns, line 2 in file "
               "./ImageReaderBadMap_map.txt."),
    ("BadLabel", "Cannot parse label value on line 1, second column, in file ./ImageReaderBadLabel_map.txt."),
    ("LabelOutOfRange", "Image 'images/red.jpg' has invalid class id '10'. It is exceeding the label "
                        "dimension of '4'. Line 3 in file ./ImageReaderLabelOutOfRange_map.txt."),
])
def test_map_errors_report_cntks_message(monkeypatch, tmp_path, capsys, name, message):
    monkeypatch.chdir(DATA)
    status = main([f"configFile={CONFIG / f'ImageReader{name}_Config.cntk'}", "command=Simple_Test",
                   f"Simple_Test=[action=dumpReader; outputFile={tmp_path / 'o.txt'}; epochSize=4; "
                   "minibatchSize=4; maxEpochs=1; streams=features]"])
    assert status != 0
    assert message in capsys.readouterr().err


def test_missing_image_is_named_and_counted(monkeypatch, tmp_path, caplog):
    with pytest.raises(RuntimeError, match="Number of invalid sequences '1'"):
        _dump(monkeypatch, tmp_path, "MissingImage", "MissingImage_Test", 4, 4)
    assert "Cannot open file 'imageDoesNotExists/black.jpg'" in caplog.text
    assert "ImageReaderMissingImage_map.txt" in caplog.text
