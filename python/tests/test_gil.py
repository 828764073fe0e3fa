"""Every long call releases the GIL: another Python thread runs while it
works. The proof does not time anything: the switch interval is set so
high that the interpreter never takes the GIL from a running thread, so a
counting thread can only run between `before` and `after` if the call
itself let go of the GIL."""

import os
import struct
import subprocess
import sys
import threading
import time

import pytest

import fex

from conftest import ROOT, binary, read_framed

@pytest.fixture(scope="module")
def big_batch(tmp_path_factory):
    """One ExampleBatch of 4096 rows, the default model's most."""
    out = tmp_path_factory.mktemp("gil") / "big.pb"
    args = ["gen", "--count", "1", "--batch-size", "4096", "--seed", "3", "--out", str(out)]
    subprocess.run([binary("FEX_CLIENT"), *args], check=True, capture_output=True)
    return read_framed(out)[0]


def others_ran_during(call, attempts=500):
    """True when a counting thread advanced while `call()` ran, in any of
    `attempts` calls. One suffices, and it is usually the first; the many
    attempts are for a loaded machine, where the counting thread may wait
    for a core. A call that holds the GIL never lets it advance."""
    counter = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counter[0] += 1
            time.sleep(0.0001)  # gives the GIL back: only this thread yields

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    thread = threading.Thread(target=count, daemon=True)
    thread.start()
    try:
        for _ in range(attempts):
            before = counter[0]
            call()
            if counter[0] > before:
                return True
        return False
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old)


def test_the_check_sees_a_call_that_holds_the_gil():
    # A pure-Python loop never gives the GIL up: the counter stands still,
    # so the check can fail.
    assert not others_ran_during(lambda: sum(range(200_000)), attempts=3)


def test_extract_batch_releases_the_gil(plan, big_batch):
    assert others_ran_during(lambda: plan.extract_batch(big_batch))


def test_extract_examples_releases_the_gil(plan):
    # Empty Examples are valid (every output takes its default): the most
    # rows a call takes is a call long enough.
    examples = [b""] * 4096
    assert others_ran_during(lambda: plan.extract_examples(examples))


def test_run_releases_the_gil(plan, request_bytes, tmp_path):
    path = tmp_path / "many.pb"
    path.write_bytes((struct.pack("<Q", len(request_bytes)) + request_bytes) * 8)
    assert others_ran_during(lambda: fex.run(plan, str(path), threads=1))


def test_reading_records_releases_the_gil(request_bytes, tmp_path):
    path = tmp_path / "many.pb"
    path.write_bytes((struct.pack("<Q", len(request_bytes)) + request_bytes) * 64)
    assert others_ran_during(lambda: sum(1 for _ in fex.read_records(str(path))))


def test_compiling_a_plan_releases_the_gil():
    text = open(os.path.join(ROOT, "models", "default.yaml")).read()
    assert others_ran_during(lambda: fex.Plan.from_yaml(text))
