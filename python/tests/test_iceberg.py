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

import os
import signal
import subprocess
import time
from collections import Counter

import pyarrow.parquet as pq
import pytest

from conftest import ROOT, binary

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
    assert p.returncode == 64 and "--table and --catalog are for --format iceberg" in p.stderr
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
