"""Spark backfill: the fex library run over a DataFrame of serialized samples
with ``DataFrame.mapInArrow``, the same plan and code as fex-server.

``extract(df, column=..., config=...)`` returns a DataFrame with the input's
other columns and one column per output. Outputs keep the library's Arrow
layout (``Column.to_arrow``) within what Spark's Arrow reader takes (no
unsigned integers, no large or fixed-size lists): ragged → ``array<...>``
(list offsets become int32; more than 2^31 - 1 values in one Arrow batch is
an error), sequences → ``array<array<...>>``, weighted ragged →
``array<struct<value, weight>>``, dense ``[rows, d...]`` → ``array<...>`` of
the flattened ``d...`` values, dense ``[rows]`` → a scalar, strings →
``binary``, keyed-jagged → ``struct<key: array<...>, ...>`` (row r's values
of each key). uint64 ids are stored in ``bigint`` bit for bit (reinterpret,
not convert). SHARED features are broadcast to every row. The Spark schema
comes from an extraction of no rows converted the same way.

``read_pbdataset(spark, path, ...)`` loads Monolith PBDataset files into a
DataFrame of records (file, record_index, offset, sample), split on the
executors by the library's reader.

The plan (config text and the bytes of every vocabulary it read) travels
inside the function Spark ships to executors, so executors need the fex
wheel installed and nothing else.
"""

import pickle

from ._fex import ExtractError, Plan

_FORMATS = ("examples", "batch", "instances")
#: Samples per library call for Examples and Instances.
CHUNK = 4096


def _spark_types():
    from pyspark.sql import types as T

    return T


def _element(dtype):
    T = _spark_types()
    return {
        "uint64": T.LongType(),
        "int64": T.LongType(),
        "int32": T.IntegerType(),
        "float32": T.FloatType(),
        "float64": T.DoubleType(),
        "bytes": T.BinaryType(),
    }[dtype]


def spark_type(spec, keys=None):
    """The Spark SQL type of one output (a ``fex.TensorSpec``); a
    keyed-jagged output needs its ``keys`` (``Column.keys``). Outputs with
    weights are typed from their arrays (``spark_schema``)."""
    T = _spark_types()
    elem = _element(spec.dtype)
    if spec.layout == "strings":
        return T.BinaryType()
    if spec.layout == "ragged":
        if len(spec.shape) == 3:
            return T.ArrayType(T.ArrayType(elem, False), False)
        return T.ArrayType(elem, False)
    if spec.layout == "dense":
        return elem if len(spec.shape) == 1 else T.ArrayType(elem, False)
    if spec.layout == "keyed_jagged":
        if keys is None:
            raise ValueError(f"output {spec.name!r} is keyed-jagged: its Spark type needs its keys")
        return T.StructType([T.StructField(k, T.ArrayType(elem, False), False) for k in keys])
    raise ValueError(f"output {spec.name!r} has layout {spec.layout!r}, which fex.spark does not know")


def _type_of_arrow(t):
    """The Spark SQL type of an Arrow type ``spark_array`` makes."""
    import pyarrow as pa

    T = _spark_types()
    if pa.types.is_list(t):
        return T.ArrayType(_type_of_arrow(t.value_type), False)
    if pa.types.is_struct(t):
        return T.StructType([T.StructField(f.name, _type_of_arrow(f.type), False) for f in t])
    simple = {
        pa.int64(): T.LongType(),
        pa.int32(): T.IntegerType(),
        pa.float32(): T.FloatType(),
        pa.float64(): T.DoubleType(),
        pa.binary(): T.BinaryType(),
        pa.large_binary(): T.BinaryType(),
    }
    if t not in simple:
        raise ValueError(f"Arrow type {t} has no Spark type here")
    return simple[t]


def spark_schema(plan, names=None):
    """``StructField``s of the outputs ``names`` (default: all), typed from
    the arrays an extraction of no rows gives, converted by
    ``spark_array``: the schema cannot disagree with the data."""
    T = _spark_types()
    empty = plan.extract_examples([], outputs=names, shared="broadcast")
    return [T.StructField(n, spark_type_of(spark_array(empty[n])), False) for n in empty]


def _as_signed(values):
    import pyarrow as pa

    return values.view(pa.int64()) if values.type == pa.uint64() else values


