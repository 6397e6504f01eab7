"""The legacy readers run on cntkio's engine: checkpoints restore exactly, partitions split the
records between workers, randomization is the block randomizer's (same seed, same order)."""
from __future__ import annotations

import numpy as np
import pytest

from cntkio.readers import build_reader


def _uci(tmp_path):
    rows = np.arange(600, dtype=np.float32).reshape(200, 3)
    rows[:, 0] = np.arange(200) % 4
    (tmp_path / "d.txt").write_text("".join(" ".join(f"{v:g}" for v in r) + "\n" for r in rows))
    return {"readerType": "UCIFastReader", "file": str(tmp_path / "d.txt"), "randomize": "50",
            "f": {"dim": "2", "start": "1"}, "l": {"dim": "1", "start": "0", "labelDim": "4"}}


def _lm(tmp_path):
    (tmp_path / "c.txt").write_text("".join(f"w{i % 5} w{i % 3} w{i % 7} </s>\n" for i in range(120)))
    # randomized reading partitions by chunk (as CNTK): blocks of 30 sentences are 4 chunks
    return {"readerType": "SequenceReader", "file": str(tmp_path / "c.txt"), "randomize": "30",
            "labelIn": {"labelDim": "20"}, "labels": {"labelType": "NextWord", "labelDim": "20"}}


def _first_values(mb):
    v = next(s for s in mb.items())[1]
    if v.is_sparse:
        return [tuple(np.asarray(x.todense()).argmax(1)) for x in v.as_sequences()]
    return [tuple(x.ravel()) for x in v.as_sequences()]


@pytest.mark.parametrize("make", [_uci, _lm], ids=["UCIFastReader", "SequenceReader"])
def test_checkpoint_restores_exactly(tmp_path, make):
    sec = make(tmp_path)
    src = build_reader(sec)
    for _ in range(3):
        src.next_minibatch(16)
    state = src.get_checkpoint_state()
    want = [_first_values(src.next_minibatch(16)) for _ in range(10)]
    src.close()
    again = build_reader(sec)
    again.restore_from_checkpoint(state)
    got = [_first_values(again.next_minibatch(16)) for _ in range(10)]
    again.close()
    assert got == want


@pytest.mark.parametrize("make", [_uci, _lm], ids=["UCIFastReader", "SequenceReader"])
def test_partitions_split_a_sweep(tmp_path, make):
    sec = make(tmp_path)
    full = build_reader(sec, max_sweeps=1)
    everything = sorted(x for mb in iter(lambda: full.next_minibatch(1000), {}) for x in _first_values(mb))
    full.close()
    parts = []
    for rank in (0, 1):
        src = build_reader(sec, max_sweeps=1)
        mine = []
        while True:
            mb = src.next_minibatch(32, num_data_partitions=2, partition_index=rank)
            if not mb:
                break
            mine.extend(_first_values(mb))
        parts.append(mine)
        src.close()
    assert parts[0] and parts[1]
    assert sorted(parts[0] + parts[1]) == everything


def test_the_order_is_the_same_on_every_build_and_ignores_a_seed(tmp_path):
    # UCIFastReader's RandomOrdering is seeded by the block's number on the timeline alone
    # (UCIFastReader.cpp:857, m_randomordering(randomizeSet)): no config seed reaches it
    sec = _uci(tmp_path)
    a = _first_values(build_reader(sec, max_sweeps=1).next_minibatch(200))
    b = _first_values(build_reader(sec, max_sweeps=1).next_minibatch(200))
    c = _first_values(build_reader(dict(sec, randomizationSeed="7"), max_sweeps=1).next_minibatch(200))
    assert a == b == c and a != sorted(a)
