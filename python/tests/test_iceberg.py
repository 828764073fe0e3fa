"""`fex extract --format iceberg` read back by pyiceberg (Apache Iceberg's
own Python implementation, its SQL catalog on the warehouse's SQLite file):
the table's rows are the rows `fex extract` writes to Parquet, each with
its request id, row index and request time; a second run appends a second
snapshot; a model whose outputs do not match the table is refused before
any file is written; an unreachable catalog is named; runs committing to
one table at once all land; a run killed before its commit leaves no row
visible.

scripts/test.sh passes FEX_CLI (the `fex` binary) and FEX_CLIENT (for
`fex-client gen`)."""

import datetime
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pyarrow.parquet as pq
import pytest

from conftest import ROOT, binary

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import postgres_server  # noqa: E402

DEFAULT_MODEL = os.path.join(ROOT, "models", "default.yaml")
U64 = 1 << 64


@pytest.fixture(scope="module")
def requests(tmp_path_factory):
    out = tmp_path_factory.mktemp("iceberg") / "requests.pb"
    args = ["gen", "--model-config", DEFAULT_MODEL, "--count", "40", "--batch-size", "12", "--seed", "11", "--out", str(out)]
    subprocess.run([binary("FEX_CLIENT"), *args], check=True, capture_output=True)
    return str(out)


