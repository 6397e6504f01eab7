"""The engine between deserializers and the training loop (docs/architecture.md).

``reader.Reader`` is the one interface ``MinibatchSource`` uses. It reads through a window policy:
``global_timeline.GlobalTimeline`` (built-in deserializers; its jobs are split into ``walk``,
``window``, ``schedule`` and ``handoff``) or ``local_timeline.LocalTimeline`` (user
deserializers). Beside them: ``randomizer`` (CNTK's block
randomizer), ``packer`` (sequence, frame and truncated-BPTT packing) and ``prefetch`` (loader
threads). The engine knows the deserializer protocol (``cntkio.deserializers.protocol``) and
nothing of config syntax or torch.
"""
