"""CNTK's reader and writer interfaces (IDataReader, IDataWriter of the configuration spec's
programmer reference) in Python, on cntkio's engine: ``cntkio.legacy.DataReader`` and
``cntkio.legacy.DataWriter``.

A :class:`DataReader` is built from a reader section; its ``readerType`` (or ``deserializers``)
resolves through :mod:`cntkio.registry` as CNTK resolved a DLL by name, so every reader cntkio
implements (and every one registered with ``register_reader``) is available. Reading goes through
one MinibatchSource and :class:`cntkio.readers.EpochReader`: the epochs of CNTK's
``StartMinibatchLoop`` (consecutive slices of ``requested_epoch_samples`` samples of one
timeline).

A :class:`DataWriter` is built from a writer section; its ``writerType`` resolves through
:func:`cntkio.registry.writer_factory` (``BinaryReader``/``BinaryWriter``: the binary file of
:mod:`.binary`).
"""
from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np

from ... import registry
from ..._log import get_logger
from ...errors import ConfigError
from ..epochs import EpochReader
from ..factory import make_source, reader_spec, resolve_window
from ..section import as_section
from .binary import write_binary
from .sections import info_once
from .urls import refuse_url

log = get_logger("readers.legacy.interfaces")

__all__ = ["DataReader", "DataWriter", "BinaryDataWriter", "REQUEST_DATA_SIZE", "END_DATASET", "END_EPOCH",
           "END_SENTENCE"]

#: ``requested_epoch_samples`` asking for one pass over the data (CNTK's requestDataSize)
REQUEST_DATA_SIZE = -1
END_DATASET, END_EPOCH, END_SENTENCE = "dataset", "epoch", "sentence"