def _i32_offsets(offsets, name):
    """List offsets rebased to start at 0, as int32 (Spark's list offsets)."""
    import numpy as np
    import pyarrow as pa

    offsets = np.asarray(offsets)
    base = offsets[0] if len(offsets) else 0
    rebased = offsets - base
    if len(rebased) and rebased[-1] > np.iinfo(np.int32).max:
        raise ValueError(
            f"output {name!r}: {rebased[-1]} values in one Arrow batch overflow Spark's int32 list offsets; "
            "send fewer rows per batch (spark.sql.execution.arrow.maxRecordsPerBatch)"
        )
    return pa.array(rebased.astype(np.int32, copy=False)), int(base), int(offsets[-1]) if len(offsets) else 0


def _items(arr, name):
    """List items as Spark reads them: uint64 as int64 (same bits), a
    fixed-size list as a list, a struct (value and weight) field by field."""
    import numpy as np
    import pyarrow as pa

    if pa.types.is_fixed_size_list(arr.type):
        w = arr.type.list_size
        values = arr.values.slice(arr.offset * w, len(arr) * w)
        offsets = pa.array(np.arange(0, (len(arr) + 1) * w, w, dtype=np.int64))
        offsets, _, _ = _i32_offsets(offsets, name)
        return pa.ListArray.from_arrays(offsets, _items(values, name))
    if pa.types.is_struct(arr.type):
        fields = [arr.field(i) for i in range(arr.type.num_fields)]
        names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
        return pa.StructArray.from_arrays([_items(f, name) for f in fields], names=names)
    return _as_signed(arr)


def _list32(arr, name):
    """A (large) list as a list with int32 offsets over converted items."""
    import pyarrow as pa

    offsets, start, end = _i32_offsets(arr.offsets, name)
    return pa.ListArray.from_arrays(offsets, _items(arr.values.slice(start, end - start), name))


def spark_array(column):
    """One ``fex.Column`` as the Arrow array Spark reads (see the module's
    doc for the mapping), or a ``pyarrow.Array`` in the library's Arrow
    layout (``Column.to_arrow``, a table's column). Values keep their bits;
    only offsets and containers change."""
    import pyarrow as pa

    if isinstance(column, (pa.Array, pa.ChunkedArray)):
        arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
            return _list32(arr, "array")
        return arr if pa.types.is_large_binary(arr.type) or pa.types.is_binary(arr.type) else _items(arr, "array")
    arr = column.to_arrow()
    if column.layout == "strings":
        return arr
    if column.layout == "dense":
        return _items(arr, column.name)
    if column.layout == "ragged":
        return _list32(arr, column.name)
    if column.layout == "keyed_jagged":
        rows, keys = column.rows, column.keys
        parts = [_list32(arr.slice(i * rows, rows), column.name) for i in range(len(keys))]
        return pa.StructArray.from_arrays(parts, names=list(keys))
    raise ValueError(f"output {column.name!r} has layout {column.layout!r}, which fex.spark does not know")


def spark_type_of(array):
    """The Spark SQL type of an array ``spark_array`` made."""
    return _type_of_arrow(array.type)


