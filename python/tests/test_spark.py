"""Spark backfill on a real local Spark: generated ExampleBatches and
Examples in a DataFrame, extracted through `fex.spark.extract`, are byte
for byte, tensor by tensor, what fex-server answers over gRPC for the same
samples, and what `fex extract` writes for them."""

import os
import struct
import subprocess

import numpy as np
import pytest

import fex
import fex.spark

from conftest import ROOT, binary, read_framed

# Wire dtype numbers (proto/fex/v1/tensor.proto) → numpy.
DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.int64, 5: np.uint64}
RAGGED, DENSE, STRINGS, KEYED_JAGGED = 2, 1, 3, 4
DEFAULT_YAML = os.path.join(ROOT, "models", "default.yaml")
LAYOUTS_YAML = os.path.join(ROOT, "python", "tests", "models", "spark_layouts.yaml")


def to_examples(ex_pb2, batch_bytes):
    """The rows of an ExampleBatch as Examples: SHARED lists give every row
    their one Feature; the reserved lists become the Example's fields."""
    batch = ex_pb2.ExampleBatch.FromString(batch_bytes)
    examples = []
    for r in range(batch.batch_size):
        e = ex_pb2.Example()
        for lst in batch.named_feature_list:
            f = lst.feature[0] if lst.type == ex_pb2.SHARED else lst.feature[r]
            if lst.name == "__LINE_ID__":
                e.line_id.ParseFromString(f.bytes_list.value[0])
            elif lst.name == "__LABEL__":
                e.label.extend(f.float_list.value)
            elif lst.name == "instance_weight":
                e.instance_weight = f.float_list.value[0]
            else:
                e.named_feature.add(name=lst.name).feature.CopyFrom(f)
        examples.append(e.SerializeToString())
    return examples


def pack(flat, dtype):
    """Values as the wire's little-endian bytes. Spark's bigint holds a
    uint64 id's bits, so int64 and uint64 pack alike."""
    if dtype in (np.int64, np.uint64):
        return np.asarray(flat, dtype=np.int64).tobytes()
    return np.asarray(flat, dtype=dtype).tobytes()


def rows_to_tensor(values, tensor):
    """The wire buffers (values, row_splits) that Spark's rows for one
    request make, in the tensor's own dtypes."""
    if tensor.layout == STRINGS:
        splits = np.cumsum([0] + [len(v) for v in values], dtype=np.int64)
        return b"".join(values), splits.tobytes()
    dtype = DTYPES[tensor.dtype]
    if tensor.layout == DENSE:
        if len(tensor.shape) > 1:  # [rows, d...]: each row its d... values, flat
            values = [x for row in values for x in row]
        return pack(values, dtype), b""
    splits_dtype = DTYPES[tensor.splits_dtype]
    splits = np.cumsum([0] + [len(v) for v in values]).astype(splits_dtype)
    flat = [x for row in values for x in row]
    if len(tensor.shape) == 3:  # a sequence: positions of `width` values
        flat = [x for pos in flat for x in pos]
    return pack(flat, dtype), splits.tobytes()


def rows_to_kjt(values, tensor):
    """A keyed-jagged tensor's (lengths, values) from Spark's rows: each
    row's struct holds one list per key; the wire is key-major."""
    keys = list(tensor.keys)
    lists = [getattr(row, k) for k in keys for row in values]
    lengths = np.array([len(x) for x in lists], dtype=np.int32).tobytes()
    return lengths, pack([x for one in lists for x in one], DTYPES[tensor.dtype])


def broadcast(tensor, rows):
    """A SHARED tensor returned once, as `rows` rows (what Spark writes)."""
    if not tensor.shared:
        return tensor.values, tensor.row_splits
    if tensor.layout == DENSE:
        return tensor.values * rows, b""
    splits = np.frombuffer(tensor.row_splits, dtype=DTYPES[tensor.splits_dtype])
    n = splits[1] - splits[0]
    return tensor.values * rows, (np.arange(rows + 1) * n).astype(splits.dtype).tobytes()


