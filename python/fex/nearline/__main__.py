"""``python -m fex.nearline``: the label join, run locally on files.

The job is Java (fex.nearline.Job in fex's Flink jar, see job.py): this
module checks the arguments, runs the jar on a local Flink mini-cluster in
a JVM of its own, and prints the summary from the manifest.

    python -m fex.nearline --config model.yaml --requests LOGDIR \\
        --actions actions.jsonl --out OUT [--batch] [--table OUT.parquet]

Exit status: 0 done, 2 bad arguments (argparse), 64 a config or input that
cannot be used, 65 --table over joined requests of both payload kinds, 69
Kafka brokers that cannot be reached, 70 the Flink job failed (its cause is
printed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time

from . import Summary, committed, expand, read_manifest_lines, summarize_lines

EX_USAGE, EX_DATAERR, EX_UNAVAILABLE, EX_SOFTWARE = 64, 65, 69, 70


def duration_ms(text: str) -> int:
    m = re.fullmatch(r"(\d+)(ms|s|m|h)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 500ms, 5s, 10m, 1h")
    n, unit = int(m.group(1)), m.group(2)
    return n * {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}[unit]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fex.nearline",
        description="Join fex-server's request logs with user actions on Apache Flink (a local "
        "mini-cluster) and write the joined samples and their training samples.",
    )
    p.add_argument("--config", required=True, help="model config with a label_join: section")
    p.add_argument("--requests", required=True, nargs="+", help="request log files or directories (fex-server --request-log)")
    p.add_argument(
        "--actions", required=True, nargs="+",
        help="action files or directories: JSON lines, or .parquet files (converted to JSON lines under OUT/_actions first)",
    )
    p.add_argument("--out", required=True, help="output directory: joined/, samples/, manifest/, corrections/")
    p.add_argument("--batch", action="store_true", help="Flink's batch execution mode (a backfill of past files)")
    p.add_argument("--parallelism", type=int, default=1, help="task slots (default 1)")
    p.add_argument("--checkpoint-interval", type=duration_ms, default=5000, metavar="DURATION", help="streaming mode (default 5s)")
    p.add_argument("--checkpoint-dir", help="keep checkpoints here, to restore after a crash (streaming mode; default OUT/_checkpoints)")
    p.add_argument("--restore", metavar="CHECKPOINT", help="start from this checkpoint (a chk-N directory)")
    p.add_argument("--monitor", type=duration_ms, metavar="DURATION", help="streaming: keep watching the inputs for new files at this interval (runs until stopped)")
    p.add_argument("--python-executable", metavar="PATH", help=argparse.SUPPRESS)  # unused since the job is Java
    p.add_argument("--jars", nargs="+", default=[], metavar="JAR", help="more jars for the job's classpath")
    p.add_argument("--restart-attempts", type=int, default=0, metavar="N", help="restart a failed job N times, 10 s apart (default 0: fail with the cause)")
    p.add_argument(
        "--idleness", type=duration_ms, metavar="DURATION",
        help="a source subtask with no data this long stops holding event time back (default with --monitor: 1m)",
    )
    p.add_argument("--table", metavar="FILE", help="after a bounded run, also write the joined samples as a table, as `fex extract` does")
    p.add_argument("--table-format", choices=["parquet", "arrow"], default="parquet")
    p.add_argument("--summary-json", metavar="FILE", help="write the summary as JSON too")
    p.add_argument(
        "--brokers", metavar="HOST:PORT,...",
        help="Kafka's bootstrap servers: --requests kafka://TOPIC and --actions kafka://TOPIC read topics, "
        "--out kafka://PREFIX writes PREFIX.joined, PREFIX.samples, PREFIX.manifest (and PREFIX.corrections) "
        "in transactions committed on checkpoints",
    )
    p.add_argument("--bounded", action="store_true", help="read Kafka topics up to their end at the start, then finish")
    p.add_argument(
        "--kafka-timeout", type=duration_ms, default=30_000, metavar="DURATION",
        help="how long to wait for the brokers at the start (default 30s)",
    )
    p.add_argument("--kafka-group", metavar="ID", help="the Kafka consumer group prefix (default fex-nearline)")
    p.add_argument(
        "--transactional-id-prefix", metavar="PREFIX",
        help="Kafka transactional ids of the output (default fex-nearline-PREFIX; distinct per job)",
    )
    p.add_argument(
        "--max-rate", type=int, metavar="EVENTS_PER_SECOND",
        help="read at most this many requests a second, and as many actions (each input over all its "
        "subtasks; default: as fast as the job goes), e.g. to replay a topic from its start without flooding the output",
    )
    p.add_argument(
        "--iceberg", metavar="WAREHOUSE",
        help="write the samples to the model's Iceberg sample table in this warehouse (committed on checkpoints) "
        "instead of OUT/samples; the table is created first with `fex table create` when the fex command is found",
    )
    p.add_argument("--iceberg-table", metavar="NS.NAME", help="the sample table (default fex.<model>_samples)")
    p.add_argument(
        "--iceberg-shitu-table", metavar="NS.NAME",
        help="the joined-request (Shitu) table, one row per emitted request (default fex.<model>_shitu)",
    )
    p.add_argument(
        "--iceberg-catalog", metavar="URI",
        help="the Iceberg catalog (default: the SQLite file catalog.db in the warehouse; or jdbc:..., "
        "sqlite://PATH, postgresql://user:password@host/db, or a REST catalog's http(s)://...)",
    )
    p.add_argument(
        "--iceberg-property", action="append", default=[], metavar="KEY=VALUE",
        help="a catalog or file-IO property for the job and `fex table create` (repeatable): s3.endpoint, "
        "client.region, s3.access-key-id, s3.path-style-access, a REST catalog's credential or token",
    )
    p.add_argument(
        "--partition-by", choices=["day", "hour", "none"], default="day",
        help="how a sample table created here is partitioned by request_time (default day)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return p


def fex_command():
    """The `fex` command: FEX_CLI, else on PATH (None when neither)."""
    import shutil

    given = os.environ.get("FEX_CLI")
    if given and os.access(given, os.X_OK):
        return given
    return shutil.which("fex")


def warehouse_arg(warehouse: str) -> str:
    """A local warehouse as an absolute path; an object store's URI as given."""
    if "://" in warehouse and not warehouse.startswith("file:"):
        return warehouse
    return os.path.abspath(warehouse)


