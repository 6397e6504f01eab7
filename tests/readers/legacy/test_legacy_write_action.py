"""The write action through a DataWriter (a writer section with writerType = BinaryReader): the
nodes' values land in the binary file, equal to the text the same action writes with outputPath,
and readerType = BinaryReader reads them back."""
from __future__ import annotations

import os

import numpy as np

from cntkio.actions.runner import run
from cntkio.readers import build_reader
import paths

LEGACY = os.path.join(str(paths.REPO), "examples", "legacy")


def test_write_through_binary_writer(tmp_path):
    run([f"configFile={LEGACY}/mnist.cntk", f"dataDir={LEGACY}", f"outDir={tmp_path}", "progressBar=false",
         "command=mnistTrain", "mnistTrain=[SGD=[maxEpochs=1]]"])
    reader = f"""reader = [ readerType = UCIFastReader; randomize = None; file = {LEGACY}/digits_test.txt
                 features = [ dim = 64; start = 1 ]; labels = [ dim = 1; start = 0; labelDim = 10 ] ]"""
    (tmp_path / "w.cntk").write_text(f"""
modelPath = {tmp_path}/mnist.dnn
labelMappingFile = {LEGACY}/labels.map
command = asText:asBinary
asText = [ action = write; minibatchSize = 100; outputPath = {tmp_path}/out; outputNodeNames = HLast:labels
    {reader} ]
asBinary = [ action = write; minibatchSize = 100
    {reader}
    writer = [
        writerType = BinaryReader
        HLast = [ sectionType = data; dim = 10; wfile = {tmp_path}/out.bin ]
        labels = [ sectionType = data; dim = 10; wfile = {tmp_path}/out.bin ]
    ]
]
""")
    run([f"configFile={tmp_path}/w.cntk", "progressBar=false"])
    text = np.loadtxt(tmp_path / "out.HLast", dtype=np.float32)
    labels = np.loadtxt(tmp_path / "out.labels", dtype=np.float32)
    src = build_reader({"readerType": "BinaryReader", "file": str(tmp_path / "out.bin"), "randomize": "None"},
                       max_sweeps=1)
    mb = {s.name: v for s, v in src.next_minibatch(1000).items()}
    src.close()
    np.testing.assert_allclose(mb["HLast"].asarray().reshape(-1, 10), text, rtol=1e-6)
    np.testing.assert_array_equal(mb["labels"].asarray().reshape(-1, 10), labels)
    assert text.shape == (360, 10)
