#!/usr/bin/env python3
"""Small files of a streaming Iceberg table, and the compaction the book
recommends (benches/README.md, "The near-line job into Iceberg tables").

Runs the near-line job in streaming mode over the near-line bench's data
(scripts/nearline_bench.py's generator) with `--iceberg`, throttled to
`--max-rate` events per second per input so that it spans many checkpoints
of `--checkpoint-interval`; then counts each table's snapshots and live data
files, runs `python -m fex.nearline.compact` on each and counts again.
Files per commit times commits per hour gives an hour's small files at a
checkpoint interval (the job commits once per checkpoint that had rows).

    target/venv-flink/bin/python scripts/iceberg_files_bench.py --fex target/release/fex \\
        --users 100 --max-rate 400 --checkpoint-interval 1s --lock target/bench.lock
"""

import argparse
import contextlib
import fcntl
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "nearline"))
import data  # noqa: E402

MODEL = os.path.join(ROOT, "tests", "nearline", "model.yaml")
TABLES = {"samples": "fex.nearline_ranker_samples", "shitu": "fex.nearline_ranker_shitu"}


def seconds(text):
    for unit, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * scale
    raise SystemExit(f"--checkpoint-interval {text!r}: give it as 500ms, 1s or 1m")


def counts(warehouse, name):
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("fex", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
    table = catalog.load_table(name)
    files = list(table.scan().plan_files())
    partitions = {os.path.dirname(t.file.file_path) for t in files}
    rows = sum(t.file.record_count for t in files)
    return len(table.snapshots()), len(files), len(partitions), rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fex", default=os.path.join(ROOT, "target", "release", "fex"))
    ap.add_argument("--users", type=int, default=100)
    ap.add_argument("--requests-per-user", type=int, default=50)
    ap.add_argument("--max-rate", type=int, default=400, help="events per second per input")
    ap.add_argument("--checkpoint-interval", default="1s")
    ap.add_argument("--lock", help="flock this file around the runs (the bench lock)")
    ap.add_argument("--keep", help="keep the data and tables here")
    args = ap.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="fex-iceberg-files-")
    reqs, acts = data.generate(seed=7, users=args.users, requests_per_user=args.requests_per_user, rows=(20, 41))
    requests, actions = data.write_inputs(os.path.join(work, "in"), reqs, acts, files=8)
    warehouse = os.path.join(work, "warehouse")
    env = dict(os.environ, FEX_CLI=args.fex)
    cmd = [sys.executable, "-m", "fex.nearline", "--config", MODEL, "--requests", requests, "--actions", actions,
           "--out", os.path.join(work, "out"), "--quiet", "--checkpoint-interval", args.checkpoint_interval,
           "--max-rate", str(args.max_rate), "--iceberg", warehouse]
    lock = open(args.lock, "w") if args.lock else contextlib.nullcontext()
    with lock:
        if args.lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
        started = time.monotonic()
        subprocess.run(cmd, check=True, env=env)
        wall = time.monotonic() - started
        print(f"{len(reqs)} requests, {sum(len(r['items']) for r in reqs)} rows; the job ran {wall:.1f} s "
              f"with {args.checkpoint_interval} checkpoints (about {wall / seconds(args.checkpoint_interval):.0f})")
        print(f"{'table':<8} {'snapshots':>9} {'files':>6} {'partitions':>10} {'rows':>8} {'files/commit':>12} "
              f"{'files/hour at 10 s':>18} {'compact s':>9} {'files after':>11}")
        for key, name in TABLES.items():
            snapshots, files, partitions, rows = counts(warehouse, name)
            per_commit = files / max(snapshots, 1)
            t = time.monotonic()
            subprocess.run([sys.executable, "-m", "fex.nearline.compact", "--iceberg", warehouse, "--table", name,
                            "--expire-older-than", "0s"], check=True, env=env, stdout=subprocess.DEVNULL)
            compact = time.monotonic() - t
            _, after, _, rows_after = counts(warehouse, name)
            assert rows_after == rows, f"{name}: {rows} rows before compaction, {rows_after} after"
            print(f"{key:<8} {snapshots:>9} {files:>6} {partitions:>10} {rows:>8} {per_commit:>12.2f} "
                  f"{per_commit * 360:>18.0f} {compact:>9.1f} {after:>11}")


if __name__ == "__main__":
    main()
