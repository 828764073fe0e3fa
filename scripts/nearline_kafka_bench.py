#!/usr/bin/env python3
"""The near-line label join with Kafka on both sides: throughput per CPU
second of the job, the broker's CPU apart, and the latency from a
request's emission to its sample being visible to a read_committed
consumer.

A broker is started with scripts/kafka_broker.py (a KRaft Kafka node on
127.0.0.1, its own JVM), and its CPU per second measured idle (10 s). Then:

- **Throughput.** The tests' generator (tests/nearline/data.py, 20-40 rows
  per request) fills a requests topic and an actions topic (2 partitions
  each; requests keyed by user id as fex-server writes them). The job
  (`python -m fex.nearline`, streaming execution, RocksDB, 1 task slot, a
  checkpoint every 10 s) reads both topics up to their end (`--bounded`)
  and writes PREFIX.joined, PREFIX.samples, PREFIX.manifest and
  PREFIX.corrections in Kafka transactions (exactly once). CPU seconds are
  the job's whole process tree (the launcher and its JVM, from rusage, as
  scripts/nearline_bench.py measures them); the broker's are read apart
  from /proc/<broker pid>/stat before and after the run. Each round also
  runs the same data as files (nearline_bench's streaming run), so the
  two compare within one session. The committed manifest is read back
  after each Kafka run: every request emitted once, and the rows counted
  are the rows it says were emitted.
- **Latency.** For each `--latency-intervals` checkpoint interval, the job
  runs unbounded on fresh topics while this script produces requests and
  actions at a steady pace for `--duration` seconds, each event stamped
  with the wall clock when it is produced (the generator's events, their
  times scaled onto the run), so the watermark follows the clock. A
  read_committed consumer (fetch.wait.max.ms=10) reads PREFIX.samples and
  PREFIX.manifest while the job runs. The job's Kafka sink gives its
  records no timestamp, so its producer stamps each with the wall clock at
  send(); the samples' writer is chained to the label join and the sample
  computation, so send() runs in the thread whose event-time timer
  emitted the request, right after the watermark passed its emission
  time. Latency is the time the consumer receives a sample record less
  that timestamp: how long an emitted sample waits for the next
  checkpoint, its transaction's commit and the fetch. Each sample is
  matched to its request's manifest line (a user's k-th of each): the
  sample's timestamp less the line's `emitted_at` (event time) is how far
  the emission trails the events, the model's watermark_delay (1 minute)
  and the job's lag; receive time less `emitted_at` is the whole wait from
  the event that emitted the request. Only requests whose emission time is
  at least watermark_delay before the end of the input are emitted in the
  run, so `--duration` must exceed it.

Every timed run holds `--lock` (flock(2)) while it runs; the broker idles
between them. From the repository, with the venv that has fex, apache-flink
and confluent-kafka (scripts/test.sh makes target/venv-flink):

    cargo build --release -p fex-jni
    mvn -q -f flink/pom.xml -Dmaven.repo.local=target/m2 package -DskipTests
    target/venv-flink/bin/python scripts/nearline_kafka_bench.py --lock target/bench.lock
"""

from __future__ import annotations

import argparse
import json
import math
import os
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kafka_broker  # noqa: E402
import nearline_bench as nb  # noqa: E402  (also puts tests/nearline on sys.path)
from nearline_bench import data  # noqa: E402

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

MODEL_NAME = "nearline_ranker"  # model.yaml: name
OUTPUTS = (("joined", 2), ("samples", 2), ("manifest", 1), ("corrections", 1))
QUIET = {"log_level": 4}  # librdkafka: warnings and errors, not its info lines


def cpu_of(pid):
    """utime + stime of a running process, in seconds (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        return nb.stat_cpu(f.read())


def broker_of(heap):
    """scripts/kafka_broker.py's broker, until closed; exits with its error."""
    b = kafka_broker.Child("--heap", heap)
    try:
        b.started(timeout=200)
    except kafka_broker.BrokerError as e:
        b.close()
        sys.exit(str(e))
    return b