class _Job:
    """What each task needs: picklable, and compiles the plan once per
    Python worker process (workers are reused across tasks)."""

    _plans = {}

    def __init__(self, plan, column, names, fmt, keep, unit=None):
        self.plan_state = plan.__reduce__()[1]
        self.digest = plan.identity.digest
        self.column, self.names, self.format, self.keep = column, names, fmt, keep
        # identity=True: microseconds per unit of the identity's time.
        self.unit = unit

    def plan(self):
        plan = self._plans.get(self.digest)
        if plan is None:
            plan = self._plans[self.digest] = Plan._restore(*self.plan_state)
        return plan

    def run(self, batches):
        import pyarrow as pa

        plan = self.plan()
        for rb in batches:
            self._where = _Where(rb)
            samples = rb.column(self.column).to_pylist()
            for i, s in enumerate(samples):
                if s is None:
                    raise ValueError(f"column {self.column!r}: row {i} of an Arrow batch is null, not a sample")
            passthrough = rb.select(self.keep) if self.keep else None
            if self.format == "batch":
                yield from self._batches(plan, samples, passthrough)
            else:
                for start in range(0, len(samples), CHUNK):
                    chunk = samples[start : start + CHUNK]
                    out = self._call(plan, chunk, start)
                    kept = passthrough.slice(start, len(chunk)) if passthrough is not None else None
                    yield self._record_batch(out, kept, pa)

    def _call(self, plan, chunk, start):
        call = plan.extract_examples if self.format == "examples" else plan.extract_instances
        try:
            return call(chunk, outputs=self.names, shared="broadcast")
        except ExtractError as e:
            raise _located(e, start, where=self._where) from e

    def _batches(self, plan, samples, passthrough):
        import pyarrow as pa

        for i, s in enumerate(samples):
            try:
                out = plan.extract_batch(s, outputs=self.names, shared="broadcast")
            except ExtractError as e:
                raise _located(e, i, batch=True, where=self._where) from e
            kept = None
            if passthrough is not None:
                kept = passthrough.take(pa.array([i] * out.batch_size, pa.int64()))
            yield self._record_batch(out, kept, pa)

    def _record_batch(self, out, kept, pa):
        arrays = [kept.column(k) for k in self.keep] if kept is not None else []
        names = list(self.keep)
        if self.unit is not None:
            arrays += self._identity(out, pa)
            names += list(_IDENTITY_COLUMNS)
        arrays += [spark_array(out[n]) for n in self.names]
        return pa.RecordBatch.from_arrays(arrays, names=names + list(self.names))

    def _identity(self, out, pa):
        """The rows' request id (the LineId's string; empty: null), index in
        their record (an ExampleBatch's rows count from 0; an Example is row
        0) and request time in microseconds (0: null), as fex extract
        --format iceberg fills them (fex::offline::identity)."""
        import numpy as np
        import pyarrow.compute as pc

        def single(column):
            arr = column.to_arrow()
            return arr.flatten() if pa.types.is_fixed_size_list(arr.type) else arr

        ids = single(out[_REQUEST_ID_OUTPUT]).cast(pa.binary())
        ids = pc.if_else(pc.equal(pc.binary_length(ids), 0), pa.scalar(None, pa.binary()), ids).cast(pa.string())
        rows = len(ids)
        index = np.arange(rows, dtype=np.int32) if self.format == "batch" else np.zeros(rows, dtype=np.int32)
        times = np.asarray(single(out[_REQUEST_TIME_OUTPUT]), dtype=np.int64)
        micros = pa.array(times * self.unit, pa.int64(), mask=times == 0)
        return [ids, pa.array(index), micros]


class _Where:
    """Names a row's record by the batch's `file`, `record_index` and
    `offset` columns when it has them (what ``read_pbdataset`` makes, the
    place ``fex extract`` names), so an error can be traced to its file."""

    def __init__(self, rb):
        names = rb.schema.names
        have = all(c in names for c in ("file", "record_index", "offset"))
        self.columns = [rb.column(c) for c in ("file", "record_index", "offset")] if have else None

    def __call__(self, row):
        if self.columns is None or row >= len(self.columns[0]):
            return ""
        file, index, offset = (c[row].as_py() for c in self.columns)
        return f"{file}: record {index} at byte {offset}: "


def _located(e, offset, batch=False, where=None):
    """The library's error, said with the row in this Arrow batch and, when
    the batch has them, the file and record the row came from."""
    row = offset if batch else offset + (e.row or 0)
    what = f"ExampleBatch in row {offset}" if batch else f"sample {row} of this chunk"
    prefix = where(row) if where is not None else ""
    located = ExtractError(f"{prefix}{what} of the Arrow batch: {e}")
    for field in ("row", "source", "path", "offset", "kind"):
        setattr(located, field, getattr(e, field, None))
    return located


_REQUEST_ID_OUTPUT, _REQUEST_TIME_OUTPUT = "_fex_request_id", "_fex_request_time"
#: The identity columns ``extract(identity=True)`` adds (request_time as
#: microseconds until the DataFrame's last projection makes it a timestamp).
_IDENTITY_COLUMNS = ("request_id", "row", "_request_time_micros")


