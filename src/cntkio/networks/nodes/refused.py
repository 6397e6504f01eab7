"""The node types of CNTK (its NDL functions, NetworkDescriptionLanguage.cpp's CheckFunction, and
the operations of ``new ComputationNode``) that cntkio does not build, each with why; it builds
nothing. The NDL evaluator and BrainScript refuse them by name before any data is read."""
from __future__ import annotations

__all__ = ["REFUSED_OPS", "refusal"]

_LATTICE = "sequence training needs lattices (the lattice reader), which cntkio does not have"

#: lower-cased name -> (CNTK's name, why cntkio does not build it)
REFUSED_OPS: dict[str, tuple[str, str]] = {}

for _names, _why in (
    (("EditDistanceError",), "the edit distance of sequences is not implemented in cntkio"),
    (("ForwardBackward",), "the CTC criterion is not implemented in cntkio"),
    (("LabelsToGraph",), "the CTC criterion is not implemented in cntkio"),
    (("Crop",), "cropping to another node's shape is not implemented in cntkio"),
    (("EpochAccumulator",), "accumulating a value over an epoch is not implemented in cntkio"),
    (("CosDistanceWithNegativeSamples", "CosWithNegSamples"),
     "cosine distances with negative samples are not implemented in cntkio"),
    (("DummyCriterion",), "a criterion with given derivatives is not implemented in cntkio"),
    (("ROIPooling",), "pooling of regions of interest is not implemented in cntkio"),
    (("SequenceWithSoftmax", "SEWithSM"), _LATTICE),
    (("LatticeSequenceWithSoftmax",), _LATTICE),
    (("SparseImageInput", "SparseImage"), "cntkio's image inputs are dense (ImageInput)"),
    (("NoiseContrastiveEstimation",), "noise-contrastive estimation is not implemented in cntkio"),
    (("OptimizedRNNStack", "RNN"), "cuDNN's packed RNN stack is not implemented in cntkio"),
    (("GMMLogLikelihood", "GMMLL"), "Gaussian-mixture likelihoods are not implemented in cntkio"),
    (("LambdaRank",), "ranking criteria over queries are not implemented in cntkio"),
    (("NDCG1Eval",), "ranking criteria over queries are not implemented in cntkio"),
    (("QuantizedTimes",), "quantized products are not implemented in cntkio (Times is)"),
    (("RandomSample", "RandomSampleInclusionFrequency"), "sampling nodes are not implemented in cntkio"),
    (("EnvironmentInput",), "cntkio has no input node holding the trainer's state"),
    (("Where", "PackedIndex", "GatherPacked", "ScatterPacked"),
     "it makes sequences of another length (a new dynamic axis); every sequence node of a cntkio network is "
     "computed on the reader's sequence layout"),
    (("TimeReverse",), "reversing sequences in time is not implemented in cntkio"),
):
    for _n in _names:
        REFUSED_OPS[_n.lower()] = (_names[0], _why)


def refusal(name: str) -> tuple[str, str] | None:
    """``(CNTK's name, why)`` when cntkio refuses the node type ``name`` (any case), else None."""
    return REFUSED_OPS.get(str(name).lower())