def check_request(reply, rows, label):
    """Every tensor of a reply (the server's or `fex extract`'s) equals
    Spark's rows for that request; returns the layouts seen."""
    assert reply.tensors, label
    seen = set()
    for t in reply.tensors:
        column = [getattr(r, t.name) for r in rows]
        assert not t.weights, f"{label}: {t.name} carries weights this check does not compare"
        if t.layout == KEYED_JAGGED:
            assert not t.shared, f"{label}: {t.name} is a shared keyed-jagged tensor"
            lengths, values = rows_to_kjt(column, t)
            assert lengths == t.lengths, f"{label}: {t.name} lengths differ"
            assert values == t.values, f"{label}: {t.name} values differ"
            seen.add(("keyed_jagged", len(t.keys)))
            continue
        values, splits = broadcast(t, reply.batch_size)
        got_values, got_splits = rows_to_tensor(column, t)
        assert got_values == values, f"{label}: {t.name} values differ"
        assert got_splits == splits, f"{label}: {t.name} row_splits differ"
        seen.add((t.layout, len(t.shape), DTYPES.get(t.dtype), DTYPES.get(t.splits_dtype), t.shared))
    return seen


def cli_responses(protos, model, records, tmp_path, payload="example-batch"):
    """What `fex extract --format responses` writes for these records: one
    `fex.v1.ExtractResponse` per record."""
    svc = protos["service"]
    data, out = tmp_path / f"in-{payload}.pb", tmp_path / f"out-{payload}.resp"
    data.write_bytes(b"".join(struct.pack("<Q", len(r)) + r for r in records))
    cmd = [binary("FEX_CLI"), "extract", "--model", str(model), "--format", "responses", "--payload", payload]
    subprocess.run([*cmd, "-q", "-o", str(out), str(data)], check=True, capture_output=True)
    return [svc.ExtractResponse.FromString(r) for r in read_framed(out)]


def by_request(rows, count):
    groups = [[] for _ in range(count)]
    for r in rows:
        groups[r.request].append(r)
    return groups


def test_batches_through_spark_equal_the_server_and_fex_extract(spark, stub, protos, batches, tmp_path):
    svc = protos["service"]
    df = spark.createDataFrame([(i, b) for i, b in enumerate(batches)], "request int, sample binary")
    out = fex.spark.extract(df, column="sample", config=fex.Plan.default(), format="batch")
    groups = by_request(out.collect(), len(batches))
    offline = cli_responses(protos, DEFAULT_YAML, batches, tmp_path)
    assert len(offline) == len(batches)
    for i, b in enumerate(batches):
        reply = stub.Extract(svc.ExtractRequest(model="default", example_batch=b), timeout=30)
        assert len(groups[i]) == reply.batch_size == offline[i].batch_size == 16
        check_request(reply, groups[i], f"batch {i}")
        check_request(offline[i], groups[i], f"batch {i} (fex extract)")


def test_examples_through_spark_equal_the_server_and_fex_extract(spark, stub, protos, batches, tmp_path):
    svc = protos["service"]
    requests = [to_examples(protos["example"], b) for b in batches[:2]]
    data = [(i, e) for i, req in enumerate(requests) for e in req]
    df = spark.createDataFrame(data, "request int, sample binary").repartition(2)
    out = fex.spark.extract(df, column="sample", config=fex.Plan.default(), keep=["request", "sample"])
    # repartition shuffles rows: restore each request's order by its bytes.
    position = {(i, e): k for i, req in enumerate(requests) for k, e in enumerate(req)}
    collected = out.select("request", "sample", *[s.name for s in fex.Plan.default().outputs])
    groups = by_request(collected.collect(), len(requests))
    for i, req in enumerate(requests):
        rows = sorted(groups[i], key=lambda r: position[(i, bytes(r.sample))])
        examples = svc.ExampleList(example=req)
        reply = stub.Extract(svc.ExtractRequest(model="default", examples=examples), timeout=30)
        assert len(rows) == reply.batch_size == 16
        check_request(reply, rows, f"examples {i}")
        # `fex extract --payload example` answers one response per Example.
        offline = cli_responses(protos, DEFAULT_YAML, req, tmp_path, payload="example")
        assert [r.batch_size for r in offline] == [1] * 16
        for k, (response, row) in enumerate(zip(offline, rows)):
            check_request(response, [row], f"examples {i}, row {k} (fex extract)")


