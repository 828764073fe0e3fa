"""An S3-compatible object store for the tests: moto's S3 server (the
S3 REST API, SigV4 signatures, multipart uploads; objects in memory) in a
process of its own on 127.0.0.1 at a free port, with one bucket made,
stopped when the `running()` block ends.

python/tests/test_iceberg_remote.py puts fex's warehouses on it. Run as a
script, it is that server: it prints `listening on 127.0.0.1:PORT` and stops
when its standard input closes."""

import contextlib
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

ACCESS_KEY = "fex-test-key"
SECRET_KEY = "fex-test-secret"
REGION = "us-east-1"


@contextlib.contextmanager
def running(bucket="fex-warehouse", ready_timeout=60):
    """Yields a dict: `endpoint` (http://127.0.0.1:PORT), `bucket`,
    `access_key`, `secret_key`, `region`."""
    log = tempfile.TemporaryFile(mode="w+")
    server = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                              text=True)
    try:
        endpoint = _wait_for_port(server, log, ready_timeout, "moto's S3 server")
        _make_bucket(endpoint, bucket)
        yield {"endpoint": endpoint, "bucket": bucket, "access_key": ACCESS_KEY, "secret_key": SECRET_KEY,
               "region": REGION}
    finally:
        _stop(server, log)


def properties(store, pyiceberg=False):
    """The catalog and file-IO properties that reach `store`, under the
    names iceberg-rust (fex), Iceberg's Java S3FileIO (the near-line job)
    and pyiceberg share. With `pyiceberg`, time for moto's server, which
    answers pyiceberg's parallel uploads one Python thread at a time
    (pyarrow's S3 client gives up after 3 s without a byte)."""
    props = {
        "s3.endpoint": store["endpoint"],
        "s3.access-key-id": store["access_key"],
        "s3.secret-access-key": store["secret_key"],
        "s3.path-style-access": "true",
        "client.region": store["region"],
    }
    if pyiceberg:
        props.update({"s3.connect-timeout": "60", "s3.request-timeout": "60"})
    return props


def _make_bucket(endpoint, bucket):
    # moto takes any credentials; a PUT on the bucket's path makes it.
    request = urllib.request.Request(f"{endpoint}/{bucket}", method="PUT")
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200, answer.status


def _wait_for_port(server, log, timeout, what):
    """The `listening on HOST:PORT` line a child prints when it accepts
    connections, within `timeout` seconds; what it logged otherwise. (Its
    log is a file: a pipe nobody reads would stop the server once full.)"""
    import selectors

    deadline = time.monotonic() + timeout
    selector = selectors.DefaultSelector()
    selector.register(server.stdout, selectors.EVENT_READ)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError(f"{what} did not listen within {timeout} s")
        if selector.select(timeout=left):
            line = server.stdout.readline()
            if line.startswith("listening on "):
                return "http://" + line.split()[-1]
            if line == "":
                server.wait(timeout=10)
                log.seek(0)
                raise RuntimeError(f"{what} exited ({server.returncode}): {log.read()[-3000:]}")


def _stop(server, log):
    with contextlib.suppress(Exception):
        server.stdin.close()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=10)
    log.close()


def _serve():
    import faulthandler
    import logging
    import signal

    from moto.server import ThreadedMotoServer

    # `kill -USR1` prints every thread's stack: what a stuck request waits on.
    faulthandler.register(signal.SIGUSR1)
    # Not a line per request.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)

    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    print(f"listening on {host}:{port}", flush=True)
    sys.stdin.read()  # until the parent closes it, or dies
    server.stop()


if __name__ == "__main__":
    _serve()
