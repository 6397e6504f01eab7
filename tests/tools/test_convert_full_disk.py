"""Converting into a full disk: the command fails with exit status 1, its message names the output
file, and nothing is left under the output's name or a temporary one (issue 30).

Two ways to fill the disk without filling one: ENOSPC injected at the write calls (a file object
whose writes fail after a few bytes, put in place of the module's ``open``), and a real kernel
error from ``RLIMIT_FSIZE`` in a subprocess (``EFBIG``: the file-size limit, SIGXFSZ ignored).
"""
from __future__ import annotations

import errno
import subprocess
import sys
import textwrap

import pytest

from cntkio.cli import main
from cntkio.deserializers.cbf import convert as cbf_convert
from cntkio.deserializers.cbf import writer as cbf_writer
from cntkio.tools import convert as tool_convert

CTF = "".join(f"{i} |x {i} {i + 1} {i + 2} |y {i % 5}:1\n" for i in range(400))
STREAMS = ["--stream", "x:x:dense:3", "--stream", "y:y:sparse:5"]


class _FullDisk:
    """A binary or text file whose writes fail with ENOSPC once ``room`` bytes are written."""

    def __init__(self, f, room: int) -> None:
        self.f, self.room = f, room

    def write(self, data):
        self.room -= len(data)
        if self.room < 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def _fill_after(monkeypatch, module, room: int = 256) -> None:
    real = open

    def opener(path, mode="r", *a, **k):
        f = real(path, mode, *a, **k)
        return _FullDisk(f, room) if any(c in mode for c in "wxa") else f
    monkeypatch.setattr(module, "open", opener, raising=False)


def _only(tmp_path, *names):
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


def test_csv2ctf_into_a_full_disk_names_the_output(tmp_path, monkeypatch, capsys):
    src = tmp_path / "in.csv"
    src.write_text("".join(f"{i},{i + 1},{i % 3}\n" for i in range(300)))
    _fill_after(monkeypatch, tool_convert)
    out = tmp_path / "out.ctf"
    assert main(["convert", "csv2ctf", str(src), str(out), "--label-column", "-1", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and str(out) in err
    _only(tmp_path, "in.csv")


def test_ctf2bin_into_a_full_disk_names_the_output(tmp_path, monkeypatch, capsys):
    src = tmp_path / "in.ctf"
    src.write_text(CTF)
    monkeypatch.setattr(cbf_writer, "_DIRECT_IO", False)
    _fill_after(monkeypatch, cbf_writer, room=1000)
    out = tmp_path / "out.cbf"
    assert main(["convert", "ctf2bin", str(src), str(out), *STREAMS, "--chunk-size", "2000"]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and str(out) in err
    _only(tmp_path, "in.ctf")


def test_bin2ctf_into_a_full_disk_names_the_output(tmp_path, monkeypatch, capsys):
    src = tmp_path / "in.ctf"
    src.write_text(CTF)
    cbf = tmp_path / "in.cbf"
    assert main(["convert", "ctf2bin", str(src), str(cbf), *STREAMS]) == 0
    capsys.readouterr()
    _fill_after(monkeypatch, cbf_convert)
    out = tmp_path / "back.ctf"
    assert main(["convert", "bin2ctf", str(cbf), str(out)]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and str(out) in err
    _only(tmp_path, "in.ctf", "in.cbf")


def test_the_cause_is_kept(tmp_path, monkeypatch):
    src = tmp_path / "in.csv"
    src.write_text("".join(f"{i},{i + 1}\n" for i in range(300)))
    _fill_after(monkeypatch, tool_convert)
    with pytest.raises(OSError) as e:
        tool_convert.csv_to_ctf(str(src), str(tmp_path / "o.ctf"))
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(tmp_path / "o.ctf")
    assert isinstance(e.value.__cause__, OSError) and e.value.__cause__.filename is None


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGXFSZ"), reason="needs RLIMIT_FSIZE and SIGXFSZ")
def test_ctf2bin_under_a_real_file_size_limit(tmp_path):
    """A real write error from the kernel (EFBIG under RLIMIT_FSIZE), through the command line."""
    src = tmp_path / "in.ctf"
    src.write_text(CTF * 20)
    out = tmp_path / "out.cbf"
    script = textwrap.dedent(f"""
        import resource, signal, sys
        from cntkio.cli import main
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
        sys.exit(main(["convert", "ctf2bin", {str(src)!r}, {str(out)!r}, "--stream", "x:x:dense:3",
                       "--stream", "y:y:sparse:5", "--chunk-size", "4000"]))
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "File too large" in r.stderr and str(out) in r.stderr
    _only(tmp_path, "in.ctf")