def extract(*args, model=DEFAULT_MODEL, check=True):
    p = subprocess.run([binary("FEX_CLI"), "extract", "--model", model, *args], capture_output=True, text=True, timeout=300)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def catalog(warehouse):
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("fex", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")


def data_files(warehouse):
    return sorted(os.path.join(d, f) for d, _, files in os.walk(warehouse) for f in files if f.endswith(".parquet"))


def rows(table, columns, unsigned=()):
    """The rows of a pyarrow table as hashable tuples (lists as tuples;
    `unsigned` columns' longs read back as the u64 fex wrote)."""
    data = table.select(columns).to_pylist()

    def value(name, v):
        if isinstance(v, list):
            return tuple(value(name, x) for x in v)
        if name in unsigned and isinstance(v, int):
            return v % U64
        return v

    return [tuple(value(c, r[c]) for c in columns) for r in data]


def test_the_table_holds_the_rows_fex_extract_writes_with_their_identity(requests, tmp_path):
    warehouse = tmp_path / "warehouse"
    done = extract("--format", "iceberg", "-o", str(warehouse), requests)
    assert "committed 480 rows" in done.stderr and "to fex.default_samples" in done.stderr, done.stderr
    extract("-o", str(tmp_path / "plain.parquet"), requests)
    plain = pq.read_table(tmp_path / "plain.parquet")

    table = catalog(warehouse).load_table("fex.default_samples")
    got = table.scan().to_arrow()
    assert got.column_names[:3] == ["request_id", "row", "request_time"]
    assert got.column_names[3:] == plain.column_names
    assert str(table.spec()).strip() == "[\n  1000: request_day: day(3)\n]"
    summary = table.current_snapshot().summary
    assert (summary["fex.model"], summary["fex.model_version"]) == ("default", "1")
    assert summary["added-records"] == "480"

    # The same rows (as multisets: the table's files are per day).
    unsigned = {f.name for f in plain.schema if "uint64" in str(f.type)}
    assert Counter(rows(got, plain.column_names, unsigned)) == Counter(rows(plain, plain.column_names, unsigned))

    # Each record's rows are 0..11, each row's request id is its LineId's
    # (fex-client gen gives every row a LineId of its own), and its time
    # is the LineId's req_time.
    identity = got.select(["request_id", "row", "request_time", "req_time"]).to_pylist()
    assert Counter(r["row"] for r in identity) == {i: 40 for i in range(12)}
    assert len({(r["request_id"], r["row"]) for r in identity}) == 480
    for r in identity:
        assert r["request_id"].startswith("req-")
        assert int(r["request_time"].timestamp()) == r["req_time"][0]


def test_the_packages_reader_gives_the_rows_as_arrays_and_tensors(requests, tmp_path):
    """fex.iceberg.read and to_torch over a table `fex extract` wrote: the
    values Parquet has, as flat tensors and row splits."""
    import numpy as np

    import fex.iceberg

    warehouse = tmp_path / "w"
    extract("--format", "iceberg", "-o", str(warehouse), "--partition-by", "none", requests)
    extract("-o", str(tmp_path / "plain.parquet"), requests)
    plain = pq.read_table(tmp_path / "plain.parquet")
    table = fex.iceberg.read(str(warehouse), "fex.default_samples", columns=["item_tags", "item_ctr_7d", "item_title"])
    assert table.column_names == ["request_id", "row", "request_time", "item_tags", "item_ctr_7d", "item_title"]
    assert table.num_rows == plain.num_rows == 480
    tensors = fex.iceberg.to_torch(table.to_batches()[0])
    rows = table.to_batches()[0].num_rows
    tags = plain.column("item_tags").to_pylist()[:rows]
    assert tensors["item_tags"].values.numpy().view(np.uint64).tolist() == [t for row in tags for t in row]
    assert tensors["item_tags"].row_splits.tolist() == np.cumsum([0] + [len(t) for t in tags]).tolist()
    ctr = plain.column("item_ctr_7d").to_pylist()[:rows]
    assert tensors["item_ctr_7d"].values.tolist() == [v for row in ctr for v in row]
    titles = plain.column("item_title").to_pylist()[:rows]
    assert bytes(tensors["item_title"].values.numpy()) == b"".join(titles)
    assert tensors["row"].tolist() == list(range(12)) * (rows // 12)


def test_a_second_run_appends_a_snapshot_and_a_mismatched_model_is_refused_before_writing(requests, tmp_path):
    warehouse = tmp_path / "warehouse"
    extract("--format", "iceberg", "-o", str(warehouse), "--table", "ranking.samples", "--partition-by", "hour", requests)
    extract("--format", "iceberg", "-o", str(warehouse), "--table", "ranking.samples", requests)
    table = catalog(warehouse).load_table("ranking.samples")
    assert len(table.snapshots()) == 2
    assert table.scan().to_arrow().num_rows == 960
    assert "hour(3)" in str(table.spec())
    before = data_files(warehouse)

    # The model with an output renamed and one dropped.
    text = open(DEFAULT_MODEL).read()
    assert "name: item_ctr_7d" in text
    model = tmp_path / "changed.yaml"
    model.write_text(text.replace("name: item_ctr_7d", "name: item_ctr_30d"))
    p = extract("--format", "iceberg", "-o", str(warehouse), "--table", "ranking.samples", requests, model=str(model), check=False)
    assert p.returncode == 64, p.stderr
    assert "table ranking.samples does not match the model" in p.stderr
    assert 'column "item_ctr_30d" (list<float>) is not in the table' in p.stderr
    assert 'the table requires column "item_ctr_7d"' in p.stderr
    assert data_files(warehouse) == before
    assert len(catalog(warehouse).load_table("ranking.samples").snapshots()) == 2


def test_fex_table_create_makes_the_table_or_checks_it(requests, tmp_path):
    """`fex table create`: the table `extract --format iceberg` would
    create, with no snapshot; again, a check that passes; for another
    model, a refusal naming the columns (exit 64)."""
    warehouse = tmp_path / "w"
    create = lambda *args: subprocess.run(  # noqa: E731
        [binary("FEX_CLI"), "table", "create", "-o", str(warehouse), *args], capture_output=True, text=True, timeout=120)
    p = create("--model", DEFAULT_MODEL, "--partition-by", "hour")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"table fex.default_samples in {warehouse}/catalog.db (SQLite): 25 columns"), p.stdout
    assert "partitioned by request_hour (hour), 0 snapshot(s)" in p.stdout, p.stdout
    table = catalog(warehouse).load_table("fex.default_samples")
    assert table.snapshots() == [] and "hour(3)" in str(table.spec())
    assert create("--model", DEFAULT_MODEL).returncode == 0
    # What extract writes goes into it as it is.
    extract("--format", "iceberg", "-o", str(warehouse), requests)
    table = catalog(warehouse).load_table("fex.default_samples")
    assert len(table.snapshots()) == 1 and table.scan().to_arrow().num_rows == 480
    other = os.path.join(ROOT, "tests", "nearline", "model.yaml")
    p = create("--model", other, "--table", "fex.default_samples")
    assert p.returncode == 64, p.stderr
    assert "table fex.default_samples does not match the model" in p.stderr and '"user_fids"' in p.stderr, p.stderr


def test_an_unreachable_catalog_is_named_and_its_password_is_not(requests, tmp_path):
    p = extract("--format", "iceberg", "-o", str(tmp_path / "w"), "--catalog", "postgresql://fex:secret@127.0.0.1:9/tables",
                requests, check=False)
    assert p.returncode == 1, p.stderr
    assert "the catalog postgresql://…@127.0.0.1:9/tables" in p.stderr, p.stderr
    assert "secret" not in p.stderr
    assert data_files(tmp_path / "w") == []


def test_iceberg_is_for_pbdataset_input_and_table_flags_for_iceberg(requests, tmp_path):
    p = extract("--format", "parquet", "-o", str(tmp_path / "x.parquet"), "--table", "a.b", requests, check=False)
    assert p.returncode == 64 and "--table, --catalog and --catalog-property are for --format iceberg" in p.stderr
    libsvm = tmp_path / "a.libsvm"
    libsvm.write_text("1 1:0.5\n")
    p = subprocess.run([binary("FEX_CLI"), "extract", "--input-format", "libsvm", "--format", "iceberg", "-o", str(tmp_path / "w"),
                        str(libsvm)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 64 and "text input writes parquet or arrow" in p.stderr


def test_two_runs_committing_to_one_table_at_once_both_land(requests, tmp_path):
    warehouse = tmp_path / "warehouse"
    cmd = [binary("FEX_CLI"), "extract", "--model", DEFAULT_MODEL, "--format", "iceberg", "-o", str(warehouse), requests]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    table = catalog(warehouse).load_table("fex.default_samples")
    assert len(table.snapshots()) == 3
    assert table.scan().to_arrow().num_rows == 3 * 480


def test_a_run_killed_before_its_commit_leaves_no_rows_visible(tmp_path):
    big = tmp_path / "big.pb"
    args = ["gen", "--model-config", DEFAULT_MODEL, "--count", "600", "--batch-size", "256", "--seed", "5", "--out", str(big)]
    subprocess.run([binary("FEX_CLIENT"), *args], check=True, capture_output=True)
    warehouse = tmp_path / "warehouse"
    cmd = [binary("FEX_CLI"), "extract", "-q", "--model", DEFAULT_MODEL, "--format", "iceberg", "--threads", "1",
           "--row-group-size", "1024", "-o", str(warehouse), str(big)]
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not data_files(warehouse) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert p.poll() is None, "the run ended before a data file was seen: make the input larger"
        assert data_files(warehouse), "no data file within 120 s"
        p.send_signal(signal.SIGKILL)
    finally:
        p.kill()
        p.wait(timeout=30)
    table = catalog(warehouse).load_table("fex.default_samples")
    assert table.current_snapshot() is None
    assert table.scan().to_arrow().num_rows == 0
    orphans = data_files(warehouse)
    assert orphans
    # The next run commits its own rows only.
    small = tmp_path / "small.pb"
    subprocess.run([binary("FEX_CLIENT"), "gen", "--model-config", DEFAULT_MODEL, "--count", "3", "--batch-size", "4",
                    "--out", str(small)], check=True, capture_output=True)
    extract("--format", "iceberg", "-o", str(warehouse), str(small))
    table = catalog(warehouse).load_table("fex.default_samples")
    assert table.scan().to_arrow().num_rows == 12
    assert not {os.path.basename(t.file.file_path) for t in table.scan().plan_files()} & {os.path.basename(o) for o in orphans}


def test_rows_of_one_request_share_its_identity(tmp_path):
    reqs = tmp_path / "requests.pb"
    args = ["gen", "--model-config", DEFAULT_MODEL, "--count", "30", "--batch-size", "8", "--per-request-identity",
            "--out", str(reqs)]
    subprocess.run([binary("FEX_CLIENT"), *args], check=True, capture_output=True)
    warehouse = tmp_path / "warehouse"
    extract("--format", "iceberg", "-o", str(warehouse), str(reqs))
    got = catalog(warehouse).load_table("fex.default_samples").scan().to_arrow()
    by_request = {}
    for r in got.select(["request_id", "row", "request_time"]).to_pylist():
        by_request.setdefault(r["request_id"], []).append(r)
    assert len(by_request) == 30
    for rows_of in by_request.values():
        assert sorted(r["row"] for r in rows_of) == list(range(8))
        assert len({r["request_time"] for r in rows_of}) == 1


def test_fex_run_writes_the_table_fex_extract_writes_and_replaces_a_day_atomically(requests, tmp_path):
    """fex.run(identity=True) + fex.iceberg.write: the rows and identities
    `fex extract --format iceberg` commits, into a table of the same schema
    whoever created it; appended to the command's table; a day replaced by
    other rows in one commit that leaves every other day's files alone; rows
    outside the range and a mismatched model refused before writing."""
    import pyarrow as pa
    import pyarrow.compute as pc

    import fex
    import fex.iceberg

    plan = fex.Plan.from_yaml(DEFAULT_MODEL)
    by_cli, by_python = tmp_path / "cli", tmp_path / "python"
    extract("--format", "iceberg", "-o", str(by_cli), requests)
    result = fex.run(plan, requests, identity=True)
    keyed = result.to_arrow()
    assert keyed.column_names[:3] == ["request_id", "row", "request_time"]
    assert keyed.schema.metadata[b"fex.model"] == b"default"

    snapshot = fex.iceberg.write(str(by_python), "fex.default_samples", plan, result)
    cli_table = catalog(by_cli).load_table("fex.default_samples")
    py_table = catalog(by_python).load_table("fex.default_samples")
    assert py_table.current_snapshot().snapshot_id == snapshot
    # One schema whoever created the table: names, types, required, partitioning.
    shape = lambda t: [(f.name, fex.iceberg._type_name(f.field_type), f.required) for f in t.schema().fields]  # noqa: E731
    assert shape(py_table) == shape(cli_table)
    assert [(f.name, str(f.transform)) for f in py_table.spec().fields] == [("request_day", "day")]
    assert py_table.properties["write.parquet.compression-codec"] == "zstd"
    summary = py_table.current_snapshot().summary
    assert (summary["fex.model"], summary["fex.model_version"]) == ("default", "1")
    columns = cli_table.scan().to_arrow().column_names
    unsigned = {f.name for f in keyed.schema if "uint64" in str(f.type)}

    def multiset(t):
        return Counter(rows(t, columns, unsigned))

    assert multiset(py_table.scan().to_arrow()) == multiset(cli_table.scan().to_arrow())

    # Appended to the table the command made: both runs' rows, one schema.
    fex.iceberg.write(str(by_cli), "fex.default_samples", plan, keyed)
    cli_table = catalog(by_cli).load_table("fex.default_samples")
    assert len(cli_table.snapshots()) == 2 and cli_table.scan().to_arrow().num_rows == 960

    # A day rebuilt from other input (another seed) replaces that day's rows.
    table = py_table.scan().to_arrow()
    day = min(table.column("request_time").to_pylist()).date().isoformat()
    since = pa.scalar(fex.iceberg._micros(day), pa.timestamp("us", "UTC"))
    until = pa.scalar(fex.iceberg._micros(day) + 86_400_000_000, pa.timestamp("us", "UTC"))
    in_day = lambda t: pc.and_(pc.greater_equal(t["request_time"], since), pc.less(t["request_time"], until))  # noqa: E731
    other = tmp_path / "other.pb"
    gen = ["gen", "--model-config", DEFAULT_MODEL, "--count", "30", "--batch-size", "12", "--seed", "12", "--out", str(other)]
    subprocess.run([binary("FEX_CLIENT"), *gen], check=True, capture_output=True)
    rebuilt = fex.run(plan, str(other), identity=True).to_arrow()
    outside = rebuilt.filter(pc.invert(in_day(rebuilt)))
    rebuilt = rebuilt.filter(in_day(rebuilt))
    assert rebuilt.num_rows > 0 and outside.num_rows > 0
    other_days = {p for p in data_files(by_python) if f"request_day={day}" not in p}
    assert other_days
    metadata_before = len(catalog(by_python).load_table("fex.default_samples").metadata.metadata_log)

    # Rows outside the range: refused, nothing written.
    span = (day, (datetime.date.fromisoformat(day) + datetime.timedelta(days=1)).isoformat())
    with pytest.raises(ValueError, match=rf"{outside.num_rows} of {outside.num_rows} rows have a request_time outside"):
        fex.iceberg.write(str(by_python), "fex.default_samples", plan, outside, overwrite=span)
    assert catalog(by_python).load_table("fex.default_samples").current_snapshot().snapshot_id == snapshot

    fex.iceberg.write(str(by_python), "fex.default_samples", plan, rebuilt, overwrite=span)
    after = catalog(by_python).load_table("fex.default_samples")
    # One commit (one new metadata file) holds the delete and the append.
    assert len(after.metadata.metadata_log) == metadata_before + 1
    got = after.scan().to_arrow()
    assert multiset(got.filter(in_day(got))) == multiset(rebuilt)
    kept = table.filter(pc.invert(in_day(table)))
    assert multiset(got.filter(pc.invert(in_day(got)))) == multiset(kept)
    live = {t.file.file_path.removeprefix("file://") for t in after.scan().plan_files()}
    assert other_days <= live, "another day's files were rewritten"

    # A model whose outputs do not fit is refused, every column named.
    text = open(DEFAULT_MODEL).read().replace("name: item_ctr_7d", "name: item_ctr_30d")
    changed = fex.Plan.from_yaml(text)
    with pytest.raises(ValueError) as refused:
        fex.iceberg.write(str(by_python), "fex.default_samples", changed, fex.run(changed, requests, identity=True))
    assert 'column "item_ctr_30d" (list<float>) is not in the table' in str(refused.value)
    assert 'the table requires column "item_ctr_7d"' in str(refused.value)
    assert catalog(by_python).load_table("fex.default_samples").current_snapshot().snapshot_id == after.current_snapshot().snapshot_id
    with pytest.raises(ValueError, match="identity=True"):
        fex.run(plan, requests, str(tmp_path / "x.parquet"), identity=True)


def test_a_kept_feature_is_merged_into_the_table_and_its_sidecar_dropped(requests, tmp_path):
    """fex.iceberg.merge: a sidecar's column added to the sample table by
    schema evolution and each day rewritten with its values in place (the
    rows fex.iceberg.read gives with the sidecar), one commit per day; the
    sidecar dropped; a second merge of the same column refused."""
    import fex
    import fex.iceberg

    warehouse = tmp_path / "w"
    extract("--format", "iceberg", "-o", str(warehouse), requests)
    sidecar = fex.Plan.from_yaml("name: v2\nfeatures:\n  - {name: item_tags_again, kind: sparse, source: item_tags}\n")
    rows_of_v2 = fex.run(sidecar, requests, identity=True).to_arrow()
    # A sidecar for part of the table (a shorter backfill): the rest stays null.
    fex.iceberg.write(str(warehouse), "fex.v2", sidecar, rows_of_v2.slice(0, 300))
    want = fex.iceberg.read(str(warehouse), "fex.default_samples", sidecars=["fex.v2"])
    days = {t.date() for t in want.column("request_time").to_pylist()}
    assert len(days) >= 2
    commits = len(catalog(warehouse).load_table("fex.default_samples").metadata.metadata_log)

    assert fex.iceberg.merge(str(warehouse), "fex.default_samples", "fex.v2") == want.num_rows == 480
    table = catalog(warehouse).load_table("fex.default_samples")
    assert [f.name for f in table.schema().fields][-1] == "item_tags_again"
    # The schema change, then one commit per day.
    assert len(table.metadata.metadata_log) == commits + 1 + len(days)
    got = table.scan().to_arrow()
    assert got.column_names == want.column_names
    assert Counter(rows(got, got.column_names)) == Counter(rows(want, want.column_names))
    assert got.column("item_tags_again").null_count == 180
    assert not catalog(warehouse).table_exists("fex.v2")
    fex.iceberg.write(str(warehouse), "fex.v2", sidecar, rows_of_v2)
    with pytest.raises(ValueError, match="has the column.s. item_tags_again of fex.v2 already"):
        fex.iceberg.merge(str(warehouse), "fex.default_samples", "fex.v2")


# A PostgreSQL server of Debian's package on 127.0.0.1, for the shared catalog.
postgres = pytest.fixture(scope="module", name="postgres")(postgres_server.fixture)


def test_a_postgresql_catalog_is_shared_by_the_command_and_pyiceberg(requests, postgres, tmp_path):
    """The catalog in a real PostgreSQL: `fex extract` (iceberg-rust's SQL
    catalog through sqlx), `fex table create`, two runs committing at once,
    and the Python package (pyiceberg's SQL catalog through SQLAlchemy and
    psycopg2) writing and reading the same table."""
    import fex
    import fex.iceberg

    warehouse = tmp_path / "w"
    rust_uri, python_uri = f"postgresql://{postgres}", f"postgresql+psycopg2://{postgres}"
    create = subprocess.run([binary("FEX_CLI"), "table", "create", "--model", DEFAULT_MODEL, "-o", str(warehouse),
                             "--catalog", rust_uri], capture_output=True, text=True, timeout=120)
    assert create.returncode == 0, create.stderr
    assert create.stdout.startswith("table fex.default_samples in postgresql://…@127.0.0.1:"), create.stdout
    assert not os.path.exists(warehouse / "catalog.db")
    cmd = [binary("FEX_CLI"), "extract", "--model", DEFAULT_MODEL, "--format", "iceberg", "-o", str(warehouse),
           "--catalog", rust_uri, requests]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    plan = fex.Plan.from_yaml(DEFAULT_MODEL)
    fex.iceberg.write(str(warehouse), "fex.default_samples", plan, fex.run(plan, requests, identity=True),
                      catalog_uri=python_uri)
    table = fex.iceberg.catalog(str(warehouse), python_uri).load_table("fex.default_samples")
    assert len(table.snapshots()) == 3
    got = fex.iceberg.read(str(warehouse), "fex.default_samples", catalog_uri=python_uri)
    assert got.num_rows == 3 * 480
    extract("-o", str(tmp_path / "plain.parquet"), requests)
    plain = pq.read_table(tmp_path / "plain.parquet")
    unsigned = {f.name for f in plain.schema if "uint64" in str(f.type)}
    expected = Counter(rows(plain, plain.column_names, unsigned))
    assert Counter(rows(got, plain.column_names, unsigned)) == Counter({k: 3 * n for k, n in expected.items()})


@pytest.fixture(scope="module")
def spark_warehouse(spark, tmp_path_factory):
    """One warehouse opened in the tests' Spark session as the catalog `fex`
    (Iceberg's Spark runtime, from FEX_SPARK_JARS, which scripts/test.sh
    sets; a session keeps one such catalog)."""
    import fex.spark

    if not os.environ.get("FEX_SPARK_JARS"):
        pytest.skip("FEX_SPARK_JARS is not set (scripts/test.sh fetches Iceberg's Spark runtime and sets it)")
    warehouse = tmp_path_factory.mktemp("spark-iceberg")
    fex.spark.iceberg_catalog(spark, str(warehouse))
    return warehouse


def micros_rows(table, columns, unsigned):
    """`rows`, with request_time as microseconds (Spark's and pyiceberg's
    timestamps compared as numbers)."""
    import pyarrow as pa

    at = table.column_names.index("request_time")
    table = table.set_column(at, "request_time", table.column("request_time").cast(pa.timestamp("us", "UTC")).cast(pa.int64()))
    return Counter(rows(table, columns, unsigned))


def test_spark_reads_and_writes_the_sample_table(spark, spark_warehouse, requests, tmp_path):
    """Spark SQL (Iceberg's own Spark runtime, on the warehouse's JDBC
    catalog) reads the table `fex extract` wrote; fex.spark.extract(identity=
    True) + write_iceberg appends the same rows, and replaces a day in one
    commit; a model that does not fit is refused before writing."""
    import pyarrow as pa
    import pyarrow.compute as pc

    import fex
    import fex.iceberg
    import fex.spark

    warehouse = spark_warehouse
    extract("--format", "iceberg", "-o", str(warehouse), "--table", "fex.spark_samples", requests)
    ours = catalog(warehouse).load_table("fex.spark_samples")
    columns = [f.name for f in ours.schema().fields]
    by_fex = ours.scan().to_arrow()
    unsigned = ()
    by_spark_sql = spark.sql("SELECT * FROM fex.fex.spark_samples").toArrow()
    assert by_spark_sql.column_names == columns
    assert micros_rows(by_spark_sql, columns, unsigned) == micros_rows(by_fex, columns, unsigned)

    plan = fex.Plan.from_yaml(DEFAULT_MODEL)
    records = fex.spark.read_pbdataset(spark, requests)
    samples = fex.spark.extract(records, config=plan, format="batch", keep=[], identity=True)
    assert samples.columns[:3] == ["request_id", "row", "request_time"]
    fex.spark.write_iceberg(samples, "fex.spark_samples", plan)
    table = catalog(warehouse).load_table("fex.spark_samples")
    assert len(table.snapshots()) == 2
    summary = table.current_snapshot().summary
    assert (summary["fex.model"], summary["engine-name"]) == ("default", "spark"), summary
    both = table.scan().to_arrow()
    once = micros_rows(by_fex, columns, unsigned)
    assert micros_rows(both, columns, unsigned) == Counter({k: 2 * n for k, n in once.items()})

    # A day replaced from Spark: rows of another input, that day's only.
    day = min(by_fex.column("request_time").to_pylist()).date()
    span = (day.isoformat(), (day + datetime.timedelta(days=1)).isoformat())
    other = tmp_path / "other.pb"
    gen = ["gen", "--model-config", DEFAULT_MODEL, "--count", "30", "--batch-size", "12", "--seed", "13", "--out", str(other)]
    subprocess.run([binary("FEX_CLIENT"), *gen], check=True, capture_output=True)
    rebuilt = fex.spark.extract(fex.spark.read_pbdataset(spark, str(other)), config=plan, format="batch", keep=[],
                                identity=True)
    from pyspark.sql import functions as F

    in_day = (F.col("request_time") >= F.lit(span[0]).cast("timestamp")) & (F.col("request_time") < F.lit(span[1]).cast("timestamp"))
    with pytest.raises(ValueError, match="rows have a request_time outside"):
        fex.spark.write_iceberg(rebuilt, "fex.spark_samples", plan, overwrite=span)
    assert len(catalog(warehouse).load_table("fex.spark_samples").snapshots()) == 2
    before = len(catalog(warehouse).load_table("fex.spark_samples").metadata.metadata_log)
    fex.spark.write_iceberg(rebuilt.filter(in_day), "fex.spark_samples", plan, overwrite=span)
    after = catalog(warehouse).load_table("fex.spark_samples")
    assert len(after.metadata.metadata_log) == before + 1, "the day was not replaced in one commit"
    got = after.scan().to_arrow()
    since = pa.scalar(fex.iceberg._micros(span[0]), pa.timestamp("us", "UTC"))
    until = pa.scalar(fex.iceberg._micros(span[1]), pa.timestamp("us", "UTC"))
    mask = lambda t: pc.and_(pc.greater_equal(t["request_time"], since), pc.less(t["request_time"], until))  # noqa: E731
    want_day = rebuilt.filter(in_day).toArrow()
    assert micros_rows(got.filter(mask(got)), columns, unsigned) == micros_rows(want_day, columns, unsigned)
    assert micros_rows(got.filter(pc.invert(mask(got))), columns, unsigned) == \
        micros_rows(both.filter(pc.invert(mask(both))), columns, unsigned)

    # A model whose outputs do not fit: refused, every column named, nothing written.
    changed = fex.Plan.from_yaml(open(DEFAULT_MODEL).read().replace("name: item_ctr_7d", "name: item_ctr_30d"))
    wrong = fex.spark.extract(records, config=changed, format="batch", keep=[], identity=True)
    with pytest.raises(ValueError) as refused:
        fex.spark.write_iceberg(wrong, "fex.spark_samples", changed)
    assert 'column "item_ctr_30d" (array<float>) is not in the table' in str(refused.value)
    assert 'the table requires column "item_ctr_7d"' in str(refused.value)
    assert len(catalog(warehouse).load_table("fex.spark_samples").metadata.metadata_log) == before + 1


def test_the_books_cleanup_step_lists_the_files_a_killed_run_left(spark, spark_warehouse, tmp_path):
    """A `fex extract` run SIGKILLed after writing data files and before its
    commit: the files are no table's, and the cleanup step the book gives
    (Iceberg's remove_orphan_files procedure, through Spark) lists exactly
    them, then deletes them; the table's own files and rows stay."""
    warehouse = spark_warehouse
    big = tmp_path / "big.pb"
    args = ["gen", "--model-config", DEFAULT_MODEL, "--count", "600", "--batch-size", "256", "--seed", "5", "--out", str(big)]
    subprocess.run([binary("FEX_CLIENT"), *args], check=True, capture_output=True)
    small = tmp_path / "small.pb"
    subprocess.run([binary("FEX_CLIENT"), "gen", "--model-config", DEFAULT_MODEL, "--count", "3", "--batch-size", "4",
                    "--out", str(small)], check=True, capture_output=True)
    extract("--format", "iceberg", "-o", str(warehouse), "--table", "fex.orphans", str(small))
    table_dir = warehouse / "fex" / "orphans"
    kept = set(data_files(table_dir))
    cmd = [binary("FEX_CLI"), "extract", "-q", "--model", DEFAULT_MODEL, "--format", "iceberg", "--threads", "1",
           "--row-group-size", "1024", "-o", str(warehouse), "--table", "fex.orphans", str(big)]
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while set(data_files(table_dir)) == kept and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert p.poll() is None, "the run ended before a data file was seen: make the input larger"
        p.send_signal(signal.SIGKILL)
    finally:
        p.kill()
        p.wait(timeout=30)
    orphans = set(data_files(table_dir)) - kept
    assert orphans
    # As if the run had been killed four days ago: the procedure counts only
    # files older than three days by default (a writer may still be between
    # its files and its commit), and refuses a line within a day of now.
    long_ago = time.time() - 4 * 86400
    for d, _, files in os.walk(table_dir):
        for f in files:
            os.utime(os.path.join(d, f), (long_ago, long_ago))
    listed = spark.sql("CALL fex.system.remove_orphan_files(table => 'fex.fex.orphans', dry_run => true)").collect()
    assert {r.orphan_file_location.removeprefix("file:") for r in listed} == orphans
    spark.sql("CALL fex.system.remove_orphan_files(table => 'fex.fex.orphans')")
    assert set(data_files(table_dir)) == kept
    assert catalog(warehouse).load_table("fex.orphans").scan().to_arrow().num_rows == 12


def test_a_spark_view_reads_the_sample_table_with_its_sidecar(spark, spark_warehouse, requests):
    """fex.spark.iceberg_view: the sample table with a sidecar's columns
    placed on its rows by identity (here a sidecar of one new output,
    written by fex.iceberg.write), as fex.iceberg.read places them."""
    import fex
    import fex.iceberg
    import fex.spark

    warehouse = spark_warehouse
    reqs = os.path.join(os.path.dirname(requests), "per_request.pb")
    args = ["gen", "--model-config", DEFAULT_MODEL, "--count", "20", "--batch-size", "6", "--per-request-identity",
            "--seed", "3", "--out", reqs]
    subprocess.run([binary("FEX_CLIENT"), *args], check=True, capture_output=True)
    extract("--format", "iceberg", "-o", str(warehouse), "--table", "fex.view_base", reqs)
    sidecar = fex.Plan.from_yaml("name: v2\nfeatures:\n  - {name: item_tags_again, kind: sparse, source: item_tags}\n")
    fex.iceberg.write(str(warehouse), "fex.view_v2", sidecar, fex.run(sidecar, reqs, identity=True))
    view = fex.spark.iceberg_view(spark, "fex.view_base", ["fex.view_v2"])
    assert view.columns[-1] == "item_tags_again" and view.count() == 120
    assert view.filter("item_tags_again IS NULL OR item_tags_again <> item_tags").count() == 0
    assert spark.sql("SELECT count(*) FROM view_base_all WHERE size(item_tags_again) > 0").collect()[0][0] > 0
    by_reader = fex.iceberg.read(str(warehouse), "fex.view_base", sidecars=["fex.view_v2"])
    assert by_reader.column("item_tags_again").to_pylist() == by_reader.column("item_tags").to_pylist()
