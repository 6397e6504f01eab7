"""Make this folder: CNTK's reader-test data, copied from git mirrors of CNTK's repository.

    python tests/data/cntk_reader_tests/vendor.py --cntk /work/.mirror/ROCmSoftwarePlatform+CNTK-1/repo \\
        --cntk-old /work/.mirror/wtam+CNTK/repo [--rig .cache/cntk27/shim]

Not run by the tests (they read what it wrote); run again only to refresh the copy. It writes:

* every file the cases of ``tests/readertests_cases.py`` read, at its path below
  ``Tests/UnitTests/ReaderTests`` of CNTK @ 2504d8d4 (the UCIFastReader files from microsoft/CNTK
  @ 86ec025f^, before that test was deleted); files over 64 kB xz-compressed (``name.xz``);
* ``an4/``: AN4's SCP, MLF and state list (CNTK's ``Examples/Speech/AN4/Data``), the frames of
  CNTK's 33 MB feature archive (never published) that the HTK controls show, and per control the
  frame each line is centred on and its label (``readertests_an4`` writes the archive and the
  controls back). The frames are recovered by reading the controls' cases with cntkio on an
  archive whose frame ``t`` holds the number ``t``: each control line then names its frames;
  every label must equal the MLF's, every frame must read the same in every line and control that
  shows it, and (``--rig``) CNTK 2.7's own HTK deserializers must deliver the same frames in the
  same order;
* ``SOURCES.md``'s table (between its ``<!-- table -->`` markers): every file, its size, CNTK's git
  blob id and origin.
"""
from __future__ import annotations

import argparse
import lzma
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TESTS = HERE.parents[1]
sys.path.insert(0, str(TESTS))

import readertests  # noqa: E402
import readertests_an4  # noqa: E402
from readertests_cases import CASES, by_name  # noqa: E402

READER_TESTS = "Tests/UnitTests/ReaderTests"
AN4 = "Examples/Speech/AN4/Data"
CNTK_COMMIT = "2504d8d4ec1defd31c0eb010be40a1ee19264b4a"
UCI_COMMIT = "86ec025f32cd6fee6af2337e7c25e2220ca2c1b3^"
COMPRESS_ABOVE = 64 << 10
#: one case per HTK control: the frames of its lines are recovered from reading it
HTK_CONTROLS = {
    "HTKMLFReaderSimpleDataLoop1_5_11_Control.txt": "HTKMLFReaderSimpleDataLoop1",
    "HTKMLFReaderSimpleDataLoop6_16_17_Control.txt": "HTKMLFReaderSimpleDataLoop16",
    "HTKMLFReaderSimpleDataLoop2_12_Control.txt": "HTKMLFReaderSimpleDataLoop2",
    "HTKMLFReaderSimpleDataLoop4_8_14_Control.txt": "HTKMLFReaderSimpleDataLoop4",
    "HTKMLFReaderSimpleDataLoop21_0_Control.txt": "HTKMLFReaderSimpleDataLoop21_0",
    "HTKMLFReaderSimpleDataLoop21_1_Control.txt": "HTKMLFReaderSimpleDataLoop21_1",
}
#: files read by the parser-level cases (tests/conformance/test_conformance_parser.py), not by a config
EXTRA_DATA = ["Data/CNTKTextFormatReader/invalid_inputs.txt", "Control/CNTKTextFormatReader/invalid_inputs_Control.txt"]


def git(repo: str, *args: str) -> bytes:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout


def blob_of(repo: str, commit: str, path: str) -> str:
    return git(repo, "rev-parse", f"{commit}:{path}").decode().strip()


