#!/usr/bin/env bash
# NVIDIA Triton on this machine, serving the ranker fex's examples/triton/
# ranker.yaml forwards to (tests/triton/ranker.py), on 127.0.0.1:8001 (or
# the port given) until Ctrl-C. Triton is the tritonserver binary the
# nvidia-pytriton wheel bundles (CPU, python backend), installed once into
# target/venv-triton by scripts/python_env.sh, as the test suite does.
#
#   bash scripts/triton_local.sh [PORT]
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${1:-8001}"
. scripts/python_env.sh
FEX_TEST_VENV=target/venv-triton fex_python_env tests/triton/requirements.txt
exec "$PY" - "$PORT" <<'PYTHON'
import os, signal, sys, tempfile
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "triton"))
import model_repository
from tritonserver import Triton

port = int(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp, Triton(model_repository.write(tmp), port=port) as triton:
    print(f"Triton ready on {triton.grpc_url}, model {model_repository.MODEL!r}; Ctrl-C stops it", flush=True)
    stop = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)
    signal.sigwait(stop)
PYTHON
