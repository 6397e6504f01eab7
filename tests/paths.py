"""Where things are, for the tests: the repository, its sources and test data, and the project's
shared material (the spec and CNTK's conformance data).

``CNTKIO_SHARED`` names the shared folder; by default it is ``../shared`` beside the repository
(as on the developers' machines and in CI).
"""
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
TESTS = REPO / "tests"
DATA = TESTS / "data"
DOCS = REPO / "docs"

SHARED = Path(os.environ.get("CNTKIO_SHARED", REPO.parent / "shared"))
SPEC = SHARED / "spec"
CONFORMANCE = SHARED / "conformance" / "cntk"

#: Marks a test that reads the shared folder's CNTK material (CNTK's conformance data, the spec's
#: randomizer model): skipped, saying why, in a clone without the shared folder beside it.
needs_shared = pytest.mark.skipif(not (CONFORMANCE.is_dir() and SPEC.is_dir()),
                                  reason=f"needs the project's shared folder ({SHARED}): CNTK's conformance "
                                         "data and the spec")
