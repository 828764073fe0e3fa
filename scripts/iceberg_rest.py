"""An Iceberg REST catalog for the tests: Iceberg's own reference server
(scripts/iceberg-rest/IcebergRestServer.java over a JDBC catalog on a SQLite
file), on 127.0.0.1 at a free port, stopped when the `running()` block ends.

Its classpath is Maven's (scripts/iceberg-rest/pom.xml); scripts/test.sh
writes it to target/iceberg-rest.classpath, or FEX_ICEBERG_REST_CLASSPATH
names the file. python/tests/test_iceberg_remote.py runs fex's writers
against it."""

import contextlib
import os
import shutil
import subprocess
import tempfile

from object_store import _stop, _wait_for_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "scripts", "iceberg-rest", "IcebergRestServer.java")


class Missing(Exception):
    """The server's classpath (or a Java runtime) is not here."""


def classpath():
    path = os.environ.get("FEX_ICEBERG_REST_CLASSPATH") or os.path.join(ROOT, "target", "iceberg-rest.classpath")
    if not os.path.exists(path):
        raise Missing(f"{path} is missing (scripts/test.sh writes it with Maven from scripts/iceberg-rest/pom.xml)")
    if shutil.which("java") is None:
        raise Missing("no java on PATH")
    return open(path).read().strip()


@contextlib.contextmanager
def running(warehouse, properties=None, ready_timeout=120):
    """Yields the catalog's URI (http://127.0.0.1:PORT). `warehouse` is where
    its tables go (a directory, or s3://bucket/prefix with `properties`
    naming Iceberg's S3FileIO and its endpoint)."""
    cp = classpath()
    state = tempfile.mkdtemp(prefix="fex-iceberg-rest-")
    args = [f"uri=jdbc:sqlite:{state}/catalog.db", f"warehouse={warehouse}"]
    args += [f"{k}={v}" for k, v in (properties or {}).items()]
    log = tempfile.TemporaryFile(mode="w+")
    server = subprocess.Popen(["java", "-cp", cp, SERVER, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=log, text=True)
    try:
        yield _wait_for_port(server, log, ready_timeout, "the Iceberg REST server")
    finally:
        _stop(server, log)
        shutil.rmtree(state, ignore_errors=True)


@contextlib.contextmanager
def running_on(store, prefix="rest", ready_timeout=120):
    """`running()` with its warehouse at s3://<bucket>/<prefix> of
    `store` (scripts/object_store.py's), through Iceberg's S3FileIO."""
    from object_store import properties

    server_side = {"io-impl": "org.apache.iceberg.aws.s3.S3FileIO", **properties(store)}
    with running(f"s3://{store['bucket']}/{prefix}", server_side, ready_timeout) as uri:
        yield uri
