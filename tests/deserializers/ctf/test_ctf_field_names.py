"""A stream ``field`` the CTF file does not have is warned about once, naming the field and the
names the file has (issue 31, item 2): a misspelt field beside a correct one read a whole sweep of
``(N, 0, dim)`` features silently."""
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


def test_a_misspelt_field_is_warned_about_once_with_the_files_names(tmp_path, caplog):
    path = tmp_path / "d.ctf"
    path.write_text(TEXT)
    with caplog.at_level(logging.DEBUG, logger="cntkio"):
        src = _source(path, "featres")
        shapes = [mb["features"].asarray().shape for mb in iter(lambda: src.next_minibatch(3), {})]
        _source(path, "featres")
    assert shapes == [(3, 0, 2)] * 4          # the data is as CNTK reads it: no sample of the stream
    [w] = [m for m in _warnings(caplog) if "featres" in m]
    assert w == (f"{path}: stream 'features' reads the field 'featres', which the file does not have (its "
                 "fields: features, labels): the stream gets no samples \N{EM DASH} did you mean 'features'?")


def test_correct_fields_give_no_warning(tmp_path, caplog):
    path = tmp_path / "d.ctf"
    path.write_text(TEXT)
    with caplog.at_level(logging.DEBUG, logger="cntkio"):
        _source(path, "features").next_minibatch(6)
    assert _warnings(caplog) == []


def test_a_large_file_names_the_part_it_looked_at(tmp_path, caplog, monkeypatch):
    from cntkio.deserializers.ctf import fields
    monkeypatch.setattr(fields, "FIELD_SCAN_BYTES", 64)
    path = tmp_path / "d.ctf"
    path.write_text(TEXT)
    with caplog.at_level(logging.DEBUG, logger="cntkio"):
        _source(path, "labls")
    [w] = _warnings(caplog)
    assert "stream 'features' reads the field 'labls', which the first 56 bytes of the file do not have " \
           "(their fields: features, labels): the stream gets no samples there" in w
