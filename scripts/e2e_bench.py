#!/usr/bin/env python3
"""End-to-end benchmark: release fex-server and fex-client on this machine.

Compares the embedded default model with a "floor" model that reads nothing
(its only feature is in no request: the server steps over every list and
answers one empty tensor, so it measures gRPC, HTTP/2 and tonic alone). Both
are sent the same request file, written once by `fex-client gen` for the
default model, and the runs are interleaved (default, floor, default, floor,
...) so that the machine's drift hits both alike:

1. closed loop (--concurrency in flight), --rounds rounds of each model;
2. open loop at half the default model's median closed-loop throughput (or
   --open-rate), --rounds rounds of each model at that same rate.

Every run gets a fresh server (so its peak RSS and CPU are its own). Prints
markdown tables (each run, then medians and the default/floor ratios) for
benches/README.md. Everything binds 127.0.0.1 and every run stops by itself.

3. --soak SECONDS: only open loop, at --open-rate (or half the default's
   closed loop, measured first), --rounds runs of each model of SECONDS
   each, interleaved, each on a fresh server. While a run goes, the server's
   /metrics (calls in flight, queue depth, shed calls), the server's and the
   client's CPU time and the machine's /proc/stat (steal time: the
   hypervisor running someone else) are sampled every 100 ms. Each
   run reports its statuses (shed calls are RESOURCE_EXHAUSTED), p50, p99,
   p99.9 and max, its worst second, the deepest queue seen, and the steal
   time of the worst second against the run's median second: the evidence
   for what a tail spike was. --timeline prints, per run, its first 5 s at
   100 ms (calls in flight, queue, CPU, faults) and then every second.

4. --cold-starts ROUNDS: only cold starts: fresh servers given --open-rate
   from their first call (no client warm-up), alternating fex-server's
   default heap prefault and --prefault-heap-bytes 0; each reports its shed
   calls, tail, most calls in flight and the page faults it took.

Usage: python3 scripts/e2e_bench.py [--rounds 3] [--duration 5s]
       [--server-args "--extract-threads 1 --io-threads 1"]
       python3 scripts/e2e_bench.py --soak 120 --rounds 3
       python3 scripts/e2e_bench.py --cold-starts 5 --open-rate 5200"""

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import namedtuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "target/release/fex-server")
CLIENT = os.path.join(ROOT, "target/release/fex-client")
FLOOR = "name: floor\nversion: \"1\"\nfeatures:\n  - {name: not_in_any_request, kind: sparse}\n"
TICKS = os.sysconf("SC_CLK_TCK")


def pinned(cpu, cmd, pin):
    """`cmd` on one CPU (taskset) when --pin is given."""
    return (["taskset", "-c", str(cpu)] + cmd) if pin else cmd