def create_topics(bootstrap, inputs=None, out=None, partitions=2):
    """INPUTS.requests and INPUTS.actions (`partitions` each), the job's
    four OUT.out.* topics (as tests/nearline/test_kafka.py makes them)."""
    specs = [(f"{inputs}.requests", partitions), (f"{inputs}.actions", partitions)] if inputs else []
    specs += [(f"{out}.out.{name}", n) for name, n in OUTPUTS] if out else []
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    for f in admin.create_topics([NewTopic(t, num_partitions=n, replication_factor=1) for t, n in specs]).values():
        f.result(timeout=60)


def fill(bootstrap, prefix, reqs, acts):
    """The generated requests and actions into PREFIX.requests and
    PREFIX.actions (keyed by user id), as tests/nearline/test_kafka.py
    produces them."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                  "queue.buffering.max.messages": 1_000_000, **QUIET})
    for topic, keyed in ((f"{prefix}.requests", data.logged(reqs)),
                         (f"{prefix}.actions", [(a["user_id"], json.dumps(a).encode()) for a in acts])):
        for key, value in keyed:
            while True:
                try:
                    p.produce(topic, key=key.encode(), value=value)
                    break
                except BufferError:
                    p.poll(0.05)
            p.poll(0)
    if p.flush(120) != 0:
        sys.exit("the producer could not deliver every input record in 120 s")


def committed_records(bootstrap, topics, group, stop=None, timeout=120, on_record=None):
    """Reads `topics` with isolation.level=read_committed from their start.
    Without `stop`: up to each partition's end (as of now), then returns
    the records. With `stop` (a threading.Event): until it is set. Each
    record goes to on_record(receive_ms, message) if given, else into the
    returned list as (topic, value)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 10, "enable.partition.eof": False, **QUIET})
    out = []
    try:
        tps = []
        for t in topics:
            parts = c.list_topics(t, timeout=30).topics[t].partitions
            tps += [TopicPartition(t, p, OFFSET_BEGINNING) for p in parts]
        c.assign(tps)
        ends = None if stop else {(tp.topic, tp.partition): c.get_watermark_offsets(tp, timeout=30)[1] for tp in tps}
        deadline = time.monotonic() + timeout
        while True:
            if stop is not None and stop.is_set():
                return out
            if ends is not None:
                pos = {(tp.topic, tp.partition): tp.offset for tp in c.position(tps)}
                if all(e == 0 or pos[k] >= e for k, e in ends.items()):
                    return out
                if time.monotonic() > deadline:
                    sys.exit(f"{topics}: not at their end in {timeout} s: {pos} of {ends}")
            m = c.poll(0.2)
            if m is None:
                continue
            now = time.time() * 1000
            if m.error() is not None:
                sys.exit(f"consumer: {m.error()}")
            if on_record:
                on_record(now, m)
            else:
                out.append((m.topic(), m.value()))
    finally:
        c.close()


def kafka_cmd(bootstrap, inputs, out, interval, checkpoints, bounded):
    """The job reading INPUTS.requests and INPUTS.actions, writing OUT.*:
    streaming, 1 slot, RocksDB (the job's default)."""
    cmd = [sys.executable, "-m", "fex.nearline", "--config", nb.MODEL, "--brokers", bootstrap,
           "--requests", f"kafka://{inputs}.requests", "--actions", f"kafka://{inputs}.actions",
           "--out", f"kafka://{out}.out", "--kafka-group", f"bench-{out}", "--quiet", "--parallelism", "1",
           "--checkpoint-interval", interval, "--checkpoint-dir", checkpoints]
    return cmd + (["--bounded"] if bounded else [])


def print_groups(run, groups):
    """CPU seconds by group of the job's threads (nearline_bench's THREAD_GROUPS)."""
    each = ", ".join(f"{g} {s:.1f}" for g, s in sorted(groups.items(), key=lambda kv: -kv[1]))
    print(f"{run}: CPU s by thread group: {each}", flush=True)


