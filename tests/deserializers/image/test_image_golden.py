"""Every deterministic image path against CNTK 2.7's own outputs (tests/data/image, made with the
cntk27 rig by make_golden.py): no transform, centre crops (sizes, ratios, odd and even margins,
clipping), Scale with each interpolation and mode, channels, Mean (matching and ignored), the
AlexNet-style chain, gray and colour images (BMP, PPM, PGM), Base64 with and without keys."""
from __future__ import annotations

import numpy as np
import pytest
from image_cases import CASES, GOLDEN, read_case

pytest.importorskip("cv2")

# OpenCV's cubic kernel rounds differently between CNTK's OpenCV 3.1 and today's
# OpenCV: those outputs may differ by 1 on the 0..255 scale; everything else is bit for bit.
_TOLERANCE = {"cubic": 1.0}


def _tol(case) -> float:
    return max([v for k, v in _TOLERANCE.items() if k in case["name"]] + [0.0])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matches_cntk27(case, tmp_path):
    feats, labels = read_case(case, tmp_path)
    want = GOLDEN[case["name"] + "__features"]
    assert feats.shape == want.shape
    assert feats.dtype == np.float32
    tol = _tol(case)
    if tol:
        np.testing.assert_allclose(feats, want, atol=tol, rtol=0)
    else:
        np.testing.assert_array_equal(feats, want)
    np.testing.assert_array_equal(labels, GOLDEN[case["name"] + "__labels"])


def test_the_spec_pattern_is_bgr_chw():
    # cntk-readers-measured 2: pixel (y, x) = (B, G, R) = 100y + 10x + (0, 1, 2)
    want = GOLDEN["none_3x2__features"][0]
    np.testing.assert_array_equal(want[0], [[0, 10, 20], [100, 110, 120]])
    np.testing.assert_array_equal(want[2], [[2, 12, 22], [102, 112, 122]])
