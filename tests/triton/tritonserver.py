"""A real NVIDIA Triton Inference Server for tests: the `tritonserver`
binary that the nvidia-pytriton wheel bundles (Triton 2.51, CPU), started
directly on a model repository, bound to 127.0.0.1 only.

    with Triton(repository) as triton:
        client = tritonclient.grpc.InferenceServerClient(triton.grpc_url)

What the wheel holds (site-packages/):
  pytriton/tritonserver/bin/tritonserver           the server
  pytriton/tritonserver/backends/python/           the python backend (libtriton_python.so)
  pytriton/tritonserver/python_backend_stubs/3.X/  its stub, one per Python version
  nvidia_pytriton.libs/                            the libraries both link (auditwheel)

pytriton copies that tree into a workspace with the stub of the running
Python beside the backend (pytriton/triton.py, _prepare_triton_inference_server)
and puts nvidia_pytriton.libs on LD_LIBRARY_PATH (pytriton/server/triton_server.py,
_get_env); this launcher builds the same layout with symlinks.

The stub is a separate process that embeds libpython: it must load the
libpython of the interpreter running the tests, or a pyenv build picks up
the system's libpython3.X and fails inside threading ("'_thread.RLock'
object has no attribute '_recursion_count'"). So that interpreter's LIBDIR
leads LD_LIBRARY_PATH, and its venv's bin leads PATH, where the embedded
interpreter finds its prefix (and so numpy in the venv's site-packages).
Tensors travel between Triton and the stub through /dev/shm; each launch
names its regions with a prefix of its own, so parallel runs never share one.
"""

import importlib.util
import os
import pathlib
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time

# Found, not imported: importing pytriton loads its whole client stack.
_SPEC = importlib.util.find_spec("pytriton")
if _SPEC is None:
    raise ImportError("nvidia-pytriton is not installed: pip install -r tests/triton/requirements.txt")
WHEEL = pathlib.Path(_SPEC.origin).parent / "tritonserver"
LIBS = WHEEL.parent.parent / "nvidia_pytriton.libs"
BINARY = WHEEL / "bin" / "tritonserver"

READY_SECONDS = 60
STOP_SECONDS = 15
PORT_ATTEMPTS = 3


class TritonError(RuntimeError):
    """Triton did not start; the message ends with the tail of its log."""


class Triton:
    """A context manager running tritonserver on `model_repository` (every
    model in it is loaded at start); `.grpc_url` is "127.0.0.1:PORT",
    `.log_path` its log file (removed on exit; errors quote its tail).
    HTTP and metrics are off."""

    def __init__(self, model_repository, ready_seconds=READY_SECONDS, port=None):
        self.model_repository = str(model_repository)
        self.ready_seconds = ready_seconds
        # A fixed port (scripts/triton_local.sh) is not retried elsewhere.
        self.fixed_port = port
        self.process = None

    def __enter__(self):
        # Triton takes no port 0: the port is picked free, and another
        # process may take it before Triton binds; then Triton exits saying
        # so, and it is started again on another port.
        for attempt in range(PORT_ATTEMPTS):
            try:
                self._start()
                return self
            except TritonError as e:
                if attempt + 1 == PORT_ATTEMPTS or self.fixed_port or "already in use" not in str(e):
                    raise

    def _start(self):
        self._dir = tempfile.TemporaryDirectory(prefix="fex-triton-")
        work = pathlib.Path(self._dir.name)
        self.log_path = work / "tritonserver.log"
        self.port = self.fixed_port or free_port()
        self.grpc_url = f"127.0.0.1:{self.port}"
        command = [str(BINARY), *self._arguments(_backends(work), work.name)]
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            command, env=_environment(), stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            self.started_seconds = self._wait_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def _arguments(self, backends, shm_prefix):
        return [
            f"--model-repository={self.model_repository}",
            f"--backend-directory={backends}",
            f"--cache-directory={WHEEL / 'caches'}",
            # The python backend's /dev/shm regions: named per launch (the
            # default prefix is the same for every Triton on the machine).
            f"--backend-config=python,shm-region-prefix-name={shm_prefix}_",
            "--model-control-mode=none",
            "--strict-readiness=true",
            "--exit-on-error=true",
            "--allow-grpc=true",
            "--grpc-address=127.0.0.1",
            f"--grpc-port={self.port}",
            "--allow-http=false",
            "--allow-metrics=false",
            "--allow-sagemaker=false",
            "--allow-vertex-ai=false",
            "--log-verbose=0",
            f"--exit-timeout-secs={STOP_SECONDS}",
        ]

    def _wait_ready(self):
        """Polls ServerReady until it answers true; raises with the log's
        tail if Triton exits first or `ready_seconds` pass."""
        import tritonclient.grpc as grpcclient
        from tritonclient.utils import InferenceServerException

        start = time.monotonic()
        client = grpcclient.InferenceServerClient(self.grpc_url)
        try:
            while True:
                if self.process.poll() is not None:
                    raise TritonError(f"tritonserver exited with code {self.process.returncode}{self.log_tail()}")
                try:
                    if client.is_server_ready(client_timeout=1.0):
                        return time.monotonic() - start
                except InferenceServerException:
                    pass
                if time.monotonic() - start > self.ready_seconds:
                    raise TritonError(f"tritonserver was not ready after {self.ready_seconds} s{self.log_tail()}")
                time.sleep(0.05)
        finally:
            client.close()

    def log_tail(self, lines=40):
        self._log.flush()
        text = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        return "\n--- tail of " + str(self.log_path) + " ---\n" + "\n".join(text)

    def __exit__(self, *exc):
        """SIGTERM, then SIGKILL (to the whole process group: Triton and its
        python stubs) if Triton has not exited within STOP_SECONDS."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_SECONDS + 5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()
        self._dir.cleanup()
        return False


def free_port():
    """A port free on 127.0.0.1 now (Triton takes no port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _backends(work):
    """The wheel's python backend with the stub for this Python beside it."""
    python = work / "backends" / "python"
    python.mkdir(parents=True)
    source = WHEEL / "backends" / "python"
    for name in ("libtriton_python.so", "triton_python_backend_utils.py"):
        (python / name).symlink_to(source / name)
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    stub = WHEEL / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.exists():
        raise TritonError(f"nvidia-pytriton has no python backend stub for Python {version} (looked for {stub})")
    (python / "triton_python_backend_stub").symlink_to(stub)
    return work / "backends"


def _environment():
    env = dict(os.environ)
    libdir = sysconfig.get_config_var("LIBDIR")
    env["LD_LIBRARY_PATH"] = ":".join(p for p in [libdir, str(LIBS), env.get("LD_LIBRARY_PATH")] if p)
    env["PATH"] = f"{os.path.dirname(sys.executable)}:{env.get('PATH', '')}"
    # ranker.py computes without BLAS; these keep any numpy thread pool
    # in the stub small on a shared machine.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env