class DataReader:
    """IDataReader: ``init(config)``, ``start_minibatch_loop``, ``get_minibatch``, label
    mappings, ``get_data``, ``data_end`` and the recurrent methods.

    ``get_minibatch(matrices)`` fills ``matrices`` (a dict) with one entry per stream (or only the
    names already in it): a NumPy array ``[samples, dim]`` for dense streams, a SciPy CSR matrix
    for sparse ones, the samples of the minibatch's sequences one after the other.
    :meth:`sequence_lengths` gives the sequences' lengths of the last minibatch.
    """

    def __init__(self, config: Any = None) -> None:
        self._source = None
        self._config = None
        self._iter = None
        self._last: dict[str, Any] = {}
        self._epoch_done = True
        self._sweep_end = False
        self._nbr_slices = 0
        self._deserializers: list = []
        if config is not None:
            self.init(config)

    # --- life cycle -----------------------------------------------------------------------------
    def init(self, config: Any) -> None:
        """Initialize from a reader section (ConfigParameters, dict or Section)."""
        self.destroy()
        self._config = config
        self._spec = spec = reader_spec(config)
        # build_reader's steps, keeping the deserializers (for the mapping and data methods)
        kw = dict(spec.source_kwargs)
        self._deserializers = [registry.build_deserializer(d, frame_mode=kw.get("frame_mode", False),
                                                           trace_level=kw.get("trace_level", 1))
                               for d in spec.deserializers]
        self._kwargs = resolve_window(spec, self._deserializers, kw)
        self._nbr_slices = int(kw.get("parallel_sequences", 0))
        self._make_source()

    def _make_source(self) -> None:
        self._source = make_source(self._spec, self._deserializers, self._kwargs)

    def destroy(self) -> None:
        if self._iter is not None:
            self._iter.close()            # the epoch's generator restores the source's epoch end
        if self._source is not None:
            self._source.close()
        self._source = None
        self._iter = None

    close = destroy

    def __enter__(self) -> "DataReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.destroy()

    def _need(self):
        if self._source is None:
            raise RuntimeError("DataReader: call init(config) first")
        return self._source

    @property
    def stream_names(self) -> list[str]:
        return [s.name for s in self._need().stream_infos()]

    def deserializer(self) -> Any:
        """The (first) deserializer the reader section became."""
        self._need()
        return self._deserializers[0]

    # --- reading --------------------------------------------------------------------------------
    def start_minibatch_loop(self, mb_size: int, epoch: int, requested_epoch_samples: int = REQUEST_DATA_SIZE) -> None:
        self.start_distributed_minibatch_loop(mb_size, epoch, 0, 1, requested_epoch_samples)

    def start_distributed_minibatch_loop(self, mb_size: int, epoch: int, subset_num: int, num_subsets: int,
                                         requested_epoch_samples: int = REQUEST_DATA_SIZE) -> None:
        src = self._need()
        size = 0 if requested_epoch_samples in (None, REQUEST_DATA_SIZE) else int(requested_epoch_samples)
        reader = EpochReader(src, minibatch_size=int(mb_size), epoch_size=size,
                             num_subsets=int(num_subsets), subset_num=int(subset_num))
        self._iter = iter(reader.epoch(int(epoch)))
        self._epoch_done = False
        self._sweep_end = False

    def get_minibatch(self, matrices: dict) -> bool:
        """Fill ``matrices`` with the next minibatch; False at the end of the epoch."""
        if self._iter is None:
            raise RuntimeError("DataReader: call start_minibatch_loop first")
        try:
            mb = next(self._iter)
        except StopIteration:
            self._epoch_done = True
            self._last = {}
            return False
        wanted = set(matrices) if matrices else None
        self._last = {}
        for info, value in mb.items():
            if wanted is not None and info.name not in wanted:
                continue
            self._last[info.name] = value
            self._sweep_end = self._sweep_end or bool(getattr(value, "end_of_sweep", False))
            matrices[info.name] = _interleaved(value) if self._nbr_slices and self._source.truncated else _flat(value)
        return True

    def sequence_lengths(self, name: str | None = None) -> list[int]:
        """The lengths of the last minibatch's sequences (of stream ``name``, default the first)."""
        if not self._last:
            return []
        value = self._last[name] if name else next(iter(self._last.values()))
        return [int(len(s)) if not hasattr(s, "shape") else int(s.shape[0]) for s in value.as_sequences()]

    def data_end(self, kind: str = END_EPOCH) -> bool:
        """``epoch``: the epoch's minibatches are all read; ``dataset``: a sweep of the data ended
        in this epoch; ``sentence``: the last minibatch ends at sequence ends (always, except in
        truncated BPTT, where a sequence continues in the next minibatch)."""
        kind = str(kind).lower()
        if kind == END_EPOCH:
            return self._epoch_done
        if kind == END_DATASET:
            return self._sweep_end
        if kind == END_SENTENCE:
            return not self._need().truncated
        raise ValueError(f"data_end: kind must be 'dataset', 'epoch' or 'sentence', found {kind!r}")

    # --- label mappings and data ----------------------------------------------------------------
    def get_label_mapping(self, section: str) -> dict[int, str]:
        """``{label id: label}`` of a label stream."""
        d = self.deserializer()
        for s in getattr(d, "streams", []):
            if s.name == section and getattr(s, "mapping", None) is not None:
                return dict(enumerate(s.mapping))
        if hasattr(d, "label_mapping"):
            m = d.label_mapping(section)
            if m is not None:
                return dict(enumerate(m))
        if hasattr(d, "vocab") and section in (getattr(d, "in_name", None), getattr(d, "out_name", None)):
            return {i: w for w, i in d.vocab.items()}
        if hasattr(d, "out_vocab") and section == d.out_name:
            return {i: w for w, i in d.out_vocab.items()}
        if hasattr(d, "in_vocab") and section == d.in_name:
            return {i: w for w, i in d.in_vocab.items()}
        raise KeyError(f"stream {section!r} has no label mapping (streams: {', '.join(self.stream_names)})")

    def set_label_mapping(self, section: str, mapping: Mapping[int, str]) -> None:
        """Replace a UCIFastReader label stream's mapping (ids 0..n-1); the reader is rebuilt."""
        ids = sorted(int(k) for k in mapping)
        if ids != list(range(len(ids))):
            raise ValueError("set_label_mapping: the ids must be 0..n-1")
        sec = as_section(self._config, "reader")
        node = dict(sec.to_dict())
        key = sec.local_key(section)
        if key is None or not isinstance(node[key], dict):
            raise KeyError(f"the reader section has no section {section!r}")
        node[key] = dict(node[key], labelMapping=[str(mapping[i]) for i in ids])
        node[key].pop("labelMappingFile", None)
        self.init(node)

    def get_data(self, section: str, num_records: int, record_start: int = 0) -> np.ndarray | None:
        """``num_records`` records of stream ``section`` from ``record_start`` (in data order), or
        None when ``record_start`` is past the end."""
        d = self.deserializer()
        rows, seen = [], 0
        for info in d.chunk_infos():
            n = info.num_sequences
            if seen + n <= record_start:
                seen += n
                continue
            if seen >= record_start + num_records:
                break
            stream = d.get_chunk(info.id).streams[section]
            lo = max(0, record_start - seen)
            hi = min(n, record_start + num_records - seen)
            a, b = int(stream.offsets[lo]), int(stream.offsets[hi])
            if stream.is_sparse:
                import scipy.sparse as sp
                rows.append(sp.csr_matrix((stream.data, stream.indices, stream.indptr),
                                          shape=(int(stream.offsets[-1]), stream.dim))[a:b].toarray())
            else:
                rows.append(np.asarray(stream.values[a:b]))
            seen += n
        return np.concatenate(rows) if rows else None

    # --- recurrent networks ---------------------------------------------------------------------
    def number_slices_in_each_recurrent_iter(self) -> int:
        return self._nbr_slices

    def set_nbr_slices_each_recurrent_iter(self, n: int) -> None:
        """Set the number of parallel sequences per minibatch (``nbrUttsInEachRecurrentIter``; 0:
        whole sequences up to the minibatch size). The source is rebuilt on the same deserializers;
        the next ``start_minibatch_loop`` reads with it."""
        n = int(n)
        if n < 0:
            raise ValueError(f"the number of parallel sequences must be >= 0, found {n}")
        self._need()
        if n == self._nbr_slices:
            return
        if n and self._kwargs.get("frame_mode"):
            raise ValueError("parallel sequences cannot be set in frame mode (frames are delivered one by one)")
        if self._iter is not None:
            self._iter.close()
        self._source.close()
        self._kwargs = dict(self._kwargs, parallel_sequences=n)
        self._nbr_slices = n
        self._iter = None
        self._make_source()

    def set_sentence_end_in_batch(self, sentence_end: list) -> None:
        """Fill ``sentence_end`` with, per sequence of the last minibatch, its length (the time
        step after its last sample)."""
        sentence_end[:] = self.sequence_lengths()

    def save_labels(self) -> list[str]:
        """Write each label stream's mapping to its section's ``labelMappingFile`` when the file
        does not exist yet (an existing file is never overwritten); returns the files written."""
        sec = as_section(self._config, "reader")
        written = []
        for name in self.stream_names:
            key = sec.local_key(name)
            if key is None or not isinstance(sec.raw(key, inherit=False), dict):
                continue
            s = sec.section(key)
            if not s.exists("labelMappingFile"):
                continue
            path = s.str("labelMappingFile")
            if os.path.exists(path):
                continue
            try:
                mapping = self.get_label_mapping(name)
            except KeyError:
                continue
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
                fh.write("".join(f"{mapping[i]}\n" for i in range(len(mapping))))
            os.replace(tmp, path)
            written.append(path)
        return written

    def reload_labels(self) -> None:
        """Re-read the label mapping files (the reader is rebuilt)."""
        self.init(self._config)