def extract(
    df,
    column="sample",
    config=None,
    *,
    files=None,
    outputs=None,
    format="examples",
    keep=None,
    identity=False,
    ignore_transforms=False,
):
    """Extracts the serialized samples in ``df[column]`` (binary) with a
    model config, returning a DataFrame of the kept columns plus one column
    per output.

    - ``config``: a ``fex.Plan``, YAML text or a path to the model YAML
      (read on the driver); ``files`` as in ``Plan.from_yaml``.
    - ``outputs``: output names to compute (default: every output), so a
      backfill can add only its new features.
    - ``format``: ``"examples"`` (one Example per row), ``"instances"``
      (legacy Instances) or ``"batch"`` (one ExampleBatch per row, which
      becomes ``batch_size`` rows; kept columns are repeated for each).
    - ``keep``: input columns to carry along (default: all but ``column``).
    - ``identity``: also each row's identity, after the kept columns:
      ``request_id`` (string), ``row`` (its index in its record) and
      ``request_time`` (timestamp), read from the LineId as ``fex extract
      --format iceberg`` reads it: the rows ``write_iceberg`` takes.
    - ``ignore_transforms``: extract a model with ``offline:`` transforms
      anyway, each record's rows as they are. Spark runs no transforms
      (they filter, add and reorder rows across records in input order:
      ``fex extract`` and ``fex.run`` do), so such a model is refused
      unless this says its rows are wanted untransformed.
    """
    from pyspark.sql import types as T

    if config is None:
        raise ValueError("config= is required: a fex.Plan, YAML text or a path to the model YAML")
    if format not in _FORMATS:
        raise ValueError(f"format={format!r}: expected one of {', '.join(_FORMATS)}")
    plan = config if isinstance(config, Plan) else Plan.from_yaml(config, files=files)
    if plan.offline_transforms and not ignore_transforms:
        raise ValueError(
            f"model {plan.name!r} has offline: transforms ({', '.join(plan.offline_transforms)}), which "
            "fex.spark.extract does not run, so its rows would not be the ones fex extract writes: run the "
            "transforms with fex extract or fex.run, or pass ignore_transforms=True for every record's rows as they are"
        )
    specs = {s.name: s for s in plan.outputs}
    names = list(outputs) if outputs is not None else list(specs)
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise ValueError(f"model {plan.name!r} has no output {unknown[0]!r}; it has {', '.join(specs)}")
    if column not in df.columns:
        raise ValueError(f"the DataFrame has no column {column!r}; it has {', '.join(df.columns)}")
    found = df.schema[column].dataType
    if not isinstance(found, T.BinaryType):
        raise ValueError(
            f"column {column!r} is {found.simpleString()}, not binary: it must hold serialized samples "
            f"(cast it with df.withColumn({column!r}, col({column!r}).cast('binary')) if it holds their bytes)"
        )
    keep = [c for c in df.columns if c != column] if keep is None else list(keep)
    clash = sorted(set(keep) & set(names))
    if clash:
        raise ValueError(f"kept column {clash[0]!r} has an output's name; drop it or pass keep=[...]")
    fields = [df.schema[k] for k in keep]
    unit = None
    if identity:
        clash = sorted(set(keep) & {"request_id", "row", "request_time"})
        if clash:
            raise ValueError(f"kept column {clash[0]!r} has an identity column's name; drop it or pass keep=[...]")
        plan, unit = plan._with_identity()
        fields += [
            T.StructField("request_id", T.StringType(), True),
            T.StructField("row", T.IntegerType(), False),
            T.StructField("_request_time_micros", T.LongType(), True),
        ]
        names = names + [_REQUEST_ID_OUTPUT, _REQUEST_TIME_OUTPUT]
    fields += spark_schema(plan, names)
    job = _Job(plan, column, names, format, keep, unit)
    pickle.dumps(job)  # fail here, on the driver, if anything will not ship
    out = df.mapInArrow(job.run, T.StructType(fields))
    if not identity:
        return out
    from pyspark.sql import functions as F

    model = [f.name for f in fields if f.name not in (_REQUEST_ID_OUTPUT, _REQUEST_TIME_OUTPUT)]
    at = model.index("_request_time_micros")
    columns = [F.col(c) for c in model]
    columns[at] = F.timestamp_micros("_request_time_micros").alias("request_time")
    return out.select(*columns)