def start_server(server, models, extra, pin=False, max_concurrency=None):
    """A fex-server on loopback ports; its own admission limits unless
    `max_concurrency` is given."""
    limits = ["--max-concurrency", str(max_concurrency)] if max_concurrency else []
    cmd = [server, "--listen-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--log-format", "json",
           "--log", "warn,fex_server::serve=info", "--models", models,
           "--request-timeout", "10s", "--reload-interval", "0s"] + limits + extra
    proc = subprocess.Popen(pinned(0, cmd, pin), stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        fields = json.loads(line).get("fields", {})
        if fields.get("message") == "fex-server listening":
            return proc, fields["addr"], fields["metrics"]
    raise RuntimeError("fex-server did not start")


def proc_stats(pid):
    """(peak RSS in MB, CPU seconds) of a process."""
    rss = 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                rss = int(line.split()[1]) / 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / TICKS


def answered(metrics_addr):
    """Extract calls the server answered OK, warm-up included (from /metrics)."""
    with urllib.request.urlopen(f"http://{metrics_addr}/metrics", timeout=5) as r:
        page = r.read().decode()
    return sum(float(l.rsplit(" ", 1)[1]) for l in page.splitlines()
               if l.startswith("fex_requests_total{") and 'method="Extract"' in l and 'code="Ok"' in l)


def steal_ticks():
    """The machine's steal time so far, in clock ticks (/proc/stat)."""
    with open("/proc/stat") as f:
        cpu = f.readline().split()
    return int(cpu[8]) if len(cpu) > 8 else 0


def metric(page, name):
    return sum(float(l.rsplit(" ", 1)[1]) for l in page.splitlines() if l.startswith(name + " ") or l.startswith(name + "{"))


def cpu_ticks(pid):
    """User and system CPU of a process so far, in clock ticks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except OSError:
        return 0


def minor_faults(pid):
    """Minor page faults of a process so far (/proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[7])
    except OSError:
        return 0


# The kernel's memory counters that stall an allocating process: direct
# compaction (for a transparent huge page), direct reclaim, and THP faults.
VMSTAT = ("compact_stall", "allocstall", "pgscan_direct", "thp_fault_alloc")


def vmstat():
    """VMSTAT's counters so far, machine-wide (/proc/vmstat; allocstall
    and pgscan_direct summed over their zones)."""
    out = dict.fromkeys(VMSTAT, 0)
    with open("/proc/vmstat") as f:
        for line in f:
            name, value = line.split()
            for key in VMSTAT:
                if name == key or name.startswith(key + "_"):
                    out[key] += int(value)
    return out


def anon_huge_mb(pid):
    """The process's anonymous memory in transparent huge pages, MB."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


# One 100 ms sample: seconds since the start, the server's calls in flight,
# queue depth and shed calls, the machine's steal ticks, the server's minor
# faults, the kernel's VMSTAT counters, and the server's and client's CPU
# ticks.
Sample = namedtuple("Sample", "at flight depth shed steal faults kernel server_cpu client_cpu")


class Sampler:
    """Every 100 ms: the server's queue depth and shed count, the machine's
    steal time, the server's minor faults and the kernel's compaction,
    reclaim and THP counters, each stamped with seconds since the start."""

    def __init__(self, metrics_addr, pid):
        self.metrics_addr, self.pid, self.samples, self.stop = metrics_addr, pid, [], threading.Event()
        self.client_pid = None
        self.start = time.monotonic()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(0.1):
            try:
                with urllib.request.urlopen(f"http://{self.metrics_addr}/metrics", timeout=2) as r:
                    page = r.read().decode()
            except OSError:
                continue
            at = time.monotonic() - self.start
            depth, shed = metric(page, "fex_queue_depth"), metric(page, "fex_shed_total")
            client_cpu = cpu_ticks(self.client_pid) if self.client_pid else 0
            self.samples.append(Sample(at, metric(page, "fex_in_flight_requests"), depth, shed, steal_ticks(),
                                       minor_faults(self.pid), vmstat(), cpu_ticks(self.pid), client_cpu))
            self.huge_mb = max(getattr(self, "huge_mb", 0.0), anon_huge_mb(self.pid))

    def finish(self):
        self.stop.set()
        self.thread.join(5)
        return self.samples


def bench(args, models, model, mode_args, requests_file, duration=None, warmup="2s"):
    """One run against a fresh server."""
    proc, addr, metrics_addr = start_server(args.server_bin, models, shlex.split(args.server_args), args.pin,
                                            args.max_concurrency)
    try:
        cmd = [args.client_bin, "bench", "--addr", addr, "--model", model, "--duration", duration or args.duration,
               "--warmup", warmup, "--timeout", "10s", "--file", requests_file, "--connections", str(args.connections),
               "--output", "json", "--no-progress"] + mode_args
        sampler = Sampler(metrics_addr, proc.pid) if duration else None
        client = subprocess.Popen(pinned(1, cmd, args.pin), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if sampler:
            sampler.client_pid = client.pid
        out, err = client.communicate(timeout=900)
        if client.returncode != 0:
            raise RuntimeError(f"fex-client bench exited {client.returncode}: {err}")
        report = json.loads(out)
        if sampler:
            report["samples"] = sampler.finish()
            report["anon_huge_mb"] = getattr(sampler, "huge_mb", 0.0)
        report["peak_rss_mb"], cpu = proc_stats(proc.pid)
        report["server_cpu_us"] = cpu * 1e6 / max(answered(metrics_addr), 1)
        return report
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def soak_row(model, label, r):
    """One soak run: statuses, latency, the worst second, the deepest queue,
    and steal time (ms per second) in the worst second against the median."""
    l, status = r["latency_ms"], r["status"]
    shed = status.get("RESOURCE_EXHAUSTED", 0)
    others = sum(n for code, n in status.items() if code not in ("OK", "RESOURCE_EXHAUSTED")) + r["dropped"]
    seconds = {int(s): v for s, v in r["latency_by_second_ms"].items()}
    worst = max(seconds, key=lambda s: seconds[s]["max"]) if seconds else 0
    samples = r.get("samples", [])
    depth = max((x.depth for x in samples), default=0)
    faults = (samples[-1].faults - samples[0].faults) if samples else 0
    kernel = ({k: samples[-1].kernel[k] - samples[0].kernel[k] for k in VMSTAT} if samples
              else dict.fromkeys(VMSTAT, 0))
    per_second = {}
    for a, b in zip(samples, samples[1:]):
        per_second[int(b.at)] = per_second.get(int(b.at), 0) + (b.steal - a.steal) * 1000 / TICKS
    steal = sorted(per_second.values())
    median_steal = steal[len(steal) // 2] if steal else 0
    # The client's seconds count from the end of warm-up (2 s after start).
    worst_steal = max((per_second.get(worst + 2 + d, 0) for d in (-1, 0, 1)), default=0)
    return (f"| {model} | {label} | {r['ok']} | {shed} | {others} | {l['p50']:.2f} | {l['p99']:.2f} | "
            f"{l['p999']:.2f} | {l['max']:.1f} | {worst}: p99 {seconds.get(worst, l)['p99']:.1f}, max "
            f"{seconds.get(worst, l)['max']:.1f} | {depth:.0f} | {faults:.0f} | {worst_steal:.0f} / {median_steal:.0f} "
            f"| {r['peak_rss_mb']:.0f} | {r.get('anon_huge_mb', 0):.0f} | {kernel['thp_fault_alloc']} / "
            f"{kernel['compact_stall']} / {kernel['allocstall']} |")


def timeline(r):
    """Per second of a soak run (from the start of warm-up): the client's
    p99 and max, the server's deepest queue and minor page faults, and the
    machine's THP faults, compaction stalls and reclaim stalls."""
    seconds = {int(s) + 2: v for s, v in r["latency_by_second_ms"].items()}
    depth, flight, faults, kernel, cpu, last = {}, {}, {}, {}, {}, None
    for x in r.get("samples", []):
        s = int(x.at)
        depth[s] = max(depth.get(s, 0), x.depth)
        flight[s] = max(flight.get(s, 0), x.flight)
        if last is not None:
            faults[s] = faults.get(s, 0) + x.faults - last.faults
            kernel[s] = [a + x.kernel[key] - last.kernel[key] for a, key in
                         zip(kernel.get(s, [0, 0, 0]), ("thp_fault_alloc", "compact_stall", "allocstall"))]
            a, b = cpu.get(s, (0, 0))
            cpu[s] = (a + (x.server_cpu - last.server_cpu) * 1000 / TICKS,
                      b + (x.client_cpu - last.client_cpu) * 1000 / TICKS)
        last = x
    lines = ["second  p99 ms   max ms  in flight  queue  server/client CPU ms  minor faults  thp  compact  reclaim"]
    for s in sorted(set(seconds) | set(depth)):
        l = seconds.get(s, {"p99": 0, "max": 0})
        t, c, a = kernel.get(s, [0, 0, 0])
        sc = cpu.get(s, (0, 0))
        lines.append(f"{s:6d} {l['p99']:7.2f} {l['max']:8.2f} {flight.get(s, 0):10.0f} {depth.get(s, 0):6.0f} "
                     f"{sc[0]:10.0f} / {sc[1]:<8.0f} {faults.get(s, 0):13d} {t:4d} {c:8d} {a:8d}")
    return "\n".join(lines)


def start_timeline(r, seconds=5.0):
    """The first seconds of a run at the sampler's 100 ms: calls in flight
    (admitted, not yet answered), the extraction queue, the server's and the
    client's CPU in each interval, and the server's minor faults."""
    lines = ["  at s  in flight  queue  server CPU ms  client CPU ms  minor faults"]
    last, ms = None, 1000 / TICKS
    for x in r.get("samples", []):
        if x.at > seconds:
            break
        if last is not None:
            lines.append(f"{x.at:6.1f} {x.flight:10.0f} {x.depth:6.0f} {(x.server_cpu - last.server_cpu) * ms:14.0f} "
                         f"{(x.client_cpu - last.client_cpu) * ms:14.0f} {x.faults - last.faults:13d}")
        last = x
    return "\n".join(lines)


def soak(args, models, requests_file, rate):
    limits = f"--max-concurrency {args.max_concurrency} " if args.max_concurrency else ""
    print(f"open-loop soak at {rate:.0f}/s, {args.soak} s per run, {args.rounds} rounds; server flags: "
          f"{limits}{args.server_args or '(defaults)'}")
    print()
    purge = os.environ.get("MIMALLOC_PURGE_DELAY", "unset (fex-server: -1, never purge)")
    print(f"MIMALLOC_PURGE_DELAY: {purge}")
    print()
    print("| model | run | OK | RESOURCE_EXHAUSTED | other errors | p50 ms | p99 ms | p99.9 ms | max ms "
          "| worst second (ms) | deepest queue | minor faults | steal ms/s: worst second / median | peak RSS MB "
          "| THP MB | machine: THP faults / compaction stalls / reclaim stalls |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---|")
    results = []
    for i in range(args.rounds):
        for model in ("default", "floor"):
            r = bench(args, models, model, ["--rate", str(rate)], requests_file, duration=f"{args.soak}s")
            results.append((model, r))
            print(soak_row(model, f"#{i + 1}", r), flush=True)
            if args.timeline:
                print(start_timeline(r), file=sys.stderr, flush=True)
                print(timeline(r), file=sys.stderr, flush=True)
    print()
    for model in ("default", "floor"):
        rs = [r for m, r in results if m == model]
        p999 = statistics.median(r["latency_ms"]["p999"] for r in rs)
        shed = sum(r["status"].get("RESOURCE_EXHAUSTED", 0) for r in rs)
        print(f"{model}: median p99.9 {p999:.2f} ms, shed {shed} of {sum(r['requests'] for r in rs)}")
    d, f = (statistics.median(r["latency_ms"]["p999"] for m, r in results if m == k) for k in ("default", "floor"))
    print(f"p99.9 default/floor: {d / f:.2f} (target <= 2)")


def cold_starts(args, models, requests_file, rate):
    """Fresh servers given the open-loop rate from their first call (no
    client warm-up), with the heap prefaulted as shipped and without
    (--prefault-heap-bytes 0), interleaved: how deep the backlog of a cold
    server gets, what it sheds, and the page faults it takes meanwhile."""
    print(f"cold starts at {rate:.0f}/s, {args.cold_start_seconds} s each from the first call, {args.cold_starts} "
          f"rounds; server flags: {args.server_args or '(defaults)'}")
    print()
    print("| heap at start | round | OK | RESOURCE_EXHAUSTED | p99.9 ms | max ms | most calls in flight | deepest queue "
          "| server minor faults | THP faults (machine) | RSS at ready MB | peak RSS MB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for i in range(args.cold_starts):
        for label, extra in (("prefaulted (default)", []), ("cold (--prefault-heap-bytes 0)",
                                                             ["--prefault-heap-bytes", "0"])):
            proc, addr, metrics_addr = start_server(args.server_bin, models, shlex.split(args.server_args) + extra,
                                                    args.pin, args.max_concurrency)
            try:
                ready_rss, _ = proc_stats(proc.pid)
                sampler = Sampler(metrics_addr, proc.pid)
                cmd = [args.client_bin, "bench", "--addr", addr, "--model", "default", "--rate", str(rate),
                       "--duration", f"{args.cold_start_seconds}s", "--warmup", "0s", "--timeout", "10s",
                       "--file", requests_file, "--connections", str(args.connections), "--output", "json",
                       "--no-progress"]
                client = subprocess.run(pinned(1, cmd, args.pin), check=True, capture_output=True, text=True,
                                        timeout=300)
                samples = sampler.finish()
                r = json.loads(client.stdout)
                peak_rss, _ = proc_stats(proc.pid)
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            flight = max((x.flight for x in samples), default=0)
            depth = max((x.depth for x in samples), default=0)
            faults = samples[-1].faults - samples[0].faults if samples else 0
            thp = samples[-1].kernel["thp_fault_alloc"] - samples[0].kernel["thp_fault_alloc"] if samples else 0
            l = r["latency_ms"]
            print(f"| {label} | #{i + 1} | {r['ok']} | {r['status'].get('RESOURCE_EXHAUSTED', 0)} | {l['p999']:.2f} | "
                  f"{l['max']:.1f} | {flight:.0f} | {depth:.0f} | {faults} | {thp} | {ready_rss:.0f} | "
                  f"{peak_rss:.0f} |", flush=True)


def row(model, label, r):
    l = r["latency_ms"]
    errors = sum(n for code, n in r["status"].items() if code != "OK") + r["dropped"]
    return (f"| {model} | {label} | {r['send_rate']:.0f} | {r['throughput']:.0f} | {l['p50']:.2f} | {l['p90']:.2f} | "
            f"{l['p99']:.2f} | {l['p999']:.2f} | {errors} | {r['server_cpu_us']:.0f} | {r['peak_rss_mb']:.0f} |")


def rounds(args, models, requests_file, mode_args, label, results):
    for i in range(args.rounds):
        for model in ("default", "floor"):
            r = bench(args, models, model, mode_args, requests_file)
            results.append((model, f"{label} #{i + 1}", r))
            print(row(model, f"{label} #{i + 1}", r), r["status"], r["dropped"], file=sys.stderr, flush=True)


def median(results, model, label, key):
    return statistics.median(key(r) for m, l, r in results if m == model and l.startswith(label))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", default="5s")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--connections", type=int, default=2)
    ap.add_argument("--open-rate", type=float, help="open-loop rate (default: half the default model's closed loop)")
    ap.add_argument("--server-args", default="", help="more fex-server flags, e.g. '--io-threads 2'")
    ap.add_argument("--max-concurrency", type=int,
                    help="fex-server --max-concurrency (default: the server's own)")
    ap.add_argument("--closed-only", action="store_true", help="skip the open-loop rounds (for tuning sweeps)")
    ap.add_argument("--open-only", action="store_true", help="skip the closed loop (needs --open-rate)")
    ap.add_argument("--server-bin", default=SERVER, help="another fex-server binary (A/B runs)")
    ap.add_argument("--client-bin", default=CLIENT, help="another fex-client binary")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--soak", type=int, metavar="SECONDS",
                    help="open-loop soak: runs of this many seconds, interleaved, with per-run tails and samples")
    ap.add_argument("--timeline", action="store_true", help="with --soak: each run's seconds on stderr")
    ap.add_argument("--cold-starts", type=int, metavar="ROUNDS",
                    help="only cold starts: ROUNDS pairs of fresh servers (heap prefaulted, and not) at --open-rate")
    ap.add_argument("--cold-start-seconds", type=int, default=5, help="length of each cold start run")
    ap.add_argument("--pin", action="store_true",
                    help="server on CPU 0 and client on CPU 1 (taskset): each process gets a core of its own")
    args = ap.parse_args()
    if not args.no_build:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "fex-server", "-p", "fex-client"], cwd=ROOT, check=True)
    tmp = tempfile.mkdtemp()
    try:
        models = os.path.join(tmp, "models")
        os.mkdir(models)
        shutil.copy(os.path.join(ROOT, "models/default.yaml"), models)
        with open(os.path.join(models, "floor.yaml"), "w") as f:
            f.write(FLOOR)
        requests_file = os.path.join(tmp, "requests.bin")
        subprocess.run([args.client_bin, "gen", "--count", "32", "--batch-size", str(args.batch_size), "--out", requests_file],
                       check=True, capture_output=True)
        results = []
        closed = f"closed c={args.concurrency}"
        if args.cold_starts:
            if not args.open_rate:
                ap.error("--cold-starts needs --open-rate")
            cold_starts(args, models, requests_file, args.open_rate)
            return 0
        if args.soak:
            if not args.open_rate:
                rounds(args, models, requests_file, ["--concurrency", str(args.concurrency)], closed, results)
            rate = args.open_rate or round(median(results, "default", closed, lambda r: r["throughput"]) / 2)
            soak(args, models, requests_file, rate)
            return 0
        if not args.open_only:
            rounds(args, models, requests_file, ["--concurrency", str(args.concurrency)], closed, results)
        rate = args.open_rate or round(median(results, "default", closed, lambda r: r["throughput"]) / 2)
        opened = f"rate {rate:.0f}"
        if not args.closed_only:
            rounds(args, models, requests_file, ["--rate", str(rate)], opened, results)
    finally:
        shutil.rmtree(tmp)

    ok = lambda r: max(r["ok"], 1)  # noqa: E731
    first = opened if args.open_only else closed
    req = median(results, "default", first, lambda r: r["request_bytes"] / ok(r))
    resp = median(results, "default", first, lambda r: r["response_bytes"] / ok(r))
    pin = "; server pinned to CPU 0, client to CPU 1" if args.pin else ""
    print(f"server flags: {args.server_args or '(defaults)'}{pin}; B = {args.batch_size}; default model: "
          f"{req / 1000:.1f} KB per request, {resp / 1000:.1f} KB per response")
    print()
    print("| model | run | sent/s | answered/s | p50 ms | p90 ms | p99 ms | p99.9 ms | errors+dropped "
          "| server CPU µs/req | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for model, label, r in results:
        print(row(model, label, r))
    print()
    print("| load | model | answered/s | p50 ms | p99 ms | p99.9 ms | server CPU µs/req |")
    print("|---|---|---|---|---|---|---|")
    labels = (closed,) if args.closed_only else (opened,) if args.open_only else (closed, opened)
    for label in labels:
        for model in ("default", "floor"):
            m = lambda key: median(results, model, label, key)  # noqa: E731
            print(f"| {label} | {model} | {m(lambda r: r['throughput']):.0f} | "
                  f"{m(lambda r: r['latency_ms']['p50']):.2f} | {m(lambda r: r['latency_ms']['p99']):.2f} | "
                  f"{m(lambda r: r['latency_ms']['p999']):.2f} | {m(lambda r: r['server_cpu_us']):.0f} |")
    print()
    if not args.open_only:
        tput = median(results, "default", closed, lambda r: r["throughput"]) / median(
            results, "floor", closed, lambda r: r["throughput"])
        print(f"closed-loop throughput default/floor: {tput:.2f} (target >= 0.8)")
    if args.closed_only:
        return 0
    p99 = median(results, "default", opened, lambda r: r["latency_ms"]["p99"]) / median(
        results, "floor", opened, lambda r: r["latency_ms"]["p99"])
    p999 = median(results, "default", opened, lambda r: r["latency_ms"]["p999"]) / median(
        results, "floor", opened, lambda r: r["latency_ms"]["p999"])
    print(f"open loop at {rate:.0f}/s, p99 default/floor: {p99:.2f} (target <= 1.2); p99.9 default/floor: {p999:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
