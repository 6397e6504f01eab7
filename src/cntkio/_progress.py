"""Progress bars (tqdm, on standard error) of long jobs: index builds, conversion, training epochs,
``write``.

What it must never do: draw a bar when standard error is not a terminal unless asked, or when the
run said ``progressBar=false``.

A run's ``progressBar`` (``cntkio configFile=...``: the top-level value; true, false, or absent:
on a terminal) is set here for the whole run (:func:`set_default`), so that work deep in a reader
(a CTF index build) follows it too; a job's own setting (``enabled``) wins.
"""
from __future__ import annotations

__all__ = ["set_default", "bar"]

_DEFAULT: bool | None = None


def set_default(enabled: bool | None) -> bool | None:
    """Set the run's default (None: on a terminal); returns the previous one."""
    global _DEFAULT
    old, _DEFAULT = _DEFAULT, enabled
    return old


def bar(enabled: bool | None = None, **kwargs):
    """A tqdm bar on standard error, or None when progress is off (``enabled`` False, or None and
    the run's default off, or neither set and standard error not a terminal)."""
    if enabled is None:
        enabled = _DEFAULT
    if enabled is False:
        return None
    import sys
    from tqdm import tqdm
    kwargs.setdefault("file", sys.stderr)
    kwargs.setdefault("leave", False)
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(disable=None if enabled is None else False, **kwargs)
