"""Where the project's shared material is: the spec and CNTK's conformance data.

``CNTKIO_SHARED`` names the folder; by default it is ``../shared`` beside the repository (as on
the developers' machines and in CI).
"""
import os
from pathlib import Path

SHARED = Path(os.environ.get("CNTKIO_SHARED", Path(__file__).resolve().parents[2] / "shared"))
SPEC = SHARED / "spec"
CONFORMANCE = SHARED / "conformance" / "cntk"