def wanted(repo: str) -> list[str]:
    """The ReaderTests files the cases read (below ``Tests/UnitTests/ReaderTests``)."""
    names = git(repo, "ls-tree", "-r", "--name-only", CNTK_COMMIT, READER_TESTS).decode().split("\n")
    rel = [n[len(READER_TESTS) + 1:] for n in names if n.startswith(READER_TESTS + "/")]
    used_configs = {c.config for c in CASES if c.suite != "uci"}
    used_controls = {c.control for c in CASES if c.control and c.suite in ("images", "ctf", "cbf")}
    config_text = "\n".join(git(repo, "show", f"{CNTK_COMMIT}:{READER_TESTS}/{c}").decode("utf-8", "replace")
                            for c in sorted(used_configs))
    keep = []
    for r in rel:
        if r.startswith(("Data/CNTKTextFormatReader/", "Data/CNTKBinaryReader/")) and \
                r.rsplit("/", 1)[1] not in config_text:
            continue                    # a data file no config of the cases names
        if r.startswith("Config/") and r in used_configs:
            keep.append(r)
        elif r.startswith("Control/") and r in used_controls:
            keep.append(r)
        elif r.startswith("Data/") and not r.startswith("Data/TIMIT") and r.count("/") <= 2:
            keep.append(r)
    return sorted(r for r in set(keep) | set(EXTRA_DATA) if published(repo, f"{READER_TESTS}/{r}"))


def published(repo: str, path: str) -> bool:
    """Whether the mirror holds the file's content (CNTK's largest files are listed, not stored)."""
    blob = blob_of(repo, CNTK_COMMIT, path)
    return subprocess.run(["git", "-C", repo, "cat-file", "-e", blob], capture_output=True).returncode == 0


def store(rel: str, data: bytes, out: Path) -> str:
    """Write one file (xz-compressed when large); return the path written, relative to ``out``."""
    target = out / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    if len(data) > COMPRESS_ABOVE:
        target = target.with_name(target.name + ".xz")
        target.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
    else:
        target.write_bytes(data)
    return str(target.relative_to(out))


def encoded_root(an4: Path, configs: Path, where: Path) -> Path:
    """A reader-test tree whose AN4 archive holds frame number ``t`` in frame ``t``."""
    root = where / "encoded"
    shutil.copytree(configs, root / "Config")
    data = root / "Data" / "AN4"
    data.mkdir(parents=True)
    for name in ("glob_0000.scp", "glob_0000.mlf", "state.list"):
        shutil.copyfile(an4 / name, data / name)
    first, last = readertests_an4.utterances((an4 / "glob_0000.scp").read_text())
    n = int(last.max()) + 1
    frames = np.zeros((n, readertests_an4.FEATURE_DIM), ">f4")
    frames[:, 0] = np.arange(n)
    with open(data / "000000000.chunk", "wb") as f:
        f.write(struct.pack(">iihh", n, 100000, 4 * readertests_an4.FEATURE_DIM, 9))
        f.write(frames.tobytes())
    return root


def frame_labels(an4: Path) -> np.ndarray:
    """The state of every archive frame, from the MLF (an independent reading, not cntkio's)."""
    states = {s.strip(): i for i, s in enumerate((an4 / "state.list").read_text().splitlines())}
    first, last = readertests_an4.utterances((an4 / "glob_0000.scp").read_text())
    keys = [re.match(r"(.*)=", ln).group(1).rsplit(".", 1)[0]
            for ln in (an4 / "glob_0000.scp").read_text().splitlines()]
    entries: dict[str, list] = {}
    cur = None
    for line in (an4 / "glob_0000.mlf").read_text().splitlines():
        line = line.strip()
        if line.startswith('"'):
            k = line.strip('"')
            cur = (k[2:] if k.startswith("*/") else k).rsplit(".", 1)[0]
            entries[cur] = []
        elif line == ".":
            cur = None
        elif cur is not None and line:
            s, e, lab = line.split()[:3]
            entries[cur].append((int(s), int(e), states[lab]))
    label = np.full(int(last.max()) + 1, -1, np.int64)
    for k, a in zip(keys, first.tolist()):
        for s, e, lab in entries[k]:
            label[a + int(s / 100000 + 0.5):a + int(e / 100000 + 0.5)] = lab
    return label