def _interleaved(value: Any) -> Any:
    """A minibatch of parallel sequences as CNTK's legacy readers laid it out: ``[T * S, dim]``,
    row ``t * S + s`` = step ``t`` of parallel row ``s`` (zeros where a row has no sample); a
    sparse stream as a SciPy CSR matrix (empty rows there)."""
    mask = np.asarray(value.mask)
    if value.is_sparse:
        import scipy.sparse as sp
        S, T = mask.shape
        csr = value.as_csr()                      # the valid cells' samples, row-major
        s_idx, t_idx = np.nonzero(mask)           # the same order
        out = np.zeros(T * S + 1, np.int64)
        counts = np.diff(csr.indptr)
        out[1:][t_idx * S + s_idx] = counts
        order = np.argsort(t_idx * S + s_idx, kind="stable")
        c = counts[order]                         # each sample's non-zeros, in the new order
        take = np.arange(int(c.sum())) + np.repeat(csr.indptr[:-1][order] - (np.cumsum(c) - c), c)
        return sp.csr_matrix((csr.data[take], csr.indices[take], np.cumsum(out)), shape=(T * S, csr.shape[1]))
    S, T = mask.shape
    rows = [np.asarray(seq.todense() if hasattr(seq, "todense") else seq) for seq in value.as_sequences()]
    dim = max((int(np.prod(r.shape[1:])) for r in rows if r.ndim > 1), default=1)
    dtype = next((r.dtype for r in rows if r.size), np.float32)
    out = np.zeros((T, S, dim), dtype)
    for s, arr in enumerate(rows):
        out[np.flatnonzero(mask[s]), s] = arr.reshape(len(arr), dim)
    return out.reshape(T * S, dim)


