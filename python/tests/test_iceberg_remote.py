"""fex's Iceberg writers against a REST catalog and an object store, as a
deployment shares them: Iceberg's own reference REST server
(scripts/iceberg_rest.py: RESTCatalogAdapter and RESTCatalogServlet over a
JDBC catalog, Iceberg's S3FileIO) and an S3 server (scripts/object_store.py:
moto's, on 127.0.0.1), both started and stopped here.

- `fex table create` and `fex extract --format iceberg` through the REST
  catalog into an s3:// warehouse, read back by pyiceberg's REST catalog:
  the rows `fex extract` writes to Parquet, every data file on the store;
- the Python package writing and reading the same table;
- a SQL catalog (SQLite) whose warehouse is on the object store, and `fex
  backfill` reading a joined-request table there and writing its sidecar
  there, no data file of the sample table rewritten;
- Spark (fex.spark, Iceberg's Spark runtime) reading and appending to the
  REST catalog's table on the store, and to a table whose SQL catalog is
  in a real PostgreSQL;
- three runs committing through the REST catalog at once, all landing;
- bad configurations: an object-store warehouse with no catalog, a REST
  catalog that cannot be reached, a property that is not KEY=VALUE, a
  bucket that does not exist.

scripts/test.sh writes the REST server's classpath (Maven) and sets
FEX_REQUIRE_REMOTE_ICEBERG: without it a missing classpath or moto skips."""

import os
import subprocess
import sys
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import ROOT, binary
# The same generated requests and row comparison as test_iceberg.py.
from test_iceberg import requests, rows  # noqa: F401

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import iceberg_rest  # noqa: E402
import object_store  # noqa: E402
import postgres_server  # noqa: E402

DEFAULT_MODEL = os.path.join(ROOT, "models", "default.yaml")