#: Records per Arrow batch that ``read_pbdataset`` hands Spark.
RECORDS_PER_BATCH = 4096


class _Split:
    """Splits whole PBDataset files (rows of Spark's ``binaryFile`` source)
    into their records with the library's reader, on the executors."""

    def __init__(self, options, column):
        self.options, self.column = options, column

    def run(self, batches):
        import pyarrow as pa

        from ._fex import read_records

        names = ["file", "record_index", "offset", self.column]
        for rb in batches:
            paths = rb.column("path").to_pylist()
            contents = rb.column("content")
            for i, path in enumerate(paths):
                data = contents[i].as_py()
                cols = ([], [], [], [])
                for payload, index, offset, _, _ in read_records(data, name=path, with_meta=True, **self.options):
                    for c, v in zip(cols, (path, index, offset, payload)):
                        c.append(v)
                    if len(cols[0]) == RECORDS_PER_BATCH:
                        yield self._batch(pa, cols, names)
                        cols = ([], [], [], [])
                if cols[0]:
                    yield self._batch(pa, cols, names)

    @staticmethod
    def _batch(pa, cols, names):
        types = [pa.string(), pa.int64(), pa.int64(), pa.binary()]
        arrays = [pa.array(c, t) for c, t in zip(cols, types)]
        return pa.RecordBatch.from_arrays(arrays, names=names)


def read_pbdataset(
    spark,
    path,
    *,
    column="sample",
    compression="auto",
    lagrangex_header=False,
    kafka_dump_prefix=False,
    has_sort_id=False,
    kafka_dump=False,
    max_record_bytes=None,
    path_glob_filter=None,
    recursive=False,
):
    """Loads Monolith PBDataset files (``path``: a file, directory or glob,
    or a list of them; any filesystem Spark reads) into a DataFrame of
    ``file`` (the path as Spark names it), ``record_index`` and ``offset`` (the
    record's number and byte offset in its file, what fex's errors say) and
    ``column`` (binary: the record's payload), ready for ``extract``.

    Files are read whole by Spark's ``binaryFile`` source and split into
    records on the executors by ``fex.read_records`` with the same options
    (framing headers, zstd / gzip / snappy). A file is one task's work, so
    a file must fit in an executor's memory (and under Spark's 2 GiB limit
    for one binary value). A bad record fails the job with the library's
    message (file, record index, byte offset)."""
    if column in ("file", "record_index", "offset"):
        raise ValueError(f"column={column!r} is one of the metadata columns; pick another name")
    options = dict(
        compression=compression,
        lagrangex_header=lagrangex_header,
        kafka_dump_prefix=kafka_dump_prefix,
        has_sort_id=has_sort_id,
        kafka_dump=kafka_dump,
    )
    if max_record_bytes is not None:
        options["max_record_bytes"] = max_record_bytes
    # Refuse bad options on the driver, not in every task.
    from ._fex import read_records

    read_records(b"", name="(options check)", **options)
    from pyspark.sql import types as T

    reader = spark.read.format("binaryFile")
    if path_glob_filter is not None:
        reader = reader.option("pathGlobFilter", path_glob_filter)
    if recursive:
        reader = reader.option("recursiveFileLookup", "true")
    files = reader.load(path).select("path", "content")
    schema = T.StructType(
        [
            T.StructField("file", T.StringType(), False),
            T.StructField("record_index", T.LongType(), False),
            T.StructField("offset", T.LongType(), False),
            T.StructField(column, T.BinaryType(), False),
        ]
    )
    job = _Split(options, column)
    pickle.dumps(job)
    return files.mapInArrow(job.run, schema)


#: The Spark SQL catalog fex's warehouse is opened as. Iceberg's JDBC catalog
#: keys its rows by the catalog's name, and fex's tables are the catalog
#: ``fex``'s, so the Spark catalog has that name too.
ICEBERG_CATALOG = "fex"


