#!/bin/bash
# `fex extract` against the library in memory (benches/README.md, "Offline").
# Interleaved rounds; each timed run under the exclusive lock when it exists.
#
#   benches/offline.sh FILE ROUNDS [LABEL=FEX_BINARY ...]
#
# FILE: framed ExampleBatches of the default model (`fex-client gen`).
# Without LABEL=FEX_BINARY pairs, target/release/fex is "new". Prints one
# line per run, then medians: records/s, MB/s, ratio to the in-memory
# baseline (cli/examples/in_memory.rs, 2,000 records, one thread: extraction
# into Arrow batches), for Parquet also the ratio to the same baseline
# writing Parquet (`in_memory ... parquet`: the library's Parquet sink, in
# memory, no file, no pipeline), and the 2-thread / 1-thread speed-up, each
# from the same round.
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=$1 ROUNDS=$2
shift 2
BINS=("$@")
[ ${#BINS[@]} -gt 0 ] || BINS=("new=target/release/fex")
MODEL=models/default.yaml
LOCK=()
[ -x /work/locks/run ] && LOCK=(/work/locks/run -x)
LOG=$(mktemp)
cat "$FILE" > /dev/null # into the page cache
for round in $(seq "$ROUNDS"); do
  for mode in "" parquet; do
    line=$("${LOCK[@]}" target/release/examples/in_memory "$MODEL" "$FILE" 2000 $mode)
    echo "$round in_memory${mode:+_$mode} $(echo "$line" | sed 's/.*: \([0-9]*\) records\/s, \([0-9.]*\) MB\/s.*/\1 \2/')" | tee -a "$LOG"
  done
  for pair in "${BINS[@]}"; do
    label=${pair%%=*} bin=${pair#*=}
    for format in parquet arrow responses; do
      for threads in 1 2; do
        out=$("${LOCK[@]}" /usr/bin/time -f "rss %M" "$bin" extract -m "$MODEL" -o /dev/null --format "$format" \
          --threads "$threads" "$FILE" 2>&1)
        speed=$(echo "$out" | grep '^read ' | sed 's/.*: \([0-9]*\) records\/s, \([0-9.]*\) MB\/s.*/\1 \2/')
        rss=$(echo "$out" | grep '^rss ' | cut -d' ' -f2)
        echo "$round $label-$format-$threads $speed $rss" | tee -a "$LOG"
      done
    done
  done
done
python3 - "$LOG" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    parts = line.split()
    runs[parts[1]][int(parts[0])] = [float(x) for x in parts[2:]]
base = runs.pop("in_memory")
base_pq = runs.pop("in_memory_parquet")
print("\nmedians over rounds (ratios within each round):")
print(f"{'run':28} {'records/s':>10} {'MB/s':>8} {'vs mem':>7} {'vs pq':>6} {'2t/1t':>6} {'RSS MB':>7}")
for name, b in (("in_memory", base), ("in_memory_parquet", base_pq)):
    print(f"{name:28} {statistics.median(v[0] for v in b.values()):10.0f} {statistics.median(v[1] for v in b.values()):8.1f}")
for name, by_round in runs.items():
    rec = statistics.median(v[0] for v in by_round.values())
    mb = statistics.median(v[1] for v in by_round.values())
    vs = statistics.median(v[0] / base[r][0] for r, v in by_round.items())
    rss = statistics.median(v[2] for v in by_round.values()) / 1024
    pq = ""
    if "-parquet-" in name:
        pq = f"{statistics.median(v[0] / base_pq[r][0] for r, v in by_round.items()):.2f}"
    two = ""
    if name.endswith("-2"):
        one = runs[name[:-2] + "-1"]
        two = f"{statistics.median(v[0] / one[r][0] for r, v in by_round.items()):.2f}"
    print(f"{name:28} {rec:10.0f} {mb:8.1f} {vs:7.2f} {pq:>6} {two:>6} {rss:7.0f}")
PY
rm -f "$LOG"
