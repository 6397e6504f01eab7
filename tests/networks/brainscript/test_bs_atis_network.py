"""The network of CNTK's ATIS slot-tagging config (three word inputs spliced, an embedding
Parameter, BS.RNNs.RecurrentLSTMPStack over an array of layer dimensions, an output layer),
built with cntkio.brainscript.build and trained in a plain PyTorch loop on generated sequences
(the actions feed one feature stream; the network reads three)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

import cntkio.brainscript

ATIS = """
    inputDim = 20
    labelDim = 5
    featDim = inputDim*3   # previous, current and next word
    embDim = 16
    hiddenDim = 24
    maxLayer = 1
    initScale = 6
    featuresPW = Input(inputDim)
    featuresCW = Input(inputDim)
    featuresNW = Input(inputDim)
    features = RowStack(featuresPW : featuresCW : featuresNW)
    labels = Input(labelDim, tag = "label")
    emb = Parameter(embDim, featDim)
    featEmbedded = emb * features
    lstmDims[i:0..maxLayer-1] = hiddenDim
    NoAuxInputHook (input, lstmState) = BS.Constants.None
    lstmStack = BS.RNNs.RecurrentLSTMPStack (lstmDims,
        cellDims=lstmDims,
        featEmbedded,
        inputDim=embDim,
        previousHook=BS.RNNs.PreviousHC,
        augmentInputHook=BS.RNNs.NoAuxInputHook,
        augmentInputDim=0,
        enableSelfStabilization=false)
    lstmOutputLayer = Length (lstmStack)-1
    LSTMoutput = lstmStack[lstmOutputLayer].h
    W = Parameter(labelDim, hiddenDim, init = "uniform", initValueScale=initScale)
    b = Parameter(labelDim, 1, init = "fixedValue", value=0)
    outputs = W * LSTMoutput + b
    cr = CrossEntropyWithSoftmax(labels, outputs)
    errs = ClassificationError(labels, outputs)
    criterionNodes = (cr)
    evaluationNodes = (errs)
    outputNodes = (outputs)
"""


def _batch(gen, sequences: int):
    """Words of random sentences; a word's label depends on the word before it."""
    words, pos, lens, labels = [], [], [], []
    for _ in range(sequences):
        n = int(torch.randint(2, 8, (1,), generator=gen))
        w = torch.randint(0, 20, (n,), generator=gen)
        for t in range(n):
            prev = int(w[t - 1]) if t else None
            labels.append(int(w[t]) % 3 if w[t] < 10 else (3 if prev is not None and prev < 10 else 4))
        words.append(w)
        pos += list(range(n))
        lens += [n] * n
    w = torch.cat(words)
    starts = torch.tensor(pos) == 0
    ends = torch.tensor(pos) == torch.tensor(lens) - 1
    onehot = F.one_hot(w, 20).float()
    prev = torch.where(starts.unsqueeze(1), torch.zeros_like(onehot), onehot.roll(1, 0))
    nxt = torch.where(ends.unsqueeze(1), torch.zeros_like(onehot), onehot.roll(-1, 0))
    feeds = {"featuresPW": prev, "featuresCW": onehot, "featuresNW": nxt,
             "labels": F.one_hot(torch.tensor(labels), 5).float()}
    return feeds, torch.tensor(pos), torch.tensor(lens)


def test_atis_network_builds_with_three_inputs_and_learns():
    torch.manual_seed(0)
    net = cntkio.brainscript.build(ATIS)
    g = net.graph.groups
    assert g["feature"] == ["featuresPW", "featuresCW", "featuresNW"] and g["label"] == ["labels"]
    assert net.shapes["features"] == (60,) and net.shapes["W"] == (5, 24) and net.shapes["outputs"] == (5,)
    gen = torch.Generator().manual_seed(1)
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(60):
        feeds, pos, lens = _batch(gen, 10)
        loss = net.evaluate(feeds, ["cr"], positions=pos, lengths=lens)["cr"].sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    feeds, pos, lens = _batch(gen, 100)
    with torch.no_grad():
        v = net.evaluate(feeds, ["errs"], positions=pos, lengths=lens)
    assert float(v["errs"]) / len(pos) < 0.1               # chance: about 0.7
