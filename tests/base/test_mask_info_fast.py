"""asarray()'s mask check (two C calls per minibatch and stream): it warns exactly when the
mask says more than the shape (padded cells, or a row continuing a sequence)."""
import warnings

import numpy as np

from cntkio.minibatch import MinibatchData
from cntkio.streams import StreamInformation

INFO = StreamInformation("f", 0, "dense", np.float32, (3,))


def _asarray(mask, n):
    mb = MinibatchData.from_packed(INFO, np.array(mask, np.int8), values=np.arange(n * 3, dtype=np.float32).reshape(n, 3))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = mb.asarray()
    return out, len(w)


def test_frames_no_warning():
    out, warned = _asarray([[2], [2], [2]], 3)
    assert warned == 0 and out.shape == (3, 1, 3)
    assert out[:, 0].tolist() == np.arange(9, dtype=np.float32).reshape(3, 3).tolist()


def test_full_sequences_no_warning():
    out, warned = _asarray([[2, 1], [2, 1]], 4)
    assert warned == 0 and out.shape == (2, 2, 3)


def test_continuation_row_warns():
    assert _asarray([[2], [1]], 2)[1] == 1
    assert _asarray([[1, 1], [2, 1]], 4)[1] == 1


def test_padding_warns_and_is_zero():
    out, warned = _asarray([[2, 1], [2, 0]], 3)
    assert warned == 1
    assert out[1, 1].tolist() == [0, 0, 0]
    assert out[1, 0].tolist() == [6, 7, 8]


def test_empty_no_warning():
    mb = MinibatchData.from_packed(INFO, np.zeros((0, 0), np.int8), values=np.zeros((0, 3), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mb.asarray().shape == (0, 0, 3)
