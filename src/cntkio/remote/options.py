"""The object-store options of a deserializer config: ``storageOptions``, ``cacheDir``, ``cacheLimit``,
``remoteInFlight``, ``remoteRetries``, ``remoteRetryDelay``, read once into :class:`RemoteOptions`.

It never holds a credential of its own: ``storageOptions`` are handed to the fsspec back end as given.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..errors import ConfigError
from ..values import to_float, to_int

__all__ = ["RemoteOptions", "remote_options", "parse_size", "default_cache_dir", "OPTION_KEYS"]

#: the config keys read here (matched case-insensitively; ``storage_options`` is Python's spelling)
OPTION_KEYS = ("storageOptions", "storage_options", "cacheDir", "cacheLimit", "remoteInFlight",
               "remoteRetries", "remoteRetryDelay", "remotePartSize")

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.I)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(value: Any, option: str) -> int:
    """Bytes from ``123``, ``"123"``, ``"512M"``, ``"10GB"``, ``"1.5GiB"`` (units of 1024)."""
    if isinstance(value, bool):
        raise ConfigError(f"expected a size in bytes such as 10G or 500M, found {value!r}", path=option)
    if isinstance(value, (int, float)):
        n = int(value)
    else:
        m = _SIZE.match(str(value))
        if m is None:
            raise ConfigError(f"expected a size in bytes such as 10G or 500M, found {value!r}", path=option)
        n = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if n < 0:
        raise ConfigError(f"expected a size >= 0, found {value!r}", path=option)
    return n


def default_cache_dir() -> str:
    """``$CNTKIO_CACHE_DIR``, else ``$XDG_CACHE_HOME/cntkio`` (``~/.cache/cntkio``)."""
    env = os.environ.get("CNTKIO_CACHE_DIR")
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cntkio")


def _plain(value: Any) -> Any:
    """A config file's strings ``true``/``false`` as booleans, inside sections too (a back end
    takes ``anon = true`` as a bool); every other value as written."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


@dataclass(frozen=True)
class RemoteOptions:
    """How URLs of one deserializer are read.

    ``storage_options``: keyword arguments of the fsspec file system (credentials, endpoint,
    ``anon``, ``client_kwargs``...; nothing of cntkio's own); ``cache_dir``/``cache_limit``: the
    local chunk cache (``cache_limit`` 0: none; the index cache of ``cacheIndex`` lives there too);
    ``in_flight``: ranged GETs in flight at once per object store; ``retries``/``retry_delay``:
    a failed GET (connection reset, 5xx, timeout) is tried again up to ``retries`` times, waiting
    ``retry_delay`` seconds, doubled each time (at most 30 s); ``part_size``: a large range is
    fetched as parts of this many bytes, in parallel.
    """

    storage_options: dict = field(default_factory=dict)
    cache_dir: str = ""
    cache_limit: int = 4 << 30
    in_flight: int = 16
    retries: int = 5
    retry_delay: float = 0.2
    part_size: int = 16 << 20

    def token(self) -> tuple:
        """A hashable identity (objects opened with equal options share their file system)."""
        return (repr(sorted(self.storage_options.items())), self.cache_dir, self.cache_limit,
                self.in_flight, self.retries, self.retry_delay, self.part_size)


def remote_options(config: Mapping | None) -> RemoteOptions:
    """The :class:`RemoteOptions` of a deserializer config (keys as in ``OPTION_KEYS``)."""
    opts = {str(k).lower(): (str(k), v) for k, v in (config or {}).items()}

    def get(key: str, default: Any = None) -> Any:
        item = opts.get(key.lower())
        return default if item is None else item[1]

    storage = get("storageOptions", get("storage_options", {})) or {}
    if not isinstance(storage, Mapping):
        raise ConfigError(f"expected a section of back-end options (key = value), found {storage!r}",
                          path="storageOptions", hint="e.g. storageOptions = [anon = true]")
    cache_dir = get("cacheDir")
    return RemoteOptions(
        storage_options=_plain(storage),
        cache_dir=os.fspath(cache_dir) if cache_dir not in (None, "") else default_cache_dir(),
        cache_limit=parse_size(get("cacheLimit", 4 << 30), "cacheLimit"),
        in_flight=to_int(get("remoteInFlight", 16), "remoteInFlight", minimum=1),
        retries=to_int(get("remoteRetries", 5), "remoteRetries", minimum=0),
        retry_delay=max(0.0, to_float(get("remoteRetryDelay", 0.2), "remoteRetryDelay")),
        part_size=parse_size(get("remotePartSize", 16 << 20), "remotePartSize") or (16 << 20),
    )
