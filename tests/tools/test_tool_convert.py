"""cntkio convert: CSV, svmlight and .npz -> CTF, CTF -> .npz / CSR, each read back."""
import json

import numpy as np
import pytest
import scipy.sparse as sp

from cntkio.cli import main
from cntkio.tools.ctf_text import write_ctf
from cntkio.deserializers.protocol import DenseStream, SparseStream


def test_ctf_text_writer_lines():
    import io
    out = io.BytesIO()
    dense = DenseStream(np.array([[1, 2], [3, 4], [5.5, 6]], np.float32), np.array([0, 2, 3]))
    sparse = SparseStream(np.array([0, 2, 2, 3]), np.array([4, 1, 7], np.int32),
                          np.array([1, 2.5, 0.1], np.float32), np.array([0, 1, 3]), 10)
    write_ctf(out, np.array([7, 9]), np.array([2, 2]), [("x", dense), ("y", sparse)])
    assert out.getvalue().decode() == ("7 |x 1.0 2.0 |y 4:1.0 1:2.5\n7 |x 3.0 4.0\n"
                                       "9 |x 5.5 6.0 |y\n9 |y 7:0.1\n")


def test_csv_with_header_and_one_hot_labels(tmp_path, capsys):
    src = tmp_path / "a.csv"
    src.write_text("a,b,label\n1,2,0\n3.5,-4,2\n")
    dst = tmp_path / "a.ctf"
    assert main(["convert", "csv2ctf", str(src), str(dst), "--label-column", "-1", "--label-dim", "3"]) == 0
    assert dst.read_text() == "0 |features 1.0 2.0 |labels 0:1.0\n1 |features 3.5 -4.0 |labels 2:1.0\n"
    assert "2 sequences" in capsys.readouterr().out
    src.write_text("1,2,0\n3.5,-4,7\n")
    assert main(["convert", "csv2ctf", str(src), str(dst), "--label-column", "2", "--label-dim", "3"]) == 1
    assert "a.csv:2: label 7.0 is not a class in 0..2" in capsys.readouterr().err
    assert dst.read_text().startswith("0 |features 1.0 2.0 |labels 0:1.0")  # the old output is kept


def test_svmlight_one_based_with_comments(tmp_path, capsys):
    src = tmp_path / "a.svm"
    src.write_text("+1 3:0.5 10:1 # a comment\n-1 1:2\n\n0 2:1.5e3\n")
    dst = tmp_path / "a.ctf"
    assert main(["convert", "svm2ctf", str(src), str(dst), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["one_based"] is True and info["streams"] == [["labels", "dense", 1], ["features", "sparse", 10]]
    assert dst.read_text() == ("0 |labels 1.0 |features 2:0.5 9:1.0\n1 |labels -1.0 |features 0:2.0\n"
                               "2 |labels 0.0 |features 1:1500.0\n")
    src.write_text("1 0:1 4:2\n2 x\n")
    assert main(["convert", "svm2ctf", str(src), str(tmp_path / "b.ctf")]) == 1
    err = capsys.readouterr().err
    assert "a.svm:2" in err and ".tmp" not in err.split("error:")[-1]
    assert not list(tmp_path.glob(".*tmp"))  # no temporary file left


def test_ctf_npz_round_trip_and_csr(tmp_path, capsys):
    ctf = tmp_path / "s.ctf"
    ctf.write_text("0 |w 3:1 |f 0.5\n0 |w 1:1\n1 |w 2:1 |f -1\n")
    npz = tmp_path / "s.npz"
    assert main(["convert", "ctf2npz", str(ctf), str(npz)]) == 0
    z = np.load(npz)
    assert z["lengths"].tolist() == [2, 1] and z["keys"].tolist() == [0, 1]
    assert z["w.indptr"].tolist() == [0, 1, 2, 3] and z["w.indices"].tolist() == [3, 1, 2]
    assert z["f"].tolist() == [[0.5], [-1.0]] and z["f.offsets"].tolist() == [0, 1, 2]
    back = tmp_path / "back.ctf"
    assert main(["convert", "npz2ctf", str(npz), str(back)]) == 0
    assert back.read_text() == "0 |f 0.5 |w 3:1.0\n0 |w 1:1.0\n1 |f -1.0 |w 2:1.0\n"
    csr = tmp_path / "w.npz"
    assert main(["convert", "ctf2npz", str(ctf), str(csr), "--csr", "w"]) == 0
    m = sp.load_npz(csr)
    assert m.shape == (3, 4) and m.toarray().argmax(1).tolist() == [3, 1, 2]
    capsys.readouterr()
    assert main(["convert", "ctf2npz", str(ctf), str(csr), "--csr", "f"]) == 1
    assert "--csr f: the stream is dense" in capsys.readouterr().err


def test_plain_npz_arrays(tmp_path):
    src = tmp_path / "p.npz"
    np.savez(src, x=np.arange(6.0).reshape(3, 2), y=np.array([1, 0, 1]))
    dst = tmp_path / "p.ctf"
    assert main(["convert", "npz2ctf", str(src), str(dst)]) == 0
    assert dst.read_text() == "0 |x 0.0 1.0 |y 1.0\n1 |x 2.0 3.0 |y 0.0\n2 |x 4.0 5.0 |y 1.0\n"
    np.savez(src, x=np.zeros((3, 2)), y=np.zeros(2))
    assert main(["convert", "npz2ctf", str(src), str(dst)]) == 1


@pytest.mark.parametrize("tool", ["convert", "inspect", "bench", "show-config"])
def test_every_tool_has_help(tool, capsys):
    assert main([tool, "--help"]) == 0
    assert "usage: cntkio " + tool in capsys.readouterr().out
