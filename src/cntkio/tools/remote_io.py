"""``cntkio convert`` from and to URLs: ``cntkio convert DIRECTION IN OUT [options]`` with IN, OUT or
a file option (``--header``) at a URL. An input is fetched to a temporary folder through
:mod:`cntkio.remote` (ranged GETs in parallel, retried), the converter runs on local files, and an
output is uploaded by fsspec once the converter has finished (a failed conversion uploads nothing).

It never leaves a partial object behind (one upload of the finished file) nor its temporary folder.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Callable, Sequence

from ..remote import is_remote, open_object, remote_options

__all__ = ["with_urls"]


def with_urls(argv: Sequence[str], run: Callable[[list], int]) -> int:
    """``run(argv)`` with every URL of ``argv`` replaced by a local file: the inputs fetched first,
    the output (the second argument after the direction, ``OUT``) uploaded after ``run`` returned 0.
    Credentials and endpoints come from the back ends' own settings (environment, profiles)."""
    argv = list(argv)
    if not any(is_remote(a) for a in argv):
        return run(argv)
    positional = [i for i, a in enumerate(argv) if not a.startswith("-")]
    out_at = positional[2] if len(positional) > 2 else None
    options = remote_options({})
    with tempfile.TemporaryDirectory(prefix="cntkio-convert-") as tmp:
        local = list(argv)
        for i, a in enumerate(argv):
            if not is_remote(a):
                continue
            path = os.path.join(tmp, f"{i}-{os.path.basename(a.rstrip('/')) or 'object'}")
            local[i] = path
            if i != out_at:
                _fetch(a, path, options)
        rc = run(local)
        if rc == 0 and out_at is not None and is_remote(argv[out_at]):
            _upload(local[out_at], argv[out_at], options)
        return rc


def _fetch(url: str, path: str, options) -> None:
    obj = open_object(url, options)
    step = 64 << 20
    with open(path, "wb") as f:
        for a in range(0, obj.size, step):
            f.write(obj.read(a, a + step))


def _upload(path: str, url: str, options) -> None:
    from ..remote.store import file_system
    fs, target = file_system(url, options)
    with contextlib.suppress(FileNotFoundError):
        fs.invalidate_cache(target)
    fs.put_file(path, target)