def _unavailable(reason):
    if os.environ.get("FEX_REQUIRE_REMOTE_ICEBERG"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def s3():
    try:
        import moto  # noqa: F401
    except ImportError:
        _unavailable("moto is not installed (python/tests/requirements.txt)")
    with object_store.running() as store:
        yield store


def s3_properties(s3):
    return object_store.properties(s3)


def pyiceberg_properties(s3):
    return object_store.properties(s3, pyiceberg=True)


def flags(properties):
    return [arg for k, v in properties.items() for arg in ("--catalog-property", f"{k}={v}")]


# A PostgreSQL server of Debian's package on 127.0.0.1, for a shared SQL catalog.
postgres = pytest.fixture(scope="module", name="postgres")(postgres_server.fixture)


@pytest.fixture(scope="module")
def rest(s3):
    """The REST catalog's URI; its tables under s3://<bucket>/rest."""
    try:
        iceberg_rest.classpath()
    except iceberg_rest.Missing as e:
        _unavailable(str(e))
    with iceberg_rest.running_on(s3) as uri:
        yield uri


def fex_cli(*args, check=True, timeout=300):
    p = subprocess.run([binary("FEX_CLI"), *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def plain_rows(requests, tmp_path):
    fex_cli("extract", "--model", DEFAULT_MODEL, "-o", str(tmp_path / "plain.parquet"), requests)
    plain = pq.read_table(tmp_path / "plain.parquet")
    unsigned = {f.name for f in plain.schema if "uint64" in str(f.type)}
    return plain, unsigned


def test_fex_writes_through_a_rest_catalog_onto_an_object_store(s3, rest, requests, tmp_path):
    import fex
    import fex.iceberg
    from pyiceberg.catalog.rest import RestCatalog

    warehouse = f"s3://{s3['bucket']}/rest"
    props = s3_properties(s3)
    where = ["-o", warehouse, "--catalog", rest, *flags(props)]
    p = fex_cli("table", "create", "--model", DEFAULT_MODEL, *where, "--partition-by", "hour")
    assert p.stdout.startswith(f"table fex.default_samples in {rest} (REST): 25 columns"), p.stdout
    assert f"at {warehouse}/fex/default_samples" in p.stdout, p.stdout
    for _ in range(2):
        done = fex_cli("extract", "--model", DEFAULT_MODEL, "--format", "iceberg", *where, requests)
        assert "committed 480 rows" in done.stderr, done.stderr

    catalog = RestCatalog("fex", uri=rest, **pyiceberg_properties(s3))
    table = catalog.load_table("fex.default_samples")
    assert len(table.snapshots()) == 2 and "hour(3)" in str(table.spec())
    assert table.current_snapshot().summary["fex.model"] == "default"
    paths = [t.file.file_path for t in table.scan().plan_files()]
    assert paths and all(p.startswith(f"{warehouse}/fex/default_samples/data/request_hour=") for p in paths), paths
    got = table.scan().to_arrow()
    plain, unsigned = plain_rows(requests, tmp_path)
    assert got.column_names == ["request_id", "row", "request_time", *plain.column_names]
    expected = Counter(rows(plain, plain.column_names, unsigned))
    assert Counter(rows(got, plain.column_names, unsigned)) == Counter({k: 2 * n for k, n in expected.items()})

    # The package writes into the same table, and reads it back, through
    # pyiceberg's REST catalog.
    plan = fex.Plan.from_yaml(DEFAULT_MODEL)
    fex.iceberg.write(warehouse, "fex.default_samples", plan, fex.run(plan, requests, identity=True),
                      catalog_uri=rest, properties=pyiceberg_properties(s3))
    read = fex.iceberg.read(warehouse, "fex.default_samples", catalog_uri=rest, properties=pyiceberg_properties(s3))
    assert read.num_rows == 3 * 480
    assert Counter(rows(read, plain.column_names, unsigned)) == Counter({k: 3 * n for k, n in expected.items()})


def test_runs_committing_through_the_rest_catalog_at_once_all_land(s3, rest, requests):
    """Three `fex extract` runs into one table of the REST catalog at once:
    a commit made on metadata another run has moved on is refused by the
    server and retried on the new one, so every run's rows are there once."""
    from pyiceberg.catalog.rest import RestCatalog

    warehouse, table = f"s3://{s3['bucket']}/rest", "fex.racing"
    where = ["-o", warehouse, "--catalog", rest, *flags(s3_properties(s3)), "--table", table]
    fex_cli("table", "create", "--model", DEFAULT_MODEL, *where)
    cmd = [binary("FEX_CLI"), "extract", "--model", DEFAULT_MODEL, "--format", "iceberg", *where, requests]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0 and "committed 480 rows" in err, err
    landed = RestCatalog("fex", uri=rest, **pyiceberg_properties(s3)).load_table(table)
    assert len(landed.snapshots()) == 3 and landed.scan().to_arrow().num_rows == 3 * 480
    # A REST catalog's warehouse may be a name its server knows (Polaris and
    # others name their catalogs so; this server takes any): no directory
    # is made for it, and the files go where the server's table is.
    named = ["-o", "training", "--catalog", rest, *flags(s3_properties(s3)), "--table", table]
    fex_cli("extract", "--model", DEFAULT_MODEL, "--format", "iceberg", *named, requests)
    assert not os.path.exists("training")
    landed = RestCatalog("fex", uri=rest, **pyiceberg_properties(s3)).load_table(table)
    assert len(landed.snapshots()) == 4
    assert all(t.file.file_path.startswith(f"{warehouse}/fex/racing/") for t in landed.scan().plan_files())


def framed_records(path):
    """Each record of a PBDataset file as the bytes it has there, framing
    included (what a joined-request row's `joined` column holds)."""
    import fex

    data = open(path, "rb").read()
    offsets = [meta[2] for meta in fex.read_records(path, with_meta=True)]
    return [data[a:b] for a, b in zip(offsets, offsets[1:] + [len(data)])]


def test_a_sql_catalog_keeps_its_tables_on_the_object_store_and_a_backfill_reads_and_writes_there(s3, requests, tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = f"s3://{s3['bucket']}/sql"
    props = s3_properties(s3)
    db = tmp_path / "catalog.db"
    where = ["-o", warehouse, "--catalog", f"sqlite:{db}?mode=rwc", *flags(props)]
    fex_cli("extract", "--model", DEFAULT_MODEL, "--format", "iceberg", *where, requests)
    fex_cli("table", "create", "--model", DEFAULT_MODEL, *where, "--shitu-table", "fex.default_shitu")
    assert sorted(os.listdir(tmp_path)) == ["catalog.db"], "nothing but the catalog is local"

    catalog = SqlCatalog("fex", uri=f"sqlite:///{db}", warehouse=warehouse, **pyiceberg_properties(s3))
    samples = catalog.load_table("fex.default_samples")
    assert samples.scan().to_arrow().num_rows == 480
    base_files = sorted(t.file.file_path for t in samples.scan().plan_files())
    assert base_files and all(p.startswith(f"{warehouse}/fex/default_samples/") for p in base_files)

    # The joined-request table as the near-line job fills it: one row per
    # request, its records' bytes in `joined`.
    records = framed_records(requests)
    shitu = catalog.load_table("fex.default_shitu")
    required = {f.name for f in shitu.schema().fields if f.required}
    schema = pa.schema([pa.field(f.name, f.type, nullable=f.name not in required) for f in shitu.schema().as_arrow()])
    n = len(records)
    t0 = 1_700_000_000_000_000
    shitu.append(pa.table({
        "request_id": [f"r{i}" for i in range(n)], "user_id": ["u"] * n,
        "request_time": pa.array([t0 + i for i in range(n)], pa.timestamp("us", "UTC")),
        "emitted_at": pa.array([t0 + i for i in range(n)], pa.timestamp("us", "UTC")),
        "rule": ["window"] * n, "payload": ["example_batch"] * n, "rows": [12] * n, "late_request": [False] * n,
        "actions": ["[]"] * n, "joined": records,
    }, schema=schema))

    new_model = tmp_path / "new.yaml"
    text = open(DEFAULT_MODEL).read()
    line = "  - {name: item_tags, kind: sparse}\n"
    assert line in text
    new_model.write_text(text.replace(line, line + "  - {name: item_tags_again, kind: sparse, source: item_tags}\n", 1))
    p = fex_cli("backfill", "--model", str(new_model), *where, "--shitu", "fex.default_shitu",
                "--base", "fex.default_samples", "--into", "fex.default_v2")
    assert f"backfilled item_tags_again (1 new output(s)) for {n} requests, 480 rows" in p.stderr, p.stderr
    side = catalog.load_table("fex.default_v2")
    assert all(t.file.file_path.startswith(f"{warehouse}/fex/default_v2/") for t in side.scan().plan_files())
    got = side.scan().to_arrow()
    assert got.column_names == ["request_id", "row", "request_time", "item_tags_again"]
    plain, _ = plain_rows(requests, tmp_path)
    by_key = {(r["request_id"], r["row"]): r["item_tags_again"] for r in got.to_pylist()}
    expected = plain.column("item_tags").to_pylist()
    assert [by_key[(f"r{i // 12}", i % 12)] for i in range(480)] == expected
    assert sorted(t.file.file_path for t in catalog.load_table("fex.default_samples").scan().plan_files()) == base_files


def test_bad_remote_configurations_are_named_before_anything_is_written(s3, requests, tmp_path):
    extract = ["extract", "--model", DEFAULT_MODEL, "--format", "iceberg", requests]
    # An object store has no embedded catalog.
    p = fex_cli(*extract, "-o", f"s3://{s3['bucket']}/none", check=False)
    assert p.returncode == 64, p.stderr
    assert f"the warehouse s3://{s3['bucket']}/none is not a local directory, so it has no embedded catalog" in p.stderr
    # A REST catalog nobody serves.
    p = fex_cli(*extract, "-o", str(tmp_path / "w"), "--catalog", "http://127.0.0.1:9", check=False, timeout=120)
    assert p.returncode == 1, p.stderr
    assert "error: the catalog http://127.0.0.1:9 (REST):" in p.stderr and "Connection refused" in p.stderr, p.stderr
    assert not os.path.exists(tmp_path / "w" / "fex")
    # A property without its value.
    p = fex_cli(*extract, "-o", str(tmp_path / "w"), "--catalog-property", "s3.endpoint", check=False)
    assert p.returncode == 64 and '--catalog-property "s3.endpoint": give a catalog property as KEY=VALUE' in p.stderr
    # A bucket that does not exist: the table cannot be made, nothing is committed.
    db = tmp_path / "catalog.db"
    p = fex_cli(*extract, "-o", "s3://no-such-bucket/w", "--catalog", f"sqlite:{db}?mode=rwc",
                *flags(s3_properties(s3)), check=False)
    assert p.returncode == 1, p.stderr
    assert "no-such-bucket" in p.stderr and "NoSuchBucket" in p.stderr, p.stderr


def spark_session(spark):
    """A session of the tests' Spark of its own: a session keeps the one
    `fex` catalog it opened (test_iceberg.py's is on a local warehouse)."""
    if not os.environ.get("FEX_SPARK_JARS"):
        _unavailable("FEX_SPARK_JARS is not set (scripts/test.sh fetches Iceberg's Spark runtime and sets it)")
    return spark.newSession()


def test_spark_reads_and_writes_the_rest_catalogs_table_on_the_object_store(spark, s3, rest, requests):
    """fex.spark on the REST catalog and S3: Spark SQL reads what `fex
    extract` wrote there, and Iceberg's Spark writer appends to it through
    the same catalog, files on the store."""
    import fex
    import fex.spark
    from pyiceberg.catalog.rest import RestCatalog

    session = spark_session(spark)
    warehouse, table = f"s3://{s3['bucket']}/rest", "fex.spark_remote"
    props = s3_properties(s3)
    fex_cli("extract", "--model", DEFAULT_MODEL, "--format", "iceberg", "-o", warehouse, "--catalog", rest,
            *flags(props), "--table", table, requests)
    fex.spark.iceberg_catalog(session, warehouse, rest, props)
    by_sql = session.sql(f"SELECT request_id, row, item_id FROM fex.{table}").toArrow()
    catalog = RestCatalog("fex", uri=rest, **pyiceberg_properties(s3))
    by_fex = catalog.load_table(table).scan().to_arrow()
    key = lambda t: Counter(rows(t, ["request_id", "row", "item_id"]))  # noqa: E731
    assert key(by_sql) == key(by_fex) and by_sql.num_rows == 480

    plan = fex.Plan.from_yaml(DEFAULT_MODEL)
    samples = fex.spark.extract(fex.spark.read_pbdataset(session, requests), config=plan, format="batch", keep=[],
                                identity=True)
    fex.spark.write_iceberg(samples, table, plan)
    written = catalog.load_table(table)
    assert [s.summary.additional_properties.get("engine-name", "fex") for s in written.snapshots()] == ["fex", "spark"]
    assert all(t.file.file_path.startswith(f"{warehouse}/fex/spark_remote/") for t in written.scan().plan_files())
    assert key(written.scan().to_arrow()) == Counter({k: 2 * n for k, n in key(by_fex).items()})


def test_spark_on_a_postgresql_catalog(spark, postgres, requests, tmp_path):
    """fex.spark on a SQL catalog in a real PostgreSQL (Iceberg's JDBC
    catalog through PostgreSQL's driver): what `fex extract` committed
    there is read, and Spark's append is what pyiceberg then reads."""
    import fex
    import fex.spark
    from pyiceberg.catalog.sql import SqlCatalog

    session = spark_session(spark)
    warehouse = tmp_path / "w"
    fex_cli("extract", "--model", DEFAULT_MODEL, "--format", "iceberg", "-o", str(warehouse),
            "--catalog", f"postgresql://{postgres}", requests)
    fex.spark.iceberg_catalog(session, str(warehouse), f"postgresql://{postgres}")
    assert session.sql("SELECT count(*) AS n FROM fex.fex.default_samples").collect()[0]["n"] == 480
    plan = fex.Plan.from_yaml(DEFAULT_MODEL)
    samples = fex.spark.extract(fex.spark.read_pbdataset(session, requests), config=plan, format="batch",
                                keep=[], identity=True)
    fex.spark.write_iceberg(samples, "fex.default_samples", plan)
    catalog = SqlCatalog("fex", uri=f"postgresql+psycopg2://{postgres}", warehouse=f"file://{warehouse}")
    table = catalog.load_table("fex.default_samples")
    assert len(table.snapshots()) == 2 and table.scan().to_arrow().num_rows == 960


def test_a_rest_catalog_over_https_is_trusted_by_its_ca(requests, tmp_path, monkeypatch):
    """The REST catalog served over HTTPS (a CA and a certificate for
    127.0.0.1 made here): `fex extract` trusts it through SSL_CERT_FILE
    (rustls with the system's roots), and refuses it, naming the catalog,
    without that CA."""
    from pyiceberg.catalog.rest import RestCatalog

    try:
        iceberg_rest.classpath()
    except iceberg_rest.Missing as e:
        _unavailable(str(e))
    ca, keystore, password = iceberg_rest.self_signed(tmp_path)
    warehouse = tmp_path / "w"
    with iceberg_rest.running(str(warehouse), tls=(keystore, password)) as rest:
        assert rest.startswith("https://127.0.0.1:")
        cmd = [binary("FEX_CLI"), "extract", "--model", DEFAULT_MODEL, "--format", "iceberg", "-o", str(warehouse),
               "--catalog", rest, requests]
        env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        assert p.returncode == 1, p.stderr
        assert f"error: the catalog {rest} (REST):" in p.stderr and "invalid peer certificate" in p.stderr, p.stderr
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=dict(env, SSL_CERT_FILE=ca))
        assert p.returncode == 0, p.stderr
        assert "committed 480 rows" in p.stderr, p.stderr
        # (requests prefers REQUESTS_CA_BUNDLE, where set, to the session's own CA.)
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", ca)
        table = RestCatalog("fex", uri=rest, ssl={"cabundle": ca}).load_table("fex.default_samples")
        assert table.scan().to_arrow().num_rows == 480
