"""sequence_to_cntk_text_format and _is_tensor (cntk-io-semantics 1.11)."""
import numpy as np
import pytest

from cntkio import sequence_to_cntk_text_format
from cntkio.helpers import _is_tensor

AA = np.asarray


@pytest.mark.parametrize("idx, alias_tensor_map, expected", [
    (0, {"W": AA([])}, ""),
    (0, {"W": AA([[[1, 0, 0, 0], [1, 0, 0, 0]]])}, "0\t|W 1 0 0 0 1 0 0 0"),
    (0, {"W": AA([[[1, 0, 0, 0], [1, 0, 0, 0]]]), "L": AA([[[2]]])},
     "0\t|L 2 |W 1 0 0 0 1 0 0 0"),
    (0, {"W": AA([[[1, 0], [1, 0]], [[5, 6], [7, 8]]]), "L": AA([[[2]]])},
     "0\t|L 2 |W 1 0 1 0\n0\t|W 5 6 7 8"),
    (3, {"x": [{3: 1.0, 0: 2.5}, {}]}, "3\t|x 0:2.5 3:1.0\n3\t|x "),
    (7, {"a": [[1, 2]], "b": [{1: 1}]}, "7\t|a 1 2 |b 1:1"),
    (1, {"f": AA([[0.5, 1.0]], dtype=np.float32)}, "1\t|f 0.5 1.0"),
])
def test_sequence_conversion(idx, alias_tensor_map, expected):
    assert sequence_to_cntk_text_format(idx, alias_tensor_map) == expected


def test_sequence_conversion_rejects_other_data():
    with pytest.raises(ValueError, match="expected a tensor"):
        sequence_to_cntk_text_format(0, {"A": [object()]})


def test_output_reads_back_through_the_ctf_line_syntax():
    # every line starts with the sequence id, a tab and '|', aliases sorted, no trailing newline
    text = sequence_to_cntk_text_format(12, {"z": AA([[1], [2], [3]]), "a": AA([[9, 8]])})
    assert text.split("\n") == ["12\t|a 9 8 |z 1", "12\t|z 2", "12\t|z 3"]


@pytest.mark.parametrize("data, expected", [
    ([1], True),
    ([[1, 2]], True),
    ([[AA([1, 2])]], False),
    ([AA([1, 2])], False),
    ([AA([1, 2]), AA([])], False),
    (AA([1, 2]), True),
    ((1, 2), False),
    ("12", False),
    ([["a"]], False),
    ([np.float32(1.5)], True),
])
def test_is_tensor(data, expected):
    assert _is_tensor(data) == expected
