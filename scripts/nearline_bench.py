#!/usr/bin/env python3
"""Throughput, memory and state size of the near-line label join
(python -m fex.nearline: fex.nearline.Job in a JVM of its own, a local
Flink mini-cluster), against `fex extract` on the same joined records.

Generates request logs and actions with the tests' generator
(tests/nearline/data.py, more rows per request) and prints, per run:
wall time, CPU seconds of the whole process tree (the Python launcher and
the JVM), joined rows per second and per CPU second, and the tree's peak
RSS. The runs:

- the job over empty inputs, batch and streaming: what starting the JVM
  and the mini-cluster and stopping them costs, whatever the data;
- the job in batch and streaming execution (checkpoints every 10 s,
  RocksDB) with 1 and 2 task slots, `--repeat` times, interleaved;
- `fex extract --format responses`, one thread, over the joined records;
- with `--state`, the checkpoint size per 1,000 waiting requests (see
  `state_size`).

The job loads the JNI library in FEX_JNI_LIBRARY (default: the release
build, target/release/libfex_jni.so) and the jar in FEX_NEARLINE_JAR
(default: flink/target/fex-flink.jar). Each timed run holds `--lock`
(flock(2), the lock `flock(1)` takes) while it runs, and only then. From
the repository, with the venv that has fex and apache-flink (scripts/test.sh
makes target/venv-flink):

    cargo build --release -p fex-jni -p fex-cli
    mvn -q -f flink/pom.xml -Dmaven.repo.local=target/m2 package -DskipTests
    target/venv-flink/bin/python scripts/nearline_bench.py --lock target/bench.lock \\
        --users 400 --requests-per-user 50 --state
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import glob
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "nearline"))
import data  # noqa: E402

data.FG_OPS = False  # the data of benches/nearline_model.yaml

# The benchmarks' own model and data (benches/nearline_model.yaml; data.py
# without the FG operators' inputs), so that figures stay comparable.
MODEL = os.path.join(ROOT, "benches", "nearline_model.yaml")
RETENTION_MS = 2 * 3_600_000  # model.yaml: retention
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def tree(root: int):
    """The pids of root and its descendants, from /proc."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(name))
        except OSError:
            continue
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def stat_cpu(stat):
    """utime + stime in seconds, from the text of a /proc/.../stat file."""
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def sample(pids):
    """(cpu seconds, rss bytes) per pid that is still there. A process's
    own time only: its waited-for children's is theirs (the launcher waits
    for the JVM, and counting both would count the JVM twice)."""
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                cpu = stat_cpu(f.read())
            with open(f"/proc/{pid}/statm") as f:
                rss = int(f.read().split()[1]) * PAGE
            out[pid] = (cpu, rss)
        except OSError:
            continue
    return out


# Groups of a JVM's threads by the start of their name (Linux keeps 15
# bytes of it), for where the CPU went.
THREAD_GROUPS = [
    ("JIT compilers", ("C1 CompilerThre", "C2 CompilerThre")),
    ("join task", ("label join", "floor")),
    ("sources", ("Source",)),
    ("manifest writer", ("manifest",)),
    ("RocksDB background", ("rocksdb:",)),
    ("Kafka producers' network threads", ("kafka-producer-",)),
    ("GC", ("GC Thread", "G1 ")),
]


def threads_of(pids):
    """{(pid, tid): (group, cpu seconds)} for every thread of pids."""
    out = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            group = next((g for g, starts in THREAD_GROUPS if name.startswith(starts)), "other")
            if group == "other" and os.environ.get("FEX_BENCH_THREAD_NAMES"):
                group = f"other: {name.rstrip('0123456789-')}"
            out[(pid, int(tid))] = (group, stat_cpu(stat))
    return out