def _flat(value: Any) -> Any:
    seqs = value.as_sequences()
    if value.is_sparse:
        import scipy.sparse as sp
        return sp.vstack([sp.csr_matrix(s) for s in seqs], format="csr") if seqs else sp.csr_matrix((0, 0))
    arrays = [np.asarray(s).reshape(len(s), -1) for s in seqs]
    return np.concatenate(arrays) if arrays else np.zeros((0, 0))


class BinaryDataWriter:
    """IDataWriter for ``writerType = BinaryReader`` (or ``BinaryWriter``): the binary file of
    :mod:`.binary`. ``save_data`` calls may come in any order; the file is written (to a
    temporary name, then renamed) once ``dataset_size`` records have been saved."""

    def __init__(self, config: Any = None) -> None:
        self._sections: dict[str, dict] = {}
        self._files: dict[str, str] = {}
        self._parts: dict[int, tuple[int, dict]] = {}
        self._mappings: dict[str, list[str]] = {}
        self._size = None
        self._wrecords: int | None = None
        self.written: list[str] = []
        if config is not None:
            self.init(config)

    def init(self, config: Any) -> None:
        sec = as_section(config, "writer")
        names = [k for k in sec.keys() if isinstance(sec.raw(k, inherit=False), dict)
                 and sec.section(k).has_local("sectionType")]
        if not names:
            raise sec.error("sectionType", "a BinaryWriter section needs sub-sections with sectionType = "
                            "data/labels/labelMapping/stats/categoryLabels")
        for n in names:
            s = sec.section(n)
            kind = s.choice("sectionType", ("data", "labels", "labelMapping", "stats", "categoryLabels"),
                            inherit=False)
            if kind in ("labelMapping", "stats"):
                continue          # stored in the header of the section they belong to
            path = s.str("wfile") if s.exists("wfile") else None
            if path is None:
                raise s.error("wfile", "no wfile names the file of this section")
            dim = s.int("dim", 1, minimum=1)
            esize = s.int("elementSize", 0, minimum=0)
            dtype = ("uint32" if kind == "labels" and esize == 4 else
                     "float64" if esize == 8 or (esize == 0 and sec.str("precision", "float") == "double")
                     else "float32")
            self._sections[n] = {"name": n, "sectionType": kind, "dtype": dtype,
                                 "shape": [] if dtype == "uint32" else [dim]}
            refuse_url(path, s.key_path("wfile"), "writer output file")
            self._files[n] = path
        self._wrecords = None
        for key in ("wsize", "wrecords", "windowSize"):          # see sections.cache_config
            if sec.exists(key):
                value = sec.int(key, minimum=0)
                if key == "wrecords":
                    self._wrecords = value
                info_once(key, "%s = %d: cntkio's binary files grow as they are written and are "
                          "memory-mapped whole; the value is not needed", sec.key_path(key), value)

    def get_sections(self) -> dict[str, str]:
        """``{section name: sectionType}``."""
        return {n: e["sectionType"] for n, e in self._sections.items()}

    def save_mapping(self, save_id: str, mapping: Mapping[int, str]) -> None:
        if save_id not in self._sections:
            raise KeyError(f"no section {save_id!r} (sections: {', '.join(self._sections)})")
        ids = sorted(int(k) for k in mapping)
        self._mappings[save_id] = [str(mapping[i]) for i in ids]

    def save_data(self, record_start: int, matrices: Mapping[str, Any], num_records: int, dataset_size: int,
                  byte_variable_sized: int = 0) -> bool:
        """Save ``num_records`` records of every section from ``record_start``; True once the
        whole data set has been saved and the file(s) written."""
        if self._size is None:
            self._size = int(dataset_size)
            if self._wrecords and self._size > self._wrecords:
                log.warning("BinaryWriter: %d records, more than wrecords = %d: CNTK's preallocated file would "
                            "have failed; cntkio's grows as it is written", self._size, self._wrecords)
        elif int(dataset_size) != self._size:
            raise ValueError(f"save_data: dataset_size changed from {self._size} to {dataset_size}")
        missing = [n for n in self._sections if n not in matrices]
        if missing:
            raise KeyError(f"save_data: no data for section(s) {', '.join(missing)}")
        data = {}
        for n, e in self._sections.items():
            arr = np.asarray(matrices[n].toarray() if hasattr(matrices[n], "toarray") else matrices[n])
            want = int(num_records) * int(np.prod(e["shape"]))
            if arr.size != want:
                raise ValueError(f"save_data: section {n!r} expects {num_records} records of shape "
                                 f"{tuple(e['shape'])} ({want} values), found an array of shape {arr.shape}")
            arr = arr.reshape(int(num_records), *e["shape"]).astype(e["dtype"])
            data[n] = arr
        self._parts[int(record_start)] = (int(num_records), data)
        total = sum(n for n, _ in self._parts.values())
        if total < self._size:
            return False
        self._flush()
        return True

    def _flush(self) -> None:
        starts = sorted(self._parts)
        pos = 0
        for s in starts:
            if s != pos:
                raise ValueError(f"save_data: records {pos}..{s - 1} were never saved")
            pos += self._parts[s][0]
        by_file: dict[str, list[dict]] = {}
        for n, e in self._sections.items():
            e = dict(e)
            if n in self._mappings:
                e["mapping"] = self._mappings[n]
                e["labelDim"] = len(self._mappings[n])
            by_file.setdefault(self._files[n], []).append(e)
        for path, secs in by_file.items():
            names = [e["name"] for e in secs]
            chunks = ((({k: self._parts[s][1][k] for k in names}), np.zeros(self._parts[s][0], np.uint8))
                      for s in starts)
            write_binary(path, self._size, secs, chunks, header_extra={"fingerprint": "DataWriter", "source": None})
            self.written.append(path)
        self._parts = {}

    def destroy(self) -> None:
        self._parts = {}

    close = destroy


