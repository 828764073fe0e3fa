#!/bin/bash
# `fex extract` into an Iceberg table against `fex extract` into a Parquet
# file, same input, same --threads (benches/README.md, "Iceberg sample
# table"). Interleaved rounds; every timed run under `flock $FEX_BENCH_LOCK`
# (default /tmp/fex-bench.lock).
#
#   benches/iceberg.sh FILE ROUNDS [FEX_BINARY]
#
# FILE: framed ExampleBatches of the default model (`fex-client gen`).
# Each round runs, for --threads 1 and 2: Parquet into a file on the same
# disk, then Iceberg into a fresh warehouse (the table created, the files
# written, the commit made: the whole process, start to exit), partitioned
# by day (the default), then unpartitioned (`--partition-by none`). Prints every
# run's wall and CPU seconds, then the medians over rounds of Iceberg's
# throughput as a share of Parquet's (Parquet's wall time / Iceberg's, pair
# by pair within a round).
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=$1 ROUNDS=$2 BIN=${3:-target/release/fex}
LOCKFILE=${FEX_BENCH_LOCK:-/tmp/fex-bench.lock}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
MODEL=models/default.yaml
LOG=$DIR/log
cat "$FILE" > /dev/null # into the page cache
run() { # label threads args...
  local label=$1 threads=$2
  shift 2
  local t
  t=$(flock "$LOCKFILE" /usr/bin/time -f "%e %U %S" "$BIN" extract -q -m "$MODEL" --threads "$threads" "$@" "$FILE" 2>&1 | tail -1)
  read -r wall user sys <<<"$t"
  cpu=$(echo "$user + $sys" | bc)
  echo "$round $label $threads $wall $cpu" | tee -a "$LOG"
}
echo "round format threads wall_s cpu_s"
for round in $(seq "$ROUNDS"); do
  for threads in 1 2; do
    rm -f "$DIR/out.parquet"
    run parquet "$threads" -o "$DIR/out.parquet"
    rm -rf "$DIR/wh"
    run iceberg "$threads" --format iceberg -o "$DIR/wh"
    rm -rf "$DIR/wh"
    run unpartitioned "$threads" --format iceberg --partition-by none -o "$DIR/wh"
  done
done
python3 - "$LOG" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    r, label, threads, wall, cpu = line.split()
    runs[(int(r), label, int(threads))] = (float(wall), float(cpu))
rounds = sorted({k[0] for k in runs})
for threads in (1, 2):
    for label in ("parquet", "iceberg", "unpartitioned"):
        walls = [runs[(r, label, threads)][0] for r in rounds]
        cpus = [runs[(r, label, threads)][1] for r in rounds]
        print(f"{threads} thread(s) {label}: median wall {statistics.median(walls):.2f} s, cpu {statistics.median(cpus):.2f} s")
    for label in ("iceberg", "unpartitioned"):
        ratios = [runs[(r, "parquet", threads)][0] / runs[(r, label, threads)][0] for r in rounds]
        print(f"{threads} thread(s) {label} / parquet throughput: median {statistics.median(ratios):.3f} ({', '.join(f'{x:.3f}' for x in ratios)})")
PY
