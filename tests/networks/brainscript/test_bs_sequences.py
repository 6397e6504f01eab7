"""BS.Loop.IsFirst/IsLast/IsFirstN, BS.Constants.ZeroSequenceLike, BS.Loop.Previous/Next/
PreviousOrDefault/Iteration and BS.Boolean.Toggle on the reader's packed sequences, against
hand-written torch (CNTK.core.bs's definitions); the functions that change sequence lengths are
refused with a located error."""
from __future__ import annotations

import pytest
import torch

from cntkio.networks.brainscript import build
from cntkio.networks.brainscript.syntax import BrainScriptError

HEAD = "labels = Input{3}\nce = CrossEntropyWithSoftmax(labels, z)\ncriterionNodes = (ce)\n"
POS = torch.tensor([0, 1, 2, 0, 0, 1, 2, 3])            # sequences of 3, 1 and 4 samples
LENS = torch.tensor([3, 3, 3, 1, 4, 4, 4, 4])


def _hand_shift(x, step):
    """x moved ``step`` samples later (step > 0) or earlier (< 0) within each sequence, 0 outside."""
    out = torch.zeros_like(x)
    for s, n in ((0, 3), (3, 1), (4, 4)):
        seq = x[s:s + n]
        if step > 0 and n > step:
            out[s + step:s + n] = seq[:n - step]
        elif step < 0 and n > -step:
            out[s:s + n + step] = seq[-step:]
    return out


def test_is_first_is_last_and_zero_sequence_like():
    net = build("x = Input{4}\nf = BS.Loop.IsFirst(x)\nl = BS.Loop.IsLast(x)\nf2 = BS.Loop.IsFirstN(2, x)\n"
                "zs = BS.Constants.ZeroSequenceLike(x)\nnf = !BS.Loop.IsFirst(x)\n"
                "z = DenseLayer{3}(x .* l)\n" + HEAD)
    x = torch.randn(8, 4)
    v = net.evaluate({"x": x}, ["f", "l", "f2", "zs", "nf", "z"], positions=POS, lengths=LENS)
    assert v["f"].reshape(-1).tolist() == [1, 0, 0, 1, 1, 0, 0, 0]
    assert v["l"].reshape(-1).tolist() == [0, 0, 1, 1, 0, 0, 0, 1]
    assert v["f2"].reshape(-1).tolist() == [1, 1, 0, 1, 1, 1, 0, 0]
    assert v["nf"].reshape(-1).tolist() == [0, 1, 1, 0, 0, 1, 1, 1]
    assert v["zs"].shape == (8, 1) and not v["zs"].any()
    last = torch.tensor([0, 0, 1, 1, 0, 0, 0, 1.0]).unsqueeze(1)
    want = (x * last) @ net.tensor("z.W").T + net.tensor("z.b").reshape(-1)
    torch.testing.assert_close(v["z"], want)


def test_loop_previous_and_next_equal_a_shift_within_each_sequence():
    net = build("x = Input{2}\np = BS.Loop.Previous(x)\nn = FutureValue(0, x, timeStep=2, defaultHiddenActivation=0)\n"
                "d = BS.Loop.PreviousOrDefault(x, defaultValue=Constant(5))\ni = BS.Loop.Iteration(x)\n"
                "t = BS.Boolean.Toggle(BS.Loop.IsFirst(x))\nz = DenseLayer{3}(p + n)\n" + HEAD)
    x = torch.arange(16, dtype=torch.float32).reshape(8, 2) + 1
    v = net.evaluate({"x": x}, ["p", "n", "d", "i", "t"], positions=POS, lengths=LENS)
    first = POS == 0
    want = _hand_shift(x, 1)
    want[first] = 0.1                   # PastValue's defaultHiddenActivation, as CNTK's Previous
    torch.testing.assert_close(v["p"], want)
    torch.testing.assert_close(v["n"], _hand_shift(x, -2))
    want[first] = 5.0
    torch.testing.assert_close(v["d"], want)
    assert v["i"].reshape(-1).tolist() == (POS + 1).tolist()
    assert v["t"].reshape(-1).tolist() == [1, 1, 1, 1, 1, 1, 1, 1]     # flipped once, at each start


@pytest.mark.parametrize("call", ["BS.Sequences.Last(x)", "BS.Sequences.First(x)",
                                  "BS.Sequences.Gather(BS.Loop.IsLast(x), x)",
                                  "BS.Sequences.Scatter(BS.Loop.IsLast(x), x)",
                                  "BS.Sequences.BroadcastSequenceAs(x, x)"])
def test_functions_that_change_sequence_lengths_are_refused_with_a_location(call):
    with pytest.raises(BrainScriptError) as e:
        build(f"x = Input{{2}}\ng = {call}\nz = DenseLayer{{3}}(g)\n" + HEAD)
    assert "new dynamic axis" in str(e.value) and ":2:" in str(e.value)
