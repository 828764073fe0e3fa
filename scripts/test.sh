#!/usr/bin/env bash
# The whole test suite, from a fresh clone: what `.ci/run` runs.
# Installs what the tests need, then runs every test of every crate.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null; then
    echo "cargo is required (https://rustup.rs)" >&2
    exit 1
fi

# Formatting is part of the contract: fail early and cheaply.
cargo fmt --all -- --check

# Unit, integration, property and doc tests of the library, server and client;
# `--all-targets` also builds the benches and runs each once as a smoke test.
cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked
