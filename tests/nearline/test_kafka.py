"""The near-line job with Kafka on both sides, against a real broker
(scripts/kafka_broker.py: a KRaft node from Maven Central's Kafka jars on
127.0.0.1, started and stopped here): requests and actions read from
topics, joined records, samples and the manifest written in Kafka
transactions, read back by a `read_committed` consumer (confluent-kafka).
The output equals the file run's; a job killed with SIGKILL and restored
from its checkpoint leaves every joined request exactly once; a broker
SIGKILLed mid-run and started again on its port and log directory leaves
the file run's output, every joined request once; bad records are
reported by topic, partition and offset; unreachable brokers and missing
topics are refused at the start."""

from __future__ import annotations

import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from fex.nearline import committed, read_manifest
from conftest import MODEL, RUN_TIMEOUT, job, kill_once_committed, records
import data

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import kafka_broker  # noqa: E402


class Broker(kafka_broker.Child):
    """scripts/kafka_broker.py's broker (kafka_broker.Child), its failures
    failing the test."""

    def answer(self, timeout):
        try:
            return super().answer(timeout)
        except kafka_broker.BrokerError as e:
            pytest.fail(str(e))


@pytest.fixture(scope="module")
def kafka():
    """One broker for the module; each test makes its own topics (a test
    that stops it starts it again; `broker` does if that failed)."""
    b = Broker()
    try:
        b.started(timeout=300)  # the script's own --timeout ends the start before this
        yield b
    finally:
        b.close()


@pytest.fixture
def broker(kafka):
    """The module's broker's bootstrap address (the broker running)."""
    if not kafka.running:
        kafka.command("start")
    return kafka.bootstrap


def topics(bootstrap, *specs):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, num_partitions=n, replication_factor=1) for name, n in specs])
    for f in futures.values():
        f.result(timeout=60)


def produce(bootstrap, topic, keyed):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value in keyed:
        p.produce(topic, key=key.encode() if key is not None else None, value=value)
    assert p.flush(60) == 0


