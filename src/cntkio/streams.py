"""Stream descriptions: ``StreamInformation`` (what a source delivers) and ``StreamDef``/``StreamDefs``
(what a user asks a deserializer for), with cntk.io's names and defaults."""
from __future__ import annotations

from typing import Any, Iterable, NoReturn

import numpy as np

__all__ = ["Record", "StreamInformation", "StreamDef", "StreamDefs", "StreamConfiguration"]


class Record(dict):
    """An immutable dict with attribute access (cntk's ``Record``).

    Reading a missing key as an attribute raises AttributeError.
    """

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError as e:
            raise AttributeError(key) from e

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Record is immutable")

    def _immutable(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("Record is immutable")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _immutable

    def __hash__(self) -> int:  # type: ignore[override]
        return id(self)

    def __reduce__(self):
        return (Record, (dict(self),))


class _StorageFormat:
    Dense = "dense"
    SparseCSC = "sparse"


class StreamInformation:
    """One output stream of a source: name, id, dense or sparse, element type, sample shape.

    ``StreamInformation(name, stream_id, storage_format, dtype, shape, defines_mb_size=False)``
    as in cntk.io; equal when name, id, storage format, element type and shape are equal, and
    hashable, so minibatch dicts can be keyed by it.
    """

    StorageFormat = _StorageFormat

    def __init__(self, name: str, stream_id: int, storage_format: str, dtype: Any,
                 shape: Iterable[int] | int, defines_mb_size: bool = False) -> None:
        if storage_format not in ("dense", "sparse"):
            raise ValueError(f"storage_format must be 'dense' or 'sparse', not {storage_format!r}")
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        self.m_name = str(name)
        self.m_id = int(stream_id)
        self.storage_format = storage_format
        self.m_storage_format = storage_format
        self.m_element_type = np.dtype(dtype)
        self.sample_shape = tuple(int(s) for s in shape)
        self.m_sample_layout = tuple(reversed(self.sample_shape))
        self.m_defines_mb_size = bool(defines_mb_size)
        self._hash = hash(self._key())

    @property
    def name(self) -> str:
        return self.m_name

    @property
    def is_sparse(self) -> bool:
        return self.storage_format == "sparse"

    @property
    def dtype(self) -> np.dtype:
        return self.m_element_type

    @property
    def shape(self) -> tuple[int, ...]:
        return self.sample_shape

    @property
    def defines_mb_size(self) -> bool:
        return self.m_defines_mb_size

    def _key(self):
        return (self.m_name, self.m_id, self.storage_format, self.m_element_type.str, self.sample_shape)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StreamInformation) and self._key() == other._key()

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return (f"StreamInformation(name={self.m_name!r}, id={self.m_id}, "
                f"storage_format={self.storage_format!r}, dtype={self.m_element_type.name}, "
                f"shape={self.sample_shape}, defines_mb_size={self.m_defines_mb_size})")

    def with_id(self, stream_id: int) -> "StreamInformation":
        """A copy with another stream id (a composite source renumbers its streams)."""
        return StreamInformation(self.m_name, stream_id, self.storage_format, self.m_element_type,
                                 self.sample_shape, self.m_defines_mb_size)


def StreamDef(field: str | None = None, shape: Any = None, is_sparse: bool = False,
              transforms: Any = None, context: Any = None, scp: Any = None, mlf: Any = None,
              broadcast: Any = None, defines_mb_size: bool = False,
              max_sequence_length: int = 65535) -> Record:
    """A stream definition for a deserializer factory, as cntk.io's ``StreamDef``.

    ``field`` is the name inside the file (the CTF alias); the keyword name it is given in
    ``StreamDefs`` is the stream name seen by the network. Keys are present only when given,
    except ``stream_alias``, ``is_sparse``, ``defines_mb_size`` and ``max_sequence_length``.
    """
    config: dict[str, Any] = {"stream_alias": field, "is_sparse": bool(is_sparse)}
    if shape is not None:
        config["dim"] = shape
    if transforms is not None:
        config["transforms"] = transforms
    if context is not None:
        config["context"] = context
    if scp is not None:
        config["scp"] = scp
    if broadcast is not None:
        config["broadcast"] = broadcast
    if mlf is not None:
        config["mlf"] = mlf
        config["is_sparse"] = True
    config["defines_mb_size"] = bool(defines_mb_size)
    config["max_sequence_length"] = int(max_sequence_length)
    return Record(config)


StreamDefs = Record


class StreamConfiguration:
    """The low-level stream description of cntk.io (name, dim, sparsity, alias)."""

    def __init__(self, name: str, dim: int, is_sparse: bool = False, stream_alias: str = "",
                 defines_mb_size: bool = False) -> None:
        self.m_stream_name = name
        self.m_dim = int(dim)
        self.m_is_sparse = bool(is_sparse)
        self.m_stream_alias = stream_alias
        self.m_defines_mb_size = bool(defines_mb_size)
