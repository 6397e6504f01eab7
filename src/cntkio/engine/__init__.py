"""The engine between deserializers and the training loop (DESIGN.md): composite join,
randomizers (block, sequential, local-timeline), packers and prefetch.

It knows the deserializer protocol (``cntkio.deserializers.base``) and nothing of config syntax
or torch.
"""
