"""A missing file says that relative paths are taken from the working directory, names that
directory, and prints the path once (issue 31, item 8)."""
from __future__ import annotations

import os

import pytest

import cntkio as io
from cntkio.cli import main

NOTE = "relative paths are taken from the working directory, {cwd}"


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return str(tmp_path)


def _once(text: str, path: str) -> None:
    assert text.count(path) == 1, text


def test_ctf_and_cbf_files_from_the_python_api(cwd):
    for make in (lambda: io.CTFDeserializer("data/missing.ctf", io.StreamDefs(x=io.StreamDef(field="x", shape=1))),
                 lambda: {"type": "CNTKBinaryFormatDeserializer", "file": "data/missing.ctf"}):
        with pytest.raises(FileNotFoundError) as err:
            io.MinibatchSource(make())
        text = str(err.value)
        assert NOTE.format(cwd=cwd) in text and err.value.filename == "data/missing.ctf"
        _once(text, "data/missing.ctf")


def test_an_absolute_path_has_no_note(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        io.MinibatchSource(io.CTFDeserializer(str(tmp_path / "missing.ctf"), io.StreamDefs(
            x=io.StreamDef(field="x", shape=1))))
    assert "relative paths" not in str(err.value)
    _once(str(err.value), str(tmp_path / "missing.ctf"))


def test_a_config_file_on_the_command_line(cwd, capsys):
    assert main(["configFile=conf/missing.cntk"]) == 1
    err = capsys.readouterr().err
    assert "configuration file conf/missing.cntk does not exist" in err and NOTE.format(cwd=cwd) in err
    _once(err, "missing.cntk")


def test_a_model_file_and_a_tools_input(cwd, capsys):
    from cntkio.networks import load_model
    with pytest.raises(Exception) as err:
        load_model("out/m.dnn")
    assert NOTE.format(cwd=cwd) in str(err.value)
    _once(str(err.value), "out/m.dnn")
    assert main(["inspect", "data/nope.ctf"]) == 1
    err_text = capsys.readouterr().err
    assert NOTE.format(cwd=cwd) in err_text
    _once(err_text, "nope.ctf")


def test_an_image_map_file(cwd):
    with pytest.raises(Exception) as err:
        io.MinibatchSource(io.ImageDeserializer("maps/missing.txt", io.StreamDefs(
            features=io.StreamDef(field="image", transforms=[]), labels=io.StreamDef(field="label", shape=4))))
    assert NOTE.format(cwd=cwd) in str(err.value)
    _once(str(err.value), "maps/missing.txt")


def test_validate_names_the_working_directory(cwd, tmp_path):
    from cntkio.actions.validate import validate_commands
    from cntkio.config import parse_config
    root = parse_config("command = d\nd = [ action = dumpReader ; outputFile = o.txt\n"
                        "  reader = [ readerType = CNTKTextFormatReader ; file = data/missing.ctf\n"
                        "             input = [ x = [ dim = 1 ; format = dense ] ] ] ]\n", file="c.cntk")
    [p] = validate_commands(root, raise_errors=False).problems
    assert str(p) == (f"c.cntk:3: d.reader.file: input file data/missing.ctf does not exist "
                      f"({NOTE.format(cwd=cwd)})")
    assert os.getcwd() == cwd
