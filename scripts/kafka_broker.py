#!/usr/bin/env python3
"""A single-node Apache Kafka broker (KRaft: broker and controller in one
process, no ZooKeeper) on 127.0.0.1, for the tests and for a person.

Kafka's own jars come from Maven Central (scripts/kafka/pom.xml: kafka_2.13,
kafka-server, kafka-clients, kafka-tools 4.4.0), resolved by Maven into a
local repository under target/m2 once; later runs reuse the classpath file
and need no network. Each run formats a fresh log directory, starts
`kafka.Kafka` on two free loopback ports (clients, controller), waits until
the broker says it has started, creates the topics asked for, then prints
one JSON line on stdout:

    {"bootstrap": "127.0.0.1:PORT", "pid": JVM_PID, "dir": "...", "log": ".../server.log"}

and runs until SIGTERM or SIGINT (or, with --until-stdin-closes, until its
standard input closes: a test that dies takes its broker with it). Then the
broker is stopped (SIGTERM, SIGKILL after 20 s) and its directory deleted.
The JVM is also told to die with this script (PR_SET_PDEATHSIG).

With --until-stdin-closes, lines on standard input stop and start the
broker, for a test of what a broker outage does to its clients:

    stop    SIGTERM (a clean shutdown; SIGKILL after 20 s)
    kill    SIGKILL (a crash)
    start   the broker again: the same ports, log directory and cluster, so
            its topics, committed offsets and transactions are still there

each answered with one JSON line on stdout once done: {"stopped": STATUS}
(the JVM's exit status, negative for a signal), the line above again for
a start (with the new JVM's pid), or {"error": "..."} (a start that failed
within --timeout, with the log's last lines; the script keeps running).

Every wait is bounded: the Maven fetch (--fetch-timeout) and the start with
its topics (--timeout). A failure prints what failed and the tail of the
broker's log on stderr and exits 1, so a test that starts the broker fails
with that message.

    python3 scripts/kafka_broker.py --topic requests:4
    python3 scripts/kafka_broker.py --fetch-only     # jars only (CI's first step)
"""

import argparse
import base64
import ctypes
import fcntl
import hashlib
import json
import os
import select
import shutil
import signal
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POM = os.path.join(ROOT, "scripts", "kafka", "pom.xml")
KAFKA_VERSION = "4.4.0"

LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
"""


class BrokerError(Exception):
    pass


class Child:
    """This script run as a child process with --until-stdin-closes, for a
    test or a benchmark: `started` waits for its first line, `command` sends
    stop, kill or start and waits for the answer, `close` ends it (its
    standard input closes, and the broker with it). Every wait is bounded; a
    failure raises BrokerError with the script's message or stderr."""

    def __init__(self, *args, timeout=150):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--until-stdin-closes", "--timeout", str(timeout), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(l) for l in self.proc.stdout] + [self.lines.put("")],
                         daemon=True).start()
        self.bootstrap = self.pid = None
        self.running = False

    def answer(self, timeout):
        """The script's next line, parsed."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise BrokerError(f"kafka_broker.py did not answer in {timeout} s") from None
        if not line:
            raise BrokerError(f"kafka_broker.py ended:\n{self.proc.stderr.read()[-4000:]}")
        answer = json.loads(line)
        if "error" in answer:
            raise BrokerError(f"kafka_broker.py: {answer['error']}")
        return answer

    def started(self, timeout):
        ready = self.answer(timeout)
        self.bootstrap, self.pid = ready["bootstrap"], ready["pid"]
        self.running = True

    def command(self, what, timeout=200):
        """stop, kill or start (the script's --timeout bounds a start)."""
        self.proc.stdin.write(what + "\n")
        self.proc.stdin.flush()
        if what == "start":
            self.started(timeout)
        else:
            self.answer(timeout)
            self.running = False

    def close(self):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def target_dir():
    return os.environ.get("FEX_KAFKA_TARGET") or os.path.join(ROOT, "target")


def classpath(fetch_timeout):
    """Kafka's runtime classpath, fetched with Maven once (under a lock, so
    tests starting brokers at once fetch it once)."""
    cache = os.path.join(target_dir(), "kafka")
    os.makedirs(cache, exist_ok=True)
    # Named after the pom's content: a changed pom is fetched again.
    digest = hashlib.sha256(open(POM, "rb").read()).hexdigest()[:16]
    cp_file = os.path.join(cache, f"classpath-{KAFKA_VERSION}-{digest}.txt")
    with open(os.path.join(cache, ".fetch.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cp = _read_classpath(cp_file)
        if cp:
            return cp
        mvn = shutil.which("mvn")
        if not mvn:
            raise BrokerError("Maven (mvn) is needed to fetch Kafka's jars; install Maven 3.8 or later "
                              "(Debian/Ubuntu: apt-get install maven)")
        m2 = os.environ.get("FEX_M2") or os.path.join(target_dir(), "m2")
        tmp = cp_file + ".tmp"
        cmd = [mvn, "-B", "-q", "--no-transfer-progress", "-f", POM, f"-Dmaven.repo.local={m2}",
               "dependency:build-classpath", "-Dmdep.includeScope=runtime", f"-Dmdep.outputFile={tmp}"]
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=fetch_timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise BrokerError(f"fetching Kafka {KAFKA_VERSION}'s jars with Maven took over {fetch_timeout} s")
        if r.returncode != 0:
            raise BrokerError(f"Maven could not fetch Kafka {KAFKA_VERSION}'s jars (exit {r.returncode}):\n"
                              + r.stdout[-4000:])
        os.replace(tmp, cp_file)
        cp = _read_classpath(cp_file)
        if not cp:
            raise BrokerError(f"Maven wrote no usable classpath to {cp_file}")
        return cp


def _read_classpath(path):
    try:
        cp = open(path).read().strip()
    except OSError:
        return None
    jars = cp.split(os.pathsep)
    if not any(os.path.basename(j) == f"kafka_2.13-{KAFKA_VERSION}.jar" for j in jars):
        return None
    return cp if all(os.path.isfile(j) for j in jars) else None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_id():
    """A Kafka Uuid: 16 random bytes, URL-safe base64 without padding, and
    never one that starts with "-" (Kafka's own Uuid.randomUuid draws again
    for those): kafka-storage's argument parser would take it for an option
    ("argument --cluster-id/-t: expected one argument"), one start in 64."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def write_config(run_dir, port, controller_port):
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": os.path.join(run_dir, "data"),
        "num.partitions": "1",
        # Topics are made on purpose (--topic), with their partitions.
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    path = os.path.join(run_dir, "server.properties")
    with open(path, "w") as f:
        f.writelines(f"{k}={v}\n" for k, v in props.items())
    log = os.path.join(run_dir, "server.log")
    log4j = os.path.join(run_dir, "log4j2.properties")
    with open(log4j, "w") as f:
        f.write(LOG4J2.format(log=log))
    return path, log, log4j


def java_cmd(cp, log4j, heap):
    java = shutil.which("java")
    if not java:
        raise BrokerError("java is needed to run Kafka (17 or later; Debian/Ubuntu: apt-get install openjdk-17-jdk-headless)")
    return [java, f"-Xmx{heap}", f"-Xms{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}", "-cp", cp]


def _die_with_parent():
    """In the child, before exec: SIGKILL when this script's process dies."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def run_tool(cmd, timeout, what):
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    except subprocess.TimeoutExpired:
        raise BrokerError(f"{what} took over {timeout:.0f} s")
    if r.returncode != 0:
        raise BrokerError(f"{what} failed (exit {r.returncode}):\n{r.stdout[-4000:]}")


def tail(path, n=40):
    try:
        return "".join(open(path, errors="replace").readlines()[-n:])
    except OSError:
        return "(no log)"


def log_size(log):
    try:
        return os.path.getsize(log)
    except OSError:
        return 0


def wait_started(proc, log, port, deadline, since=0):
    """Until the broker logs (after byte `since` of its log: a restarted
    broker appends) that it started and takes connections."""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BrokerError(f"the broker exited with {proc.returncode} before it started")
        try:
            with open(log, errors="replace") as f:
                f.seek(since)
                started = "Kafka Server started" in f.read()
        except OSError:
            started = False
        if started:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                pass
        time.sleep(0.1)
    raise BrokerError("the broker did not start in time")


def create_topics(java, bootstrap, topics, deadline):
    for spec in topics:
        name, _, parts = spec.partition(":")
        cmd = java + ["org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, "--create",
                      "--topic", name, "--partitions", parts or "1", "--replication-factor", "1"]
        run_tool(cmd, max(1.0, deadline - time.monotonic()), f"creating topic {name}")


def stop(proc, kill=False):
    """Stops the broker's JVM (SIGKILL at once with `kill`); its exit status."""
    if proc.poll() is None and not kill:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is None:
        proc.kill()
    return proc.wait()


class Broker:
    """The broker's JVM, started (again) on the same ports and directory."""

    def __init__(self, java, config, run_dir, log, port, timeout):
        self.java, self.config, self.run_dir, self.log = java, config, run_dir, log
        self.port, self.timeout, self.proc = port, timeout, None

    def start(self, deadline):
        since = log_size(self.log)
        with open(os.path.join(self.run_dir, "stdout.log"), "a") as out:
            self.proc = subprocess.Popen(self.java + ["kafka.Kafka", self.config], stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         preexec_fn=_die_with_parent)
        wait_started(self.proc, self.log, self.port, deadline, since)

    def ready(self):
        return {"bootstrap": f"127.0.0.1:{self.port}", "pid": self.proc.pid, "dir": self.run_dir, "log": self.log}

    def command(self, line):
        """One line of standard input, stop, kill or start: its answer."""
        if line in ("stop", "kill"):
            return {"stopped": stop(self.proc, kill=line == "kill")}
        if line == "start":
            if self.proc.poll() is None:
                return {"error": "the broker is running; stop it first"}
            try:
                self.start(time.monotonic() + self.timeout)
            except BrokerError as e:
                stop(self.proc, kill=True)
                return {"error": f"{e}\n--- the broker's log ({self.log}), last lines:\n{tail(self.log)}"}
            return self.ready()
        return {"error": f"unknown command {line!r}: stop, kill or start"}


def wait_for_end(until_stdin_closes, broker):
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(1))
    pending = b""
    while not stopping:
        if until_stdin_closes:
            ready, _, _ = select.select([sys.stdin], [], [], 0.5)
            if not ready:
                continue
            chunk = os.read(sys.stdin.fileno(), 4096)
            if not chunk:
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.strip():
                    answer = broker.command(line.decode(errors="replace").strip())
                    print(json.dumps(answer), flush=True)
        else:
            time.sleep(0.5)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--topic", action="append", default=[], metavar="NAME:PARTITIONS",
                   help="create this topic once the broker runs (repeatable)")
    p.add_argument("--timeout", type=float, default=120, help="seconds to format, start and create topics")
    p.add_argument("--fetch-timeout", type=float, default=900, help="seconds for Maven to fetch the jars")
    p.add_argument("--fetch-only", action="store_true", help="fetch the jars into target/m2 and exit")
    p.add_argument("--until-stdin-closes", action="store_true", help="stop when standard input closes")
    p.add_argument("--heap", default="512m", help="the broker JVM's heap")
    p.add_argument(
        "--feature", action="append", default=[], metavar="NAME=LEVEL",
        help="a feature level to format with, e.g. transaction.version=1 (an older transaction protocol)",
    )
    args = p.parse_args()

    run_dir, broker, log = None, None, None
    try:
        cp = classpath(args.fetch_timeout)
        if args.fetch_only:
            print(f"Kafka {KAFKA_VERSION}'s jars are in place", file=sys.stderr)
            return 0
        deadline = time.monotonic() + args.timeout
        os.makedirs(os.path.join(target_dir(), "kafka"), exist_ok=True)
        run_dir = tempfile.mkdtemp(prefix="run-", dir=os.path.join(target_dir(), "kafka"))
        port, controller_port = free_port(), free_port()
        config, log, log4j = write_config(run_dir, port, controller_port)
        java = java_cmd(cp, log4j, args.heap)
        features = [a for f in args.feature for a in ("--feature", f)]
        run_tool(java + ["kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", config, *features],
                 max(1.0, deadline - time.monotonic()), "formatting the log directory")
        broker = Broker(java, config, run_dir, log, port, args.timeout)
        broker.start(deadline)
        create_topics(java, f"127.0.0.1:{port}", args.topic, deadline)
        print(json.dumps(broker.ready()), flush=True)
        wait_for_end(args.until_stdin_closes, broker)
        return 0
    except BrokerError as e:
        msg = f"kafka_broker.py: {e}"
        if log:
            msg += f"\n--- the broker's log ({log}), last lines:\n{tail(log)}"
        print(msg, file=sys.stderr, flush=True)
        return 1
    finally:
        if broker is not None and broker.proc is not None:
            stop(broker.proc)
        if run_dir is not None:
            shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
