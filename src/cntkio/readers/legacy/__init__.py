"""CNTK's legacy readers and writers (``readerType = UCIFastReader``, ``BinaryReader``, ...), each
an adapter from its reader section onto cntkio's engine: one deserializer type in
:mod:`cntkio.registry`, read by the same MinibatchSource as every other format.

Modules are imported on first use through the registry; this package imports nothing itself.
"""
