"""Fixtures of the near-line tests: generated inputs, and the job run once
in streaming and once in batch mode over them (`python -m fex.nearline`
in a child process, each run bounded)."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

import fex

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import data  # noqa: E402

MODEL = os.path.join(HERE, "model.yaml")
RUN_TIMEOUT = 300


def records(path):
    """The records of a framed file, read by the package under test."""
    return [bytes(r) for r in fex.read_records(path)]


def job(out, requests, actions, *extra, timeout=RUN_TIMEOUT, check=True):
    cmd = [sys.executable, "-m", "fex.nearline", "--config", MODEL, "--requests", requests,
           "--actions", actions, "--out", out, "--quiet", *extra]
    # A TMPDIR of the run's own: the launcher's JVM works there (Flink's
    # mini-cluster writes about 20 MB a run to java.io.tmpdir, /tmp unless
    # told), and leaves nothing behind, in it or in /tmp.
    scratch = tempfile.mkdtemp(prefix="fex-nearline-test-")
    before = set(glob.glob("/tmp/minicluster_*"))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, TMPDIR=scratch))
        left = os.listdir(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if check and p.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr[-6000:]}")
    assert not left, f"the run left {left} in its TMPDIR"
    assert not set(glob.glob("/tmp/minicluster_*")) - before, "the run's mini-cluster worked in /tmp, not its TMPDIR"
    return p


def kill_once_committed(cmd, checkpoints, committed_some, log_path, timeout=180):
    """Starts the job `cmd` in a session of its own and SIGKILLs the whole
    session (the launcher and its JVM) once `committed_some()` sees output
    and a checkpoint under `checkpoints` has completed; returns the newest
    completed checkpoint at the kill, the one to restore.

    `committed_some` should answer quickly: a bounded job may finish (and
    a finished job deletes its checkpoints) while a slow check runs, so the
    checkpoint is looked up after it, just before the kill, and the test
    fails plainly if the job ended by itself first."""

    def completed():
        found = glob.glob(os.path.join(checkpoints, "*", "chk-*", "_metadata"))
        return sorted((os.path.dirname(f) for f in found), key=lambda d: int(d.rsplit("-", 1)[1]))

    # A TMPDIR of its own, removed after: a killed JVM leaves its
    # extracted jars (Flink's flink-rpc-akka*.jar, 24 MB) behind.
    scratch = tempfile.mkdtemp(prefix="fex-nearline-killed-")
    with open(log_path, "w") as log:
        first = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                 env=dict(os.environ, TMPDIR=scratch))
    deadline, newest = time.monotonic() + timeout, None
    try:
        while newest is None:
            assert first.poll() is None, "the job ended before it could be killed:\n" + log_path.read_text()[-4000:]
            assert time.monotonic() < deadline, (
                f"no checkpoint with committed output in {timeout} s:\n" + log_path.read_text()[-4000:])
            if committed_some():
                newest = (completed() or [None])[-1]
            if newest is None:
                time.sleep(0.05)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        code = first.wait(timeout=30)
        shutil.rmtree(scratch, ignore_errors=True)
    assert code == -signal.SIGKILL, (
        f"the job exited {code} by itself before the kill (a check too slow for it?):\n"
        + log_path.read_text()[-4000:])
    # The kill froze the directory: a checkpoint completed between the
    # lookup and the kill is newer, and the one looked up may be subsumed.
    return (completed() or [newest])[-1]


@pytest.fixture(scope="session")
def inputs(tmp_path_factory):
    reqs, acts = data.generate(seed=23, users=12, requests_per_user=25)
    d = tmp_path_factory.mktemp("inputs")
    requests, actions = data.write_inputs(str(d), reqs, acts)
    return {"requests": requests, "actions": actions, "reqs": reqs, "acts": acts}


@pytest.fixture(scope="session")
def streaming(inputs, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("streaming"))
    job(out, inputs["requests"], inputs["actions"], "--checkpoint-interval", "1s")
    return out


@pytest.fixture(scope="session")
def batch(inputs, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("batch"))
    job(out, inputs["requests"], inputs["actions"], "--batch")
    return out