def test_only_the_asked_outputs_are_added(spark, batches):
    df = spark.createDataFrame([(0, batches[0])], "request int, sample binary")
    out = fex.spark.extract(df, config=fex.Plan.default(), format="batch", outputs=["item_id", "label"])
    assert out.columns == ["request", "item_id", "label"]
    assert out.count() == 16
    with pytest.raises(ValueError, match="has no output 'nope'"):
        fex.spark.extract(df, config=fex.Plan.default(), outputs=["nope"])


def test_bad_samples_fail_the_job_with_the_library_error(spark):
    df = spark.createDataFrame([(b"\xff" * 16,)], "sample binary")
    out = fex.spark.extract(df, config=fex.Plan.default(), format="batch", outputs=["item_id"])
    with pytest.raises(Exception, match="varint longer than 10 bytes"):
        out.collect()


@pytest.fixture(scope="module")
def layout_batches(tmp_path_factory):
    """ExampleBatches for the model of every layout."""
    out = tmp_path_factory.mktemp("layouts") / "gen.pb"
    args = ["gen", "--model-config", LAYOUTS_YAML, "--count", "3", "--batch-size", "8", "--seed", "11"]
    subprocess.run([binary("FEX_CLIENT"), *args, "--out", str(out)], check=True, capture_output=True)
    return read_framed(out)


def test_every_layout_through_spark_equals_fex_extract(spark, protos, layout_batches, tmp_path):
    """Keyed-jagged outputs (a struct of one list per key), uint64 ids (in
    bigint, the same bits), i32 and i64 splits (Spark's list), sequences,
    dense [rows], [rows, d] and [rows, d1, d2], strings, shared outputs:
    Spark's rows, bit-cast back, are `fex extract`'s tensors."""
    plan = fex.Plan.from_yaml(LAYOUTS_YAML)
    df = spark.createDataFrame([(i, b) for i, b in enumerate(layout_batches)], "request int, sample binary")
    out = fex.spark.extract(df, config=plan, format="batch")
    kjt = out.schema["kjt"].dataType
    assert [f.name for f in kjt.fields] == ["user_id", "item_tags"]
    groups = by_request(out.collect(), len(layout_batches))
    offline = cli_responses(protos, LAYOUTS_YAML, layout_batches, tmp_path)
    seen = set()
    for i, response in enumerate(offline):
        assert len(groups[i]) == response.batch_size == 8
        seen |= check_request(response, groups[i], f"batch {i}")
    expected = {
        ("keyed_jagged", 2),
        ("keyed_jagged", 1),
        (RAGGED, 2, np.uint64, np.int64, False),
        (RAGGED, 2, np.int64, np.int32, True),
        (RAGGED, 3, np.int64, np.int64, False),
        (DENSE, 3, np.float32, None, False),
        (DENSE, 1, np.float32, None, False),
        (DENSE, 2, np.float64, None, False),
        (STRINGS, 1, None, np.int64, False),
    }
    assert expected <= seen, f"layouts not covered: {expected - seen}"


