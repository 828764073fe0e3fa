"""The job's samples into the model's Iceberg sample table
(`python -m fex.nearline --iceberg WAREHOUSE`), through Iceberg's own
Flink sink, read back by pyiceberg (Apache Iceberg's Python
implementation, its SQL catalog on the warehouse's SQLite file): the rows
are the ones `fex extract --format iceberg` writes for the job's joined
records, every snapshot names the model; killed mid-run and restored from
its checkpoint, the table holds every row once; a table that does not fit
the model, or none without the `fex` command to create it, is refused
before the job starts. DuckDB's own Iceberg reader reads the same rows.

scripts/test.sh passes FEX_CLI (the `fex` binary) and FEX_NEARLINE_JAR."""

from __future__ import annotations

import datetime
import glob
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter

import pytest

from fex.nearline import committed, read_manifest

from conftest import MODEL, job, kill_once_committed, records  # noqa: E402
import data  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import iceberg_rest  # noqa: E402
import object_store  # noqa: E402
import postgres_server  # noqa: E402

TABLE = "fex.nearline_ranker_samples"
SHITU = "fex.nearline_ranker_shitu"
DEFAULT_MODEL = os.path.join(ROOT, "models", "default.yaml")


def cli():
    path = os.environ.get("FEX_CLI")
    if not path:
        pytest.skip("FEX_CLI is not set (scripts/test.sh sets it to the built `fex`)")
    return path


def load(warehouse, table=TABLE, postgres=None):
    """The table from the warehouse's SQLite catalog, or from the PostgreSQL
    database `postgres` (scripts/postgres_server.py's address)."""
    from pyiceberg.catalog.sql import SqlCatalog

    uri = f"postgresql+psycopg2://{postgres}" if postgres else f"sqlite:///{warehouse}/catalog.db"
    catalog = SqlCatalog("fex", uri=uri, warehouse=f"file://{warehouse}")
    return catalog.load_table(table)


# A PostgreSQL server of Debian's package on 127.0.0.1, for the shared catalog.
postgres = pytest.fixture(scope="module", name="postgres")(postgres_server.fixture)


def frozen(v):
    if isinstance(v, list):
        return tuple(frozen(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, frozen(x)) for k, x in v.items()))
    return v


IDENTITY = ["request_id", "row", "request_time"]


def duckdb_scan(table):
    """The table as DuckDB reads it: its own Iceberg reader (the iceberg
    extension, installed from PyPI with its avro one) over the table's
    current metadata file, which the catalog names."""
    import duckdb
    import duckdb_ext

    extensions = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
    con = duckdb.connect(config={"extension_directory": extensions, "autoinstall_known_extensions": False})
    con.execute("LOAD avro")
    con.execute("LOAD iceberg")
    location = table.metadata_location.removeprefix("file://").removeprefix("file:")
    return con.execute(f"SELECT * FROM iceberg_scan('{location}')").fetch_arrow_table()


def rows(table, skip=(), reader=None):
    """The table's rows, as a multiset of tuples of its columns but `skip`
    (request_time as microseconds); read by pyiceberg, or by `reader`."""
    import pyarrow as pa

    data = table.scan().to_arrow() if reader is None else reader(table)
    data = data.set_column(data.column_names.index("request_time"), "request_time",
                           data.column("request_time").cast(pa.int64()))
    data = data.select([c for c in data.column_names if c not in skip])
    return Counter(tuple(frozen(r[c]) for c in data.column_names) for r in data.to_pylist()), data.column_names


def extracted(tmp_path, joined_dir, name):
    """`fex extract --format iceberg` over a job's committed joined records: a fresh warehouse's table."""
    warehouse = tmp_path / name
    files = committed(joined_dir)
    assert files, f"no committed joined records in {joined_dir}"
    subprocess.run([cli(), "extract", "--model", MODEL, "--format", "iceberg", "-o", str(warehouse), *files],
                   check=True, capture_output=True, timeout=300)
    return load(warehouse)


def job_model_text():
    """The job's model config with its files' paths made absolute (to be
    written elsewhere)."""
    text = open(MODEL).read().replace("file: ../", f"file: {os.path.dirname(os.path.dirname(MODEL))}/")
    return text.replace("file: df.tsv", f"file: {os.path.join(os.path.dirname(MODEL), 'df.tsv')}")