def by_run(results):
    """Per run name, in first-seen order: (name, its results, median wall
    s, median CPU s, median peak RSS, rows). A result is (name, wall, cpu,
    peak, rows, ...)."""
    for name in dict.fromkeys(r[0] for r in results):
        runs = [r for r in results if r[0] == name]
        yield (name, runs, statistics.median(r[1] for r in runs), statistics.median(r[2] for r in runs),
               statistics.median(r[3] for r in runs), runs[0][4])


@contextlib.contextmanager
def locked(path):
    """Holds an exclusive flock on path (nothing when path is None)."""
    if path is None:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def measured(cmd, env, lock):
    """Runs cmd under the lock, sampling its process tree every 100 ms:
    wall seconds, CPU seconds, peak RSS of the tree, and CPU seconds by
    group of threads (THREAD_GROUPS, sampled every 500 ms: a thread's
    last half second may be missed)."""
    import resource

    with locked(lock):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        last, peak, threads, ticks = {}, 0, {}, 0
        while p.poll() is None:
            pids = tree(p.pid)
            now = sample(pids)
            for pid, (cpu, _) in now.items():
                last[pid] = max(cpu, last.get(pid, 0))
            peak = max(peak, sum(rss for _, rss in now.values()))
            if ticks % 5 == 0:
                threads.update(threads_of(pids))
            ticks += 1
            time.sleep(0.1)
        wall = time.monotonic() - started
        out, err = p.communicate()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {p.returncode}:\n{out[-2000:]}\n{err[-4000:]}")
    # The launcher waits for its JVM, so rusage holds the whole tree's CPU
    # time; the samples (each process's last, 100 ms apart) are a floor.
    reaped = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    cpu = max(reaped, sum(last.values()))
    groups = {}
    for group, seconds in threads.values():
        groups[group] = groups.get(group, 0) + seconds
    return wall, cpu, peak, out, groups


def job_env(args):
    env = dict(os.environ)
    env["FEX_JNI_LIBRARY"] = os.path.abspath(args.jni_library)
    env["FEX_NEARLINE_JAR"] = os.path.abspath(args.jar)
    # An installed fex older than FEX_JNI_LIBRARY would run the jar's own
    # (debug) build of the library without a word.
    from fex.nearline import job

    os.environ.update(env)
    if f"-Dfex.jni.library={env['FEX_JNI_LIBRARY']}" not in job.command([], log_file=os.devnull):
        sys.exit(f"{job.__file__} does not pass FEX_JNI_LIBRARY to the JVM: install this tree's fex (pip install ./python)")
    return env


def job_cmd(requests, actions, out, mode, slots, extra=()):
    cmd = [sys.executable, "-m", "fex.nearline", "--config", MODEL, "--requests", requests,
           "--actions", actions, "--out", out, "--quiet", "--parallelism", str(slots),
           "--summary-json", out + ".json", *extra]
    if mode == "batch":
        cmd.append("--batch")
    else:
        cmd += ["--checkpoint-interval", "10s"]
    return cmd


def startup(work, args, env):
    """The job over an empty request log and an empty action file."""
    inputs = os.path.join(work, "empty")
    os.makedirs(os.path.join(inputs, "requests"), exist_ok=True)
    open(os.path.join(inputs, "requests", "requests-0.log"), "wb").close()
    open(os.path.join(inputs, "actions.jsonl"), "w").close()
    results = []
    for r in range(args.repeat):
        for mode in args.modes:
            out = os.path.join(work, f"out-empty-{mode}-{r}")
            cmd = job_cmd(os.path.join(inputs, "requests"), os.path.join(inputs, "actions.jsonl"), out, mode, 1)
            wall, cpu, peak, _, groups = measured(cmd, env, args.lock)
            results.append((f"empty input, {mode}, 1 slot", wall, cpu, peak, 0, groups))
    return results