def jfr(args, env, name, java_opts=""):
    """`env` with the job's JVM (the broker's not) given `java_opts` and,
    with --jfr, recording a Java Flight Recorder profile into
    --jfr DIR/NAME.jfr; or as it is."""
    opts = java_opts.split()
    if args.jfr:
        os.makedirs(args.jfr, exist_ok=True)
        path = os.path.join(os.path.abspath(args.jfr), name + ".jfr")
        opts.append(f"-XX:StartFlightRecording=filename={path},settings=profile")
    return dict(env, JAVA_TOOL_OPTIONS=" ".join(opts)) if opts else env


def throughput(work, args, env, broker, reqs, acts, requests, actions):
    """Rounds of (Kafka in and out, files in and out) on the same data."""
    rows = sum(len(r["items"]) for r in reqs)
    create_topics(broker.bootstrap, inputs="tp", partitions=args.partitions)
    fill(broker.bootstrap, "tp", reqs, acts)
    results = []
    # With --vs-java-opts, each round runs Kafka in and out twice, the job's
    # JVM as it is, then with those options (interleaved A B A B).
    variants = [("", "kafka in, kafka out")]
    if args.vs_java_opts:
        variants.append((args.vs_java_opts, f"kafka, {args.vs_java_opts}"))
    for r, (opts, label) in ((r, v) for r in range(args.repeat) for v in variants):
        prefix = f"tp{r}" + ("b" if opts else "")
        create_topics(broker.bootstrap, out=prefix)
        cmd = kafka_cmd(broker.bootstrap, "tp", prefix, "10s", os.path.join(work, f"chk-{prefix}"), bounded=True)
        with nb.locked(args.lock):
            b0 = cpu_of(broker.pid)
            wall, cpu, peak, _, groups = nb.measured(cmd, jfr(args, env, prefix + "-kafka", opts), None)
            b1 = cpu_of(broker.pid)
        if args.threads:
            print_groups(label, groups)
        # Outside the lock: what the job committed.
        manifest = [json.loads(v) for _, v in committed_records(broker.bootstrap, [f"{prefix}.out.manifest"],
                                                                 f"check-{prefix}")]
        emitted = [m for m in manifest if m["kind"] == "emitted"]
        ids = {m["request_id"] for m in emitted}
        if len(emitted) != len(reqs) or ids != {q["request_id"] for q in reqs}:
            sys.exit(f"round {r}: {len(emitted)} emitted lines for {len(ids)} requests of {len(reqs)}")
        done = sum(m["rows"] for m in emitted)
        if done != rows:
            sys.exit(f"round {r}: the manifest says {done} rows emitted, the input has {rows}")
        results.append((label, wall, cpu, peak, done, b1 - b0))
        if args.files and not opts:
            out = os.path.join(work, f"out-files-{r}")
            with nb.locked(args.lock):
                wall, cpu, peak, _, groups = nb.measured(nb.job_cmd(requests, actions, out, "streaming", 1),
                                                         jfr(args, env, prefix + "-files"), None)
            if args.threads:
                print_groups("files in, files out", groups)
            emitted = json.load(open(out + ".json"))["rows_emitted"]
            results.append(("files in, files out", wall, cpu, peak, emitted, None))
            shutil.rmtree(out, ignore_errors=True)
    return results


def schedule(reqs, acts, duration):
    """(offset seconds, kind, event) for the generated events inside the
    span where every user is making requests (from the last user's first
    request to the first user's last), their times scaled from that span
    onto [0, duration): the generator's order and mix at a steady rate.
    The generator's users start within 5 minutes and then wander apart,
    so over its whole span the rate would ramp down and one partition
    could go quiet before the other, holding the watermark back."""
    first, last = {}, {}
    for r in reqs:
        first[r["uid"]] = min(first.get(r["uid"], r["time"]), r["time"])
        last[r["uid"]] = max(last.get(r["uid"], r["time"]), r["time"])
    a, b = max(first.values()), min(last.values())
    if b <= a:
        sys.exit("no span in which every user makes requests: give more --latency-requests-per-user")
    events = [((r["time"] - a) / (b - a) * duration, 0, r) for r in reqs if a <= r["time"] < b]
    events += [((e["event_time"] - a) / (b - a) * duration, 1, e) for e in acts if a <= e["event_time"] < b]
    events.sort(key=lambda e: (e[0], e[1]))
    return events


