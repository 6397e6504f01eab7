"""Shared fixtures of the test suite.

The folders mirror the package (``tests/engine/`` tests ``cntkio.engine``, ...); helper modules
that several folders use live here at the top and are imported by name (pytest puts this folder
on ``sys.path``): ``paths`` (where the repository, its data and the shared spec are) and
``fakes`` (an in-memory deserializer).
"""
import pytest

from cntkio.deserializers.ctf import available_backends


@pytest.fixture(params=available_backends(), ids=lambda b: b.__name__.rsplit(".", 1)[-1])
def backend(request):
    """Each CTF parser module usable here: the pure-Python reference, and the C module when it
    is built; a test taking ``backend`` runs once per parser."""
    return request.param


@pytest.fixture(autouse=True)
def _fresh_warnings():
    """Each test sees each cntkio warning once (cntkio._log shows a warning's text once per run)."""
    from cntkio._log import reset_warnings
    reset_warnings()
    yield
