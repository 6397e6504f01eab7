"""CNTK's UCIFastReader conformance case (``shared/conformance/cntk/README.md``, section 7), run
from the command line as the CTF cases are (tests/conformance/test_conformance_cli.py).

``UCIFastReaderSimpleDataLoop_Config.cntk`` [Simple_Test], float, epochSize 500, minibatch 250, 2
epochs, working directory ``Data/``. The control holds 4 minibatches: 250 feature lines of 2
values, then 250 one-hot label lines of 2 values. The README's rule: with ``randomize = "auto"``
each epoch is a shuffle of a block of 500 consecutive records (the control: records 0..499, then
500..999, in an order that came from the C library's ``rand()``), so each epoch's multiset of
(features, labels) pairs is compared, and the minibatch sizes; the values are the data file's text
printed with ``%.6g``. cntkio's block randomizer also shuffles the order of the blocks (a
documented difference, docs/legacy-readers.md), so a cntkio epoch is *a* block of 500 consecutive
records; with ``randomize = None`` it is the control's block, record for record.
"""
from __future__ import annotations

from collections import Counter

import pytest

from cntkio.cli import main
import paths

ROOT = paths.CONFORMANCE
CONFIG = ROOT / "Config" / "UCIFastReaderSimpleDataLoop_Config.cntk"
DATA = ROOT / "Data"
CONTROL = ROOT / "Control" / "UCIFastReaderSimpleDataLoop_Control.txt"
MB, EPOCH, EPOCHS = 250, 500, 2

pytestmark = pytest.mark.skipif(not CONFIG.exists(), reason="CNTK's conformance data is not here")


def _dump(monkeypatch, tmp_path, *extra: str) -> list[str]:
    out = tmp_path / "Simple_Test_Output.txt"
    monkeypatch.chdir(DATA)
    args = [f"configFile={CONFIG}", "command=Simple_Test",
            f"Simple_Test=[action=dumpReader; outputFile={out}; epochSize={EPOCH}; minibatchSize={MB}; "
            f"maxEpochs={EPOCHS}]", *extra]
    assert main(args) == 0
    return out.read_text().splitlines()


def _epochs(lines: list[str]) -> list[Counter]:
    """Per epoch, the multiset of 'features | labels' pairs of its minibatches (each minibatch:
    MB feature lines, then MB label lines)."""
    assert len(lines) == EPOCHS * (EPOCH // MB) * 2 * MB
    out = []
    for e in range(EPOCHS):
        pairs: Counter = Counter()
        for m in range(EPOCH // MB):
            base = (e * (EPOCH // MB) + m) * 2 * MB
            feats, labs = lines[base:base + MB], lines[base + MB:base + 2 * MB]
            assert all(len(f.split()) == 2 for f in feats) and all(len(lb.split()) == 2 for lb in labs)
            pairs.update(f"{f} | {lb}" for f, lb in zip(feats, labs))
        out.append(pairs)
    return out


def _blocks() -> list[Counter]:
    mapping = (DATA / "UCIFastReaderSimpleDataLoop_Mapping.txt").read_text().split()
    recs = []
    for line in (DATA / "UCIFastReaderSimpleDataLoop_Train.txt").read_text().splitlines():
        a, b, lab = line.split()
        onehot = ["1" if m == lab else "0" for m in mapping]
        recs.append(f"{float(a):.6g} {float(b):.6g} | {' '.join(onehot)}")
    return [Counter(recs[k:k + EPOCH]) for k in range(0, len(recs), EPOCH)]


def test_the_readme_rule_holds_for_the_control():
    control = _epochs(CONTROL.read_text().splitlines())
    blocks = _blocks()
    assert control == blocks[:EPOCHS]


def test_auto_randomized_epochs_are_shuffled_blocks(monkeypatch, tmp_path):
    lines = _dump(monkeypatch, tmp_path)
    blocks = _blocks()
    got = _epochs(lines)
    found = [blocks.index(e) for e in got]          # ValueError: an epoch that is not one block
    assert len(set(found)) == EPOCHS
    # shuffled: the block's records are not delivered in file order
    first = [ln for ln in lines[:MB]]
    ordered = [p.split(" | ")[0] for p in list(_blocks_in_order())[found[0] * EPOCH:found[0] * EPOCH + MB]]
    assert first != ordered


def _blocks_in_order():
    for line in (DATA / "UCIFastReaderSimpleDataLoop_Train.txt").read_text().splitlines():
        a, b, _ = line.split()
        yield f"{float(a):.6g} {float(b):.6g} | "


def test_not_randomized_epochs_are_the_controls_blocks(monkeypatch, tmp_path):
    lines = _dump(monkeypatch, tmp_path, "Simple_Test=[reader=[randomize=None]]")
    control = _epochs(CONTROL.read_text().splitlines())
    assert _epochs(lines) == control