def test_weighted_lists_become_structs_of_value_and_weight(spark):
    """An output with weights (a list of struct{value, weight}, as the
    library's Arrow export lays it out) is array<struct<value, weight>> in
    Spark: uint64 values as bigint bits, weights as float."""
    import pyarrow as pa
    from pyspark.sql import types as T

    ids = pa.array([1, 2**64 - 1, 7], pa.uint64())
    weights = pa.array([0.5, 1.25, -2.0], pa.float32())
    items = pa.StructArray.from_arrays([ids, weights], names=["value", "weight"])
    weighted = pa.LargeListArray.from_arrays(pa.array([0, 2, 2, 3], pa.int64()), items)
    arr = fex.spark.spark_array(weighted)
    schema = T.StructType([T.StructField("w", fex.spark.spark_type_of(arr), False)])
    assert schema["w"].dataType.elementType.fieldNames() == ["value", "weight"]

    def emit(batches):
        for _ in batches:
            yield pa.RecordBatch.from_arrays([arr], names=["w"])

    rows = spark.range(1).coalesce(1).mapInArrow(emit, schema).collect()
    got = [[(x.value, x.weight) for x in r.w] for r in rows]
    assert got == [[(1, 0.5), (-1, 1.25)], [], [(7, -2.0)]]
    # -1 is 2**64 - 1's bits.
    assert np.array([got[0][1][0]], np.int64).view(np.uint64)[0] == 2**64 - 1


def test_read_pbdataset_gives_the_records_fex_reads(spark, tmp_path, batches):
    """PBDataset files (plain; gzip with lagrangex headers) loaded by
    Spark are, record for record, what `fex.read_records` reads, with each
    record's file, index and byte offset; and they feed `extract`."""
    import gzip

    plain, headed = tmp_path / "plain", tmp_path / "headed"
    plain.mkdir()
    headed.mkdir()
    frame = lambda r: struct.pack("<Q", len(r)) + r  # noqa: E731
    (plain / "a.pb").write_bytes(b"".join(frame(b) for b in batches[:3]))
    (plain / "b.pb").write_bytes(b"".join(frame(b) for b in [b"", b"x" * 100, batches[3]]))
    header = struct.pack("<Q", (9 << 8) | 2)
    (headed / "c.pb.gz").write_bytes(gzip.compress(b"".join(header + frame(b) for b in batches)))
    cases = [(plain, {}), (headed, {"lagrangex_header": True})]
    for directory, options in cases:
        df = fex.spark.read_pbdataset(spark, str(directory), **options)
        assert df.columns == ["file", "record_index", "offset", "sample"]
        got = sorted((os.path.basename(r.file), r.record_index, r.offset, bytes(r.sample)) for r in df.collect())
        want = sorted(
            (f.name, index, offset, payload)
            for f in directory.iterdir()
            for payload, index, offset, _, _ in fex.read_records(f, with_meta=True, **options)
        )
        assert len(want) in (6, 4) and got == want
    records = fex.spark.read_pbdataset(spark, str(headed), lagrangex_header=True)
    out = fex.spark.extract(records, config=fex.Plan.default(), format="batch", outputs=["item_id"])
    assert out.count() == 16 * len(batches)


def test_read_pbdataset_fails_on_a_bad_record_saying_where(spark, tmp_path):
    (tmp_path / "cut.pb").write_bytes(struct.pack("<Q", 2) + b"ok" + struct.pack("<Q", 100) + b"short")
    with pytest.raises(Exception, match="record 1 at byte 10"):
        fex.spark.read_pbdataset(spark, str(tmp_path)).collect()
    with pytest.raises(ValueError, match="compression="):
        fex.spark.read_pbdataset(spark, str(tmp_path), compression="lz4")


def test_lists_past_int32_offsets_are_refused_by_name():
    import numpy as np
    import pyarrow as pa

    # Offsets only: 2**31 values cannot be allocated in a test, and the
    # check reads nothing but the offsets.
    offsets = pa.array(np.array([0, 2**31], dtype=np.int64))
    with pytest.raises(ValueError, match="output 'big': 2147483648 values in one Arrow batch overflow"):
        fex.spark._i32_offsets(offsets, "big")
    rebased, start, end = fex.spark._i32_offsets(pa.array(np.array([5, 7, 2**31 + 4], dtype=np.int64)), "ok")
    assert rebased.to_pylist() == [0, 2, 2**31 - 1] and (start, end) == (5, 2**31 + 4)


