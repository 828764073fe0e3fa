"""fex's training tables on Apache Iceberg: a model's rows written into
its sample table from Python (appended, or a time range replaced
atomically: a day rebuilt in batch over the near-line job's rows), and the
table read for training with the sidecar tables that ``fex backfill`` wrote
for it, as one Arrow table (each sidecar's columns placed on the sample
table's rows by their identity, ``request_id`` and ``row``), and its record
batches as numpy arrays or torch tensors.

Needs pyiceberg (``pip install 'pyiceberg[sql-sqlite]'``); the catalog is
the embedded SQL catalog in the warehouse (``catalog.db``, named ``fex``)
unless ``catalog_uri`` names another: a SQLAlchemy URI (e.g.
``postgresql+psycopg2://user:password@host/db``) or a REST catalog's
``http(s)://`` URI. The warehouse may be an object store's URI
(``s3://bucket/prefix``) with such a catalog; ``properties`` go to the
catalog and its file IO as pyiceberg names them (``s3.endpoint``,
``client.region``, ``s3.access-key-id``, ``credential``, ``token``...).

    import fex, fex.iceberg
    rows = fex.run(plan, "logs/2026-11-29/*.pb", identity=True)
    fex.iceberg.write("warehouse/", "fex.ranker_samples", plan, rows,
                      overwrite=("2026-11-29", "2026-11-30"))
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


def catalog(warehouse: str, catalog_uri: Optional[str] = None, properties: Optional[Dict[str, str]] = None):
    """pyiceberg's catalog of a fex warehouse: its embedded SQL catalog, the
    SQL catalog at ``catalog_uri``, or the REST catalog there (``http(s)://``)."""
    try:
        from pyiceberg.catalog.sql import SqlCatalog
    except ImportError as e:
        raise ImportError("fex.iceberg needs pyiceberg: pip install 'pyiceberg[sql-sqlite]'") from e
    props = dict(properties or {})
    rest = catalog_uri is not None and catalog_uri.startswith(("http://", "https://"))
    # A REST catalog's warehouse may be a name its server knows.
    named = rest and "/" not in warehouse and ":" not in warehouse
    remote = "://" in warehouse and not warehouse.startswith("file:")
    if not (named or remote):
        warehouse = f"file://{os.path.abspath(warehouse.removeprefix('file://'))}"
    if rest:
        from pyiceberg.catalog.rest import RestCatalog

        return RestCatalog("fex", uri=catalog_uri, warehouse=warehouse, **props)
    if catalog_uri is None:
        if remote:
            raise ValueError(f"the warehouse {warehouse} has no embedded catalog: give catalog_uri "
                             "(a SQLAlchemy URI or a REST catalog's http(s)://...)")
        catalog_uri = f"sqlite:///{os.path.join(warehouse.removeprefix('file://'), 'catalog.db')}"
    return SqlCatalog("fex", uri=catalog_uri, warehouse=warehouse, **props)


def read(
    warehouse: str,
    table: str,
    sidecars: Iterable[str] = (),
    *,
    row_filter=None,
    columns: Optional[Iterable[str]] = None,
    catalog_uri: Optional[str] = None,
    properties: Optional[Dict[str, str]] = None,
):
    """The sample table ``table`` (rows matching ``row_filter``, a pyiceberg
    filter or its string form) as a ``pyarrow.Table``, with the columns of
    each sidecar in ``sidecars`` appended, in order: a sidecar's value for
    a row is the one with the row's ``request_id`` and ``row``, null where
    the sidecar has none (a backfill over a shorter range). ``columns``
    keeps only those (the identity columns are always kept)."""
    import pyarrow as pa

    cat = catalog(warehouse, catalog_uri, properties)
    scan_args = {} if row_filter is None else {"row_filter": row_filter}
    out = cat.load_table(table).scan(**scan_args).to_arrow()
    for name in sidecars:
        out = _place(out, cat.load_table(name).scan(**scan_args).to_arrow(), name, table)
    if columns is not None:
        wanted = list(IDENTITY) + [c for c in columns if c not in IDENTITY]
        missing = [c for c in wanted if c not in out.column_names]
        if missing:
            raise KeyError(f"no column {', '.join(missing)} in {table} or its sidecars")
        out = out.select(wanted)
    return out


def write(
    warehouse: str,
    table: str,
    plan,
    rows,
    *,
    overwrite=None,
    partition_by: str = "day",
    catalog_uri: Optional[str] = None,
    properties: Optional[Dict[str, str]] = None,
):
    """Writes a model's rows into its sample table ``table``
    (``namespace.name``) in one commit, as ``fex extract --format iceberg``
    and the near-line job write it: the same columns, types and identity.

    ``rows`` is ``fex.run(plan, inputs, identity=True)`` (its result, or
    its ``to_arrow()`` table, filtered as you like): the identity columns
    first, then the model's outputs. A missing table is created with the
    schema ``fex table create`` gives it, partitioned by ``request_time``'s
    ``day``, ``hour`` or ``none``; an existing table whose columns do not
    match the model is refused, every column named, before anything is
    written.

    Without ``overwrite`` the rows are appended. ``overwrite=(since,
    until)`` (datetimes or ISO 8601 strings, ``until`` excluded) replaces
    the table's rows of that time range with ``rows`` atomically: one
    commit deletes the range and adds the new files, so a reader sees the
    old day or the rebuilt one, never both or neither. Every row written
    must lie in the range (a ValueError says how many do not, before
    anything is written). On a table partitioned by day, a range of whole
    days drops whole files; nothing of other days is touched.

    Returns the table's new snapshot id (None when nothing was committed)."""
    import pyarrow as pa

    data = rows.to_arrow() if hasattr(rows, "to_arrow") else rows
    if not isinstance(data, pa.Table):
        raise TypeError(f"rows: expected fex.run(..., identity=True)'s result or a pyarrow.Table, got {type(data).__name__}")
    if data.column_names[: len(IDENTITY)] != list(IDENTITY):
        raise ValueError("rows have no identity columns first (request_id, row, request_time): extract them with fex.run(plan, inputs, identity=True)")
    wanted = pa.schema([_table_field(f) for f in data.schema])
    if "://" not in warehouse and not (catalog_uri or "").startswith(("http://", "https://")):
        os.makedirs(warehouse, exist_ok=True)
    cat = catalog(warehouse, catalog_uri, properties)
    tbl = _create_or_load(cat, table, wanted, partition_by)
    _check(table, tbl.schema(), cat._convert_schema_if_needed(wanted))
    target = tbl.schema().as_arrow()
    data = pa.Table.from_arrays(
        [data.column(f.name).cast(target.field(f.name).type, safe=False) for f in wanted],
        schema=pa.schema([target.field(f.name) for f in wanted]),
    )
    summary = _snapshot_properties(plan)
    if overwrite is None:
        if data.num_rows == 0:
            return None
        tbl.append(data, snapshot_properties=summary)
    else:
        since, until = _range(overwrite)
        times = data.column("request_time").cast(pa.int64()).to_numpy(zero_copy_only=False)
        valid = data.column("request_time").is_valid().to_numpy(zero_copy_only=False)
        _refuse_outside(int(((times < since) | (times >= until) | ~valid).sum()), data.num_rows, overwrite)
        tbl.overwrite(data, overwrite_filter=_in_range(since, until), snapshot_properties=summary)
    snapshot = tbl.refresh().current_snapshot()
    return None if snapshot is None else snapshot.snapshot_id


def rebuild(
    warehouse: str,
    table: str,
    plan,
    since,
    until,
    *,
    shitu: Optional[str] = None,
    catalog_uri: Optional[str] = None,
    properties: Optional[Dict[str, str]] = None,
):
    """Rebuilds a time range of the sample table from the joined-request
    (Shitu) table: every request of ``shitu`` (default
    ``fex.<model>_shitu``) whose ``request_time`` is in ``[since, until)``
    is extracted again with ``plan`` from its ``joined`` bytes, as the
    near-line job extracted it (the model's transforms, its rows numbered
    from 0 within the request, the request's id and time), and the range's
    rows of ``table`` (the job's, or anyone's) are replaced by these in one
    commit (:func:`write` with ``overwrite``). Returns the new snapshot id."""
    import numpy as np
    import pyarrow as pa

    from . import run

    cat = catalog(warehouse, catalog_uri, properties)
    shitu = shitu or f"fex.{plan.name}_shitu"
    requests = cat.load_table(shitu).scan(
        row_filter=_in_range(*_range((since, until))), selected_fields=("request_id", "request_time", "payload", "joined")
    ).to_arrow()
    parts = []
    ids, times = requests.column("request_id").to_pylist(), requests.column("request_time")
    payloads, joined = requests.column("payload").to_pylist(), requests.column("joined")
    for i, request_id in enumerate(ids):
        payload = "examples" if payloads[i] == "examples" else "batch"
        rows = run(plan, joined[i].as_py(), payload=payload, threads=1, identity=True).to_arrow()
        n = rows.num_rows
        fields = rows.schema
        rows = rows.set_column(0, fields.field(0), pa.array([request_id] * n, fields.field(0).type))
        rows = rows.set_column(1, fields.field(1), pa.array(np.arange(n, dtype=np.int32)))
        rows = rows.set_column(2, fields.field(2), pa.repeat(times[i], n).cast(fields.field(2).type))
        parts.append(rows)
    if parts:
        rows = pa.concat_tables(parts)
    else:
        rows = run(plan, b"", identity=True).to_arrow()
    return write(warehouse, table, plan, rows, overwrite=(since, until), catalog_uri=catalog_uri,
                 properties=properties)


def _table_field(field):
    """A column of fex's Arrow table as the sample table holds it: u64 fids
    as int64 (the same bits), every list a plain list (as fex-iceberg's
    schema.rs maps them)."""
    import pyarrow as pa

    def convert(t):
        if pa.types.is_uint64(t):
            return pa.int64()
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            item = t.value_field
            return pa.list_(pa.field(item.name, convert(item.type), item.nullable))
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, convert(f.type), f.nullable) for f in t])
        return t

    return pa.field(field.name, convert(field.type), field.nullable)


