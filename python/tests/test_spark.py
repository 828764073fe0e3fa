"""Spark backfill on a real local Spark: generated ExampleBatches and
Examples in a DataFrame, extracted through `fex.spark.extract`, are byte
for byte, tensor by tensor, what fex-server answers over gRPC for the same
samples."""

import struct

import numpy as np
import pytest

import fex
import fex.spark

# Wire dtype numbers (proto/fex/v1/tensor.proto) → numpy.
DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.int64, 5: np.uint64}
RAGGED, DENSE, STRINGS = 2, 1, 3


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


def rows_to_tensor(values, tensor):
    """The wire buffers (values, row_splits) that Spark's rows for one
    request make, in the tensor's own dtypes."""
    if tensor.layout == STRINGS:
        splits = np.cumsum([0] + [len(v) for v in values], dtype=np.int64)
        return b"".join(values), splits.tobytes()
    dtype = DTYPES[tensor.dtype]
    if tensor.layout == DENSE:
        return np.asarray(values, dtype=np.float64 if dtype != np.uint64 else np.int64).astype(dtype).tobytes(), b""
    splits_dtype = DTYPES[tensor.splits_dtype]
    splits = np.cumsum([0] + [len(v) for v in values]).astype(splits_dtype)
    flat = [x for row in values for x in row]
    if len(tensor.shape) == 3:  # a sequence: positions of `width` values
        flat = [x for pos in flat for x in pos]
    if dtype in (np.int64, np.uint64):
        data = struct.pack(f"<{len(flat)}q", *flat)  # Spark's bigint holds the same bits
    else:
        data = np.asarray(flat, dtype=dtype).tobytes()
    return data, splits.tobytes()


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
    """Every tensor of a server reply equals Spark's rows for that request."""
    assert reply.tensors, label
    for t in reply.tensors:
        values, splits = broadcast(t, reply.batch_size)
        got_values, got_splits = rows_to_tensor([getattr(r, t.name) for r in rows], t)
        assert got_values == values, f"{label}: {t.name} values differ"
        assert got_splits == splits, f"{label}: {t.name} row_splits differ"


def by_request(rows, count):
    groups = [[] for _ in range(count)]
    for r in rows:
        groups[r.request].append(r)
    return groups


def test_batches_through_spark_equal_the_server(spark, stub, protos, batches):
    svc = protos["service"]
    df = spark.createDataFrame([(i, b) for i, b in enumerate(batches)], "request int, sample binary")
    out = fex.spark.extract(df, column="sample", config=fex.Plan.default(), format="batch")
    groups = by_request(out.collect(), len(batches))
    for i, b in enumerate(batches):
        reply = stub.Extract(svc.ExtractRequest(model="default", example_batch=b), timeout=30)
        assert len(groups[i]) == reply.batch_size == 16
        check_request(reply, groups[i], f"batch {i}")


def test_examples_through_spark_equal_the_server(spark, stub, protos, batches):
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
