"""``python -m cntkio configFile=...``: the same as the ``cntkio`` command."""
import sys

from .cli import main

sys.exit(main())