def _create_or_load(cat, name: str, wanted, partition_by: str):
    from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchTableError
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import assign_fresh_schema_ids
    from pyiceberg.transforms import DayTransform, HourTransform

    try:
        return cat.load_table(name)
    except NoSuchTableError:
        pass
    transforms = {"day": (DayTransform(), "request_day"), "hour": (HourTransform(), "request_hour"), "none": None}
    if partition_by not in transforms:
        raise ValueError(f"partition_by={partition_by!r}: expected day, hour or none")
    schema = assign_fresh_schema_ids(cat._convert_schema_if_needed(wanted))
    spec = PartitionSpec()
    if transforms[partition_by] is not None:
        transform, field_name = transforms[partition_by]
        source = schema.find_field("request_time").field_id
        spec = PartitionSpec(PartitionField(source_id=source, field_id=1000, transform=transform, name=field_name))
    namespace = name.rsplit(".", 1)[0]
    try:
        cat.create_namespace(namespace)
    except NamespaceAlreadyExistsError:
        pass
    # The properties fex-iceberg gives the tables it creates.
    properties = {"write.format.default": "parquet", "write.parquet.compression-codec": "zstd"}
    return cat.create_table_if_not_exists(name, schema=schema, partition_spec=spec, properties=properties)


def _type_name(t) -> str:
    from pyiceberg.types import ListType, StructType

    if isinstance(t, ListType):
        return f"list<{_type_name(t.element_type)}>"
    if isinstance(t, StructType):
        return "struct<" + ", ".join(f"{f.name}: {_type_name(f.field_type)}" for f in t.fields) + ">"
    return str(t)


