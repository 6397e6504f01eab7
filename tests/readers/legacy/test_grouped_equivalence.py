"""The grouped parallel-sentence mode (SequenceReader / LUSequenceReader with
``nbrUttsInEachRecurrentIter = N``) gives exactly the minibatches and checkpoint states recorded
from the reference implementation: every minibatch's arrays (values, mask, layout), its counts and
sweep flag, and the checkpoint state after it, over two sweeps of a generated corpus, randomized
and not; and a reader restored from a mid-sweep checkpoint continues with the same minibatches and
states. The recorded digests are in ``tests/data/legacy/grouped_golden.json``; regenerate them
(only from a version known to be right) with ``python tests/readers/legacy/test_grouped_equivalence.py``."""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from cntkio.readers import build_reader

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "legacy" / "grouped_golden.json"
WORDS = [f"w{i}" for i in range(30)]
# name -> (reader, randomize, N, minibatch steps); randomize = 16: chunks of 16 sentences
CASES = {"lm_none": ("lm", "None", 4, 3), "lm_auto": ("lm", "Auto", 4, 3), "lm_auto_wide": ("lm", "Auto", 7, 5),
         "lm_blocks": ("lm", "16", 4, 3), "lu_none": ("lu", "None", 4, 3), "lu_auto": ("lu", "Auto", 3, 4),
         "lu_blocks": ("lu", "16", 5, 2)}


def _sentences() -> list[list[str]]:
    rng = np.random.default_rng(5)
    out = []
    for _ in range(150):
        n = int(rng.integers(1, 9))          # many sentences of each length: real groups form
        out.append([WORDS[int(w)] for w in rng.integers(0, len(WORDS), n)])
    return out


def _write(folder: Path) -> dict:
    sents = _sentences()
    (folder / "lm.txt").write_text("".join("</s> " + " ".join(s) + " </s>\n" for s in sents))
    (folder / "lu.txt").write_text("".join("BOS O\n" + "".join(f"{w} {'B-x' if w.endswith('7') else 'O'}\n"
                                                               for w in s) + "EOS O\n" for s in sents))
    (folder / "lu_in.txt").write_text("BOS\nEOS\n<unk>\n" + "".join(f"{w}\n" for w in WORDS[:25]))   # some <unk>
    (folder / "lu_out.txt").write_text("O\nB-x\n")
    lm = {"readerType": "SequenceReader", "file": str(folder / "lm.txt"),
          "labelIn": {"labelDim": "40"}, "labels": {"labelType": "NextWord", "labelDim": "40"}}
    lu = {"readerType": "LUSequenceReader", "file": str(folder / "lu.txt"), "unk": "<unk>",
          "labelIn": {"token": str(folder / "lu_in.txt")}, "labels": {"token": str(folder / "lu_out.txt")}}
    return {"lm": lm, "lu": lu}


def _section(bases: dict, case: str) -> dict:
    kind, randomize, n, _ = CASES[case]
    return dict(bases[kind], randomize=randomize, nbrUttsInEachRecurrentIter=str(n))


def _canon(x):
    if isinstance(x, dict):
        return {str(k): _canon(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, (list, tuple)):
        return [_canon(v) for v in x]
    if isinstance(x, np.ndarray):
        return {"dtype": str(x.dtype), "shape": list(x.shape), "data": x.tolist()}
    if isinstance(x, np.generic):
        return x.item()
    return x


def _minibatch_record(mb) -> dict:
    rec = {}
    for stream, v in sorted(mb.items(), key=lambda kv: kv[0].name):
        arr = {"shape": list(v.shape), "mask": np.asarray(v.mask).tolist(), "sparse": bool(v.is_sparse),
               "num_sequences": v.num_sequences, "num_samples": v.num_samples, "sweep_end": bool(v.end_of_sweep)}
        if v.is_sparse:
            m = v.as_csr()
            arr.update(data=np.asarray(m.data).tolist(), indices=np.asarray(m.indices).tolist(),
                       indptr=np.asarray(m.indptr).tolist(), csr_shape=list(m.shape), dtype=str(m.data.dtype))
        else:
            a = np.asarray(v.asarray())
            arr.update(data=a.tolist(), dtype=str(a.dtype))
        rec[stream.name] = arr
    return rec


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(_canon(obj), sort_keys=True).encode()).hexdigest()[:24]


def _steps(src, steps: int, limit: int = 10_000) -> tuple[list[str], list]:
    """Reads to the end: a digest of (minibatch, checkpoint state after it) per minibatch, and the states."""
    digests, states = [], []
    for _ in range(limit):
        mb = src.next_minibatch(steps)
        if not mb:
            break
        state = src.get_checkpoint_state()
        digests.append(_digest({"mb": _minibatch_record(mb), "state": state}))
        states.append(state)
    return digests, states


def _record(folder: Path) -> dict:
    bases = _write(folder)
    out = {}
    for case in CASES:
        src = build_reader(_section(bases, case), max_sweeps=2)
        out[case] = _steps(src, CASES[case][3])[0]
        src.close()
    return out


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text())


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict:
    return _write(tmp_path_factory.mktemp("grouped"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_minibatch_and_state_as_recorded(case, bases, golden):
    src = build_reader(_section(bases, case), max_sweeps=2)
    got, _ = _steps(src, CASES[case][3])
    src.close()
    assert len(got) == len(golden[case]) and len(got) > 40
    bad = [i for i, (a, b) in enumerate(zip(got, golden[case])) if a != b]
    assert not bad, f"{case}: minibatches {bad[:10]} differ from the recorded ones"


@pytest.mark.parametrize("case", sorted(CASES))
def test_restore_mid_sweep_continues_as_recorded(case, bases, golden):
    steps = CASES[case][3]
    src = build_reader(_section(bases, case), max_sweeps=2)
    _, states = _steps(src, steps)
    src.close()
    for at in (len(states) // 3, len(states) // 2 + 1):     # mid first sweep, and into the second
        again = build_reader(_section(bases, case), max_sweeps=2)
        again.restore_from_checkpoint(states[at])
        got, _ = _steps(again, steps)
        again.close()
        assert got == golden[case][at + 1:]


if __name__ == "__main__":
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        rec = _record(Path(d))
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    tmp = GOLDEN.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(rec, indent=1) + "\n")
    tmp.replace(GOLDEN)
    print({k: len(v) for k, v in rec.items()}, file=sys.stderr)
