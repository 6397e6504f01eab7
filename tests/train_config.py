"""The train:test configuration the action tests share (tests/actions/conftest.py writes it) and
`line_of`."""

CONFIG = """command = train:test
deviceId = cpu
traceLevel = 1
modelPath = {model}
train = [
    action = train
    SimpleNetworkBuilder = [
        layerSizes = 4:8:3
        trainingCriterion = CrossEntropyWithSoftmax
        evalCriterion = ClassificationError
    ]
    SGD = [
        minibatchSize = 8
        learningRatesPerMB = 0.1
        maxEpochs = {epochs}
    ]
    reader = [
        readerType = CNTKTextFormatReader
        file = {train}
        randomize = false
        input = [
            features = [ dim = 4 ; format = dense ]
            labels = [ dim = 3 ; format = dense ]
        ]
    ]
]
test = [
    action = test
    minibatchSize = 16
    reader = [
        readerType = CNTKTextFormatReader
        file = {test}
        input = [
            features = [ dim = 4 ; format = dense ]
            labels = [ dim = 3 ; format = dense ]
        ]
    ]
]
"""


def line_of(path, text: str) -> int:
    """The 1-based number of the first line of ``path`` containing ``text``."""
    return next(i for i, line in enumerate(open(path).read().splitlines(), 1) if text in line)
