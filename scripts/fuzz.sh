#!/usr/bin/env bash
# Fuzzes fex's decoders on the stable toolchain: writes the generated seeds,
# then runs each cargo-fuzz target for SECONDS (default 30), a bounded run.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: decode_batch decode_examples
#
# What the fuzzer starts from:
# - fuzz/seed-corpus/TARGET/ (committed): realistic requests from
#   `fex-client gen`, 1 to 64 candidates, up to 34 KB (scripts/fuzz_corpus.sh
#   regenerates them);
# - fuzz/seeds/TARGET/ (written each run by examples/seeds.rs): small valid
#   samples using every name the fuzz plans read, odd encodings, and rows of a
#   realistic batch as Examples;
# - fuzz/corpus/TARGET/ (kept between runs, not committed): what it found.
# -dict=dict/fex.dict gives it the feature names, field keys and edge varints;
# -max_len (FEX_FUZZ_MAX_LEN, default 262144) lets inputs grow to realistic
# sizes (libFuzzer's default is 4096, below a typical request).
#
# `-s none` is what makes this work on stable: cargo-fuzz's default sanitizer
# (address) passes -Zsanitizer=address, which only nightly rustc accepts. The
# coverage instrumentation itself (-Cpasses=sancov-module, -Cllvm-args=...) is
# stable. A crash stops the script with cargo-fuzz's report; the input is left
# in fuzz/artifacts/TARGET/ and `cargo fuzz tmin -s none TARGET FILE` shrinks it.
# Not part of scripts/test.sh: fuzzing is open-ended. Inputs that once crashed
# are kept as ordinary tests in tests/fuzz_regressions.rs.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${1:-30}"
shift || true
max_len="${FEX_FUZZ_MAX_LEN:-262144}"
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(decode_batch decode_examples)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

# Valid samples that use every name the fuzz plans read (examples/seeds.rs).
cargo run --quiet --example seeds -- seeds

for target in "${targets[@]}"; do
    mkdir -p "corpus/$target"
    dirs=("corpus/$target" "seeds/$target")
    if [ -d "seed-corpus/$target" ]; then
        dirs+=("seed-corpus/$target")
    fi
    # Compiling is unbounded; the run is bounded by -max_total_time, and by
    # `timeout` should libFuzzer itself hang. -timeout: one input may take
    # at most 25 s before it counts as a hang.
    cargo fuzz build -s none "$target"
    echo "== $target: ${seconds}s, -max_len=$max_len"
    # New inputs go to corpus/TARGET (the first directory); the others are read.
    timeout --kill-after=30s "$((seconds + 120))s" \
        cargo fuzz run -s none "$target" "${dirs[@]}" -- \
        -max_total_time="$seconds" -max_len="$max_len" -dict=dict/fex.dict -timeout=25 -print_final_stats=1
done
