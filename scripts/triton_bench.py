#!/usr/bin/env python3
"""fex in front of a model server, measured: a real Triton (the nvidia-pytriton
wheel's tritonserver, CPU, python backend) serving the ranker of
tests/triton/ranker.py, and release fex-server and fex-client, all on this
machine and on 127.0.0.1. The same request file (`fex-client gen`, default
model) is sent in interleaved rounds, closed loop, by four paths:

  relay    caller -> fex (fex.v1 Extract of the ranker's outputs), then the
           caller re-encodes them as the ranker's inputs and calls Triton
           (case (a): what a recommend service does today);
  forward  caller -> fex (v2 ModelInfer on examples/triton/ranker.yaml)
           -> Triton (case (b): fex forwards its own buffers);
  v1       caller -> fex, extraction alone (fex.v1, the default model);
  v2       caller -> fex, extraction alone (v2 ModelInfer, the default model).

Prints one markdown row per run, then the medians and the ratios the README
quotes. Beside latency and throughput, each run's CPU time per request is
summed over every process that served it (fex-server, tritonserver with its
python backend stubs, fex-client): on a 2-core machine where all of them
share the cores, it is the steadier measure of what a path costs. Runs with target/venv-triton's python (scripts/test.sh makes it):

    flock target/bench.lock target/venv-triton/bin/python scripts/triton_bench.py \
        --rounds 3 --duration 20s --concurrency 8

Every process binds 127.0.0.1, every run is bounded by --duration, and the
script stops Triton and fex-server itself.
"""

import argparse
import json
import resource
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "triton"))

import model_repository  # noqa: E402
from tritonserver import Triton  # noqa: E402

SERVER = os.path.join(ROOT, "target/release/fex-server")
CLIENT = os.path.join(ROOT, "target/release/fex-client")
RANKER = os.path.join(ROOT, "examples/triton/ranker.yaml")


def start_fex(models, server_args):
    args = [SERVER, "--listen-addr", "127.0.0.1:0", "--metrics-addr", "off", "--log-format", "json"]
    args += ["--models", models, "--reload-interval", "0s", *server_args]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    timer = threading.Timer(30, proc.kill)
    timer.start()
    for line in proc.stderr:
        fields = json.loads(line).get("fields", {})
        if fields.get("message") == "fex-server listening":
            timer.cancel()
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, fields["addr"]
    timer.cancel()
    raise RuntimeError("fex-server exited before listening")


TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pgid=None, pid=None):
    """User + system CPU of one process, or of every process in a group."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if (pid is not None and int(entry) == pid) or (pgid is not None and int(fields[2]) == pgid):
            total += int(fields[11]) + int(fields[12])
    return total / TICKS


def bench(addr, requests, path, ranker_config, opts, servers):
    """One run; `servers` are (pid, pgid) pairs whose CPU the run is charged."""
    args = [CLIENT, "bench", "--addr", addr, "--file", requests, "--output", "json"]
    # No warm-up: every request the servers' CPU counts is a measured one.
    args += ["--concurrency", str(opts.concurrency), "--duration", opts.duration, "--warmup", "0s"]
    args += ["--connections", str(opts.connections)]
    args += {
        "relay": ["--protocol", "relay", "--model", "default", "--model-config", ranker_config],
        "forward": ["--protocol", "v2", "--model", "ranker"],
        "v1": ["--protocol", "v1", "--model", "default"],
        "v2": ["--protocol", "v2", "--model", "default"],
    }[path]
    before = [cpu_seconds(pid=pid, pgid=pgid) for pid, pgid in servers]
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    timer = threading.Timer(600, proc.kill)
    timer.start()
    stdout, stderr = proc.communicate()
    timer.cancel()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{path}: fex-client failed: {stderr}")
    time.sleep(0.2)  # the servers finish the last calls' bookkeeping
    report = json.loads(stdout)
    client_cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    served = [cpu_seconds(pid=pid, pgid=pgid) - b for (pid, pgid), b in zip(servers, before)]
    per_request = [s / max(report["requests"], 1) * 1e6 for s in [*served, client_cpu]]
    report["cpu_us_per_request"] = sum(per_request)
    report["cpu_split"] = "/".join(f"{x:.0f}" for x in per_request)
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", default="20s")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--paths", default="relay,forward,v1,v2")
    parser.add_argument("--server-args", default="", help="more fex-server flags, as one string")
    opts = parser.parse_args()
    for binary in (SERVER, CLIENT):
        if not os.path.exists(binary):
            sys.exit(f"{binary} is missing: cargo build --release -p fex-server -p fex-client")
    paths = opts.paths.split(",")
    with tempfile.TemporaryDirectory() as tmp, Triton(model_repository.write(os.path.join(tmp, "repo"))) as triton:
        models = os.path.join(tmp, "models")
        os.makedirs(models)
        shutil.copy(os.path.join(ROOT, "models/default.yaml"), models)
        ranker_config = os.path.join(models, "ranker.yaml")
        with open(RANKER) as f:
            text = f.read().replace("http://127.0.0.1:8001", f"http://{triton.grpc_url}")
        with open(ranker_config, "w") as f:
            f.write(text)
        requests = os.path.join(tmp, "requests.bin")
        gen = [CLIENT, "gen", "--count", "32", "--batch-size", str(opts.batch_size), "--out", requests]
        subprocess.run(gen, check=True, capture_output=True)
        fex, addr = start_fex(models, opts.server_args.split())
        try:
            runs = {p: [] for p in paths}
            servers = [(fex.pid, None), (None, triton.process.pid)]
            print("| round | path | OK/s | p50 ms | p99 ms | p99.9 ms | CPU µs/request | fex/Triton/client | errors |")
            print("|---:|---|---:|---:|---:|---:|---:|---|---:|")
            for r in range(opts.rounds):
                for p in paths:
                    report = bench(addr, requests, p, ranker_config, opts, servers)
                    runs[p].append(report)
                    lat = report["latency_ms"]
                    row = f"| {r + 1} | {p} | {report['throughput']:.0f} | {lat['p50']:.2f} | {lat['p99']:.2f}"
                    cpu = report["cpu_us_per_request"]
                    split = report["cpu_split"]
                    print(f"{row} | {lat['p999']:.2f} | {cpu:.0f} | {split} | {report['errors']} |", flush=True)
        finally:
            fex.terminate()
            fex.wait(30)
    def value(report, key):
        return report["latency_ms"][key] if key in report["latency_ms"] else report[key]

    keys = ("throughput", "p50", "p99", "p999", "cpu_us_per_request")
    median = {p: {k: statistics.median(value(r, k) for r in rs) for k in keys} for p, rs in runs.items()}
    print("\n| path | OK/s | p50 ms | p99 ms | p99.9 ms | CPU µs/request |")
    print("|---|---:|---:|---:|---:|---:|")
    for p, m in median.items():
        row = f"| {p} | {m['throughput']:.0f} | {m['p50']:.2f} | {m['p99']:.2f} | {m['p999']:.2f}"
        print(f"{row} | {m['cpu_us_per_request']:.0f} |")
    for name, a, b in (("forward / relay", "relay", "forward"), ("v2 / v1 (extraction alone)", "v1", "v2")):
        if a in median and b in median:
            x, y = median[a], median[b]
            ratios = ", ".join(f"{k} {y[k] / x[k]:.3f}x" for k in ("throughput", "p99", "cpu_us_per_request"))
            print(f"{name}: {ratios}")


if __name__ == "__main__":
    main()
