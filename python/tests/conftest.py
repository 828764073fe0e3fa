"""Shared fixtures of the Python package's tests: the embedded default
model, generated samples (`fex-client gen`), a real fex-server called over
gRPC, and one local Spark session for every Spark test.

scripts/test.sh passes the binaries in FEX_SERVER and FEX_CLIENT; tests that
need one skip, saying so, when it is not given (a developer's quick run)."""

import os
import struct
import subprocess
import sys
import tempfile

import pytest

import fex

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The grpcio test's helpers: protos compiled from proto/, server start-up and
# readiness, reused rather than written twice.
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))


def binary(var):
    path = os.environ.get(var)
    if not path:
        pytest.skip(f"{var} is not set (scripts/test.sh sets it to the built binary)")
    return path


def read_framed(path):
    """Records of a framed file: u64 little-endian length, then the bytes."""
    data = open(path, "rb").read()
    records, at = [], 0
    while at < len(data):
        (n,) = struct.unpack_from("<Q", data, at)
        records.append(data[at + 8 : at + 8 + n])
        at += 8 + n
    return records


def string_rows(plan, example, rows, source="title", output="tokens"):
    """Extracts `rows` (bytes), one per row as the bytes_list feature
    `source`, with `plan`, and returns the ragged output's rows as lists."""
    features = [example.Feature(bytes_list=example.BytesList(value=[t])) for t in rows]
    batch = example.ExampleBatch(
        named_feature_list=[example.NamedFeatureList(name=source, feature=features)], batch_size=len(rows)
    )
    out = plan.extract_batch(batch.SerializeToString())[output]
    splits, values = out.row_splits, out.values
    return [values[splits[r] : splits[r + 1]].tolist() for r in range(len(rows))]


def random_texts(rng, n, pieces):
    """`n` random strings of up to 11 of `pieces` as UTF-8 bytes; about one
    in seven has a byte that is not UTF-8 at a random place."""
    out = []
    for _ in range(n):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 12))).encode()
        if rng.random() < 0.15 and text:
            at = rng.randrange(len(text))
            text = text[:at] + bytes([rng.choice([0x80, 0xFF, 0xC3])]) + text[at:]
        out.append(text)
    return out


def tokenizer_titles():
    """The product titles the tests' tokenizers were trained on
    (tests/fixtures/tokenizer/titles.txt)."""
    with open(os.path.join(ROOT, "tests", "fixtures", "tokenizer", "titles.txt"), encoding="utf-8") as f:
        return f.read().splitlines()


@pytest.fixture(scope="session")
def plan():
    return fex.Plan.default()


@pytest.fixture(scope="session")
def request_bytes():
    """The benchmark's ranking request: an ExampleBatch of 256 rows for
    the default model."""
    with open(os.path.join(ROOT, "benches", "data", "default_b256.pb"), "rb") as f:
        return f.read()


@pytest.fixture(scope="session")
def protos():
    import test_grpcio

    with tempfile.TemporaryDirectory() as out:
        test_grpcio.compile_protos(out)
        # The generated fex.v1 modules live under the proto package `fex`,
        # which is also this package's name: let it find them.
        fex.__path__.append(os.path.join(out, "fex"))
        from fex.v1 import service_pb2, service_pb2_grpc
        from monolith import example_pb2

        yield {"service": service_pb2, "grpc": service_pb2_grpc, "example": example_pb2}


@pytest.fixture(scope="session")
def batches():
    """ExampleBatches for the default model, with lists it does not read."""
    client = binary("FEX_CLIENT")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "gen.pb")
        args = ["gen", "--count", "4", "--batch-size", "16", "--noise-lists", "3", "--seed", "7", "--out", out]
        subprocess.run([client, *args], check=True, capture_output=True)
        return read_framed(out)


@pytest.fixture(scope="session")
def stub(protos):
    import grpc
    import test_grpcio

    proc, addr = test_grpcio.start_server(binary("FEX_SERVER"))
    try:
        channel = grpc.insecure_channel(addr)
        test_grpcio.wait_serving(channel)
        yield protos["grpc"].FeatureExtractorStub(channel)
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    # Executors' Python must be this one (it has fex and pyarrow).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("fex-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    # Iceberg's Spark runtime and the catalogs' JDBC drivers
    # (scripts/spark/pom.xml; scripts/test.sh fetches them), for the tests
    # of fex.spark's Iceberg tables.
    jars = os.environ.get("FEX_SPARK_JARS")
    if jars:
        builder = builder.config("spark.jars", jars).config(
            "spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
        )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
