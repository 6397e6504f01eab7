"""Small files that claim huge sizes: no parser sizes memory by what a file claims.

Each format's reader (CBF, HTK archives, UCIFastReader text and its binary cache) is given files of
a few hundred bytes whose counts claim billions of sequences, samples, non-zeros, frames or records.
Every claim is checked against what the file can hold before anything is allocated: the read ends
in an error naming the file (or reads what is really there), and the process's peak resident
memory (VmHWM), measured in a subprocess of its own, stays under a few hundred MB (without the checks a
claim of 2^32 samples sized arrays of tens of GB).
"""
from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import paths

LIMIT_MB = 300
MAGIC = 0x636E746B5F62696E


def _cbf(path, lengths, blocks, dim, *, sparse=0, etype=0, nsamples=None, nchunks=1, nseq=None):
    body = struct.pack("<QI", MAGIC, 1)
    off = len(body)
    body += struct.pack(f"<{len(lengths)}I", *lengths) + struct.pack(f"<{len(blocks)}I", *blocks)
    hoff = len(body)
    hdr = struct.pack("<QII", MAGIC, nchunks, 1) + struct.pack("<BI", sparse, 1) + b"x" + struct.pack("<BI", etype, dim)
    total = sum(lengths) & 0xFFFFFFFF if nsamples is None else nsamples
    hdr += struct.pack("<qII", off, len(lengths) if nseq is None else nseq, total)
    path.write_bytes(body + hdr + struct.pack("<q", hoff))
    return str(path)


def cbf_cases(tmp):
    return {
        # two sequences of 2^31 samples each (the counts add up to the table's 2^32 - 2)
        "samples": _cbf(tmp / "samples.cbf", [0x7FFFFFFF, 0x7FFFFFFF], [5, 0, 0, 0], 1),
        # a sparse block of 2^31 - 1 non-zeros in a few words
        "nnz": _cbf(tmp / "nnz.cbf", [1], [1, 0x7FFFFFFF, 0, 0, 0], 100, sparse=1),
        # a chunk table entry claiming 2^32 - 1 sequences
        "sequences": _cbf(tmp / "sequences.cbf", [1], [1, 0], 1, nseq=0xFFFFFFFF),
        # a header claiming 2^32 - 1 chunks
        "chunks": _cbf(tmp / "chunks.cbf", [1], [1, 0], 1, nchunks=0xFFFFFFFF),
        # the crafted files of issue 30
        "walk": str(paths.TESTS / "fuzz" / "regressions" / "cbf_walk_position_overflow.cbf"),
        "guess": str(paths.TESTS / "fuzz" / "regressions" / "cbf_dense_guess_overflow.cbf"),
    }


def htk_cases(tmp):
    frames = np.arange(12, dtype=">f4").reshape(4, 3)
    good = tmp / "a.htk"
    good.write_bytes(struct.pack(">iihh", 4, 100000, 12, 9) + frames.tobytes())
    big = tmp / "big.htk"                  # 2^31 - 1 frames of 32764 bytes claimed, 4 frames there
    big.write_bytes(struct.pack(">iihh", 0x7FFFFFFF, 100000, 32764, 9) + frames.tobytes())
    scps = {"claimed_frames": "u0=big.htk\n", "range": "u0=a.htk[0,4294967295]\n",
            "ranges": "".join(f"u{i}=a.htk[0,{2**40 + i}]\n" for i in range(50))}
    out = {}
    for name, text in scps.items():
        (tmp / f"{name}.scp").write_text(text)
        out[name] = str(tmp / f"{name}.scp")
    return out


def cache_cases(tmp):
    out = {}
    for name, records, shape in (("records", 10**12, [784]), ("no_row", 10**15, [0]), ("dims", 4, [2**40])):
        header = {"version": 2, "records": records, "fingerprint": "x", "source": None, "invalid": None,
                  "sections": [{"name": "features", "sectionType": "data", "dtype": "float32",
                                "shape": [records, *shape], "offset": 64}]}
        blob = json.dumps(header).encode()
        data = struct.pack("<8sIIQQ", b"CNTKIOBW", 2, 0, 64 + 256, len(blob)).ljust(64, b"\0") + b"\0" * 256 + blob
        (tmp / f"{name}.bin").write_bytes(data)
        out[name] = str(tmp / f"{name}.bin")
    head = struct.pack("<8sIIQQ", b"CNTKIOBW", 2, 0, 64, 2**62).ljust(64, b"\0")   # a header of 2^62 bytes
    (tmp / "header.bin").write_bytes(head + b"{}")
    out["header"] = str(tmp / "header.bin")
    return out


CHILD = textwrap.dedent("""
    import json, os, sys
    from cntkio import CBFDeserializer, HTKFeatureDeserializer, MinibatchSource, StreamDef
    from cntkio.errors import CntkioError
    from cntkio.readers import build_reader
    fmt, cases = sys.argv[1], json.loads(sys.argv[2])
    def peak_mb():      # this process's own high-water mark (ru_maxrss keeps a forking parent's)
        with open("/proc/self/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM:")) / 1024
    base = peak_mb()
    outcome = {}
    for name, path in cases.items():
        try:
            if fmt == "cbf":
                for frame_mode in (False, True):
                    src = MinibatchSource(CBFDeserializer(path), max_sweeps=1, frame_mode=frame_mode)
                    while src.next_minibatch(64):
                        pass
            elif fmt == "htk":
                os.chdir(os.path.dirname(path))
                feats = HTKFeatureDeserializer({"f": StreamDef(shape=3, scp=path, context=(2, 2))})
                src = MinibatchSource([feats], max_sweeps=1, frame_mode=True)
                while src.next_minibatch(64):
                    pass
            else:
                sec = {"readerType": "BinaryReader", "file": path, "randomize": "None"}
                src = build_reader(sec, max_sweeps=1)
                while src.next_minibatch(64):
                    pass
            outcome[name] = "read"
        except (CntkioError, OSError) as e:
            outcome[name] = type(e).__name__ + ": " + str(e)[:300]
    peak = peak_mb()
    print(json.dumps({"base_mb": base, "peak_mb": peak, "outcome": outcome}))
""")


@pytest.mark.parametrize("fmt, make", [("cbf", cbf_cases), ("htk", htk_cases), ("cache", cache_cases)])
def test_huge_claims_in_small_files_keep_memory_bounded(tmp_path, fmt, make):
    cases = make(tmp_path)
    res = subprocess.run([sys.executable, "-c", CHILD, fmt, json.dumps(cases)], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["peak_mb"] < LIMIT_MB, got
    for name, path in cases.items():
        what = got["outcome"][name]
        assert what != "read", (name, got)           # each claim is refused, naming the file
        assert path in what or str(tmp_path) in what, (name, what)
