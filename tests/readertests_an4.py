"""The AN4 stand-in of CNTK's HTK reader tests: the corpus and the controls, written from the
vendored pieces (``tests/data/cntk_reader_tests/an4``). Test data only; nothing here reads CNTK.

CNTK's HTK tests read the AN4 corpus (948 utterances, 252 734 frames of 33 floats in one HTK
archive, ``Examples/Speech/AN4/Data``), whose 33 MB archive was never published. Its SCP, MLF and
state list were; the frames the controls show (12 667 of them, every frame of every context window
of every control line) were recovered from the controls (``vendor.py``). :func:`write_corpus`
writes the archive with those frames where they are and zeros elsewhere (no control line shows a
zero frame), and the controls themselves from the frames and, per control line, the frame it is
centred on and its label: the regenerated controls are CNTK's files byte for byte
(``readertests.materialize`` checks their git blob ids).
"""
from __future__ import annotations

import lzma
import re
import struct
from pathlib import Path

import numpy as np

__all__ = ["write_corpus", "utterances", "FEATURE_DIM", "CONTEXT"]

FEATURE_DIM = 33
#: the controls' ``dim = 363``: 11 frames, 5 each side, clamped to the utterance
CONTEXT = 5
_SCP_LINE = re.compile(r"(.*)=(.*)\[(\d+),(\d+)\]\s*$")


def utterances(scp_text: str) -> tuple[np.ndarray, np.ndarray]:
    """The first and last archive frame of every utterance of the SCP, in its order."""
    first, last = [], []
    for line in scp_text.splitlines():
        m = _SCP_LINE.match(line)
        if m is None:
            raise ValueError(f"not an AN4 SCP line: {line!r}")
        first.append(int(m.group(3)))
        last.append(int(m.group(4)))
    return np.asarray(first, np.int64), np.asarray(last, np.int64)


def _read(path: Path) -> bytes:
    return lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()


def write_corpus(src: Path, root: Path) -> None:
    """Write ``Data/AN4`` (SCP, MLF, state list, the archive) and the HTK controls below ``root``."""
    data = root / "Data" / "AN4"
    data.mkdir(parents=True, exist_ok=True)
    scp = _read(src / "glob_0000.scp.xz")
    (data / "glob_0000.scp").write_bytes(scp)
    (data / "glob_0000.mlf").write_bytes(_read(src / "glob_0000.mlf.xz"))
    (data / "state.list").write_bytes((src / "state.list").read_bytes())
    first, last = utterances(scp.decode("ascii"))
    n = int(last.max()) + 1
    with np.load(src / "frames.npz") as z:
        index, values = z["index"].astype(np.int64), z["values"]
    frames = np.zeros((n, FEATURE_DIM), ">f4")
    frames[index] = values
    with open(data / "000000000.chunk", "wb") as f:
        # HTK header: frames, sample period (100 ns), bytes per frame, kind USER (9)
        f.write(struct.pack(">iihh", n, 100000, 4 * FEATURE_DIM, 9))
        f.write(frames.tobytes())
    owner = np.repeat(np.arange(len(first)), last - first + 1)
    lo, hi = first[owner], last[owner]
    table = frames.astype(np.float64)
    with np.load(src / "controls.npz") as z:
        names = [k[:-len("/centers")] for k in z.files if k.endswith("/centers")]
        for name in names:
            text = _control(z[f"{name}/centers"], z[f"{name}/labels"], z[f"{name}/blocks"], table, lo, hi,
                            int(z[f"{name}/label_dim"]))
            (root / "Control" / name).parent.mkdir(parents=True, exist_ok=True)
            (root / "Control" / name).write_bytes(text)


def _control(centers: np.ndarray, labels: np.ndarray, blocks: np.ndarray, table: np.ndarray, lo: np.ndarray,
             hi: np.ndarray, label_dim: int) -> bytes:
    """A control's text: per minibatch its feature lines (the context window of each centre frame),
    then as many label lines (one-hot), values printed as C++ streams print them (``%g``)."""
    offsets = np.arange(-CONTEXT, CONTEXT + 1)
    feature_line = " ".join(["%.6g"] * (FEATURE_DIM * (2 * CONTEXT + 1))) + "\n"
    out: list[str] = []
    at = 0
    for size in blocks.tolist():
        c = centers[at:at + size].astype(np.int64)
        ctx = np.clip(c[:, None] + offsets[None, :], lo[c][:, None], hi[c][:, None])
        rows = table[ctx].reshape(size, -1).tolist()
        out.extend(feature_line % tuple(r) for r in rows)
        for lab in labels[at:at + size].tolist():
            onehot = ["0"] * label_dim
            onehot[lab] = "1"
            out.append(" ".join(onehot) + "\n")
        at += size
    return "".join(out).encode("ascii")