def iceberg_catalog(spark, warehouse, catalog_uri=None, properties=None):
    """Opens a fex warehouse's Iceberg tables in Spark SQL as the catalog
    ``fex``: its tables are then ``fex.<namespace>.<table>``
    (``spark.table("fex.fex.default_samples")``, SQL, ``DataFrame.writeTo``).

    Iceberg's ``SparkCatalog`` over Iceberg's JDBC catalog, on the SQLite
    file in the warehouse (``catalog.db``) or on ``catalog_uri``
    (``postgresql://user:password@host/db``, as ``fex extract --catalog``
    takes it, or a ``jdbc:`` URL), or over a REST catalog
    (``catalog_uri="https://..."``). The warehouse is a directory or an
    object store's URI (``s3://bucket/prefix``, with a catalog that is not
    the embedded one); ``properties`` go to the catalog and its file IO under
    Iceberg's names (``s3.endpoint``, ``client.region``, ``credential``...).
    The session needs Iceberg's Spark runtime, AWS's SDK for S3
    (``iceberg-aws-bundle``) and the catalog's JDBC driver on its classpath
    (``spark.jars``; scripts/spark/pom.xml names the versions the tests
    use: Iceberg 1.12.0 for Spark 4.1, sqlite-jdbc, PostgreSQL's driver). A
    session holds one such catalog: opening another warehouse is refused
    (``spark.newSession()`` holds catalogs of its own)."""
    import os
    from urllib.parse import unquote, urlsplit

    remote = "://" in warehouse and not warehouse.startswith("file:")
    location = warehouse.rstrip("/") if remote else f"file:{os.path.abspath(warehouse.removeprefix('file:'))}"
    props = {"": "org.apache.iceberg.spark.SparkCatalog", "type": "jdbc", "warehouse": location}
    if catalog_uri is None:
        if remote:
            raise ValueError(f"the warehouse {warehouse} has no embedded catalog: give catalog_uri "
                             "(postgresql://..., a jdbc: URL, or a REST catalog's http(s)://...)")
        props["uri"] = f"jdbc:sqlite:{os.path.join(location.removeprefix('file:'), 'catalog.db')}"
    elif catalog_uri.startswith(("http://", "https://")):
        props["type"] = "rest"
        props["uri"] = catalog_uri
    elif catalog_uri.startswith("jdbc:"):
        props["uri"] = catalog_uri
    elif catalog_uri.startswith(("postgresql://", "postgres://")):
        u = urlsplit(catalog_uri)
        port = f":{u.port}" if u.port else ""
        props["uri"] = f"jdbc:postgresql://{u.hostname}{port}{u.path}"
        if u.username:
            props["jdbc.user"] = unquote(u.username)
        if u.password:
            props["jdbc.password"] = unquote(u.password)
    else:
        raise ValueError(
            f"catalog_uri={catalog_uri!r}: expected postgresql://user:password@host/db, a jdbc: URL or http(s)://..."
        )
    if remote and props["type"] == "jdbc":
        # A JDBC catalog's default file IO is Hadoop's (s3a:// only with
        # hadoop-aws): Iceberg's resolving IO picks S3FileIO for s3://.
        props["io-impl"] = "org.apache.iceberg.io.ResolvingFileIO"
    props.update(properties or {})
    key = lambda name: f"spark.sql.catalog.{ICEBERG_CATALOG}" + (f".{name}" if name else "")  # noqa: E731
    current = spark.conf.get(key("warehouse"), None)
    if current not in (None, props["warehouse"]) or spark.conf.get(key("uri"), props["uri"]) != props["uri"]:
        raise ValueError(
            f"this Spark session already opened the warehouse {current} as the catalog {ICEBERG_CATALOG!r}; "
            "Spark keeps a catalog once it is used: open another warehouse in another session"
        )
    for name, value in props.items():
        spark.conf.set(key(name), value)


