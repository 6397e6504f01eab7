"""The functions of CNTK's BrainScript library that cntkio does not build, each with its reason:
calling one is an error naming it, raised while the network is built (before any data is read).
It never builds anything."""
from __future__ import annotations

from .library import refuse

__all__: list[str] = []

_NEW_AXIS = ("it makes sequences of another length (a new dynamic axis); every sequence node of a cntkio network "
             "is computed on the reader's sequence layout")
_LATTICE = "sequence training on lattices needs the lattice reader, which cntkio does not have"

for _sig, _why in (
    # sequences of other lengths
    ("BS.Sequences.BroadcastSequenceAs (type, data1)", _NEW_AXIS),
    ("BS.Sequences.PastValueWindow (N, in, axis=2)", _NEW_AXIS),
    ("BS.Sequences.FoldL (binaryOp, x0, x)", _NEW_AXIS + " (its result is the sequence's last value)"),
    ("BS.Sequences.FoldR (binaryOp, x0, x)", _NEW_AXIS + " (its result is the sequence's last value)"),
    ("BS.Sequences._Fold (binaryOp, x0, x)", _NEW_AXIS + " (its result is the sequence's last value)"),
    ("BS.Sequences.Gather (cond, x)", _NEW_AXIS),
    ("BS.Sequences.Scatter (cond, y)", _NEW_AXIS),
    ("BS.Sequences.First (x)", _NEW_AXIS),
    ("BS.Sequences.Last (x)", _NEW_AXIS),
    ("BS.Loop.Count (x)", _NEW_AXIS + " (it is the last value of a sequence)"),
    ("Where (cond, tag='')", _NEW_AXIS),
    ("PackedIndex (nodeWithLayoutToPackFor, indexSequence, tag='')", _NEW_AXIS),
    ("GatherPacked (indexSequence, sourceData, tag='')", _NEW_AXIS),
    ("ScatterPacked (cond, indexSequence, sourceData, tag='')", _NEW_AXIS),
    ("TimeReverse (vectorSequence, tag='')", "reversing sequences in time is not implemented in cntkio "
                                             "(FutureValue reads a sequence backwards)"),
    ("Shift (input, fromOffset, boundaryValue, boundaryMode=-1, dim=-1, tag='')",
     "its boundary modes are not implemented in cntkio; PastValue and FutureValue are"),
    ("BS.Seq2Seq.CreateAugmentWithFixedWindowAttentionHook (attentionDim, attentionSpan, decoderDynamicAxis, "
     "encoderOutput, enableSelfStabilization=false)", _NEW_AXIS + " (the attention window of an encoder)"),
    ("BS.Seq2Seq.GetTopNTensor (D, scores)", "beam search is not implemented in cntkio"),
    ("BS.Seq2Seq.GreedySequenceDecoderFrom (modelAsTrained)", "it edits a trained network (BS.Network.Edit), which "
                                                              "cntkio does not implement"),
    ("BS.Seq2Seq.BeamSearchSequenceDecoderFrom (modelAsTrained, beamDepth)", "beam search is not implemented in "
                                                                             "cntkio"),
    ("BS.Network.Edit (inputModel, editFunctions, additionalRoots)", "editing a network from BrainScript is not "
                                                                     "implemented in cntkio; MEL (the edit action) "
                                                                     "edits models"),
    ("BS.Network.CloneFunction (inputNodes, outputNodes, parameters='learnable')",
     "cloning part of a network is not implemented in cntkio"),
    # training criteria cntkio has no reader or kernel for
    ("LatticeSequenceWithSoftmax (labels, evaluation, scaledLogLikelihood, lattice, symListPath, phonePath, "
     "stateListPath, transProbPath, hSmoothingWeight=0.95, frameDropThresh=1e-10, doReferenceAlign=false, "
     "seqGammarUsesMBR=false, seqGammarAMF=14.0, seqGammarLMF=14.0, seqGammarBMMIFactor=0.0, "
     "seqGammarWordPen=0.0, tag='')", _LATTICE),
    ("GMMLogLikelihood (unnormalizedPriorVector, meansAsRows, logStdDevAsRows, dataVectorSequence, tag='')",
     "Gaussian-mixture likelihoods are not implemented in cntkio"),
    ("LambdaRank (gain, prediction, queryId, tag='')", "ranking criteria over queries are not implemented in cntkio"),
    ("NDCG1Eval (gain, prediction, queryId, tag='')", "ranking criteria over queries are not implemented in cntkio"),
    ("ROIPooling (input, ROIs, shape, spatialScale=0.0625)", "pooling of regions of interest is not implemented in "
                                                             "cntkio"),
    ("QuantizedTimes (leftMatrix, rightMatrix, bitSmoothingA=1, bitSmoothingB=1, outputRank=1, "
     "inferInputRankToMap=-1, tag='')", "quantized products are not implemented in cntkio (Times is)"),
    ("CNTK2.GetRandomSample (_, numSamples, sampleWithReplacement, tag='')",
     "sampling nodes are not implemented in cntkio"),
    ("CNTK2.GetInclusionFrequency (_, numSamples, sampleWithReplacement, tag='')",
     "sampling nodes are not implemented in cntkio"),
    ("ForwardBackward (graph, features, blankTokenId, delayConstraint=-1, tag='')",
     "the CTC criterion is not implemented in cntkio"),
    ("LabelsToGraph (labels, tag='')", "the CTC criterion is not implemented in cntkio"),
    ("EditDistanceError (leftInput, rightInput, subPen=1.0, delPen=1.0, insPen=1.0, squashInputs=false, "
     "tokensToIgnore=[||], tag='')", "the edit distance of sequences is not implemented in cntkio"),
    ("OptimizedRNNStack (weights, input, hiddenDims, numLayers=1, bidirectional=false, recurrentOp='lstm', axis=-1, "
     "tag='')", "cuDNN's packed RNN stack is not implemented in cntkio (RecurrentLSTMLayer is)"),
    ("CosDistanceWithNegativeSamples (aVectorSequence, anotherVectorSequence, numShifts, numNegSamples, tag='')",
     "cosine distances with negative samples are not implemented in cntkio"),
    ("EnvironmentInput (propertyName, tag='')", "cntkio has no input node holding the trainer's state"),
    ("SparseImageInput (imageWidth, imageHeight, imageChannels, imageLayout='CHW', dynamicAxis='', tag='feature')",
     "cntkio's image inputs are dense (ImageInput)"),
    ("BS.RNNs.PreviousHCWithTrainedInitialState {shape=0}", "a learned state before each sequence (initialState) is "
                                                            "not supported by cntkio"),
    ("BS.RNNs.NextHCWithTrainedInitialState {shape=0}", "a learned state before each sequence (initialState) is not "
                                                        "supported by cntkio"),
):
    refuse(_sig, _why)
