"""A PostgreSQL server for the tests, from Debian's package: a cluster of its
own in a temporary directory, on 127.0.0.1 at a free port, with a database
`tables` owned by the user `fex` (trust authentication, no password), started
with bounded waits and removed when the `running()` block ends.

As root, every PostgreSQL program runs as the `postgres` user (PostgreSQL
refuses to run as root), set in the child so that signals reach the server
itself. python/tests/test_iceberg.py and tests/nearline/test_iceberg.py use
it for the Iceberg catalog; scripts/test.sh installs the package where it is
missing (scripts/python_env.sh, fex_postgres_env)."""

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time


class Missing(Exception):
    """PostgreSQL's server programs are not installed."""


def bin_dir():
    """The newest installed PostgreSQL's bin directory."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise Missing("PostgreSQL's initdb is not under /usr/lib/postgresql/*/bin (apt-get install postgresql)")
    return os.path.dirname(found[-1])


@contextlib.contextmanager
def running(ready_timeout=60):
    """Yields `fex@127.0.0.1:PORT/tables`, the database's address without
    a scheme (`postgresql://` for fex and Java, `postgresql+psycopg2://`
    for SQLAlchemy)."""
    bins = bin_dir()
    data = tempfile.mkdtemp(prefix="fex-postgres-")
    user = None
    if os.getuid() == 0:
        user = "postgres"
        entry = pwd.getpwnam(user)
        os.chmod(data, 0o700)
        os.chown(data, entry.pw_uid, entry.pw_gid)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def run(*cmd):
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120, user=user)

    server = None
    try:
        run(f"{bins}/initdb", "-D", f"{data}/db", "-U", "fex", "--auth=trust", "--no-sync")
        server = subprocess.Popen(
            [f"{bins}/postgres", "-D", f"{data}/db", "-h", "127.0.0.1", "-p", str(port), "-k", data,
             "-c", "fsync=off"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, user=user)
        deadline = time.monotonic() + ready_timeout
        while subprocess.run([f"{bins}/pg_isready", "-h", "127.0.0.1", "-p", str(port)],
                             capture_output=True).returncode != 0:
            if server.poll() is not None:
                raise RuntimeError(f"PostgreSQL exited ({server.returncode}): {server.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL was not ready within {ready_timeout} s")
            time.sleep(0.2)
        run(f"{bins}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "fex", "tables")
        yield f"fex@127.0.0.1:{port}/tables"
    finally:
        if server is not None:
            server.send_signal(signal.SIGINT)  # a fast shutdown: sessions are ended
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)
        shutil.rmtree(data, ignore_errors=True)


def fixture():
    """A pytest fixture's body (`postgres = pytest.fixture(scope="module")
    (postgres_server.fixture)`): yields `running()`'s address; a missing
    PostgreSQL skips the test, or fails it where FEX_REQUIRE_POSTGRES is set
    (scripts/test.sh sets it, having installed the package)."""
    import pytest

    try:
        bin_dir()
    except Missing as e:
        if os.environ.get("FEX_REQUIRE_POSTGRES"):
            pytest.fail(str(e))
        pytest.skip(str(e))
    with running() as address:
        yield address
