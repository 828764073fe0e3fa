"""The Python package's call overhead against the Rust library, on the same
bytes and models as benches/extract.rs (written out by FEX_BENCH_DUMP).

Usage: python benches/python_overhead.py DUMP_DIR
Prints, per case, the median time of `plan.extract_batch(data)` and of the
same call followed by a numpy view of every output's values (what a caller
feeding a model does); compare with the Rust bench's `fex_fresh_<case>`
(a new Extracted per call) and `fex_<case>` (buffers reused) of the same run.
"""

import os
import statistics
import sys
import time

import fex

REPEATS = 15


def median_per_call(fn, calls):
    for _ in range(max(3, calls // 10)):
        fn()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times)


def main():
    d = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cases = [
        ("ranking/100pct", fex.Plan.from_yaml(os.path.join(d, "ranking_100pct.yaml")), os.path.join(d, "ranking.pb"), 200),
        ("ranking/20pct", fex.Plan.from_yaml(os.path.join(d, "ranking_20pct.yaml")), os.path.join(d, "ranking.pb"), 400),
        ("server/default", fex.Plan.default(), os.path.join(root, "benches", "data", "default_b256.pb"), 1000),
    ]
    print("| case | extract_batch | + numpy view of every output |")
    print("|---|---:|---:|")
    for name, plan, path, calls in cases:
        data = open(path, "rb").read()

        def call():
            return plan.extract_batch(data)

        def call_and_view():
            return [c.values for c in plan.extract_batch(data).values()]

        a = median_per_call(call, calls)
        b = median_per_call(call_and_view, calls)
        print(f"| {name} | {a * 1e6:.1f} µs | {b * 1e6:.1f} µs |")


if __name__ == "__main__":
    main()