def _check(name: str, table, wanted) -> None:
    """Refuses a table whose columns cannot take the model's rows, naming
    every problem (as ``fex extract --format iceberg`` does)."""
    problems = []
    have = {f.name: f for f in table.fields}
    for f in wanted.fields:
        t, wants = have.get(f.name), _type_name(f.field_type)
        if t is None:
            problems.append(f'column "{f.name}" ({wants}) is not in the table')
        elif _type_name(t.field_type) != wants:
            problems.append(f'column "{f.name}" is {_type_name(t.field_type)} in the table, {wants} for the model')
        elif t.required and not f.required:
            problems.append(f'column "{f.name}" is required in the table and may be null for the model')
    written = {f.name for f in wanted.fields}
    for f in table.fields:
        if f.required and f.name not in written:
            problems.append(
                f'the table requires column "{f.name}" ({_type_name(f.field_type)}), which the model does not write'
            )
    if problems:
        raise ValueError(f"table {name} does not match the model: " + "; ".join(problems))


def _snapshot_properties(plan):
    """What every fex writer puts in a snapshot's summary (fex-iceberg's
    from `fex::offline::table::metadata`): the model and fex's version."""
    from . import __version__

    return {
        "fex.model": plan.name,
        "fex.model_version": plan.identity.version,
        "fex.model_digest": f"{plan.identity.digest:016x}",
        "fex.version": __version__,
    }


def _range(overwrite):
    """``overwrite=(since, until)`` as microseconds, refused when empty."""
    since, until = (_micros(t) for t in overwrite)
    if not since < until:
        raise ValueError(f"overwrite={overwrite!r}: the range is empty (since must be before until)")
    return since, until


def _refuse_outside(outside: int, total: int, overwrite) -> None:
    if outside:
        raise ValueError(
            f"{outside} of {total} rows have a request_time outside overwrite={overwrite!r} "
            "(or none): nothing was written; filter them out or widen the range"
        )


def _in_range(since: int, until: int):
    """pyiceberg's filter of `request_time` in ``[since, until)`` (microseconds)."""
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan

    return And(GreaterThanOrEqual("request_time", _iso(since)), LessThan("request_time", _iso(until)))


