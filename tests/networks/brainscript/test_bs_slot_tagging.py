"""ATIS-like slot tagging: a BrainScript EmbeddingLayer : RecurrentLSTMLayer : DenseLayer model
trained through the train/test actions on generated word sequences, where the label of a word
depends on the word before it (only a recurrence can learn it); sequences of different lengths
are packed by the reader and no padding reaches the criteria (the test counts every word once)."""
from __future__ import annotations

import random

from cntkio.actions.runner import run

NET = """
    BrainScriptNetworkBuilder = [
        inputDim = $wordCount$
        labelDim = $labelCount$
        model = Sequential (
            EmbeddingLayer {16} :
            RecurrentLSTMLayer {24} :
            DenseLayer {labelDim}
        )
        query = Input {inputDim, sparse=true}
        slotLabels = Input {labelDim}
        z = model (query)
        ce = CrossEntropyWithSoftmax (slotLabels, z)
        errs = ClassificationError (slotLabels, z)
        featureNodes = (query)
        labelNodes = (slotLabels)
        criterionNodes = (ce)
        evaluationNodes = (errs)
        outputNodes = (z)
    ]
"""


def _data(path, count, seed) -> int:
    rnd = random.Random(seed)
    lines, words = [], 0
    for s in range(count):
        prev = None
        for _ in range(rnd.randint(2, 8)):
            w = rnd.randrange(20)
            label = w % 3 if w < 10 else (3 if prev is not None and prev < 10 else 4)
            lines.append(f"{s} |w {w}:1 |l {label}:1")
            prev, words = w, words + 1
    path.write_text("\n".join(lines) + "\n")
    return words


def _reader(path):
    return (f'reader = [ readerType = "CNTKTextFormatReader" ; file = "{path}" ; input = [\n'
            '  query = [ alias = "w" ; dim = $wordCount$ ; format = "sparse" ]\n'
            '  slotLabels = [ alias = "l" ; dim = $labelCount$ ; format = "sparse" ] ] ]\n')


def test_lstm_slot_tagger_learns_a_label_that_depends_on_the_previous_word(tmp_path):
    train_words = _data(tmp_path / "train.ctf", 250, 1)
    test_words = _data(tmp_path / "test.ctf", 80, 2)
    cfg = tmp_path / "slots.cntk"
    cfg.write_text(
        "command = Train:Test\nprecision = float\ntraceLevel = 0\nwordCount = 20\nlabelCount = 5\n"
        f'modelPath = "{tmp_path}/slots.lstm"\n'
        "Train = [\n  action = train\n" + NET +
        "  SGD = [ epochSize = 0 ; minibatchSize = 70 ; learningRatesPerSample = 0.02 ;"
        " momentumAsTimeConstant = 700 ; maxEpochs = 5 ; numMBsToShowResult = 0 ]\n  "
        + _reader(tmp_path / "train.ctf") + "]\n"
        "Test = [\n  action = test\n  minibatchSize = 500\n  " + _reader(tmp_path / "test.ctf") + "]\n")
    (_, _, train), (_, _, test) = run([f"configFile={cfg}", "progressBar=false"])
    assert [e.samples for e in train.epochs] == [train_words] * 5
    assert test.samples == test_words
    assert test.averages["errs"] < 0.1          # chance is about 0.7
