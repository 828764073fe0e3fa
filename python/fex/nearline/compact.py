"""Compaction of a table the near-line job writes to (``--iceberg``):
Iceberg's own ``rewriteDataFiles`` action (its Flink implementation, in
fex's jar's ``fex.nearline.Compact``) bins each partition's small files,
a few per checkpoint, into files of ``--target-file-size`` bytes; with
``--expire-older-than``, snapshots older than that are expired (the last
one kept). Iceberg deletes the files the expired snapshots removed; the
files this rewrite replaced go when its own snapshot expires, at a later
run.

    python -m fex.nearline.compact --iceberg warehouse/ --table fex.ranker_samples --expire-older-than 1h

Exit status: 0 done, 64 arguments or a missing table, 69 an unreachable
catalog, 70 the rewrite failed."""

import argparse
import os
import subprocess
import sys
import tempfile

from .__main__ import EX_USAGE, duration_ms, warehouse_arg


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fex.nearline.compact", description=__doc__.split("\n\n")[0])
    p.add_argument("--iceberg", required=True, metavar="WAREHOUSE", help="the warehouse the job writes")
    p.add_argument("--table", required=True, metavar="NS.NAME", help="the table to compact")
    p.add_argument("--iceberg-catalog", metavar="URI", help="the catalog (default: catalog.db in the warehouse)")
    p.add_argument("--iceberg-property", action="append", default=[], metavar="KEY=VALUE",
                   help="a catalog or file-IO property (repeatable), as the job takes it")
    p.add_argument("--target-file-size", type=int, default=128 << 20, metavar="BYTES",
                   help="the size of the files written (default 128 MiB)")
    p.add_argument("--expire-older-than", type=duration_ms, metavar="DURATION",
                   help="then expire snapshots older than this (e.g. 1h, 0s for all but the last)")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    from . import job

    cmd_args = ["--iceberg-warehouse", warehouse_arg(args.iceberg), "--iceberg-table", args.table,
                "--target-file-bytes", str(args.target_file_size)]
    if args.iceberg_catalog:
        cmd_args += ["--iceberg-catalog", args.iceberg_catalog]
    for kv in args.iceberg_property:
        cmd_args += ["--iceberg-property", kv]
    if args.expire_older_than is not None:
        cmd_args += ["--expire-older-than-ms", str(args.expire_older_than)]
    scratch = tempfile.mkdtemp(prefix="fex-compact-")
    try:
        cmd = job.command(cmd_args, log_file=os.path.join(scratch, "flink.log"), jars=job.iceberg_jars(),
                          main="fex.nearline.Compact")
    except (OSError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EX_USAGE
    try:
        return subprocess.run([cmd[0], f"-Djava.io.tmpdir={scratch}", *cmd[1:]], timeout=3600).returncode
    finally:
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