def iceberg_view(spark, table, sidecars=(), *, view=None):
    """The sample table ``table`` (``namespace.name`` in the catalog
    :func:`iceberg_catalog` opened) with the columns of each sidecar table
    ``fex backfill`` wrote for it, as one temporary view (named ``view``,
    by default the table's name with ``_all``): a sidecar's value for a row
    is the one with the row's ``request_id`` and ``row``, null where the
    sidecar has none, as ``fex.iceberg.read`` places them. Returns it as a
    DataFrame."""
    identity = ("request_id", "row", "request_time")
    base = f"{ICEBERG_CATALOG}.{table}"
    taken = set(spark.table(base).columns)
    select, joins = ["t.*"], []
    for i, name in enumerate(sidecars):
        alias = f"s{i}"
        for column in spark.table(f"{ICEBERG_CATALOG}.{name}").columns:
            if column in identity:
                continue
            if column in taken:
                raise ValueError(f"sidecar {name} has a column {column!r} that {table} or an earlier sidecar has")
            taken.add(column)
            select.append(f"{alias}.`{column}`")
        joins.append(
            f"LEFT JOIN {ICEBERG_CATALOG}.{name} {alias} ON {alias}.request_id = t.request_id AND {alias}.row = t.row"
        )
    view = view or table.rsplit(".", 1)[-1] + "_all"
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{view}` AS SELECT {', '.join(select)} FROM {base} t {' '.join(joins)}")
    return spark.table(view)


def write_iceberg(df, table, plan, *, overwrite=None):
    """Writes ``df``, rows of ``extract(..., identity=True)``, into the
    sample table ``table`` (``namespace.name`` in the catalog
    :func:`iceberg_catalog` opened) with Iceberg's own Spark writer, in one
    commit whose summary names ``plan`` as ``fex extract``'s commits do.

    The table must exist (``fex table create``, ``fex extract --format
    iceberg`` or ``fex.iceberg.write`` made it). Its columns are matched by
    name: a keyed-jagged output's struct gives its ``output.key`` columns;
    a model column the table lacks, or of another type, and a required
    table column the rows lack, are refused before anything is written,
    every one named.

    Without ``overwrite`` the rows are appended. ``overwrite=(since,
    until)`` (ISO 8601 strings or datetimes, UTC unless they say, ``until``
    excluded) replaces the table's rows of that time range with ``df`` in
    one commit (Iceberg's overwrite by filter); every row must lie in the
    range, else nothing is written and the error says how many do not."""
    from pyspark.sql import functions as F

    from .iceberg import _iso, _range, _refuse_outside, _snapshot_properties

    spark = df.sparkSession
    name = f"{ICEBERG_CATALOG}.{table}"
    if not spark.catalog.tableExists(name):
        raise ValueError(f"no table {table} in the catalog {ICEBERG_CATALOG!r}: create it with fex table create "
                         "(or open the warehouse first with fex.spark.iceberg_catalog)")
    target = spark.table(name).schema
    have = {f.name: f.dataType for f in df.schema.fields}
    structs = {f.name: f.dataType for f in df.schema.fields if f.dataType.typeName() == "struct"}
    columns, problems, used = [], [], set()
    for field in target.fields:
        if field.name in have:
            source, found = F.col(f"`{field.name}`"), have[field.name]
            used.add(field.name)
        elif "." in field.name and field.name.rsplit(".", 1)[0] in structs:
            output, key = field.name.rsplit(".", 1)
            keys = {f.name: f.dataType for f in structs[output].fields}
            if key not in keys:
                problems.append(f'the table requires column "{field.name}", which the model does not write')
                continue
            source, found = F.col(f"`{output}`").getField(key), keys[key]
            used.add(output)
        elif field.nullable:
            columns.append(F.lit(None).cast(field.dataType).alias(field.name))
            continue
        else:
            problems.append(f'the table requires column "{field.name}" ({field.dataType.simpleString()}), '
                            "which the model does not write")
            continue
        if found.simpleString() != field.dataType.simpleString():
            problems.append(f'column "{field.name}" is {field.dataType.simpleString()} in the table, '
                            f"{found.simpleString()} for the model")
            continue
        columns.append(source.alias(field.name))
    for extra in (c for c in df.columns if c not in used):
        problems.append(f'column "{extra}" ({have[extra].simpleString()}) is not in the table')
    if problems:
        raise ValueError(f"table {table} does not match the model: " + "; ".join(problems))
    writer = df.select(*columns).writeTo(name)
    for key, value in _snapshot_properties(plan).items():
        writer = writer.option(f"snapshot-property.{key}", value)
    if overwrite is None:
        writer.append()
        return
    since, until = _range(overwrite)
    start, end = (F.lit(_iso(t)).cast("timestamp") for t in (since, until))
    in_range = (F.col("request_time") >= start) & (F.col("request_time") < end)
    outside = df.filter(~in_range | F.col("request_time").isNull()).count()
    if outside:
        _refuse_outside(outside, df.count(), overwrite)
    writer.overwrite(in_range)
