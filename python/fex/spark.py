"""Spark backfill: the fex library run over a DataFrame of serialized samples
with ``DataFrame.mapInArrow``, the same plan and code as fex-server.

``extract(df, column=..., config=...)`` returns a DataFrame with the input's
other columns and one column per output. Outputs keep the library's Arrow
layout (``Column.to_arrow``) within what Spark's Arrow reader takes: ragged
→ ``array<...>`` (Arrow list; i64 row splits become i32 list offsets),
sequences → ``array<array<...>>``, dense ``[rows, d...]`` → ``array<...>``
of the flattened ``d...`` values (Arrow list; Spark has no fixed-size list),
dense ``[rows]`` → a scalar, strings → ``binary``. Spark has no unsigned
integers: uint64 ids are stored in ``bigint`` bit for bit (reinterpret, not
convert). SHARED features are broadcast to every row.

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


def _element(spec):
    T = _spark_types()
    return {
        "uint64": T.LongType(),
        "int64": T.LongType(),
        "int32": T.IntegerType(),
        "float32": T.FloatType(),
        "float64": T.DoubleType(),
        "bytes": T.BinaryType(),
    }[spec.dtype]


def spark_type(spec):
    """The Spark SQL type of one output (a ``fex.TensorSpec``)."""
    T = _spark_types()
    elem = _element(spec)
    if spec.layout == "strings":
        return T.BinaryType()
    if spec.layout == "ragged":
        if len(spec.shape) == 3:
            return T.ArrayType(T.ArrayType(elem, False), False)
        return T.ArrayType(elem, False)
    if spec.layout == "dense":
        return elem if len(spec.shape) == 1 else T.ArrayType(elem, False)
    raise ValueError(
        f"output {spec.name!r} is {spec.layout}: a keyed-jagged tensor has no row per sample; "
        "select the ragged outputs it groups instead (outputs=[...])"
    )


def _as_signed(values):
    import pyarrow as pa

    return values.view(pa.int64()) if values.type == pa.uint64() else values


def _fixed_to_list(arr):
    """A fixed_size_list as a list (new i32 offsets; the values are shared)."""
    import numpy as np
    import pyarrow as pa

    w = arr.type.list_size
    offsets = pa.array(np.arange(0, (len(arr) + 1) * w, w, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, _as_signed(arr.values))


def _list32(offsets, values, name):
    import numpy as np
    import pyarrow as pa

    offsets = offsets.to_numpy()
    if len(offsets) and offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(f"output {name!r}: {offsets[-1]} values in one Arrow batch overflow Spark's i32 list offsets")
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32, copy=False)), values)


def spark_array(column):
    """One ``fex.Column`` as the Arrow array Spark reads for ``spark_type``."""
    import pyarrow as pa

    arr = column.to_arrow()
    if column.layout == "strings":
        return arr
    if column.layout == "dense":
        return _fixed_to_list(arr) if pa.types.is_fixed_size_list(arr.type) else _as_signed(arr)
    if column.layout == "ragged":
        items = arr.values
        if pa.types.is_struct(items.type):
            raise ValueError(f"output {column.name!r} carries weights, which fex.spark does not write yet")
        items = _fixed_to_list(items) if pa.types.is_fixed_size_list(items.type) else _as_signed(items)
        return _list32(arr.offsets, items, column.name)
    raise ValueError(f"output {column.name!r} is {column.layout}, which has no row per sample")


class _Job:
    """What each task needs: picklable, and compiles the plan once per
    Python worker process (workers are reused across tasks)."""

    _plans = {}

    def __init__(self, plan, column, names, fmt, keep):
        self.plan_state = plan.__reduce__()[1]
        self.digest = plan.identity.digest
        self.column, self.names, self.format, self.keep = column, names, fmt, keep

    def plan(self):
        plan = self._plans.get(self.digest)
        if plan is None:
            plan = self._plans[self.digest] = Plan._restore(*self.plan_state)
        return plan

    def run(self, batches):
        import pyarrow as pa

        plan = self.plan()
        for rb in batches:
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
            raise _located(e, start) from e

    def _batches(self, plan, samples, passthrough):
        import pyarrow as pa

        for i, s in enumerate(samples):
            try:
                out = plan.extract_batch(s, outputs=self.names, shared="broadcast")
            except ExtractError as e:
                raise _located(e, i, batch=True) from e
            kept = None
            if passthrough is not None:
                kept = passthrough.take(pa.array([i] * out.batch_size, pa.int64()))
            yield self._record_batch(out, kept, pa)

    def _record_batch(self, out, kept, pa):
        arrays = [kept.column(k) for k in self.keep] if kept is not None else []
        arrays += [spark_array(out[n]) for n in self.names]
        return pa.RecordBatch.from_arrays(arrays, names=list(self.keep) + list(self.names))


def _located(e, offset, batch=False):
    """The library's error, said with the row in this Arrow batch."""
    where = f"ExampleBatch in row {offset}" if batch else f"sample {offset + (e.row or 0)} of this chunk"
    located = ExtractError(f"{where} of the Arrow batch: {e}")
    for field in ("row", "source", "path", "offset", "kind"):
        setattr(located, field, getattr(e, field, None))
    return located


def extract(df, column="sample", config=None, *, files=None, outputs=None, format="examples", keep=None):
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
    """
    from pyspark.sql import types as T

    if config is None:
        raise ValueError("config= is required: a fex.Plan, YAML text or a path to the model YAML")
    if format not in _FORMATS:
        raise ValueError(f"format={format!r}: expected one of {', '.join(_FORMATS)}")
    plan = config if isinstance(config, Plan) else Plan.from_yaml(config, files=files)
    specs = {s.name: s for s in plan.outputs}
    names = list(outputs) if outputs is not None else list(specs)
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise ValueError(f"model {plan.name!r} has no output {unknown[0]!r}; it has {', '.join(specs)}")
    if column not in df.columns:
        raise ValueError(f"the DataFrame has no column {column!r}; it has {', '.join(df.columns)}")
    keep = [c for c in df.columns if c != column] if keep is None else list(keep)
    clash = sorted(set(keep) & set(names))
    if clash:
        raise ValueError(f"kept column {clash[0]!r} has an output's name; drop it or pass keep=[...]")
    fields = [df.schema[k] for k in keep]
    fields += [T.StructField(n, spark_type(specs[n]), False) for n in names]
    job = _Job(plan, column, names, format, keep)
    pickle.dumps(job)  # fail here, on the driver, if anything will not ship
    return df.mapInArrow(job.run, T.StructType(fields))