def _micros(t) -> int:
    """A datetime or ISO 8601 string (UTC unless it says) as microseconds
    since the epoch."""
    import datetime as dt

    if isinstance(t, str):
        t = dt.datetime.fromisoformat(t)
    if isinstance(t, dt.date) and not isinstance(t, dt.datetime):
        t = dt.datetime(t.year, t.month, t.day)
    if not isinstance(t, dt.datetime):
        raise TypeError(f"expected a datetime or an ISO 8601 string, got {t!r}")
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    delta = t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _iso(micros: int) -> str:
    import datetime as dt

    return (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)).isoformat()


def _place(out, side, name, table):
    """`out` with the columns of the sidecar rows `side` appended, each
    value on the row of the same `request_id` and `row` (null where none)."""
    import pyarrow as pa

    position = {k: i for i, k in enumerate(_keys(side)) if k[0] is not None}
    taken = pa.array([position.get(k) for k in _keys(out)], type=pa.int64())
    for column in side.column_names:
        if column in IDENTITY:
            continue
        if column in out.column_names:
            raise ValueError(f"sidecar {name} has a column {column!r} that {table} or an earlier sidecar has")
        out = out.append_column(side.schema.field(column).with_nullable(True), side.column(column).take(taken))
    return out


def merge(
    warehouse: str,
    table: str,
    sidecar: str,
    *,
    drop_sidecar: bool = True,
    catalog_uri: Optional[str] = None,
    properties: Optional[Dict[str, str]] = None,
):
    """Keeps a backfilled feature: folds the columns of ``sidecar`` (a table
    ``fex backfill`` wrote for ``table``) into the sample table itself.

    The columns are added to the table's schema (optional, as Iceberg's
    schema evolution adds them: files already written read them as null),
    then each partition's rows are rewritten with the sidecar's values
    placed on them by identity, one commit per partition (a day or an hour;
    the whole table when it has none), in time order. A reader sees each
    partition either as it was (the new columns null) or merged. Then the
    sidecar is dropped from the catalog (``drop_sidecar=False`` keeps it).
    Unlike the backfill, this rewrites every data file of the table: it is
    the step that makes the feature part of the table for good. Returns the
    number of rows rewritten."""
    import pyarrow as pa
    from pyiceberg.expressions import AlwaysTrue, IsNull

    cat = catalog(warehouse, catalog_uri, properties)
    base, side = cat.load_table(table), cat.load_table(sidecar)
    new = [f for f in side.schema().fields if f.name not in IDENTITY]
    if not new:
        raise ValueError(f"{sidecar} has no column besides the identity: nothing to merge")
    have = {f.name for f in base.schema().fields}
    clash = [f.name for f in new if f.name in have]
    if clash:
        raise ValueError(f"{table} has the column(s) {', '.join(clash)} of {sidecar} already")
    step = _partition_micros(base)
    times = base.scan(selected_fields=("request_time",)).to_arrow().column("request_time")
    ranges = [AlwaysTrue()]
    if step is not None:
        micros = times.drop_null().cast(pa.int64()).to_pylist()
        ranges = [_in_range(start, start + step) for start in sorted({m // step * step for m in micros})]
        if times.null_count:
            ranges.append(IsNull("request_time"))
    with base.update_schema() as update:
        for f in new:
            update.add_column(f.name, f.field_type, doc=f"merged from {sidecar}")
    base = cat.load_table(table)
    target = base.schema().as_arrow()
    dropped = [f.name for f in new]
    rewritten = 0
    for in_range in ranges:
        rows = base.scan(row_filter=in_range).to_arrow().drop_columns(dropped)
        rows = _place(rows, side.scan(row_filter=in_range).to_arrow(), sidecar, table)
        rows = pa.Table.from_arrays(
            [rows.column(f.name).cast(f.type) for f in target], schema=target
        )
        base.overwrite(rows, overwrite_filter=in_range, snapshot_properties={"fex.merged": sidecar})
        rewritten += rows.num_rows
    if drop_sidecar:
        cat.drop_table(sidecar)
    return rewritten


def _partition_micros(tbl):
    """The length of the table's partitions of request_time, in
    microseconds (None: unpartitioned)."""
    from pyiceberg.transforms import DayTransform, HourTransform

    fields = tbl.spec().fields
    if not fields:
        return None
    transform = fields[0].transform
    if isinstance(transform, DayTransform):
        return 86_400_000_000
    if isinstance(transform, HourTransform):
        return 3_600_000_000
    raise ValueError(f"{tbl.name()} is partitioned by {transform}; fex's tables are by day or hour")


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