def recover(an4: Path, root: Path, controls: dict[str, bytes], where: Path, rig: str | None) -> dict:
    """Read each control's case on the encoded corpus; return the frames and the line plans."""
    enc = encoded_root(an4, root / "Config", where)
    label = frame_labels(an4)
    first, last = readertests_an4.utterances((an4 / "glob_0000.scp").read_text())
    owner = np.repeat(np.arange(len(first)), last - first + 1)
    frames: dict[int, tuple] = {}
    plans = {}
    for control, case_name in HTK_CONTROLS.items():
        case = by_name(case_name)
        got = readertests.read_and_write(case, enc, where / f"{case_name}.txt").splitlines()
        want = controls[control].decode("ascii").splitlines()
        assert len(got) == len(want), (control, len(got), len(want))
        centers, labels, blocks = [], [], []
        i = 0
        while i < len(got):
            j = i
            while j < len(got) and len(got[j].split()) == 363:
                j += 1
            size = j - i
            blocks.append(size)
            for q in range(size):
                g, w = got[i + q].split(), want[i + q].split()
                assert len(w) == 363, (control, i + q)
                t = int(float(g[5 * 33]))
                centers.append(t)
                lo, hi = first[owner[t]], last[owner[t]]
                for k in range(11):
                    tt = int(float(g[k * 33]))
                    assert tt == min(max(t - 5 + k, lo), hi), (control, i + q, k)
                    vals = tuple(w[k * 33:(k + 1) * 33])
                    assert frames.setdefault(tt, vals) == vals, f"{control}: frame {tt} differs"
                lab_line = [float(x) for x in want[j + q].split()]
                lab = int(np.argmax(lab_line))
                assert lab == label[t] and sum(lab_line) == 1, (control, j + q, lab, label[t])
                labels.append(lab)
            i = j + size
        plans[control] = (np.asarray(centers, np.int32), np.asarray(labels, np.int16), np.asarray(blocks, np.int32))
        print(f"{control}: {len(centers)} frames read, labels and context windows agree")
        if rig:
            check_with_rig(rig, enc / "Data" / "AN4", case, np.asarray(centers))
    index = np.asarray(sorted(frames), np.int32)
    values = np.asarray([[float(v) for v in frames[t]] for t in index.tolist()], np.float32)
    assert all(format(float(v), ".6g") == s for t, row in zip(index.tolist(), values) for v, s in zip(row, frames[t]))
    return {"index": index, "values": values, "plans": plans}


