#!/bin/bash
# `fex extract` with and without sample transforms (benches/README.md,
# "Offline", "With transforms (issue 21)"). Interleaved rounds; every timed
# run under `flock $FEX_BENCH_LOCK` (default /tmp/fex-bench.lock).
#
#   benches/offline_transforms.sh FILE ROUNDS [LABEL=FEX_BINARY ...]
#
# FILE: framed ExampleBatches of the default model (`fex-client gen`).
# Without LABEL=FEX_BINARY pairs, target/release/fex is "new". Each round
# runs, for every binary, format (arrow, parquet) and --threads (1, 2):
#   plain: models/default.yaml as it is (no transforms)
#   filter: the same model plus an `offline:` section with filter_by_label
#          alone (stateless: it runs on every worker)
#   tf:    the same model plus filter_by_label and negative_gen (below;
#          negative_gen runs in input order)
# in that order, all in the same round. Prints one line per run (records/s,
# MB/s, RSS KB, rows written), the transform counts of the first tf run, then
# medians over rounds of records/s and MB/s, of tf / plain (same binary,
# format, threads and round) and of 2 threads / 1 (same round).
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=$1 ROUNDS=$2
shift 2
BINS=("$@")
[ ${#BINS[@]} -gt 0 ] || BINS=("new=target/release/fex")
LOCKFILE=${FEX_BENCH_LOCK:-/tmp/fex-bench.lock}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
PLAIN=models/default.yaml
TF=$DIR/transforms.yaml
FILTER=$DIR/filter.yaml
cat "$PLAIN" > "$FILTER"
cat >> "$FILTER" <<'YAML'
offline:
  transforms:
    - {transform: filter_by_label, label_threshold: [-100.0]}
YAML
cat "$PLAIN" > "$TF"
cat >> "$TF" <<'YAML'
offline:
  transforms:
    - {transform: filter_by_label, label_threshold: [-100.0]}
    - {transform: negative_gen, neg_num: 1, item_features: [item_id, item_author, item_category, item_tags], start_num: 0, max_item_num: 10000}
YAML
LOG=$DIR/log
cat "$FILE" > /dev/null # into the page cache
for round in $(seq "$ROUNDS"); do
  for pair in "${BINS[@]}"; do
    label=${pair%%=*} bin=${pair#*=}
    for format in arrow parquet; do
      for threads in 1 2; do
        for model in plain filter tf; do
          m=$PLAIN
          [ $model = filter ] && m=$FILTER
          [ $model = tf ] && m=$TF
          out=$(flock "$LOCKFILE" /usr/bin/time -f "rss %M" "$bin" extract -m "$m" -o /dev/null \
            --format "$format" --threads "$threads" "$FILE" 2>&1)
          speed=$(echo "$out" | grep '^read ' | sed 's/.*: \([0-9]*\) records\/s, \([0-9.]*\) MB\/s.*/\1 \2/')
          rss=$(echo "$out" | grep '^rss ' | cut -d' ' -f2)
          rows=$(echo "$out" | grep '^rows written' | sed 's/rows written: \([0-9]*\).*/\1/')
          echo "$round $label-$format-$threads-$model $speed $rss $rows" | tee -a "$LOG"
          if [ $model = tf ] && [ ! -e "$DIR/counts-$label" ]; then
            echo "$out" | grep -v '^rss ' > "$DIR/counts-$label"
          fi
        done
      done
    done
  done
done
for f in "$DIR"/counts-*; do
  echo "== ${f##*/counts-} summary of a tf run:"
  cat "$f"
done
python3 - "$LOG" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    parts = line.split()
    runs[parts[1]][int(parts[0])] = [float(x) for x in parts[2:]]
med = statistics.median
def ratio(a, b):
    return med(v[0] / b[r][0] for r, v in a.items() if r in b)
print(f"\nmedians over {len(next(iter(runs.values())))} rounds (ratios within each round):")
print(f"{'run':26} {'records/s':>10} {'MB/s':>8} {'/plain':>8} {'2t/1t':>6} {'RSS MB':>7} {'rows':>10}")
for name, by_round in runs.items():
    label, fmt, threads, model = name.rsplit("-", 3)
    rec = med(v[0] for v in by_round.values())
    mb = med(v[1] for v in by_round.values())
    rss = med(v[2] for v in by_round.values()) / 1024
    rows = med(v[3] for v in by_round.values())
    share = ""
    if model != "plain":
        share = f"{ratio(by_round, runs[f'{label}-{fmt}-{threads}-plain']):.2f}"
    two = ""
    if threads == "2":
        two = f"{ratio(by_round, runs[f'{label}-{fmt}-1-{model}']):.2f}"
    print(f"{name:26} {rec:10.0f} {mb:8.1f} {share:>8} {two:>6} {rss:7.0f} {rows:10.0f}")
PY