def pace(bootstrap, prefix, events, started):
    """Produces the events at their offsets from `started` (time.time()),
    each stamped with the wall clock when it is produced: a request's
    unix_micros, an action's event_time. Returns the largest lag behind
    the schedule, in seconds."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **QUIET})
    batches = {id(r): data.example_batch(r["uid"], r["items"], r["refresh"]) for _, kind, r in events if kind == 0}
    lag = 0.0
    for offset, kind, e in events:
        ahead = started + offset - time.time()
        if ahead > 0.002:
            time.sleep(ahead)
        else:
            lag = max(lag, -ahead)
        now_ms = int(time.time() * 1000)
        if kind == 0:
            value = data.logged_request(MODEL_NAME, batches[id(e)], now_ms * 1000, e["request_id"])
            p.produce(f"{prefix}.requests", key=str(e["uid"]).encode(), value=value)
        else:
            p.produce(f"{prefix}.actions", key=e["user_id"].encode(), value=json.dumps(dict(e, event_time=now_ms)).encode())
        p.poll(0)
    if p.flush(60) != 0:
        sys.exit("the paced producer could not deliver every record")
    return lag


def latency(work, args, env, broker, prefix, interval, events):
    """One unbounded run at checkpoint interval `interval` on fresh topics
    PREFIX.*, fed in real time. Per emitted request, as the read_committed
    consumer saw its sample record and its manifest line: (receive ms,
    the sample record's timestamp, the manifest's emitted_at, the manifest
    record's timestamp)."""
    create_topics(broker.bootstrap, inputs=prefix, out=prefix, partitions=args.partitions)
    samples, manifest = {}, {}

    def record(now, m):
        if m.topic().endswith(".samples"):
            samples.setdefault(m.key().decode(), []).append((now, m.timestamp()[1]))
        else:
            line = json.loads(m.value())
            if line["kind"] == "emitted":
                manifest.setdefault(line["user_id"], []).append((line["emitted_at"], m.timestamp()[1]))

    stop = threading.Event()
    errors = queue.Queue()

    def consume():
        try:
            committed_records(broker.bootstrap, [f"{prefix}.out.samples", f"{prefix}.out.manifest"],
                              f"lat-{prefix}", stop=stop, on_record=record)
        except BaseException as e:  # noqa: BLE001 (raised below)
            errors.put(e)

    cmd = kafka_cmd(broker.bootstrap, prefix, prefix, interval, os.path.join(work, f"chk-{prefix}"), bounded=False)
    log = open(os.path.join(work, f"{prefix}.log"), "w")
    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    with nb.locked(args.lock):
        b0 = cpu_of(broker.pid)
        job = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        started = time.time()
        try:
            lag = pace(broker.bootstrap, prefix, events, started + 1)
            produced = time.time()
            # The watermark stops with the input: what was emitted by then is committed at the next checkpoint.
            drain = parse_seconds(interval) + args.drain
            while time.time() < produced + drain and job.poll() is None:
                time.sleep(0.5)
            if job.poll() is not None:
                log.close()
                sys.exit(f"the job ended with {job.returncode}:\n{open(log.name).read()[-4000:]}")
            cpu = sum(c for c, _ in nb.sample(nb.tree(job.pid)).values())
        finally:
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGTERM)
                try:
                    job.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(job.pid, signal.SIGKILL)
                    job.wait()
            b1 = cpu_of(broker.pid)
    stop.set()
    consumer.join(timeout=30)
    if not errors.empty():
        raise errors.get()
    # A user's samples and manifest lines are each in emission order (one partition per user, one subtask):
    # the k-th of one is the k-th of the other.
    matched = []
    for user, got in samples.items():
        lines = manifest.get(user, [])
        if len(lines) != len(got):
            sys.exit(f"{prefix}: user {user} has {len(got)} committed samples and {len(lines)} emitted lines")
        matched += [(now, ts, at, mts) for (now, ts), (at, mts) in zip(got, lines)]
    if sum(map(len, manifest.values())) != len(matched):
        sys.exit(f"{prefix}: emitted lines without their samples")
    return {"interval": interval, "emitted": matched, "lag": lag, "events": len(events), "wall": produced - started,
            "job_cpu": cpu, "broker_cpu": b1 - b0}


