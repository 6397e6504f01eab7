"""CNTK actions that cntkio does not implement: each raises a clear error naming the action.

``edit`` runs a Model Editing Language (MEL) script and ``testUnroll`` evaluates a recurrent model
by unrolling it; both need CNTK's computation-network engine, which cntkio does not rebuild. A
config that uses them fails with :class:`NotImplementedInCntkio` instead of being skipped.
"""
from __future__ import annotations

from ..errors import NotImplementedInCntkio

__all__ = ["edit", "test_unroll", "UNSUPPORTED_ACTIONS"]

#: action -> why it is not implemented
UNSUPPORTED_ACTIONS = {
    "edit": "the Model Editing Language (MEL, editPath=...) needs CNTK's computation network",
    "testUnroll": "unrolled evaluation of recurrent models needs CNTK's computation network",
}


def _refuse(action: str, name: str) -> None:
    raise NotImplementedInCntkio(f"action={action} (command section {name!r}) is not implemented in cntkio: "
                                 f"{UNSUPPORTED_ACTIONS[action]}; implemented model actions: train, adapt, "
                                 "test, eval, cv, write, createLabelMap, dumpnode")


def edit(section, name: str = "edit") -> None:
    """The ``edit`` action (MEL): not implemented, raises NotImplementedInCntkio."""
    _refuse("edit", name)


def test_unroll(section, name: str = "testUnroll") -> None:
    """The ``testUnroll`` action: not implemented, raises NotImplementedInCntkio."""
    _refuse("testUnroll", name)
