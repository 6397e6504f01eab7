"""A stream ``field`` the CTF file does not have, next to a correct one, is warned about once,
naming the field and the name the file has (issue 31, item 2): it read a whole sweep of
``(N, 0, dim)`` features silently. (The warning is ctf/undeclared.py's.)"""
from __future__ import annotations

import logging

import cntkio as io

TEXT = "".join(f"{i} |features {i} {i + 1} |labels 1 0\n" for i in range(6))


def _source(path, field):
    return io.MinibatchSource(io.CTFDeserializer(str(path), io.StreamDefs(
        features=io.StreamDef(field=field, shape=2), labels=io.StreamDef(field="labels", shape=2))),
        randomize=False, max_sweeps=2)


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_a_misspelt_field_is_warned_about_once_with_the_files_name(tmp_path, caplog):
    path = tmp_path / "d.ctf"
    path.write_text(TEXT)
    with caplog.at_level(logging.DEBUG, logger="cntkio"):
        src = _source(path, "featres")
        shapes = [mb["features"].asarray().shape for mb in iter(lambda: src.next_minibatch(3), {})]
    assert shapes == [(3, 0, 2)] * 4          # the data is as before: no sample of the stream
    [w] = _warnings(caplog)                   # two sweeps, one warning
    assert w.startswith(f"{path}:1: input 'features' is not declared (declared: 'featres', 'labels')")


def test_correct_fields_give_no_warning(tmp_path, caplog):
    path = tmp_path / "d.ctf"
    path.write_text(TEXT)
    with caplog.at_level(logging.DEBUG, logger="cntkio"):
        _source(path, "features").next_minibatch(6)
    assert _warnings(caplog) == []
