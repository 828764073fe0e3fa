#!/usr/bin/env python3
"""End-to-end benchmark: release fex-server and fex-client on this machine.

For the default model and a "floor" model that selects no features (the gRPC
and framework cost alone), runs fex-client bench at several open-loop rates
and one closed-loop run, and records throughput, latency percentiles and the
server's peak RSS during each run (VmHWM of a fresh server process per run). Prints a markdown table for benches/README.md.

Usage: python3 scripts/e2e_bench.py [--rates 500,1000,2000] [--duration 10s]
Everything binds 127.0.0.1 and every run stops by itself."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "target/release/fex-server")
CLIENT = os.path.join(ROOT, "target/release/fex-client")
FLOOR = "name: floor\nversion: \"1\"\nfeatures:\n  - {name: not_in_any_request, kind: sparse}\n"


def start_server(models):
    proc = subprocess.Popen(
        [SERVER, "--listen-addr", "127.0.0.1:0", "--metrics-addr", "off", "--log-format", "json", "--log", "warn,fex_server::serve=info",
         "--models", models, "--max-concurrency", "4096", "--request-timeout", "10s", "--reload-interval", "0s"],
        stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        fields = json.loads(line).get("fields", {})
        if fields.get("message") == "fex-server listening":
            return proc, fields["addr"]
    raise RuntimeError("fex-server did not start")


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def bench(models, model, mode_args, duration, batch):
    """One run against a fresh server, so each peak RSS is that run's own."""
    proc, addr = start_server(models)
    try:
        return run_client(addr, proc.pid, model, mode_args, duration, batch)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def run_client(addr, pid, model, mode_args, duration, batch):
    cmd = [CLIENT, "bench", "--addr", addr, "--model", model, "--duration", duration, "--warmup", "2s", "--timeout", "10s",
           "--batch-size", str(batch), "--distinct", "32", "--connections", "2", "--output", "json", "--no-progress"] + mode_args
    report = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    report["peak_rss_mb"] = peak_rss_mb(pid)
    return report


def row(model, label, r):
    l = r["latency_ms"]
    errors = sum(n for code, n in r["status"].items() if code != "OK") + r["dropped"]
    statuses = ", ".join(f"{c} {n}" for c, n in sorted(r["status"].items()))
    return (f"| {model} | {label} | {r['send_rate']:.0f} | {r['throughput']:.0f} | {l['p50']:.2f} | {l['p99']:.2f} | "
            f"{l['p999']:.2f} | {errors} | {statuses} | {r['peak_rss_mb']:.0f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", default="250,500,1000,2000")
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "fex-server", "-p", "fex-client"], cwd=ROOT, check=True)
    models = tempfile.mkdtemp()
    shutil.copy(os.path.join(ROOT, "models/default.yaml"), models)
    with open(os.path.join(models, "floor.yaml"), "w") as f:
        f.write(FLOOR)
    results = {}
    try:
        for model in ("default", "floor"):
            for rate in args.rates.split(","):
                results[(model, f"rate {rate}")] = bench(models, model, ["--rate", rate], args.duration, args.batch_size)
            label = f"closed c={args.concurrency}"
            results[(model, label)] = bench(models, model, ["--concurrency", str(args.concurrency)], args.duration, args.batch_size)
    finally:
        shutil.rmtree(models)
    print("| model | load | sent/s | answered/s | p50 ms | p99 ms | p99.9 ms | errors+dropped | statuses | server peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (model, label), r in results.items():
        print(row(model, label, r))
    print()
    print("| load | p50 default/floor | p99 default/floor | closed-loop throughput default/floor |")
    print("|---|---|---|---|")
    for (model, label), r in results.items():
        if model != "default":
            continue
        f = results[("floor", label)]
        p50 = r["latency_ms"]["p50"] / max(f["latency_ms"]["p50"], 1e-9)
        p99 = r["latency_ms"]["p99"] / max(f["latency_ms"]["p99"], 1e-9)
        tput = r["throughput"] / max(f["throughput"], 1e-9)
        print(f"| {label} | {p50:.2f} | {p99:.2f} | {tput:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
