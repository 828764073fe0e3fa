"""fex's training tables on Apache Iceberg, read for training: a model's
sample table with the sidecar tables that ``fex backfill`` wrote for it,
as one Arrow table (each sidecar's columns placed on the sample table's
rows by their identity, ``request_id`` and ``row``), and its record batches
as numpy arrays or torch tensors.

Needs pyiceberg (``pip install 'pyiceberg[sql-sqlite]'``); the catalog is
the embedded SQL catalog in the warehouse (``catalog.db``, named ``fex``)
unless ``catalog_uri`` names another (a SQLAlchemy URI, e.g.
``postgresql+psycopg2://user:password@host/db``).

    import fex.iceberg
    table = fex.iceberg.read("warehouse/", "fex.ranker_samples", sidecars=["fex.ranker_v2"],
                             row_filter="request_time >= '2026-11-29T00:00:00+00:00'")
    for batch in table.to_batches(max_chunksize=4096):
        tensors = fex.iceberg.to_torch(batch)
"""

import os
from typing import Dict, Iterable, Optional

from ._convert import Ragged

#: The identity columns every fex table starts with.
IDENTITY = ("request_id", "row", "request_time")


def catalog(warehouse: str, catalog_uri: Optional[str] = None):
    """pyiceberg's SQL catalog of a fex warehouse."""
    try:
        from pyiceberg.catalog.sql import SqlCatalog
    except ImportError as e:
        raise ImportError("fex.iceberg needs pyiceberg: pip install 'pyiceberg[sql-sqlite]'") from e
    warehouse = os.path.abspath(warehouse)
    uri = catalog_uri or f"sqlite:///{os.path.join(warehouse, 'catalog.db')}"
    return SqlCatalog("fex", uri=uri, warehouse=f"file://{warehouse}")


def read(
    warehouse: str,
    table: str,
    sidecars: Iterable[str] = (),
    *,
    row_filter=None,
    columns: Optional[Iterable[str]] = None,
    catalog_uri: Optional[str] = None,
):
    """The sample table ``table`` (rows matching ``row_filter``, a pyiceberg
    filter or its string form) as a ``pyarrow.Table``, with the columns of
    each sidecar in ``sidecars`` appended, in order: a sidecar's value for
    a row is the one with the row's ``request_id`` and ``row``, null where
    the sidecar has none (a backfill over a shorter range). ``columns``
    keeps only those (the identity columns are always kept)."""
    import pyarrow as pa

    cat = catalog(warehouse, catalog_uri)
    scan_args = {} if row_filter is None else {"row_filter": row_filter}
    out = cat.load_table(table).scan(**scan_args).to_arrow()
    if sidecars:
        keys = _keys(out)
        for name in sidecars:
            side = cat.load_table(name).scan(**scan_args).to_arrow()
            position = {k: i for i, k in enumerate(_keys(side)) if k[0] is not None}
            taken = pa.array([position.get(k) for k in keys], type=pa.int64())
            for column in side.column_names:
                if column in IDENTITY:
                    continue
                if column in out.column_names:
                    raise ValueError(f"sidecar {name} has a column {column!r} that {table} or an earlier sidecar has")
                out = out.append_column(side.schema.field(column).with_nullable(True), side.column(column).take(taken))
    if columns is not None:
        wanted = list(IDENTITY) + [c for c in columns if c not in IDENTITY]
        missing = [c for c in wanted if c not in out.column_names]
        if missing:
            raise KeyError(f"no column {', '.join(missing)} in {table} or its sidecars")
        out = out.select(wanted)
    return out


def _keys(t):
    return list(zip(t.column("request_id").to_pylist(), t.column("row").to_pylist()))


def to_numpy(batch) -> Dict[str, object]:
    """A record batch's columns as numpy: a flat column as its array (a
    timestamp as int64 microseconds), a list column as a ``Ragged`` tuple
    (its values, themselves ``Ragged`` for lists of lists, and its int64
    row splits), strings and binaries as ``Ragged`` of their uint8 bytes.
    Nulls are not kept: give a ``columns`` list without sidecar columns
    that have them, or fill them first."""
    return {name: _numpy(batch.column(i)) for i, name in enumerate(batch.schema.names)}


def _numpy(array):
    import numpy as np
    import pyarrow as pa

    t = array.type
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        if pa.types.is_fixed_size_list(t):
            size = t.list_size
            splits = np.arange(len(array) + 1, dtype=np.int64) * size
            values = array.flatten()
        else:
            offsets = np.asarray(array.offsets, dtype=np.int64)
            splits = offsets - offsets[0]
            values = array.flatten()
        return Ragged(_numpy(values), splits, None)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        as_binary = array.cast(pa.large_binary())
        _, offsets_buffer, data_buffer = as_binary.buffers()
        start = as_binary.offset
        offsets = np.frombuffer(offsets_buffer, dtype=np.int64)[start:start + len(as_binary) + 1]
        data = np.frombuffer(data_buffer, dtype=np.uint8)[offsets[0]:offsets[-1]] if data_buffer else np.empty(0, np.uint8)
        return Ragged(data, offsets - offsets[0], None)
    if pa.types.is_timestamp(t):
        return array.cast(pa.int64()).to_numpy(zero_copy_only=False)
    return array.to_numpy(zero_copy_only=False)


def to_torch(batch) -> Dict[str, object]:
    """:func:`to_numpy`, as torch tensors (``Ragged`` of tensors for lists)."""
    from ._convert import _from_numpy, _torch

    torch = _torch()

    def tensor(v):
        if isinstance(v, Ragged):
            return Ragged(tensor(v.values), _from_numpy(torch, v.row_splits), None)
        return _from_numpy(torch, v)

    return {name: tensor(v) for name, v in to_numpy(batch).items()}