def _version(text):
    parts = [int(p) for p in text.split(".")[:3] if p.isdigit()]
    return tuple(parts + [0] * (3 - len(parts)))


def test_the_spark_extra_pins_what_pyspark_needs():
    """The package's `spark` extra asks for pyspark's own `sql` extra and a
    pandas at least as new as the installed pyspark requires for its Arrow
    functions (pyspark 4 refuses pandas below 2.2.0 at run time)."""
    import importlib.metadata
    import re

    import tomllib

    with open(os.path.join(ROOT, "python", "pyproject.toml"), "rb") as f:
        extra = tomllib.load(f)["project"]["optional-dependencies"]["spark"]
    assert any(r.startswith("pyspark[sql]") for r in extra), extra
    ours = next(r for r in extra if r.startswith("pandas"))
    theirs = [
        r for r in importlib.metadata.requires("pyspark") or [] if r.startswith("pandas") and 'extra == "sql"' in r
    ]
    assert theirs, "pyspark declares its pandas in its sql extra"
    need = re.search(r">=\s*([0-9.]+)", theirs[0]).group(1)
    have = re.search(r">=\s*([0-9.]+)", ours).group(1)
    assert _version(have) >= _version(need), (ours, theirs)
    import pandas

    assert _version(pandas.__version__) >= _version(need)


def test_a_corrupt_sample_names_its_file_and_record(spark, tmp_path, batches):
    """A record that reads but does not decode fails the job naming the file
    and record it came from (`read_pbdataset`'s columns), as `fex extract`
    names them, not only its row in an Arrow batch."""
    frame = lambda r: struct.pack("<Q", len(r)) + r  # noqa: E731
    (tmp_path / "bad.pb").write_bytes(frame(batches[0]) + frame(b"\xff" * 16))
    records = fex.spark.read_pbdataset(spark, str(tmp_path))
    out = fex.spark.extract(records, config=fex.Plan.default(), format="batch", outputs=["item_id"])
    with pytest.raises(Exception, match=r"bad\.pb: record 1 at byte \d+: ExampleBatch in row 1 .*varint longer"):
        out.collect()


def test_a_sample_column_that_is_not_binary_is_refused_on_the_driver(spark):
    """A string column where serialized samples belong is refused by
    `extract` itself, naming the column and its type, before any job runs."""
    df = spark.createDataFrame([("not bytes",)], "sample string")
    with pytest.raises(ValueError, match=r"column 'sample' is string, not binary"):
        fex.spark.extract(df, config=fex.Plan.default())


def test_a_model_with_offline_transforms_is_refused_unless_its_rows_are_wanted_untransformed(spark, batches):
    """Spark runs no `offline:` transforms, so a model that has them would
    give rows `fex extract` does not write: refused on the driver, naming
    them; `ignore_transforms=True` extracts every record's rows as they are."""
    text = fex.Plan.default().config_text + (
        "\noffline:\n  transforms:\n    - {transform: filter_by_label, label_threshold: [0.5]}\n")
    plan = fex.Plan.from_yaml(text)
    assert plan.offline_transforms == ["filter_by_label"] and fex.Plan.default().offline_transforms == []
    df = spark.createDataFrame([(0, batches[0])], "request int, sample binary")
    with pytest.raises(ValueError, match=r"has offline: transforms \(filter_by_label\), which fex.spark.extract "
                                         r"does not run"):
        fex.spark.extract(df, config=plan, format="batch")
    kept = fex.spark.extract(df, config=plan, format="batch", outputs=["item_id"], ignore_transforms=True)
    plain = fex.spark.extract(df, config=fex.Plan.default(), format="batch", outputs=["item_id"])
    assert kept.collect() == plain.collect() and kept.count() == 16
