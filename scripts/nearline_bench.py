#!/usr/bin/env python3
"""Throughput of the near-line label join (python -m fex.nearline, a local
Flink mini-cluster) against `fex extract` on the same joined records.

Generates request logs and actions (tests/nearline/data.py, more rows per
request), runs the job in batch and streaming mode with 1 and 2 task
slots, then `fex extract --format responses` over the job's joined output,
and prints per run: wall time, CPU seconds of the whole process tree (the
Python client, the JVM, the Python workers), joined rows per second and
per CPU second, and the tree's peak RSS. Run it from the repository with
the venv that has fex and apache-flink (scripts/test.sh makes
target/venv-flink):

    cargo build --release -p fex-cli
    flock target/bench.lock target/venv-flink/bin/python scripts/nearline_bench.py \\
        --fex target/release/fex --users 400 --requests-per-user 50
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "nearline"))
import data  # noqa: E402

MODEL = os.path.join(ROOT, "tests", "nearline", "model.yaml")
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def tree(root: int):
    """The pids of root and its descendants, from /proc."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(name))
        except OSError:
            continue
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def sample(pids):
    """(cpu seconds, rss bytes) per pid that is still there."""
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu = (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / TICK
            with open(f"/proc/{pid}/statm") as f:
                rss = int(f.read().split()[1]) * PAGE
            out[pid] = (cpu, rss)
        except OSError:
            continue
    return out


def measured(cmd):
    """Runs cmd, sampling its process tree every 100 ms: wall seconds, CPU
    seconds (each process's last sample, children's waited-for time
    included), peak RSS of the tree."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    last, peak = {}, 0
    while p.poll() is None:
        now = sample(tree(p.pid))
        for pid, (cpu, _) in now.items():
            last[pid] = max(cpu, last.get(pid, (0, 0))[0]), 0
        peak = max(peak, sum(rss for _, rss in now.values()))
        time.sleep(0.1)
    wall = time.monotonic() - started
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{err[-4000:]}")
    # Samples miss a process's last 100 ms; rusage misses children their
    # parent never waited for (PyFlink's JVM): the larger of the two.
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    reaped = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    cpu = max(reaped, sum(c for c, _ in last.values()))
    return wall, cpu, peak, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fex", default=os.path.join(ROOT, "target", "release", "fex"))
    ap.add_argument("--users", type=int, default=400)
    ap.add_argument("--requests-per-user", type=int, default=50)
    ap.add_argument("--rows", type=int, nargs=2, default=[20, 41], metavar=("MIN", "MAX"), help="rows per request")
    ap.add_argument("--slots", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--modes", nargs="+", default=["batch", "streaming"])
    ap.add_argument("--keep", help="keep the data and outputs here")
    args = ap.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="fex-nearline-bench-")
    reqs, acts = data.generate(seed=7, users=args.users, requests_per_user=args.requests_per_user, rows=tuple(args.rows))
    requests, actions = data.write_inputs(os.path.join(work, "in"), reqs, acts, files=8)
    rows = sum(len(r["items"]) for r in reqs)
    print(f"{len(reqs)} requests, {rows} rows, {len(acts)} actions; "
          f"{sum(os.path.getsize(os.path.join(requests, f)) for f in os.listdir(requests)) / 1e6:.1f} MB of request logs")
    results = []
    for mode in args.modes:
        for slots in args.slots:
            out = os.path.join(work, f"out-{mode}-{slots}")
            cmd = [sys.executable, "-m", "fex.nearline", "--config", MODEL, "--requests", requests,
                   "--actions", actions, "--out", out, "--quiet", "--parallelism", str(slots),
                   "--summary-json", out + ".json"]
            if mode == "batch":
                cmd.append("--batch")
            wall, cpu, peak, _ = measured(cmd)
            summary = json.load(open(out + ".json"))
            emitted = summary["rows_emitted"]
            results.append((f"flink {mode}, {slots} slot{'s' if slots > 1 else ''}", wall, cpu, peak, emitted))
    # fex extract on the same joined records, one thread.
    joined_out = os.path.join(work, f"out-{args.modes[0]}-{args.slots[0]}", "joined")
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(joined_out) for f in fs if not f.startswith("."))
    wall, cpu, peak, _ = measured([args.fex, "extract", *files, "--model", MODEL, "--format", "responses",
                                   "--threads", "1", "--output", os.path.join(work, "extract.responses")])
    results.append(("fex extract, 1 thread", wall, cpu, peak, rows))
    print(f"{'run':<28} {'wall s':>8} {'cpu s':>8} {'rows/s':>10} {'rows/cpu-s':>11} {'peak RSS MB':>12}")
    for name, wall, cpu, peak, n in results:
        print(f"{name:<28} {wall:8.1f} {cpu:8.1f} {n / wall:10.0f} {n / cpu:11.0f} {peak / 1e6:12.0f}")
    if not args.keep:
        print(f"(data and outputs in {work}; removed)")
        import shutil

        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