class DataWriter:
    """IDataWriter: ``init(config)`` builds the writer its ``writerType`` names (through
    :func:`cntkio.registry.writer_factory`) and forwards ``get_sections``, ``save_data``,
    ``save_mapping``."""

    def __init__(self, config: Any = None) -> None:
        self._impl = None
        if config is not None:
            self.init(config)

    def init(self, config: Any) -> None:
        sec = as_section(config, "writer")
        wt = sec.str("writerType", "BinaryReader")
        factory = registry.writer_factory(wt)
        if factory is None:
            raise ConfigError(f"writerType {wt!r} is not implemented in cntkio; implemented writer types: "
                              f"{', '.join(registry.registered_writers())}", path=sec.key_path("writerType"))
        self._impl = factory(config)

    def _need(self):
        if self._impl is None:
            raise RuntimeError("DataWriter: call init(config) first")
        return self._impl

    def get_sections(self) -> dict[str, str]:
        return self._need().get_sections()

    def save_data(self, record_start: int, matrices: Mapping[str, Any], num_records: int, dataset_size: int,
                  byte_variable_sized: int = 0) -> bool:
        return self._need().save_data(record_start, matrices, num_records, dataset_size, byte_variable_sized)

    def save_mapping(self, save_id: str, mapping: Mapping[int, str]) -> None:
        self._need().save_mapping(save_id, mapping)

    def destroy(self) -> None:
        if self._impl is not None:
            self._impl.destroy()
        self._impl = None

    close = destroy
