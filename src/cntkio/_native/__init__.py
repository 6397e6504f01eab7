"""The C core: hot loops written in C11, releasing the GIL while they run.

``native(name)`` returns the compiled module ``cntkio._native._<name>``, or None when
``CNTKIO_PURE_PYTHON=1`` asks for the pure-Python reference implementations. A missing build is
an error, not a silent slow path.
"""
from __future__ import annotations

import importlib
import os

__all__ = ["native", "pure_python"]


def pure_python() -> bool:
    """True when ``CNTKIO_PURE_PYTHON`` is set to a true value (1, true, yes)."""
    return os.environ.get("CNTKIO_PURE_PYTHON", "").strip().lower() in ("1", "true", "yes", "on")


_loaded: dict[str, object] = {}
_environ = os.environ


def native(name: str):
    """The compiled module ``_<name>``, or None under ``CNTKIO_PURE_PYTHON=1`` (read on every call:
    tests switch it; the module itself is looked up once)."""
    if _environ.get("CNTKIO_PURE_PYTHON") and pure_python():
        return None
    mod = _loaded.get(name)
    if mod is not None:
        return mod
    try:
        mod = _loaded[name] = importlib.import_module(f"{__name__}._{name}")
        return mod
    except ImportError as exc:
        raise ImportError(
            f"cntkio's C extension '_{name}' is not built ({exc}). Reinstall with "
            "`pip install -e .` (needs a C compiler), or set CNTKIO_PURE_PYTHON=1 to use the "
            "pure-Python reference implementation.") from exc