def create_table(args, table: str, shitu: str) -> int:
    """`fex table create` for the job's sample and joined-request tables
    (created, or existing ones checked against the model): 0, or the
    command's exit status with its message. Without the command the job
    checks the tables itself and names the command when there is none."""
    import subprocess

    cli = fex_command()
    if cli is None:
        return 0
    cmd = [cli, "table", "create", "--model", args.config, "-o", args.iceberg, "--table", table,
           "--shitu-table", shitu, "--partition-by", args.partition_by]
    if args.iceberg_catalog:
        cmd += ["--catalog", args.iceberg_catalog]
    for kv in args.iceberg_property:
        cmd += ["--catalog-property", kv]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        return p.returncode
    if not args.quiet:
        sys.stderr.write(p.stdout)
    return 0


def parquet_actions(paths, out):
    """Action Parquet files (given, or in a given directory) as JSON lines
    in a local staging directory (OUT/_actions, or a temporary one when OUT
    is a URI): Flink's Python API reads no Parquet without the flink-parquet
    jar. Columns: user_id, request_id, item_id (string or integer), action
    (integer), event_time (integer milliseconds or a timestamp). Staged
    names carry their input's place, so equal base names do not collide."""
    import tempfile

    found = []
    for path in paths:
        if "://" not in path and os.path.isdir(path):
            names = sorted(os.listdir(path))
            parquet = [os.path.join(path, n) for n in names if n.endswith(".parquet")]
            if parquet and len(parquet) != len([n for n in names if not n.startswith((".", "_"))]):
                raise ValueError(f"{path}: mixes .parquet files with others; give them apart")
            found.extend(parquet or [path])
        else:
            found.append(path)
    if not any(p.endswith(".parquet") for p in found):
        return found
    import pyarrow as pa
    import pyarrow.parquet as pq

    staged = tempfile.mkdtemp(prefix="fex-actions-") if "://" in out else os.path.join(out, "_actions")
    os.makedirs(staged, exist_ok=True)
    result = []
    for i, path in enumerate(found):
        if not path.endswith(".parquet"):
            result.append(path)
            continue
        table = pq.read_table(path)
        missing = [c for c in ("user_id", "request_id", "item_id", "action", "event_time") if c not in table.column_names]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(missing)}")
        t = table.column("event_time")
        if pa.types.is_timestamp(t.type):
            table = table.set_column(
                table.column_names.index("event_time"), "event_time", t.cast(pa.timestamp("ms")).cast(pa.int64())
            )
        target = os.path.join(staged, f"{i:05}-{os.path.basename(path)[: -len('.parquet')]}.jsonl")
        with open(target, "w", encoding="utf-8") as f:
            for row in table.select(["user_id", "request_id", "item_id", "action", "event_time"]).to_pylist():
                f.write(json.dumps(row) + "\n")
        result.append(target)
    return result


