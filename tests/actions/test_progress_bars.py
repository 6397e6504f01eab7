"""Progress bars on every long job (index builds, conversion, training epochs, ``write``), off when
standard error is not a terminal or with ``progressBar=false`` (issue 31, beyond CNTK)."""
from __future__ import annotations

from cntkio import _progress
from cntkio.actions.runner import run
from cntkio.cli import main
from cntkio.deserializers.ctf import available_backends
from cntkio.deserializers.ctf.index import scan_file

WRITE = """
write = [
    action = write
    outputPath = {out}
    reader = [
        readerType = CNTKTextFormatReader
        file = {data}
        input = [ features = [ dim = 4 ; format = dense ] ]
    ]
]
"""


def _lines(err: str, word: str) -> int:
    return sum(word in part for part in err.replace("\r", "\n").split("\n"))


def test_bars_follow_progress_bar_and_the_terminal(setup, capsys):
    tmp, write = setup
    cfg = write(epochs=1, **{"command = train:test": "command = train:write"})
    with open(cfg, "a") as f:
        f.write(WRITE.format(out=tmp / "o" / "out", data=tmp / "test.ctf"))
    run([f"configFile={cfg}", "progressBar=true"])
    err = capsys.readouterr().err
    assert _lines(err, "Epoch[1 of 1]") and _lines(err, "write:")        # the epoch's and write's bars
    run([f"configFile={cfg}", "progressBar=false", "makeMode=false"])
    err = capsys.readouterr().err
    assert "it/s" not in err and "samples/s]" not in err
    run([f"configFile={cfg}", "makeMode=false"])                         # stderr is not a terminal here
    assert "samples/s]" not in capsys.readouterr().err


def test_an_index_build_shows_a_bar_over_the_file(tmp_path, capsys):
    path = tmp_path / "d.ctf"
    path.write_text("".join(f"{i} |x {i}\n" for i in range(2000)))
    old = _progress.set_default(True)
    try:
        scan_file(str(path), available_backends()[0], [b"x"], False, -1, 1 << 20, window=4096)
    finally:
        _progress.set_default(old)
    assert "index d.ctf" in capsys.readouterr().err
    scan_file(str(path), available_backends()[0], [b"x"], False, -1, 1 << 20, window=4096)
    assert "index d.ctf" not in capsys.readouterr().err                  # not a terminal: no bar


def test_conversion_shows_a_bar_when_asked(tmp_path, capsys):
    src = tmp_path / "a.csv"
    src.write_text("".join(f"{i},{i + 1}\n" for i in range(100)))
    assert main(["convert", "csv2ctf", str(src), str(tmp_path / "a.ctf"), "--progress"]) == 0
    assert "csv2ctf a.csv" in capsys.readouterr().err