def parse_seconds(text):
    for unit, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if text.endswith(unit) and text[: -len(unit)].replace(".", "", 1).isdigit():
            return float(text[: -len(unit)]) * scale
    raise ValueError(f"a duration like 10s or 500ms, not {text}")


def percentile(values, q):
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jar", default=os.environ.get("FEX_NEARLINE_JAR", os.path.join(nb.ROOT, "flink", "target", "fex-flink.jar")))
    ap.add_argument("--jni-library", default=os.environ.get("FEX_JNI_LIBRARY", os.path.join(nb.ROOT, "target", "release", "libfex_jni.so")))
    ap.add_argument("--users", type=int, default=200, help="throughput data: users")
    ap.add_argument("--requests-per-user", type=int, default=50)
    ap.add_argument("--rows", type=int, nargs=2, default=[20, 41], metavar=("MIN", "MAX"), help="rows per request")
    ap.add_argument("--partitions", type=int, default=2, help="partitions of the input topics")
    ap.add_argument("--repeat", type=int, default=3, help="throughput rounds (medians are printed)")
    ap.add_argument("--no-files", dest="files", action="store_false", help="skip the file runs beside the Kafka ones")
    ap.add_argument("--no-throughput", dest="throughput", action="store_false")
    ap.add_argument("--latency-intervals", nargs="*", default=["10s", "1s"], help="checkpoint intervals of the latency runs")
    ap.add_argument("--latency-users", type=int, default=100, help="latency data: users")
    ap.add_argument("--latency-requests-per-user", type=int, default=60)
    ap.add_argument("--latency-repeat", type=int, default=1, help="rounds of the latency runs, interleaved")
    ap.add_argument("--duration", type=float, default=120, help="seconds of paced input per latency run")
    ap.add_argument("--drain", type=float, default=8, help="seconds past one checkpoint interval to wait after the input")
    ap.add_argument("--broker-heap", default="512m")
    ap.add_argument("--lock", help="flock this file around each timed run (the bench lock)")
    ap.add_argument("--keep", help="keep the data, checkpoints and logs here")
    ap.add_argument("--threads", action="store_true", help="also print each throughput run's CPU seconds by group "
                    "of the job's threads (FEX_BENCH_THREAD_NAMES=1: every thread's name)")
    ap.add_argument("--vs-java-opts", metavar="OPTS", help="also run each round's Kafka job with these JVM options "
                    "(JAVA_TOOL_OPTIONS of the job, not the broker), right after the run without them")
    ap.add_argument("--jfr", metavar="DIR", help="record each throughput run's job with Java Flight Recorder "
                    "(DIR/tpN-kafka.jfr, DIR/tpN-files.jfr; profiles, not figures)")
    args = ap.parse_args()

    env = nb.job_env(args)
    work = args.keep or tempfile.mkdtemp(prefix="fex-nearline-kafka-bench-")
    os.makedirs(work, exist_ok=True)
    broker = broker_of(args.broker_heap)
    print(f"broker {broker.bootstrap} (pid {broker.pid}); JNI library {env['FEX_JNI_LIBRARY']}", flush=True)
    try:
        with nb.locked(args.lock):
            b0, t0 = cpu_of(broker.pid), time.monotonic()
            time.sleep(10)
            idle = (cpu_of(broker.pid) - b0) / (time.monotonic() - t0)
        print(f"broker idle: {idle:.3f} CPU-s per second", flush=True)
        if args.throughput:
            reqs, acts = data.generate(seed=7, users=args.users, requests_per_user=args.requests_per_user,
                                       rows=tuple(args.rows))
            requests, actions = data.write_inputs(os.path.join(work, "in"), reqs, acts, files=8)
            rows = sum(len(r["items"]) for r in reqs)
            print(f"throughput data: {len(reqs)} requests, {rows} rows, {len(acts)} actions", flush=True)
            results = throughput(work, args, env, broker, reqs, acts, requests, actions)
            print(f"{'run':<22} {'n':>2} {'wall s':>7} {'cpu s':>7} {'rows/s':>8} {'rows/cpu-s':>10} "
                  f"{'peak RSS MB':>11} {'broker cpu s':>12}   (medians; every run's wall/cpu/broker s)")
            for name, runs, wall, cpu, peak, n in nb.by_run(results):
                bcpu = f"{statistics.median(r[5] for r in runs):12.1f}" if runs[0][5] is not None else f"{'':12}"
                each = ", ".join(f"{r[1]:.1f}/{r[2]:.1f}" + (f"/{r[5]:.1f}" if r[5] is not None else "") for r in runs)
                print(f"{name:<22} {len(runs):>2} {wall:7.1f} {cpu:7.1f} {n / wall:8.0f} {n / cpu:10.0f} "
                      f"{peak / 1e6:11.0f} {bcpu}   {each}", flush=True)
        if args.latency_intervals:
            reqs, acts = data.generate(seed=13, users=args.latency_users,
                                       requests_per_user=args.latency_requests_per_user, rows=tuple(args.rows))
            events = schedule(reqs, acts, args.duration)
            paced = [e for _, kind, e in events if kind == 0]
            print(f"latency data: {len(paced)} requests ({len(paced) / args.duration:.0f}/s), "
                  f"{sum(len(r['items']) for r in paced)} rows, {len(events) - len(paced)} actions "
                  f"({(len(events) - len(paced)) / args.duration:.0f}/s), paced over {args.duration:.0f} s", flush=True)
            print(f"{'checkpoint':>10} {'round':>5} {'samples':>7} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7} "
                  f"{'max ms':>7} {'emission behind, p50/max s':>26} {'event to visible, p50/p99 s':>28} "
                  f"{'manifest - sample ts, p50/max ms':>32} {'job cpu s':>9} {'broker cpu s':>12} "
                  f"{'producer lag ms':>15}", flush=True)
            summary = {}
            for r in range(args.latency_repeat):
                for interval in args.latency_intervals:
                    run = latency(work, args, env, broker, f"lat{r}-{interval.replace('.', '_')}", interval,
                                  events)
                    e = run["emitted"]
                    if not e:
                        sys.exit(f"checkpoint interval {interval}: no sample was committed")
                    lat = [now - ts for now, ts, _, _ in e]
                    behind = [(ts - at) / 1000 for _, ts, at, _ in e]
                    visible = [(now - at) / 1000 for now, _, at, _ in e]
                    apart = [mts - ts for _, ts, _, mts in e]
                    row = (percentile(lat, 50), percentile(lat, 90), percentile(lat, 99), max(lat))
                    summary.setdefault(interval, []).append(row)
                    print(f"{interval:>10} {r:>5} {len(e):>7} {row[0]:7.0f} {row[1]:7.0f} {row[2]:7.0f} {row[3]:7.0f} "
                          f"{percentile(behind, 50):17.2f}/{max(behind):.2f} "
                          f"{percentile(visible, 50):20.2f}/{percentile(visible, 99):.2f} "
                          f"{percentile(apart, 50):26.0f}/{max(apart):.0f} {run['job_cpu']:9.1f} "
                          f"{run['broker_cpu']:12.1f} {run['lag'] * 1000:15.0f}", flush=True)
                    if args.keep:
                        with open(os.path.join(work, f"latency-{r}-{interval}.json"), "w") as f:
                            json.dump(run, f)
            if args.latency_repeat > 1:
                for interval, rows in summary.items():
                    med = [statistics.median(x[i] for x in rows) for i in range(4)]
                    print(f"{interval:>10} {'med':>5} {'':>7} {med[0]:7.0f} {med[1]:7.0f} {med[2]:7.0f} {med[3]:7.0f}",
                          flush=True)
    finally:
        broker.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