def floor_cmd(requests, actions, out):
    """The jar's floor (fex.nearline.Floor, the job's --floor): the same
    sources, parsing, keyed shuffle, RocksDB and checkpoints as a streaming
    run, one list-state append per event, nothing else; run as the
    launcher runs the job, without the launcher."""
    from fex.nearline import job

    scratch = os.path.join(out, "tmp")
    os.makedirs(scratch, exist_ok=True)
    cmd = job.command(["--config", MODEL, "--requests", requests, "--actions", actions, "--out", out,
                       "--parallelism", "1", "--checkpoint-interval-ms", "10000", "--floor"],
                      log_file=os.path.join(out, "flink.log"))
    # The mini-cluster's working directories under the run's own, as the
    # launcher does (run_jvm), not in /tmp.
    return [cmd[0], f"-Djava.io.tmpdir={scratch}", *cmd[1:]]


def throughput(work, args, env, requests, actions):
    results = []
    for r in range(args.repeat):
        if args.floor:
            out = os.path.join(work, f"out-floor-{r}")
            shutil.rmtree(out, ignore_errors=True)
            wall, cpu, peak, _, groups = measured(floor_cmd(requests, actions, out), env, args.lock)
            # Per row of the data, as the join's runs count them.
            results.append(("floor, streaming, 1 slot", wall, cpu, peak, args.rows_in_data, groups))
        for mode in args.modes:
            for slots in args.slots:
                out = os.path.join(work, f"out-{mode}-{slots}-{r}")
                # A kept work directory (--keep) may hold an earlier run's
                # output, which the job's summary would count again.
                shutil.rmtree(out, ignore_errors=True)
                wall, cpu, peak, _, groups = measured(job_cmd(requests, actions, out, mode, slots), env, args.lock)
                emitted = json.load(open(out + ".json"))["rows_emitted"]
                results.append((f"{mode}, {slots} slot{'s' if slots > 1 else ''}", wall, cpu, peak, emitted, groups))
                if args.iceberg:
                    # The same run with the samples and the joined requests into Iceberg tables.
                    out = os.path.join(work, f"out-{mode}-{slots}-{r}-iceberg")
                    warehouse = out + "-warehouse"
                    shutil.rmtree(out, ignore_errors=True)
                    shutil.rmtree(warehouse, ignore_errors=True)
                    cmd = job_cmd(requests, actions, out, mode, slots, ["--iceberg", warehouse])
                    wall, cpu, peak, _, groups = measured(cmd, dict(env, FEX_CLI=args.fex), args.lock)
                    emitted = json.load(open(out + ".json"))["rows_emitted"]
                    label = f"{mode}, {slots} slot{'s' if slots > 1 else ''}, Iceberg tables"
                    results.append((label, wall, cpu, peak, emitted, groups))
                    for table in sorted(glob.glob(os.path.join(warehouse, "fex", "*"))):
                        data = glob.glob(os.path.join(table, "data", "**", "*.parquet"), recursive=True)
                        commits = len(glob.glob(os.path.join(table, "metadata", "snap-*.avro")))
                        print(f"{label}: {os.path.basename(table)}: {len(data)} data files "
                              f"({sum(os.path.getsize(f) for f in data):,} bytes), {commits} snapshots", flush=True)
    return results


def checkpoint_bytes(chk):
    """Bytes of a checkpoint: its chk-N directory, and the shared/ files
    an incremental one refers to (none unless incremental checkpoints are
    on)."""
    total = 0
    for top in (chk, os.path.join(os.path.dirname(chk), "shared")):
        for root, _, files in os.walk(top):
            total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def newest_checkpoint(directory):
    found = []
    for root, dirs, _ in os.walk(directory):
        for d in dirs:
            if d.startswith("chk-") and os.path.isfile(os.path.join(root, d, "_metadata")):
                found.append((int(d[4:]), os.path.join(root, d)))
    return max(found) if found else None


