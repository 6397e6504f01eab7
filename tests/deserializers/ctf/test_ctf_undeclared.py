"""A CTF input name the config does not declare: CNTK 2.7 warned ("Skipping unknown input") and then
stopped ("Input ('labels') is empty in sequence ... Malformed input file"); cntkio delivers the
sequence with that stream empty (a zero-padded gap, docs/ctf.md) and warns once per undeclared name,
naming the file, the line and the name."""
from __future__ import annotations

import logging

import pytest

from cntkio import CTFDeserializer, MinibatchSource, StreamDef, StreamDefs

DATA = "0 |features 1 2 |labels 1 0\n1 |features 3 4\n1 |labelz 0 1\n2 |features 5 6 |labels 0 1\n" \
       "3 |features 7 8 |labelz 1 0\n"


def _source(path, random_access):
    d = CTFDeserializer(str(path), StreamDefs(features=StreamDef(field="features", shape=2),
                                              labels=StreamDef(field="labels", shape=2)))
    return MinibatchSource(d, randomize=random_access, random_access=random_access, max_sweeps=1)


@pytest.mark.parametrize("random_access", [False, True])
def test_undeclared_input_is_warned_once_with_file_line_and_name(tmp_path, caplog, random_access):
    path = tmp_path / "d.ctf"
    path.write_text(DATA)
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        src = _source(path, random_access)
        mb = src.next_minibatch(100)
    # the choice is kept: every sequence is delivered, the labels of sequences 1 and 3 empty
    assert mb["features"].num_samples == 4 and mb["labels"].num_samples == 2
    warned = [r.getMessage() for r in caplog.records if "is not declared" in r.getMessage()]
    assert len(warned) == 1, warned                            # once per name
    assert warned[0].startswith(f"{path}:3: input 'labelz' is not declared (declared: 'features', 'labels')")
    assert "with 'labels' empty" in warned[0]
    src.close()


def test_an_extra_input_beside_every_declared_one_is_not_warned(tmp_path, caplog):
    # reading a subset of a file's inputs is normal use: no stream is left empty, no warning
    path = tmp_path / "d.ctf"
    path.write_text("0 |features 1 2 |labels 1 0 |weights 3\n1 |features 3 4 |labels 0 1 |weights 4\n")
    with caplog.at_level(logging.WARNING, logger="cntkio"):
        src = _source(path, False)
        assert src.next_minibatch(100)["labels"].num_samples == 2
    assert not [r for r in caplog.records if "is not declared" in r.getMessage()]
    src.close()