def progress(out: str, stop: threading.Event, started: float) -> None:
    """Counts manifest lines written so far, committed or in progress."""
    manifest = os.path.join(out, "manifest")
    done, growing = {}, {}
    while not stop.wait(2.0):
        emitted, late = look(manifest, done, growing)
        print(f"[{time.monotonic() - started:6.1f}s] emitted {emitted} requests, {late} late actions", file=sys.stderr, flush=True)


def look(manifest: str, done: dict, growing: dict) -> tuple:
    """(emitted requests, late actions) in the manifest's files now. A
    committed part file no longer changes, so it is read once (``done``
    keeps its counts); a file in progress (dot-prefixed) only grows until it
    is committed under another name, so each look reads what it gained since
    the last, up to its last line end (``growing`` keeps where)."""
    emitted = late = 0
    present = set()
    for root, _, files in os.walk(manifest):
        for name in files:
            path = os.path.join(root, name)
            counts = done.get(path)
            if counts is None:
                in_progress = name.startswith(".")
                start, e0, l0 = growing.get(path, (0, 0, 0)) if in_progress else (0, 0, 0)
                try:
                    with open(path, "rb") as f:
                        f.seek(start)
                        text = f.read()
                except OSError:
                    continue
                if in_progress:
                    text = text[:text.rfind(b"\n") + 1]
                counts = (e0 + text.count(b'"kind": "emitted"'), l0 + text.count(b'"kind": "late"'))
                if in_progress:
                    growing[path] = (start + len(text), *counts)
                    present.add(path)
                else:
                    done[path] = counts
            emitted += counts[0]
            late += counts[1]
    for path in [p for p in growing if p not in present]:
        del growing[path]
    return emitted, late


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    import fex

    try:
        plan = fex.Plan.from_yaml(args.config)
    except (OSError, ValueError) as e:
        print(f"error: {args.config}: {e}", file=sys.stderr)
        return EX_USAGE
    if plan.label_join is None:
        print(f"error: {args.config}: the model config has no label_join: section", file=sys.stderr)
        return EX_USAGE
    if args.table and "://" in args.out and not args.out.startswith("file://"):
        print("error: --table reads the joined records from a local --out", file=sys.stderr)
        return EX_USAGE
    if args.table and args.monitor:
        print("error: --table needs a bounded run (no --monitor)", file=sys.stderr)
        return EX_USAGE
    if args.parallelism < 1:
        print("error: --parallelism must be at least 1", file=sys.stderr)
        return EX_USAGE
    if args.checkpoint_interval < 10:
        print("error: --checkpoint-interval must be at least 10ms (Flink's minimum)", file=sys.stderr)
        return EX_USAGE
    if args.batch and (args.monitor or args.restore or args.checkpoint_dir):
        print("error: --monitor, --restore and --checkpoint-dir are for streaming execution, not --batch", file=sys.stderr)
        return EX_USAGE
    if args.max_rate is not None and args.max_rate < 1:
        print(f"error: --max-rate must be at least 1, not {args.max_rate}", file=sys.stderr)
        return EX_USAGE
    if args.monitor is not None and args.monitor < 1:
        print("error: --monitor must be a positive interval", file=sys.stderr)
        return EX_USAGE
    missing = [j for j in args.jars if not os.path.isfile(j)]
    if missing:
        print(f"error: --jars: no such file: {', '.join(missing)}", file=sys.stderr)
        return EX_USAGE
    try:
        requests = expand(args.requests)
        actions = parquet_actions(expand(args.actions), args.out)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EX_USAGE
    if (args.iceberg_table or args.iceberg_shitu_table or args.iceberg_catalog or args.iceberg_property) \
            and not args.iceberg:
        print("error: --iceberg-table, --iceberg-shitu-table, --iceberg-catalog and --iceberg-property are for "
              "--iceberg WAREHOUSE", file=sys.stderr)
        return EX_USAGE
    table_name = args.iceberg_table or f"fex.{plan.name}_samples"
    shitu_name = args.iceberg_shitu_table or f"fex.{plan.name}_shitu"
    if args.iceberg:
        code = create_table(args, table_name, shitu_name)
        if code:
            return code
    from . import job

    out_local = args.out[len("file://"):] if args.out.startswith("file://") else args.out
    if "://" in out_local:
        import tempfile

        # Output in Kafka or a remote file system: the log goes beside the checkpoints when they are local.
        if args.checkpoint_dir and "://" not in args.checkpoint_dir:
            logs = os.path.join(args.checkpoint_dir, "_logs")
            os.makedirs(logs, exist_ok=True)
        else:
            logs = tempfile.mkdtemp(prefix="fex-nearline-logs-")
    else:
        logs = os.path.join(out_local, "_logs")
        os.makedirs(logs, exist_ok=True)
    job_args = ["--config", os.path.abspath(args.config), "--requests", *requests, "--actions", *actions,
                "--out", args.out, "--parallelism", str(args.parallelism),
                "--checkpoint-interval-ms", str(args.checkpoint_interval),
                "--restart-attempts", str(args.restart_attempts)]
    if args.batch:
        job_args.append("--batch")
    if args.checkpoint_dir:
        job_args += ["--checkpoint-dir", args.checkpoint_dir]
    if args.restore:
        job_args += ["--restore", args.restore]
    if args.monitor:
        job_args += ["--monitor-ms", str(args.monitor)]
    if args.brokers:
        job_args += ["--brokers", args.brokers, "--kafka-timeout-ms", str(args.kafka_timeout)]
    if args.bounded:
        job_args.append("--bounded")
    if args.kafka_group:
        job_args += ["--kafka-group", args.kafka_group]
    if args.transactional_id_prefix:
        job_args += ["--transactional-id-prefix", args.transactional_id_prefix]
    if args.max_rate is not None:
        job_args += ["--max-rate-per-input", str(args.max_rate)]
    jars = list(args.jars)
    if args.iceberg:
        job_args += ["--iceberg-warehouse", warehouse_arg(args.iceberg), "--iceberg-table", table_name,
                     "--iceberg-shitu-table", shitu_name]
        if args.iceberg_catalog:
            job_args += ["--iceberg-catalog", args.iceberg_catalog]
        for kv in args.iceberg_property:
            job_args += ["--iceberg-property", kv]
        try:
            jars += job.iceberg_jars()
        except FileNotFoundError as e:
            print(f"error: {e}", file=sys.stderr)
            return EX_USAGE
    idleness = args.idleness if args.idleness is not None else (60_000 if args.monitor else None)
    if idleness:
        job_args += ["--idleness-ms", str(idleness)]
    try:
        cmd = job.command(job_args, log_file=os.path.join(logs, "flink.log"), jars=jars)
    except (OSError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EX_USAGE

    started = time.monotonic()
    stop = threading.Event()
    if not args.quiet:
        threading.Thread(target=progress, args=(args.out, stop, started), daemon=True).start()
    code = run_jvm(cmd, os.path.join(logs, "flink.log"))
    stop.set()
    if code != 0:
        return code
    seconds = time.monotonic() - started
    if "://" in args.out and not args.out.startswith("file://"):
        print(f"done in {seconds:.1f} s; output in {args.out} (the summary reads local output only)")
        return 0
    args.out = out_local
    summary = summarize_lines(read_manifest_lines(args.out))
    if args.table:
        try:
            code = write_table(plan, args, summary)
        except (OSError, ValueError, fex.BadRecordError) as e:
            print(f"error: --table {args.table}: {e}", file=sys.stderr)
            return EX_DATAERR
        if code:
            return code
    for line in summary.lines():
        print(line)
    print(f"took               {seconds:.1f} s; output in {args.out}")
    if args.summary_json:
        with open(args.summary_json, "w", encoding="utf-8") as f:
            json.dump(dict(summary.__dict__, seconds=seconds), f, indent=2)
    return 0


def write_table(plan, args, summary: Summary) -> int:
    import fex

    if len(summary.payloads) > 1:
        print(f"error: --table: the joined requests mix payloads {sorted(summary.payloads)}", file=sys.stderr)
        return EX_DATAERR
    payload = next(iter(summary.payloads), "batch")
    files = committed(os.path.join(args.out, "joined"))
    if not files:
        print(f"error: --table: no request was emitted, so there is no joined record in {args.out}", file=sys.stderr)
        return EX_DATAERR
    result = fex.run(plan, files, args.table, format=args.table_format, payload=payload)
    print(f"table              {result.rows_written} rows in {args.table}")
    return 0


def run_jvm(cmd, log_file: str) -> int:
    """Runs the job's JVM to its end and returns the exit status to give:
    the job's own (0, 64, 70; it prints its error), or 70 when the JVM
    died otherwise. A launcher stopped by SIGTERM or Ctrl-C stops the JVM
    too, within a bounded wait."""
    import shutil
    import tempfile

    # Flink's mini-cluster works in java.io.tmpdir (RocksDB's files, its
    # RPC jar, blobs) and leaves them there when the JVM exits: about 20 MB
    # a run. A directory of the run's own, removed once the JVM is gone.
    scratch = tempfile.mkdtemp(prefix="fex-nearline-")
    try:
        return wait_jvm([cmd[0], f"-Djava.io.tmpdir={scratch}", *cmd[1:]], log_file)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def wait_jvm(cmd, log_file: str) -> int:
    import signal
    import subprocess

    try:
        child = subprocess.Popen(cmd)
    except OSError as e:
        print(f"error: cannot start {cmd[0]}: {e}", file=sys.stderr)
        return EX_USAGE
    def interrupted(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupted)
    try:
        code = child.wait()
    except KeyboardInterrupt:
        child.terminate()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        print("error: stopped; restore from the last checkpoint with --restore", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    if code in (0, EX_USAGE, EX_UNAVAILABLE, EX_SOFTWARE):
        return code
    why = f"signal {-code}" if code < 0 else f"status {code}"
    print(f"error: the Flink job's JVM ended with {why}; its log: {log_file}", file=sys.stderr)
    return EX_SOFTWARE


if __name__ == "__main__":
    sys.exit(main())