def state_size(work, args, env, reqs, acts):
    """Checkpoint bytes per 1,000 waiting requests.

    The inputs are the generated ones cut at the middle of their time
    span: every user is then mid-stream, with requests that wait for their
    emission (the event and time rules need later requests or a later
    watermark than the input has). The job watches the inputs
    (--monitor), so it reads them all and keeps running with that state;
    once two checkpoints in a row find the same committed manifest, the
    newest checkpoint is its state at rest. Waiting requests are those
    read and not emitted in the committed manifest. The checkpoint also
    holds the emitted requests' ids for `retention` (to tell late actions
    from unmatched ones), the actions still waiting for their request,
    the timers, and the sources' and sinks' own state: these are counted
    and printed beside it.
    """
    times = sorted(r["time"] for r in reqs)
    cut = times[0] + (times[-1] - times[0]) // 2
    cut_reqs = [r for r in reqs if r["time"] < cut]
    cut_acts = [a for a in acts if a["event_time"] < cut]
    requests, actions = data.write_inputs(os.path.join(work, "in-cut"), cut_reqs, cut_acts, files=8)
    out = os.path.join(work, "out-state")
    checkpoints = os.path.join(work, "checkpoints-state")
    cmd = job_cmd(requests, actions, out, "streaming", 1, ["--monitor", "1s", "--checkpoint-dir", checkpoints])
    with locked(args.lock):  # not timed, but it would disturb someone else's timed run
        seen = watch(cmd, env, out, checkpoints)
    _, path, size, manifest = seen[-1]
    emitted = [m for m in manifest if m["kind"] == "emitted"]
    waiting = len(cut_reqs) - len(emitted)
    accounted = sum(len(m["actions"]) for m in emitted) + sum(
        m["kind"] in ("late", "unmatched", "unknown_item") for m in manifest
    )
    watermark = cut - 60_000  # the last event time less the watermark delay, about
    kept = sum(m["emitted_at"] + RETENTION_MS >= watermark for m in emitted)
    return {
        "checkpoint": os.path.basename(path), "bytes": size, "requests": len(cut_reqs), "waiting": waiting,
        "emitted_kept": kept, "actions_waiting": len(cut_acts) - accounted, "actions": len(cut_acts),
    }


