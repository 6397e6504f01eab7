"""CNTK actions that cntkio does not implement: each raises a clear error naming the action.

``testUnroll`` evaluates a recurrent model by unrolling it; a config that uses it fails with
:class:`NotImplementedInCntkio` instead of being skipped. (``edit``, MEL, is ``actions/edit.py``.)
"""
from __future__ import annotations

from ..errors import NotImplementedInCntkio

__all__ = ["test_unroll", "UNSUPPORTED_ACTIONS"]

#: action -> why it is not implemented
UNSUPPORTED_ACTIONS = {
    "testUnroll": "unrolled evaluation of recurrent models needs CNTK's computation network",
}


def _refuse(action: str, name: str) -> None:
    raise NotImplementedInCntkio(f"action={action} (command section {name!r}) is not implemented in cntkio: "
                                 f"{UNSUPPORTED_ACTIONS[action]}; implemented model actions: train, adapt, "
                                 "test, eval, cv, write, createLabelMap, dumpnode, edit")


def test_unroll(section, name: str = "testUnroll") -> None:
    """The ``testUnroll`` action: not implemented, raises NotImplementedInCntkio."""
    _refuse("testUnroll", name)