def model_with_a_new_output(tmp_path):
    """The job's model with one more output, `item_fids_again`, a copy of
    `item_fids`: what a backfill adds."""
    new_model = tmp_path / "new.yaml"
    new_model.write_text(job_model_text().replace("  - {name: item_fids, kind: sparse}\n",
                                      "  - {name: item_fids, kind: sparse}\n"
                                      "  - {name: item_fids_again, kind: sparse, source: item_fids}\n", 1))
    return new_model


@pytest.mark.parametrize("mode", [["--checkpoint-interval", "1s"], ["--batch"]], ids=["streaming", "batch"])
def test_the_jobs_samples_are_the_rows_fex_extract_writes(inputs, tmp_path, mode):
    """Streaming (commits on checkpoints) and batch execution (one commit
    at the end) alike."""
    cli()
    out, warehouse = str(tmp_path / "out"), tmp_path / "warehouse"
    job(out, inputs["requests"], inputs["actions"], *mode, "--iceberg", str(warehouse))
    assert not os.path.exists(os.path.join(out, "samples")), "the samples went to the table, not to files"
    table = load(warehouse)
    by_extract = extracted(tmp_path, os.path.join(out, "joined"), "extracted")
    assert table.schema().column_names == by_extract.schema().column_names
    # The features are what `fex extract` makes of the joined records...
    got, _ = rows(table, skip=IDENTITY)
    want, _ = rows(by_extract, skip=IDENTITY)
    assert sum(got.values()) == sum(want.values()) > 0
    assert got == want
    # DuckDB reads the same rows, identity and all, from what Flink's
    # Iceberg sink wrote, and from what `fex extract` wrote.
    assert rows(table, reader=duckdb_scan) == rows(table)
    assert rows(by_extract, reader=duckdb_scan) == rows(by_extract)
    # ...and each row is identified by its request as the join emitted it
    # (this model's keys are the log's, which the joined records do not
    # carry): every emitted request's rows, numbered from 0, at its time.
    full, columns = rows(table)
    assert columns[:3] == IDENTITY
    emitted = [l for l in read_manifest(out) if l["kind"] == "emitted"]
    assert Counter(r[:3] for r in full.elements()) == Counter(
        (l["request_id"], i, l["time"] * 1000) for l in emitted for i in range(l["rows_written"]))
    # Each snapshot is the Flink sink's, and names the model as `fex extract`'s do.
    for snapshot in table.snapshots():
        summary = snapshot.summary.additional_properties
        assert summary["fex.model"] == "nearline_ranker" and summary["engine-name"] == "flink", summary
        assert "flink.max-committed-checkpoint-id" in summary
    assert str(table.spec()).strip() == "[\n  1000: request_day: day(3)\n]"

    # The joined-request table: one row per emitted request, as the
    # manifest says it, with the joined records the job wrote to joined/...
    shitu = load(warehouse, SHITU).scan().to_arrow()
    import pyarrow as pa

    by_id = {r["request_id"]: r for r in shitu.to_pylist()}
    assert len(by_id) == shitu.num_rows == len(emitted)
    micros = lambda c: shitu.column(c).cast(pa.int64()).to_pylist()  # noqa: E731
    times = dict(zip(shitu.column("request_id").to_pylist(), zip(micros("request_time"), micros("emitted_at"))))
    for l in emitted:
        r = by_id[l["request_id"]]
        assert (r["user_id"], r["rule"], r["payload"], r["rows"]) == (l["user_id"], l["rule"], l["payload"], l["rows"])
        assert times[l["request_id"]] == (l["time"] * 1000, l["emitted_at"] * 1000)
        assert json.loads(r["actions"]) == l["actions"]
    joined_records = Counter(rec for p in committed(os.path.join(out, "joined")) for rec in records(p))
    assert Counter(rec for r in shitu.to_pylist() for rec in frames(r["joined"])) == joined_records
    # ...from which `fex extract` makes the sample table's features again:
    # what a backfill reads.
    joined_file = tmp_path / "shitu.pb"
    joined_file.write_bytes(b"".join(shitu.column("joined").to_pylist()))
    subprocess.run([cli(), "extract", "--model", MODEL, "--format", "iceberg", "-o", str(tmp_path / "again"),
                    str(joined_file)], check=True, capture_output=True, timeout=300)
    assert rows(load(tmp_path / "again"), skip=IDENTITY)[0] == got

    # An incremental backfill: a model with one new output computes only
    # that, from the joined-request table, into a sidecar keyed by the rows'
    # identity; the sample table's files are neither read nor rewritten.
    base_files = sorted(glob.glob(str(warehouse / "fex" / "nearline_ranker_samples" / "data" / "**" / "*.parquet"),
                        recursive=True))
    base_snapshots = [s.snapshot_id for s in table.snapshots()]
    new_model = model_with_a_new_output(tmp_path)
    backfill = [cli(), "backfill", "--model", str(new_model), "-o", str(warehouse), "--into", "fex.v2_sidecar"]
    p = subprocess.run(backfill, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert f"backfilled item_fids_again (1 new output(s)) for {len(emitted)} requests" in p.stderr, p.stderr
    sidecar = load(warehouse, "fex.v2_sidecar")
    assert [f.name for f in sidecar.schema().fields] == IDENTITY + ["item_fids_again"]
    side = sidecar.scan().to_arrow()
    position = {k: i for i, k in enumerate(zip(side.column("request_id").to_pylist(), side.column("row").to_pylist()))}
    base = table.scan().to_arrow()
    keys = list(zip(base.column("request_id").to_pylist(), base.column("row").to_pylist()))
    assert len(position) == side.num_rows == len(keys) and set(position) == set(keys)
    again = side.column("item_fids_again").to_pylist()
    assert [again[position[k]] for k in keys] == base.column("item_fids").to_pylist()
    assert [s.snapshot_id for s in load(warehouse).snapshots()] == base_snapshots
    assert sorted(glob.glob(str(warehouse / "fex" / "nearline_ranker_samples" / "data" / "**" / "*.parquet"),
                            recursive=True)) == base_files
    # The package's reader puts them side by side, by identity.
    import fex.iceberg

    both = fex.iceberg.read(str(warehouse), TABLE, sidecars=["fex.v2_sidecar"], columns=["item_fids", "item_fids_again"])
    assert both.column_names == IDENTITY + ["item_fids", "item_fids_again"] and both.num_rows == base.num_rows
    assert both.column("item_fids_again").to_pylist() == both.column("item_fids").to_pylist()
    arrays = fex.iceberg.to_numpy(both.to_batches(max_chunksize=64)[-1])
    assert (arrays["item_fids_again"].values == arrays["item_fids"].values).all()
    assert (arrays["item_fids_again"].row_splits == arrays["item_fids"].row_splits).all()
    # A delta snapshot (seed 002 §3.4): a raw feature mined after the join,
    # keyed by request id and row, which a new output reads; the backfill
    # adds it to each request's records before extracting.
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    mined = [[1000 + len(request_id or "") * 10 + row, 7] for request_id, row in keys]
    delta_rows = pa.table({
        "request_id": pa.array([k[0] for k in keys], pa.string()),
        "row": pa.array([k[1] for k in keys], pa.int32()),
        "mined_fids": pa.array(mined, pa.list_(pa.int64())),
    })
    catalog = SqlCatalog("fex", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
    catalog.create_table("fex.mined_delta", schema=delta_rows.schema).append(delta_rows)
    delta_model = tmp_path / "delta.yaml"
    text = job_model_text()
    delta_model.write_text(text.replace("  - {name: item_fids, kind: sparse}\n",
                                        "  - {name: item_fids, kind: sparse}\n  - {name: mined_fids, kind: sparse}\n", 1))
    p = subprocess.run([cli(), "backfill", "--model", str(delta_model), "-o", str(warehouse), "--into", "fex.mined",
                        "--delta", "fex.mined_delta"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert f"delta fex.mined_delta: {len(keys)} rows, adding feature(s) mined_fids" in p.stderr, p.stderr
    assert "backfilled mined_fids (1 new output(s))" in p.stderr, p.stderr
    side = load(warehouse, "fex.mined").scan().to_arrow()
    got_mined = dict(zip(zip(side.column("request_id").to_pylist(), side.column("row").to_pylist()),
                         side.column("mined_fids").to_pylist()))
    assert len(got_mined) == len(keys) and [got_mined[k] for k in keys] == mined
    assert [s.snapshot_id for s in load(warehouse).snapshots()] == base_snapshots

    # A range with no request backfills nothing; a model with nothing new is refused.
    p = subprocess.run(backfill[:-1] + ["fex.v2_empty", "--since", "2100-01-01"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and "for 0 requests, 0 rows" in p.stderr and "no rows: nothing committed" in p.stderr, \
        p.stderr
    p = subprocess.run([cli(), "backfill", "--model", str(MODEL), "-o", str(warehouse), "--into", "fex.none"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 64 and "is a column of fex.nearline_ranker_samples already: nothing to backfill" in p.stderr

    # A day rebuilt in batch from the Shitu table replaces the streaming
    # rows atomically: every file the Flink sink wrote for the range is
    # replaced by the rebuild's, in one commit, and the rows are the same.
    if "--batch" in mode:
        return
    import fex

    times = [t for t in base.column("request_time").to_pylist() if t is not None]
    since = min(times).replace(hour=0, minute=0, second=0, microsecond=0)
    until = max(times).replace(hour=0, minute=0, second=0, microsecond=0) + datetime.timedelta(days=1)
    flink_files = {t.file.file_path for t in load(warehouse).scan().plan_files()}
    commits = len(load(warehouse).metadata.metadata_log)
    want = rows(load(warehouse))[0]
    fex.iceberg.rebuild(str(warehouse), TABLE, fex.Plan.from_yaml(MODEL), since, until, shitu=SHITU)
    rebuilt = load(warehouse)
    assert len(rebuilt.metadata.metadata_log) == commits + 1
    assert not {t.file.file_path for t in rebuilt.scan().plan_files()} & flink_files
    assert rows(rebuilt)[0] == want
    assert rebuilt.current_snapshot().summary["fex.model"] == "nearline_ranker"


def frames(data: bytes):
    """The records of framed bytes (u64 little-endian length, then the record)."""
    at = 0
    while at < len(data):
        n = int.from_bytes(data[at:at + 8], "little")
        yield data[at + 8:at + 8 + n]
        at += 8 + n


def test_killed_and_restored_the_table_holds_every_row_once(tmp_path):
    """SIGKILL the job once a checkpoint has committed rows to the table,
    restore from its last completed checkpoint: the table then holds the
    rows of an uninterrupted run's table, none missing, none twice."""
    cli()
    reqs, acts = data.generate(seed=5, users=40, requests_per_user=40)
    requests, actions = data.write_inputs(str(tmp_path / "in"), reqs, acts, files=6)
    whole = tmp_path / "whole"
    job(str(tmp_path / "whole-out"), requests, actions, "--checkpoint-interval", "300ms", "--iceberg", str(whole))
    warehouse, out, checkpoints = tmp_path / "warehouse", str(tmp_path / "out"), str(tmp_path / "checkpoints")
    cmd = [sys.executable, "-m", "fex.nearline", "--config", MODEL, "--requests", requests, "--actions", actions,
           "--out", out, "--quiet", "--checkpoint-interval", "300ms", "--checkpoint-dir", checkpoints,
           "--iceberg", str(warehouse), "--max-rate", "1500"]  # about 4 s of reading, so the kill comes mid-run

    def committed_rows():
        # The table's current metadata file, as the catalog points to it
        # (a commit writes the file first and then moves the pointer), and
        # its current snapshot's total: Iceberg's Flink sink also commits
        # empty snapshots (every tenth empty checkpoint).
        try:
            with sqlite3.connect(f"file:{warehouse / 'catalog.db'}?mode=ro", uri=True, timeout=5) as db:
                found = db.execute("SELECT metadata_location FROM iceberg_tables WHERE table_namespace = 'fex' "
                                   "AND table_name = 'nearline_ranker_samples'").fetchone()
            if not found:
                return 0
            location = found[0]
            for prefix in ("file://", "file:"):
                if location.startswith(prefix):
                    location = location[len(prefix):]
                    break
            with open(location, encoding="utf-8") as f:
                m = json.load(f)
        except (OSError, ValueError, sqlite3.Error):  # not made yet, or busy
            return 0
        current = [s for s in m.get("snapshots", []) if s["snapshot-id"] == m.get("current-snapshot-id")]
        return int(current[0]["summary"].get("total-records", 0)) if current else 0

    restore = kill_once_committed(cmd, checkpoints, lambda: committed_rows() > 0, tmp_path / "first.log")
    before = sum(r for r in rows(load(warehouse))[0].values())
    assert 0 < before < sum(rows(load(whole))[0].values()), "killed too late to prove a restore"
    job(out, requests, actions, "--checkpoint-interval", "300ms", "--checkpoint-dir", checkpoints,
        "--iceberg", str(warehouse), "--restore", restore)
    got, want = rows(load(warehouse))[0], rows(load(whole))[0]
    assert got == want, f"{sum((got - want).values())} extra, {sum((want - got).values())} missing"
    identity = Counter((r[0], r[1]) for r in got.elements())
    assert max(identity.values()) == 1 and None not in {i[0] for i in identity}, "a request's row is twice in the table"
    shitu = Counter(load(warehouse, SHITU).scan().to_arrow().column("request_id").to_pylist())
    assert shitu == Counter(load(whole, SHITU).scan().to_arrow().column("request_id").to_pylist())
    assert max(shitu.values()) == 1


def without_fex_command():
    """The environment of a launcher that finds no `fex` command."""
    env = {k: v for k, v in os.environ.items() if k != "FEX_CLI"}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not os.path.exists(os.path.join(p, "fex")))
    return env


def launch(inputs, out, *extra, env=None):
    cmd = [sys.executable, "-m", "fex.nearline", "--config", MODEL, "--requests", inputs["requests"],
           "--actions", inputs["actions"], "--out", out, "--quiet", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def test_a_table_of_another_model_is_refused_before_the_job_starts(inputs, tmp_path):
    warehouse = tmp_path / "warehouse"
    subprocess.run([cli(), "table", "create", "--model", DEFAULT_MODEL, "-o", str(warehouse), "--table", TABLE],
                   check=True, capture_output=True, timeout=120)
    # The launcher's `fex table create` checks the table against the model...
    p = launch(inputs, str(tmp_path / "out"), "--iceberg", str(warehouse))
    assert p.returncode == 64, p.stderr
    assert "user_fids" in p.stderr and TABLE in p.stderr, p.stderr
    # ...and the job itself, when there is no `fex` command to ask.
    p = launch(inputs, str(tmp_path / "out2"), "--iceberg", str(warehouse), env=without_fex_command())
    assert p.returncode == 64, p.stderr
    assert "does not match the model's samples" in p.stderr and "user_fids" in p.stderr, p.stderr
    assert not glob.glob(str(tmp_path / "out*" / "joined" / "*")), "nothing is written"
    assert len(load(warehouse).snapshots()) == 0
    # A joined-request table that is not one is refused the same way.
    p = launch(inputs, str(tmp_path / "out3"), "--iceberg", str(warehouse), "--iceberg-table", "other.samples",
               "--iceberg-shitu-table", TABLE)
    assert p.returncode == 64 and "does not match" in p.stderr and '"joined"' in p.stderr, p.stderr


def test_without_a_table_or_the_fex_command_the_job_names_the_command(inputs, tmp_path):
    warehouse = tmp_path / "warehouse"
    p = launch(inputs, str(tmp_path / "out"), "--iceberg", str(warehouse), env=without_fex_command())
    assert p.returncode == 64, p.stderr
    assert f"has no table {TABLE}: create it with `fex table create --model" in p.stderr, p.stderr


def test_iceberg_flags_without_a_warehouse_are_refused(inputs, tmp_path):
    p = launch(inputs, str(tmp_path / "out"), "--iceberg-table", "a.b")
    assert p.returncode == 64 and "--iceberg WAREHOUSE" in p.stderr, p.stderr


def test_the_job_and_fex_extract_commit_to_one_table_at_once(inputs, streaming, postgres, tmp_path):
    """The streaming job commits its checkpoints' rows while `fex extract
    --format iceberg` runs append to the same table, whose catalog is shared
    in a PostgreSQL server (Iceberg's JDBC catalog in the job, iceberg-rust's
    SQL catalog in fex, pyiceberg's in the test): optimistic commits retried
    on both sides, every row of each lands once."""
    warehouse, out = tmp_path / "warehouse", str(tmp_path / "out")
    catalog_uri = f"postgresql://{postgres}"
    joined = committed(os.path.join(streaming, "joined"))
    cmd = [sys.executable, "-m", "fex.nearline", "--config", MODEL, "--requests", inputs["requests"],
           "--actions", inputs["actions"], "--out", out, "--quiet", "--checkpoint-interval", "200ms",
           "--iceberg", str(warehouse), "--iceberg-catalog", catalog_uri,
           "--max-rate", "300"]  # a few seconds of commits
    extract = [cli(), "extract", "--model", MODEL, "--format", "iceberg", "-o", str(warehouse),
               "--table", TABLE, "--catalog", catalog_uri, *joined]
    runs = 0
    with open(tmp_path / "job.log", "w") as log:
        job_process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 240
            while job_process.poll() is None:
                assert time.monotonic() < deadline, "the job did not end in 240 s"
                # Once the launcher's `fex table create` made the table.
                if os.path.exists(warehouse / "fex"):
                    assert not os.path.exists(warehouse / "catalog.db"), "the catalog went to SQLite"
                    p = subprocess.run(extract, capture_output=True, text=True, timeout=120)
                    assert p.returncode == 0, p.stderr
                    runs += 1
                time.sleep(0.2)
        finally:
            if job_process.poll() is None:
                job_process.kill()
    assert job_process.wait() == 0, (tmp_path / "job.log").read_text()[-4000:]
    assert runs >= 2
    table = load(warehouse, postgres=postgres)
    engines = [s.summary.additional_properties.get("engine-name", "fex") for s in table.snapshots()]
    committed_by_job = [i for i, e in enumerate(engines) if e == "flink"]
    assert engines.count("fex") == runs and committed_by_job
    # The writers' commits interleave (the two ranges of snapshots overlap).
    fex_commits = [i for i, e in enumerate(engines) if e == "fex"]
    assert min(committed_by_job) < max(fex_commits) and min(fex_commits) < max(committed_by_job), engines
    data = table.scan().to_arrow()
    emitted = [l for l in read_manifest(out) if l["kind"] == "emitted"]
    by_job = Counter(i for i in data.column("request_id").to_pylist() if i is not None)
    assert by_job == Counter({l["request_id"]: l["rows_written"] for l in emitted})
    one_run = rows(extracted(tmp_path, os.path.join(streaming, "joined"), "one-run"))[0].total()
    assert one_run > 0 and data.num_rows - sum(by_job.values()) == runs * one_run

    # Compaction, as the book recommends for a streaming table: Iceberg's
    # rewriteDataFiles bins the many small files into one per partition,
    # and the older snapshots are expired. The rows stay the rows.
    def current_files():
        return {t.file.file_path for t in load(warehouse, postgres=postgres).scan().plan_files()}

    def on_disk():
        return glob.glob(str(warehouse / "fex" / "nearline_ranker_samples" / "data" / "**" / "*.parquet"),
                         recursive=True)

    before, want = current_files(), rows(load(warehouse, postgres=postgres))[0]
    partitions = {os.path.dirname(f) for f in before}
    assert len(before) > len(partitions), "nothing to compact"
    p = subprocess.run([sys.executable, "-m", "fex.nearline.compact", "--iceberg", str(warehouse), "--table", TABLE,
                        "--iceberg-catalog", catalog_uri, "--expire-older-than", "0s"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"rewrote {len(before)} data files of {TABLE} into {len(partitions)}" in p.stdout, p.stdout
    assert "expired" in p.stdout, p.stdout
    after = current_files()
    assert len(after) == len(partitions) and not after & before
    assert rows(load(warehouse, postgres=postgres))[0] == want
    assert len(load(warehouse, postgres=postgres).snapshots()) == 1
    assert {f.removeprefix("file:") for f in after} <= {os.path.abspath(f) for f in on_disk()}


def test_the_job_writes_through_a_rest_catalog_onto_an_object_store(inputs, tmp_path):
    """The job's two tables in a REST catalog (Iceberg's reference server,
    scripts/iceberg_rest.py) with their files on an S3 server (moto's,
    scripts/object_store.py): the launcher creates them with `fex table
    create`, Iceberg's Flink sink writes them through Iceberg's S3FileIO,
    `fex extract` appends to the same table, the compaction rewrites it
    there, and `fex backfill` reads the joined requests from it; pyiceberg's
    REST catalog reads every row back."""
    from pyiceberg.catalog.rest import RestCatalog

    cli()
    try:
        import moto  # noqa: F401

        iceberg_rest.classpath()
    except (ImportError, iceberg_rest.Missing) as e:
        if os.environ.get("FEX_REQUIRE_REMOTE_ICEBERG"):
            pytest.fail(f"a REST catalog on an object store needs moto and the REST server's classpath: {e}")
        pytest.skip(str(e))
    with object_store.running() as s3, iceberg_rest.running_on(s3) as rest:
        props = object_store.properties(s3)
        flags = lambda flag: [a for k, v in props.items() for a in (flag, f"{k}={v}")]  # noqa: E731
        # A REST catalog's tables go where its server says: its warehouse.
        warehouse = f"s3://{s3['bucket']}/rest"
        out = str(tmp_path / "out")
        job(out, inputs["requests"], inputs["actions"], "--checkpoint-interval", "1s", "--iceberg", warehouse,
            "--iceberg-catalog", rest, *flags("--iceberg-property"))
        catalog = RestCatalog("fex", uri=rest, **object_store.properties(s3, pyiceberg=True))
        table = catalog.load_table(TABLE)
        by_job = {t.file.file_path for t in table.scan().plan_files()}
        assert by_job and all(f.startswith(f"{warehouse}/fex/nearline_ranker_samples/data/") for f in by_job), by_job
        got, _ = rows(table, skip=IDENTITY)
        assert got == rows(extracted(tmp_path, os.path.join(out, "joined"), "extracted"), skip=IDENTITY)[0]
        emitted = [l for l in read_manifest(out) if l["kind"] == "emitted"]
        assert catalog.load_table(SHITU).scan().to_arrow().num_rows == len(emitted) > 0

        # A batch writer into the same table, twice: `fex extract` through
        # the same catalog (its rows' identity is their LineId's, which has
        # no time here: a partition of its own).
        remote = ["-o", warehouse, "--catalog", rest, *flags("--catalog-property")]
        for _ in range(2):
            subprocess.run([cli(), "extract", "--model", MODEL, "--format", "iceberg", *remote, "--table", TABLE,
                            *committed(os.path.join(out, "joined"))], check=True, capture_output=True, timeout=300)
        table = catalog.load_table(TABLE)
        want = rows(table)[0]
        assert want.total() == 3 * got.total()
        before = {t.file.file_path for t in table.scan().plan_files()}
        partitions = {os.path.dirname(f) for f in before}
        assert len(before) > len(partitions)

        # The compaction, through the same catalog and file IO.
        p = subprocess.run([sys.executable, "-m", "fex.nearline.compact", "--iceberg", warehouse, "--table", TABLE,
                            "--iceberg-catalog", rest, *flags("--iceberg-property")],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"{len(before)} data files before, {len(partitions)} after" in p.stdout, p.stdout
        table = catalog.load_table(TABLE)
        after = {t.file.file_path for t in table.scan().plan_files()}
        crowded = {f for f in before if sum(os.path.dirname(g) == os.path.dirname(f) for g in before) > 1}
        assert len(after) == len(partitions) and crowded and not after & crowded
        assert all(f.startswith(f"{warehouse}/") for f in after)
        assert rows(table)[0] == want

        # A backfill of one new output, from the joined-request table there into a sidecar there.
        new_model = model_with_a_new_output(tmp_path)
        p = subprocess.run([cli(), "backfill", "--model", str(new_model), *remote, "--into", "fex.v2_sidecar"],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        assert f"for {len(emitted)} requests, {got.total()} rows" in p.stderr, p.stderr
        sidecar = catalog.load_table("fex.v2_sidecar")
        assert all(t.file.file_path.startswith(f"{warehouse}/fex/v2_sidecar/") for t in sidecar.scan().plan_files())
        assert sidecar.scan().to_arrow().num_rows == got.total()
