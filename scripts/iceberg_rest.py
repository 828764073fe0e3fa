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
def running(warehouse, properties=None, ready_timeout=120, tls=None):
    """Yields the catalog's URI (http://127.0.0.1:PORT). `warehouse` is where
    its tables go (a directory, or s3://bucket/prefix with `properties`
    naming Iceberg's S3FileIO and its endpoint). With `tls`, a (PKCS#12
    keystore, password) pair, it serves HTTPS: https://127.0.0.1:PORT."""
    cp = classpath()
    state = tempfile.mkdtemp(prefix="fex-iceberg-rest-")
    args = [f"uri=jdbc:sqlite:{state}/catalog.db", f"warehouse={warehouse}"]
    args += [f"{k}={v}" for k, v in (properties or {}).items()]
    if tls is not None:
        args += [f"server.tls-keystore={tls[0]}", f"server.tls-password={tls[1]}"]
    log = tempfile.TemporaryFile(mode="w+")
    server = subprocess.Popen(["java", "-cp", cp, SERVER, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=log, text=True)
    try:
        uri = _wait_for_port(server, log, ready_timeout, "the Iceberg REST server")
        yield uri.replace("http://", "https://", 1) if tls is not None else uri
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


def self_signed(directory):
    """A CA and a certificate it signs for 127.0.0.1 (openssl), in
    `directory`: returns (the CA's PEM path, the server's PKCS#12 keystore
    path, its password)."""
    import subprocess

    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    d = str(directory)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=fex test CA",
        "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", f"{d}/server.key",
        "-out", f"{d}/server.csr")
    with open(f"{d}/san.ext", "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", f"{d}/server.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", f"{d}/san.ext", "-out", f"{d}/server.pem")
    run("pkcs12", "-export", "-in", f"{d}/server.pem", "-inkey", f"{d}/server.key", "-out", f"{d}/server.p12",
        "-passout", "pass:fex-test")
    return f"{d}/ca.pem", f"{d}/server.p12", "fex-test"
