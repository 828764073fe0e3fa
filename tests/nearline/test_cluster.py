"""The same job submitted unchanged to a Flink cluster: a standalone
cluster (one JobManager, one TaskManager, from the apache-flink wheel's own
bin/ scripts, on 127.0.0.1 with free ports) started and stopped by the
test, fex's jar submitted with `flink run`, its output equal to the local
run's, also when its TaskManager is killed mid-run and another started."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections import Counter

import pytest

from fex.nearline import committed, read_manifest
from conftest import MODEL, job, records
from fex.nearline.job import jar_path
import data

import pyflink

FLINK_HOME = os.path.dirname(pyflink.__file__)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    d = tmp_path_factory.mktemp("cluster")
    conf, logs, pids, tmp = d / "conf", d / "log", d / "pids", d / "tmp"
    for p in (conf, logs, pids, tmp):
        p.mkdir()
    for name in os.listdir(os.path.join(FLINK_HOME, "conf")):
        if name.startswith("log4j"):
            shutil.copy(os.path.join(FLINK_HOME, "conf", name), conf)
    stock = open(os.path.join(FLINK_HOME, "conf", "config.yaml")).read()
    java_opts = re.search(r"^\s*all: (.*)$", stock, re.M).group(1)
    rest = free_port()
    (conf / "config.yaml").write_text(
        # The daemons' java.io.tmpdir is the fixture's: a TaskManager killed by
        # a test leaves its extracted jars (24 MB) there, not in /tmp.
        f"""env: {{java: {{opts: {{all: "{java_opts} -Djava.io.tmpdir={tmp}"}}}}}}
jobmanager:
  bind-host: 127.0.0.1
  rpc: {{address: 127.0.0.1, port: {free_port()}}}
  memory: {{process: {{size: 1024m}}}}
taskmanager:
  bind-host: 127.0.0.1
  host: 127.0.0.1
  numberOfTaskSlots: 2
  memory: {{process: {{size: 1536m}}}}
rest: {{address: 127.0.0.1, bind-address: 127.0.0.1, port: {rest}}}
parallelism: {{default: 1}}
# A TaskManager killed by a test is found lost in seconds, not the default 50.
heartbeat: {{interval: 1000, timeout: 6000}}
"""
    )
    env = dict(os.environ, FLINK_CONF_DIR=str(conf), FLINK_LOG_DIR=str(logs), FLINK_PID_DIR=str(pids))
    bin_ = os.path.join(FLINK_HOME, "bin")

    def daemons(action):
        for script in ("taskmanager.sh", "jobmanager.sh") if action == "stop" else ("jobmanager.sh", "taskmanager.sh"):
            subprocess.run(["bash", os.path.join(bin_, script), action], env=env, capture_output=True, timeout=60)

    def log_tail():
        return "\n".join(p.read_text(errors="replace")[-3000:] for p in logs.glob("*.log"))

    daemons("start")
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{rest}/overview", timeout=2) as r:
                    if json.load(r).get("taskmanagers", 0) >= 1:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("the standalone cluster did not come up in 90 s:\n" + log_tail())
            time.sleep(0.5)
        yield {"rest": rest, "env": env, "log": log_tail, "pids": pids, "daemon": daemons, "bin": bin_}
    finally:
        daemons("stop")
        for f in pids.glob("*.pid"):
            for pid in f.read_text().split():
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass


def test_flink_run_on_a_cluster_writes_what_the_local_run_writes(cluster, inputs, streaming, tmp_path):
    out = str(tmp_path / "out")
    cmd = ["bash", os.path.join(FLINK_HOME, "bin", "flink"), "run", "-m", f"127.0.0.1:{cluster['rest']}",
           jar_path(), "--config", MODEL, "--requests", inputs["requests"], "--actions", inputs["actions"],
           "--out", out, "--checkpoint-interval-ms", "1000"]
    p = subprocess.run(cmd, env=cluster["env"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{p.stdout[-3000:]}\n{p.stderr[-5000:]}\n{cluster['log']()}"
    assert "Job has been submitted" in p.stdout, p.stdout
    for name in ("joined", "samples"):
        want = Counter(r for f in committed(os.path.join(streaming, name)) for r in records(f))
        got = Counter(r for f in committed(os.path.join(out, name)) for r in records(f))
        assert got == want, name
    assert Counter(json.dumps(l, sort_keys=True) for l in read_manifest(out)) == Counter(
        json.dumps(l, sort_keys=True) for l in read_manifest(streaming)
    )


def test_a_taskmanager_killed_mid_run_costs_a_restart_from_the_checkpoint(cluster, tmp_path):
    """SIGKILL the cluster's TaskManager once a checkpoint has committed
    output, start another: the job restarts from its last checkpoint on
    the new one and its committed output equals an uninterrupted run's."""
    reqs, acts = data.generate(seed=7, users=60, requests_per_user=60)
    requests, actions = data.write_inputs(str(tmp_path / "in"), reqs, acts, files=6)
    whole = str(tmp_path / "whole")
    job(whole, requests, actions, "--checkpoint-interval", "300ms")
    out, checkpoints = str(tmp_path / "out"), str(tmp_path / "checkpoints")
    cmd = ["bash", os.path.join(cluster["bin"], "flink"), "run", "-m", f"127.0.0.1:{cluster['rest']}", jar_path(),
           "--config", MODEL, "--requests", requests, "--actions", actions, "--out", out,
           "--checkpoint-interval-ms", "300", "--checkpoint-dir", checkpoints, "--restart-attempts", "3",
           "--max-rate-per-input", "3000"]  # about 4 s of reading, so the kill comes mid-run
    log_path = tmp_path / "run.log"
    with open(log_path, "w") as log:
        run = subprocess.Popen(cmd, env=cluster["env"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while not (glob.glob(os.path.join(checkpoints, "*", "chk-*", "_metadata"))
                   and any(l["kind"] == "emitted" for l in read_manifest(out))):
            assert run.poll() is None, "the job ended before its TaskManager was killed:\n" + log_path.read_text()
            assert time.monotonic() < deadline, "no committed output in 180 s:\n" + cluster["log"]()
            time.sleep(0.05)
        (pid_file,) = [f for f in cluster["pids"].glob("*.pid") if "taskexecutor" in f.name]
        for pid in pid_file.read_text().split():
            os.kill(int(pid), signal.SIGKILL)
        pid_file.unlink()
        before = sum(1 for l in read_manifest(out) if l["kind"] == "emitted")
        assert 0 < before < len(reqs), "killed too late to prove a restart"
        subprocess.run(["bash", os.path.join(cluster["bin"], "taskmanager.sh"), "start"], env=cluster["env"],
                       capture_output=True, timeout=60)
        assert run.wait(timeout=300) == 0, log_path.read_text()[-3000:] + cluster["log"]()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    for name in ("joined", "samples"):
        want = Counter(r for p in committed(os.path.join(whole, name)) for r in records(p))
        got = Counter(r for p in committed(os.path.join(out, name)) for r in records(p))
        assert got == want, f"{name}: {sum((got - want).values())} extra, {sum((want - got).values())} missing"
    key = lambda out: Counter(json.dumps(l, sort_keys=True) for l in read_manifest(out))  # noqa: E731
    assert key(out) == key(whole)