def watch(cmd, env, out, checkpoints):
    """Runs the job until two checkpoints in a row find the same committed
    manifest; (checkpoint number, path, bytes, manifest lines) per
    checkpoint seen."""
    from fex.nearline import read_manifest

    err = tempfile.TemporaryFile(mode="w+")
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, text=True, env=env)
    seen = []
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and p.poll() is None:
            time.sleep(1)
            chk = newest_checkpoint(checkpoints)
            if chk is None or (seen and seen[-1][0] == chk[0]):
                continue
            time.sleep(1)  # the checkpoint's part files are committed once it completes
            manifest = list(read_manifest(out))
            seen.append((chk[0], chk[1], checkpoint_bytes(chk[1]), manifest))
            if len(seen) >= 2 and len(seen[-2][3]) == len(manifest) and manifest:
                break
        else:
            err.seek(0)
            sys.exit(f"the state run did not settle ({'ended' if p.poll() is not None else 'timed out'}): {err.read()[-4000:]}")
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=60)
    return seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fex", default=os.path.join(ROOT, "target", "release", "fex"))
    ap.add_argument("--jar", default=os.environ.get("FEX_NEARLINE_JAR", os.path.join(ROOT, "flink", "target", "fex-flink.jar")))
    ap.add_argument("--jni-library", default=os.environ.get("FEX_JNI_LIBRARY", os.path.join(ROOT, "target", "release", "libfex_jni.so")))
    ap.add_argument("--users", type=int, default=400)
    ap.add_argument("--requests-per-user", type=int, default=50)
    ap.add_argument("--rows", type=int, nargs=2, default=[20, 41], metavar=("MIN", "MAX"), help="rows per request")
    ap.add_argument("--slots", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--modes", nargs="+", default=["batch", "streaming"])
    ap.add_argument("--repeat", type=int, default=3, help="rounds of every run, interleaved (medians are printed)")
    ap.add_argument("--no-startup", action="store_true", help="skip the runs over empty inputs")
    ap.add_argument("--state", action="store_true", help="also measure checkpoint bytes per waiting request")
    ap.add_argument("--lock", help="flock this file around each timed run (the bench lock)")
    ap.add_argument("--keep", help="keep the data and outputs here")
    ap.add_argument("--threads", action="store_true", help="also print CPU seconds by group of JVM threads")
    ap.add_argument("--iceberg", action="store_true",
                    help="also run each mode with --iceberg (the sample and joined-request tables), needs --fex")
    ap.add_argument("--floor", action="store_true",
                    help="also run the floor: the job's sources and keyed shuffle, one state append per event")
    args = ap.parse_args()

    env = job_env(args)
    work = args.keep or tempfile.mkdtemp(prefix="fex-nearline-bench-")
    reqs, acts = data.generate(seed=7, users=args.users, requests_per_user=args.requests_per_user, rows=tuple(args.rows))
    requests, actions = data.write_inputs(os.path.join(work, "in"), reqs, acts, files=8)
    rows = sum(len(r["items"]) for r in reqs)
    print(f"{len(reqs)} requests, {rows} rows, {len(acts)} actions; "
          f"{sum(os.path.getsize(os.path.join(requests, f)) for f in os.listdir(requests)) / 1e6:.1f} MB of request logs; "
          f"JNI library {env['FEX_JNI_LIBRARY']}")
    args.rows_in_data = rows
    results = [] if args.no_startup else startup(work, args, env)
    results += throughput(work, args, env, requests, actions)
    # fex extract on the same joined records, one thread.
    joined = os.path.join(work, f"out-{args.modes[0]}-{args.slots[0]}-0", "joined")
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(joined) for f in fs if not f.startswith("."))
    wall, cpu, peak, _, groups = measured([args.fex, "extract", *files, "--model", MODEL, "--format", "responses",
                                   "--threads", "1", "--output", os.path.join(work, "extract.responses")], None, args.lock)
    results.append(("fex extract, 1 thread", wall, cpu, peak, rows, groups))

    # "JIT s": the JVM's compiler threads, which a long-running job pays
    # mostly once; the last column leaves them out.
    print(f"{'run':<31} {'n':>2} {'wall s':>7} {'cpu s':>7} {'JIT s':>6} {'rows/s':>9} {'rows/cpu-s':>10} "
          f"{'w/o JIT':>8} {'peak RSS MB':>11}   (medians; every run's wall/cpu s)")
    for name, runs, wall, cpu, peak, n in by_run(results):
        jit = statistics.median(r[5].get("JIT compilers", 0) for r in runs)
        each = ", ".join(f"{r[1]:.1f}/{r[2]:.1f}" for r in runs)
        rate = f"{n / wall:9.0f} {n / cpu:10.0f} {n / (cpu - jit):8.0f}" if n else f"{'':9} {'':10} {'':8}"
        print(f"{name:<31} {len(runs):>2} {wall:7.1f} {cpu:7.1f} {jit:6.1f} {rate} {peak / 1e6:11.0f}   {each}")
    if args.threads:
        print("CPU seconds by thread group (medians):")
        for name, runs, *_ in by_run(results):
            groups = dict.fromkeys(g for r in runs for g in r[5])
            med = {g: statistics.median(r[5].get(g, 0) for r in runs) for g in groups}
            print(f"  {name:<29} " + ", ".join(f"{g} {v:.1f}" for g, v in sorted(med.items(), key=lambda kv: -kv[1])))
    if args.state:
        s = state_size(work, args, env, reqs, acts)
        print(f"state: {s['checkpoint']} is {s['bytes'] / 1e6:.2f} MB with {s['waiting']} of {s['requests']} requests "
              f"waiting: {s['bytes'] / s['waiting'] * 1000 / 1e6:.2f} MB per 1,000 waiting requests "
              f"(it also holds {s['emitted_kept']} emitted request ids kept for retention and "
              f"{s['actions_waiting']} of {s['actions']} actions not yet joined or reported)")
    if not args.keep:
        print(f"(data and outputs in {work}; removed)")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
