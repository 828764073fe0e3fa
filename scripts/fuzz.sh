#!/usr/bin/env bash
# Fuzzes fex's decoders on the stable toolchain: writes the seed corpus, then
# runs each cargo-fuzz target for SECONDS (default 30).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: decode_batch decode_examples
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
    echo "== $target: ${seconds}s"
    # New inputs go to corpus/TARGET (kept between runs); seeds/ is read only.
    cargo fuzz run -s none "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1
done
