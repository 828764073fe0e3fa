#!/usr/bin/env python3
"""The incremental backfill's figures (issue 35): `fex backfill` of one new
output against `fex backfill` of every output of the same model, over the
same joined-request (Shitu) table, same process, same code path.

1. Generates the near-line tests' requests and actions (tests/nearline/data.py)
   and runs the near-line job over them with --iceberg, which fills the
   sample table and the Shitu table of tests/nearline/model.yaml.
2. Makes a model with one new output (`item_fids_again`, the item fids again)
   and a base table that has none of the model's outputs (so a backfill
   against it recomputes every output).
3. Times, interleaved and under the bench lock, `fex backfill` of the one new
   output and of every output, each into a fresh sidecar: wall seconds, CPU
   seconds of the process, bytes of data files written; and counts the
   sample table's data files before and after (none may change).

    target/venv-flink/bin/python scripts/backfill_bench.py --fex target/release/fex \\
        --users 400 --requests-per-user 100 --rounds 5 --lock target/bench.lock

Needs FEX_NEARLINE_JAR (or the source tree's flink/target build) as the
near-line job does."""

import argparse
import fcntl
import glob
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NEARLINE = os.path.join(ROOT, "tests", "nearline")
MODEL = os.path.join(NEARLINE, "model.yaml")


def run(cmd, lock=None):
    """Runs `cmd` (under `lock` if given): wall and child CPU seconds, stderr."""
    f = open(lock, "w") if lock else None
    try:
        if f:
            fcntl.flock(f, fcntl.LOCK_EX)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        if f:
            f.close()
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-4000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, p.stderr


def files(warehouse, table):
    ns, name = table.rsplit(".", 1)
    return sorted(glob.glob(os.path.join(warehouse, ns, name, "data", "**", "*.parquet"), recursive=True))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fex", default=os.path.join(ROOT, "target", "release", "fex"))
    ap.add_argument("--work", default=os.path.join(ROOT, "target", "bench-data", "backfill"))
    ap.add_argument("--users", type=int, default=400)
    ap.add_argument("--requests-per-user", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lock", help="a file to flock around each timed run")
    a = ap.parse_args()

    sys.path.insert(0, NEARLINE)
    import data

    work = os.path.abspath(a.work)
    warehouse = os.path.join(work, "warehouse")
    if not os.path.isdir(warehouse):
        reqs, acts = data.generate(seed=7, users=a.users, requests_per_user=a.requests_per_user)
        requests, actions = data.write_inputs(os.path.join(work, "in"), reqs, acts, files=8)
        env = dict(os.environ, FEX_CLI=a.fex)
        p = subprocess.run([sys.executable, "-m", "fex.nearline", "--config", MODEL, "--requests", requests,
                            "--actions", actions, "--out", os.path.join(work, "out"), "--quiet",
                            "--checkpoint-interval", "10s", "--iceberg", warehouse],
                           capture_output=True, text=True, env=env, timeout=3600)
        if p.returncode != 0:
            sys.exit(f"the near-line job exited {p.returncode}:\n{p.stderr[-4000:]}")
        print(p.stdout)

    text = open(MODEL).read()
    text = text.replace("file: ../", f"file: {os.path.dirname(NEARLINE)}/")
    text = text.replace("file: df.tsv", f"file: {os.path.join(NEARLINE, 'df.tsv')}")
    new_model = os.path.join(work, "new.yaml")
    with open(new_model, "w") as f:
        f.write(text.replace("  - {name: item_fids, kind: sparse}\n",
                             "  - {name: item_fids, kind: sparse}\n"
                             "  - {name: item_fids_again, kind: sparse, source: item_fids}\n", 1))
    # A base table with none of the model's outputs: a backfill against it recomputes all of them.
    empty_model = os.path.join(work, "empty.yaml")
    with open(empty_model, "w") as f:
        f.write("name: empty\nfeatures:\n  - {name: zz_nothing, kind: sparse}\n")
    subprocess.run([a.fex, "table", "create", "--model", empty_model, "-o", warehouse, "--table", "bench.empty_base"],
                   check=True, capture_output=True)

    base_before = files(warehouse, "fex.nearline_ranker_samples")
    shitu = "fex.nearline_ranker_shitu"
    results = {"one new output": [], "every output": []}
    for r in range(a.rounds):
        for label, base in (("one new output", "fex.nearline_ranker_samples"), ("every output", "bench.empty_base")):
            into = f"bench.{'one' if base.startswith('fex') else 'all'}_{os.getpid()}_{r}"
            wall, cpu, err = run([a.fex, "backfill", "--model", new_model, "-o", warehouse, "--shitu", shitu,
                                  "--base", base, "--into", into], a.lock)
            written = sum(os.path.getsize(p) for p in files(warehouse, into))
            results[label].append((wall, cpu, written, err.splitlines()[0]))
    base_after = files(warehouse, "fex.nearline_ranker_samples")
    joined = sum(os.path.getsize(p) for p in files(warehouse, shitu))

    print(f"Shitu table: {len(files(warehouse, shitu))} data file(s), {joined} bytes; "
          f"{results['one new output'][0][3]}")
    print()
    print("| backfill | wall s (median) | CPU s (median) | bytes written |")
    print("|---|---:|---:|---:|")
    med = {}
    for label, rs in results.items():
        med[label] = (statistics.median(x[0] for x in rs), statistics.median(x[1] for x in rs), rs[0][2])
        print(f"| {label} | {med[label][0]:.3f} | {med[label][1]:.3f} | {med[label][2]:,} |")
    one, every = med["one new output"], med["every output"]
    pairs = [o[0] / e[0] for o, e in zip(results["one new output"], results["every output"])]
    print()
    print(f"one new output / every output: wall {one[0] / every[0]:.3f} (pairs {', '.join(f'{p:.3f}' for p in pairs)}), "
          f"CPU {one[1] / every[1]:.3f}, bytes {one[2] / every[2]:.3f}")
    print(f"sample table data files rewritten or added: {len(set(base_after) ^ set(base_before))} "
          f"(of {len(base_before)})")


if __name__ == "__main__":
    main()
