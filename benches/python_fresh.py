"""A fresh Python process's `plan.extract_batch` against the Rust library's
steady state, on one ExampleBatch (benches/README.md, "Python package: a
fresh process").

Usage: python benches/python_fresh.py FILE [PROCESSES] [CALLS]
FILE: framed ExampleBatches (`fex-client gen`), the first one timed, with
the embedded default model. Each of PROCESSES new Python processes times
its first CALLS calls (each call's arrays dropped before the next, as a
caller that hands them on does); prints the median per process and the
median of those. Compare with `examples/steady_state.rs` on the same file.
"""

import statistics
import struct
import subprocess
import sys

CHILD = r"""
import statistics, struct, sys, time
import fex
data = open(sys.argv[1], "rb").read()
(n,) = struct.unpack_from("<Q", data, 0)
batch = data[8 : 8 + n]
plan = fex.Plan.default()
times = []
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    out = plan.extract_batch(batch)
    times.append(time.perf_counter() - start)
    del out
print(statistics.median(times))
"""


def main():
    path = sys.argv[1]
    processes = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    calls = sys.argv[3] if len(sys.argv) > 3 else "50"
    medians = []
    for _ in range(processes):
        out = subprocess.run([sys.executable, "-c", CHILD, path, calls], check=True, capture_output=True, text=True)
        medians.append(float(out.stdout))
    print("per process (us):", " ".join(f"{m * 1e6:.0f}" for m in medians))
    print(f"median of {processes} fresh processes, first {calls} calls each: {statistics.median(medians) * 1e6:.1f} us")


if __name__ == "__main__":
    main()
