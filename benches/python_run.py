"""fex.run (the offline pipeline from Python) against `fex extract` (the
command) on the same file, model, format and threads: records per second,
median of 5 runs each (alternating), and the ratio. Both run `fex::offline::run`; the
difference is what the binding adds (argument handling, the result) and
process start-up.

Usage: python benches/python_run.py FEX_BINARY MODEL_YAML FRAMED_FILE [THREADS...]
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

import fex


def timed(call):
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def medians(a, b, repeats=5):
    """Median times of `a` and `b`, run alternately (drift hits both)."""
    ta, tb = [], []
    for _ in range(repeats):
        ta.append(timed(a))
        tb.append(timed(b))
    return statistics.median(ta), statistics.median(tb)


def main():
    binary, model, path = sys.argv[1:4]
    threads = [int(t) for t in sys.argv[4:]] or [1, 2]
    plan = fex.Plan.from_yaml(model)
    records = sum(1 for _ in fex.read_records(path))
    print(f"{records} records, {os.path.getsize(path) / 1e6:.1f} MB")
    print("| format | threads | `fex extract` records/s | `fex.run` records/s | fex.run / fex extract |")
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out")
        for fmt in ["responses", "parquet"]:
            for t in threads:
                cmd = [binary, "extract", "-q", "-m", model, "--format", fmt, "--threads", str(t), "-o", out, path]
                cli, py = medians(
                    lambda: subprocess.run(cmd, check=True),
                    lambda: fex.run(plan, path, out, format=fmt, threads=t),
                )
                print(f"| {fmt} | {t} | {records / cli:,.0f} | {records / py:,.0f} | {cli / py:.2f} |")


if __name__ == "__main__":
    main()