def consume(bootstrap, topic, timeout=90):
    """Every committed record of `topic`, as (partition, key, value), read
    with isolation.level=read_committed up to each partition's end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}-{time.monotonic_ns()}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        parts = c.list_topics(topic, timeout=30).topics[topic].partitions
        tps = [TopicPartition(topic, p, 0) for p in parts]
        c.assign(tps)
        ends = {tp.partition: c.get_watermark_offsets(tp, timeout=30)[1] for tp in tps}
        out, deadline = [], time.monotonic() + timeout
        while True:
            pos = {tp.partition: tp.offset for tp in c.position(tps)}
            if all(pos[p] >= 0 and pos[p] >= ends[p] or ends[p] == 0 for p in ends):
                return out
            assert time.monotonic() < deadline, f"{topic}: not at its end in {timeout} s: {pos} of {ends}"
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            out.append((m.partition(), m.key().decode() if m.key() else None, m.value()))
    finally:
        c.close()


class FirstCommitted:
    """Whether any committed record has reached `topic` yet, answered in
    about 50 ms by a read_committed consumer kept open between calls (a
    fresh consumer per check takes seconds to join, long enough for a
    bounded job to finish between the check and the kill)."""

    def __init__(self, bootstrap, topic):
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"first-{topic}-{time.monotonic_ns()}",
                                  "isolation.level": "read_committed", "enable.auto.commit": False})
        parts = self.consumer.list_topics(topic, timeout=30).topics[topic].partitions
        self.consumer.assign([TopicPartition(topic, p, 0) for p in parts])
        self.seen = False

    def __call__(self):
        if not self.seen:
            m = self.consumer.poll(0.05)
            assert m is None or m.error() is None, m.error()
            self.seen = m is not None
        return self.seen

    def close(self):
        self.consumer.close()


def framed_records(blob):
    """The records of one framed output element (u64 little-endian lengths)."""
    out, at = [], 0
    while at < len(blob):
        n = int.from_bytes(blob[at:at + 8], "little")
        out.append(blob[at + 8:at + 8 + n])
        at += 8 + n
    return out


def nearline(*args, timeout=RUN_TIMEOUT, check=True):
    cmd = [sys.executable, "-m", "fex.nearline", "--config", MODEL, "--quiet", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr[-6000:]}")
    return p


def feed(bootstrap, prefix, reqs, acts, partitions=2):
    topics(bootstrap, (f"{prefix}.requests", partitions), (f"{prefix}.actions", partitions),
           (f"{prefix}.out.joined", 2), (f"{prefix}.out.samples", 2), (f"{prefix}.out.manifest", 1),
           (f"{prefix}.out.corrections", 1))
    produce(bootstrap, f"{prefix}.requests", data.logged(reqs))
    produce(bootstrap, f"{prefix}.actions", [(a["user_id"], json.dumps(a).encode()) for a in acts])


def test_kafka_in_and_out_gives_what_the_files_give(broker, inputs, streaming, tmp_path):
    feed(broker, "same", inputs["reqs"], inputs["acts"])
    p = nearline("--requests", "kafka://same.requests", "--actions", "kafka://same.actions",
                 "--out", "kafka://same.out", "--brokers", broker, "--bounded",
                 "--checkpoint-interval", "1s", "--checkpoint-dir", str(tmp_path / "chk"))
    assert "output in kafka://same.out" in p.stdout, p.stdout
    for name in ("joined", "samples"):
        got = consume(broker, f"same.out.{name}")
        want = Counter(r for f in committed(os.path.join(streaming, name)) for r in records(f))
        assert Counter(r for _, _, v in got for r in framed_records(v)) == want, name
        # Keyed by user: each user's records in one partition.
        users = {}
        for part, key, _ in got:
            assert users.setdefault(key, part) == part, (name, key)
        assert set(users) == {str(r["uid"]) for r in inputs["reqs"]}
    manifest = Counter(json.dumps(json.loads(v), sort_keys=True) for _, _, v in consume(broker, "same.out.manifest"))
    files = Counter(json.dumps(l, sort_keys=True) for l in read_manifest(streaming))
    assert manifest == files, (sorted(manifest - files)[:6], sorted(files - manifest)[:6])
    corrections = [json.loads(v) for _, _, v in consume(broker, "same.out.corrections")]
    assert len(corrections) == sum(1 for l in read_manifest(streaming) if l["kind"] == "late") > 0


def test_killed_and_restored_with_kafka_on_both_sides_every_request_once(broker, tmp_path):
    """SIGKILL the job once a checkpoint has committed some output to the
    topics, restore from its last completed checkpoint: a read_committed
    consumer sees every joined request exactly once."""
    # The inputs read at 3,000 events a second (about 4 s for the actions),
    # so transactions commit while the job still runs: unthrottled, the join
    # had emitted everything by the first checkpoint even at 100 ms.
    reqs, acts = data.generate(seed=5, users=60, requests_per_user=60)
    feed(broker, "kill", reqs, acts)
    checkpoints = str(tmp_path / "checkpoints")
    args = ["--requests", "kafka://kill.requests", "--actions", "kafka://kill.actions", "--out", "kafka://kill.out",
            "--brokers", broker, "--bounded", "--checkpoint-interval", "300ms", "--checkpoint-dir", checkpoints,
            "--max-rate", "3000"]
    cmd = [sys.executable, "-m", "fex.nearline", "--config", MODEL, "--quiet", *args]
    first = FirstCommitted(broker, "kill.out.manifest")
    try:
        restore = kill_once_committed(cmd, checkpoints, first, tmp_path / "first.log")
    finally:
        first.close()
    before = sum(1 for _, _, v in consume(broker, "kill.out.manifest") if json.loads(v)["kind"] == "emitted")
    assert 0 < before < len(reqs), f"killed too late to prove a restore ({before} of {len(reqs)} emitted)"
    nearline(*args, "--restore", restore)
    emitted = [json.loads(v) for _, _, v in consume(broker, "kill.out.manifest")]
    emitted = Counter(l["request_id"] for l in emitted if l["kind"] == "emitted")
    assert set(emitted) == {r["request_id"] for r in reqs}
    assert max(emitted.values()) == 1, [rid for rid, n in emitted.items() if n > 1][:10]
    joined = Counter(v for _, _, v in consume(broker, "kill.out.joined"))
    assert sum(joined.values()) == len(reqs) and max(joined.values()) == 1
    assert len(consume(broker, "kill.out.samples")) == len(reqs)


def test_a_broker_killed_and_started_again_mid_run_loses_and_doubles_nothing(kafka, broker, tmp_path):
    """SIGKILL the broker once a checkpoint has committed some of the
    job's output, start it again some seconds later on the same port and
    log directory: the job (with --restart-attempts, as the book advises)
    rides the outage out or restarts from its last checkpoint, finishes,
    and a read_committed consumer sees what an uninterrupted run over the
    same input as files writes: every joined request exactly once."""
    reqs, acts = data.generate(seed=11, users=60, requests_per_user=60)
    whole = str(tmp_path / "whole")
    requests, actions = data.write_inputs(str(tmp_path / "in"), reqs, acts)
    job(whole, requests, actions, "--checkpoint-interval", "300ms")
    feed(broker, "down", reqs, acts)
    checkpoints = str(tmp_path / "checkpoints")
    cmd = [sys.executable, "-m", "fex.nearline", "--config", MODEL, "--quiet", "--requests", "kafka://down.requests",
           "--actions", "kafka://down.actions", "--out", "kafka://down.out", "--brokers", broker, "--bounded",
           "--checkpoint-interval", "300ms", "--checkpoint-dir", checkpoints, "--restart-attempts", "3",
           "--max-rate", "3000"]  # about 4 s of reading: the broker goes down mid-run
    log_path = tmp_path / "run.log"
    first = FirstCommitted(broker, "down.out.manifest")
    with open(log_path, "w") as log:
        run = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not (first() and glob.glob(os.path.join(checkpoints, "*", "chk-*", "_metadata"))):
            assert run.poll() is None, "the job ended before the broker was killed:\n" + log_path.read_text()[-4000:]
            assert time.monotonic() < deadline, "no committed output in 180 s:\n" + log_path.read_text()[-4000:]
            time.sleep(0.05)
        kafka.command("kill")
        assert run.poll() is None, "the job ended before the broker was killed:\n" + log_path.read_text()[-4000:]
        time.sleep(3)  # down (and during the start, which waits out the old registration's 9 s session)
        kafka.command("start")
        assert run.wait(timeout=300) == 0, log_path.read_text()[-4000:]
    finally:
        first.close()
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=30)
    lines = [json.loads(v) for _, _, v in consume(broker, "down.out.manifest")]
    emitted = Counter(l["request_id"] for l in lines if l["kind"] == "emitted")
    assert set(emitted) == {r["request_id"] for r in reqs}
    assert max(emitted.values()) == 1, [rid for rid, n in emitted.items() if n > 1][:10]
    for name in ("joined", "samples"):
        got = Counter(r for _, _, v in consume(broker, f"down.out.{name}") for r in framed_records(v))
        want = Counter(r for f in committed(os.path.join(whole, name)) for r in records(f))
        assert got == want, f"{name}: {sum((got - want).values())} extra, {sum((want - got).values())} missing"
    got = Counter(json.dumps(l, sort_keys=True) for l in lines)
    want = Counter(json.dumps(l, sort_keys=True) for l in read_manifest(whole))
    assert got == want, (sorted(got - want)[:6], sorted(want - got)[:6])
    got = Counter(json.dumps(json.loads(v), sort_keys=True) for _, _, v in consume(broker, "down.out.corrections"))
    want = Counter(json.dumps(json.loads(l), sort_keys=True) for f in committed(os.path.join(whole, "corrections"))
                   for l in open(f).read().splitlines())
    assert got == want and got, (sorted(got - want)[:6], sorted(want - got)[:6])


def test_bad_kafka_records_are_reported_by_topic_partition_and_offset(broker, inputs, tmp_path):
    reqs = inputs["reqs"][:10]
    acts = [a for a in inputs["acts"] if a["request_id"] in {r["request_id"] for r in reqs}]
    topics(broker, ("bad.requests", 1), ("bad.actions", 1), ("bad.out.joined", 1), ("bad.out.samples", 1),
           ("bad.out.manifest", 1), ("bad.out.corrections", 1))
    produce(broker, "bad.requests", data.logged(reqs) + [("1", b"\x0a\x05abc")])
    produce(broker, "bad.actions", [(a["user_id"], json.dumps(a).encode()) for a in acts] + [("1", b"not json")])
    nearline("--requests", "kafka://bad.requests", "--actions", "kafka://bad.actions", "--out", "kafka://bad.out",
             "--brokers", broker, "--batch")
    lines = [json.loads(v) for _, _, v in consume(broker, "bad.out.manifest")]
    (request,) = [l for l in lines if l["kind"] == "bad_request"]
    assert (request["topic"], request["partition"], request["offset"]) == ("bad.requests", 0, len(reqs)), request
    assert request["offset_in_record"] >= 0 and request["error"], request
    (action,) = [l for l in lines if l["kind"] == "bad_action"]
    assert (action["topic"], action["partition"], action["offset"]) == ("bad.actions", 0, len(acts)), action
    assert action["line"] == "not json" and action["error"].startswith("not JSON: "), action
    assert sum(1 for l in lines if l["kind"] == "emitted") == len(reqs)


def test_unreachable_brokers_and_missing_topics_are_refused_at_the_start(broker, inputs, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nobody = f"127.0.0.1:{s.getsockname()[1]}"
    p = nearline("--requests", "kafka://x.requests", "--actions", inputs["actions"], "--out", str(tmp_path / "o"),
                 "--brokers", nobody, "--kafka-timeout", "3s", check=False, timeout=120)
    assert p.returncode == 69, p.stderr[-3000:]
    assert f"cannot reach the Kafka brokers {nobody}" in p.stderr, p.stderr[-3000:]
    p = nearline("--requests", "kafka://absent.requests", "--actions", inputs["actions"], "--out", "kafka://absent.out",
                 "--brokers", broker, "--checkpoint-dir", str(tmp_path / "c"), check=False, timeout=120)
    assert p.returncode == 64, p.stderr[-3000:]
    assert "no such Kafka topic" in p.stderr and "absent.requests" in p.stderr and "absent.out.joined" in p.stderr, (
        p.stderr[-3000:])
