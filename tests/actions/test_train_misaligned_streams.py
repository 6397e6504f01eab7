"""A training minibatch whose streams disagree names the data file and the line of the first
sequence whose streams disagree, not only the reader section (issue 31, item 6)."""
from __future__ import annotations

import pytest

from cntkio.actions.train import train
from cntkio.config import load_config
from cntkio.errors import ConfigError


def _lines(n=12, skip_label_at=None, extra_label_at=None):
    out = []
    for i in range(n):
        y = i % 3
        labels = " ".join("1" if k == y else "0" for k in range(3))
        line = f"{i} |features {i % 5} 1 2 3"
        if i != skip_label_at:
            line += f" |labels {labels}"
        out.append(line)
        if i == extra_label_at:
            out.append(f"{i} |labels {labels}")      # a second label sample in the same sequence
    return "\n".join(out) + "\n"


def test_a_sequence_without_labels_is_named_by_file_and_line(setup):
    tmp, write = setup
    data = tmp / "bad.ctf"
    data.write_text(_lines(skip_label_at=5))
    cfg = write(**{f"file = {tmp / 'train.ctf'}": f"file = {data}"})
    with pytest.raises(ConfigError) as err:
        train(load_config([f"configFile={cfg}"])("train"), "train")
    text = str(err.value)
    assert "the streams of one minibatch have different numbers of samples" in text
    assert f"the first sequence whose streams disagree: {data}:6 (sequence id 5: 'features' 1 sample(s), " \
           "'labels' 0 sample(s))" in text
    assert err.value.path == "train.reader"


def test_a_sequence_with_two_label_samples_is_named(setup):
    tmp, write = setup
    data = tmp / "bad.ctf"
    data.write_text(_lines(extra_label_at=2))
    cfg = write(**{f"file = {tmp / 'train.ctf'}": f"file = {data}"})
    with pytest.raises(ConfigError, match=rf"disagree: {data}:3 \(sequence id 2: 'features' 1 sample\(s\), "
                                          r"'labels' 2 sample\(s\)\)"):
        train(load_config([f"configFile={cfg}"])("train"), "train")
