#!/usr/bin/env bash
# Regenerates the committed seed corpus of the decode_batch fuzz target,
# fuzz/seed-corpus/decode_batch/: realistic ranking requests for the embedded
# default model written by `fex-client gen` (fixed seeds, so the files only
# change when the generator does), one serialized ExampleBatch per file. From
# one candidate to 64 (24 KB), with zipf fids, SHARED user features, noise
# lists the model does not read, and long fid lists. scripts/fuzz.sh reads
# these with -max_len 256 KiB, so mutations can grow past a typical
# 256-candidate request (~90 KB); a 256-candidate seed is left out because it
# cut executions per second by 3.5x (212/s against 749/s, 30 s runs).
# examples/seeds.rs turns rows of one into Examples for decode_examples. Keep
# the whole corpus under a few hundred KB.
#
#   scripts/fuzz_corpus.sh
set -euo pipefail
cd "$(dirname "$0")/.."

out=fuzz/seed-corpus/decode_batch
cargo build --quiet --locked -p fex-client
gen=target/debug/fex-client
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$out"
mkdir -p "$out"

# name, then `fex-client gen` flags for one request.
while read -r name flags; do
    # shellcheck disable=SC2086
    "$gen" gen --count 1 --out "$tmp/$name.bin" $flags 2>/dev/null
    # A framed record is a u64 little-endian length, then the ExampleBatch.
    tail -c +9 "$tmp/$name.bin" >"$out/$name"
done <<'LIST'
default_b1 --batch-size 1 --seed 1
default_b4_long --batch-size 4 --list-len 20..60 --seed 2
default_b8 --batch-size 8 --seed 3
default_b16_noise --batch-size 16 --noise-lists 40 --seed 4
default_b32_flat --batch-size 32 --zipf 0.5 --vocab 100 --seed 5
default_b64 --batch-size 64 --seed 6
LIST
du -b "$out"/* | sort -n
echo "total $(cat "$out"/* | wc -c) bytes in $out"
