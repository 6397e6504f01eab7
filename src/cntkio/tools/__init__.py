"""The command-line tools of ``cntkio``: ``inspect``, ``convert``, ``bench`` and ``show-config``
(docs/tools.md). Each is a module with ``main(argv) -> exit status``, ``--help`` and ``--json``;
``cli.py`` dispatches to them. They stand on the core (readers, deserializers, the source) and
import nothing of torch."""