def check_with_rig(rig: str, data: Path, case, centers: np.ndarray) -> None:
    """CNTK 2.7's HTK deserializers (the cntk27 rig) deliver the same frames (frame mode, one worker)."""
    if case.subsets != 1 or "4" in case.name.rsplit("Loop", 1)[1][:1]:
        return                          # sequence mode and workers: checked by the labels and windows
    sys.path.insert(0, rig)
    import cntk27
    here = os.getcwd()
    os.chdir(data)
    try:
        f = cntk27.htk_feature_deserializer({"features": dict(scp="glob_0000.scp", dim=33, context=(5, 5))})
        lab = cntk27.htk_mlf_deserializer("state.list", "labels", 132, ["glob_0000.mlf"])
        randomize = "Loop2" not in case.name and "Loop12" not in case.name
        src = cntk27.MinibatchSource([f, lab], randomize=randomize, rand_window_samples=(2**64 - 1) >> 2 if randomize else 0,
                                     seed=0, frame_mode=True)
        got: list[int] = []
        while len(got) < len(centers):
            d = src.next_minibatch(250)["features"]["data"]
            got += [int(x) for x in d.reshape(-1, 363)[:, 165]]
        assert got[:len(centers)] == centers.tolist(), case.name
        print(f"  {case.name}: CNTK 2.7 delivers the same frames")
    finally:
        os.chdir(here)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cntk", required=True, help="a git mirror of CNTK holding commit 2504d8d4")
    ap.add_argument("--cntk-old", required=True, help="a git mirror of microsoft/CNTK holding 86ec025f")
    ap.add_argument("--rig", help="the cntk27 rig's shim folder (cross-check the HTK frames with CNTK 2.7)")
    args = ap.parse_args()
    for sub in ("Config", "Data", "Control", "an4"):
        shutil.rmtree(HERE / sub, ignore_errors=True)
    rows = []
    for rel in wanted(args.cntk):
        path = f"{READER_TESTS}/{rel}"
        data = git(args.cntk, "show", f"{CNTK_COMMIT}:{path}")
        written = store(rel, data, HERE)
        rows.append((rel, written, len(data), blob_of(args.cntk, CNTK_COMMIT, path), f"CNTK @ 2504d8d4: {path}"))
    for rel in ("Config/UCIFastReaderSimpleDataLoop_Config.cntk", "Data/UCIFastReaderSimpleDataLoop_Train.txt",
                "Data/UCIFastReaderSimpleDataLoop_Mapping.txt", "Control/UCIFastReaderSimpleDataLoop_Control.txt"):
        path = f"{READER_TESTS}/{rel}"
        data = git(args.cntk_old, "show", f"{UCI_COMMIT}:{path}")
        written = store(rel, data, HERE)
        rows.append((rel, written, len(data), blob_of(args.cntk_old, UCI_COMMIT, path),
                     f"microsoft/CNTK @ 86ec025f^: {path}"))
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        an4 = tmpdir / "an4"
        an4.mkdir()
        (HERE / "an4").mkdir(parents=True, exist_ok=True)
        for name in ("glob_0000.scp", "glob_0000.mlf", "state.list"):
            data = git(args.cntk, "show", f"{CNTK_COMMIT}:{AN4}/{name}")
            (an4 / name).write_bytes(data)
            written = f"an4/{name}" + ("" if name == "state.list" else ".xz")
            (HERE / written).write_bytes(data if name == "state.list"
                                         else lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
            rows.append((f"Data/AN4/{name}", written, len(data), blob_of(args.cntk, CNTK_COMMIT, f"{AN4}/{name}"),
                         f"CNTK @ 2504d8d4: {AN4}/{name}"))
        controls = {name: git(args.cntk, "show", f"{CNTK_COMMIT}:{READER_TESTS}/Control/{name}")
                    for name in HTK_CONTROLS}
        work = tmpdir / "work"
        work.mkdir()
        rec = recover(an4, HERE, controls, work, args.rig)
        np.savez_compressed(HERE / "an4" / "frames.npz", index=rec["index"], values=rec["values"])
        arrays = {}
        for name, (centers, labels, blocks) in rec["plans"].items():
            arrays[f"{name}/centers"], arrays[f"{name}/labels"], arrays[f"{name}/blocks"] = centers, labels, blocks
            arrays[f"{name}/label_dim"] = np.int32(132)
            rows.append((f"Control/{name}", "an4/controls.npz", len(controls[name]),
                         blob_of(args.cntk, CNTK_COMMIT, f"{READER_TESTS}/Control/{name}"),
                         f"CNTK @ 2504d8d4: {READER_TESTS}/Control/{name}, regenerated"))
        np.savez_compressed(HERE / "an4" / "controls.npz", **arrays)
        rows.append(("Data/AN4/000000000.chunk", "an4/frames.npz", 8 + 4 + 252734 * 132, "-",
                     "CNTK's archive (blob b6546352, never published): its frames that the controls show"))
    write_table(rows)
    # the materialized tree must give CNTK's files back
    with tempfile.TemporaryDirectory() as tmp:
        readertests.materialize(Path(tmp) / "ReaderTests")
    print(f"{len(rows)} files; materialized and checked")


def write_table(rows: list) -> None:
    sources = HERE / "SOURCES.md"
    text = sources.read_text(encoding="utf-8")
    head, _, rest = text.partition("<!-- table -->")
    _, _, tail = rest.partition("<!-- /table -->")
    lines = ["<!-- table -->", "", "| path (in CNTK's layout) | bytes | git blob | stored as | origin |",
             "|---|---:|---|---|---|"]
    for rel, written, size, blob, origin in sorted(rows):
        lines.append(f"| `{rel}` | {size} | {blob} | `{written}` | {origin} |")
    lines += ["", "<!-- /table -->"]
    sources.write_text(head + "\n".join(lines) + tail, encoding="utf-8")


if __name__ == "__main__":
    main()
