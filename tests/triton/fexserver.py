"""fex-server for the Triton tests: the binaries scripts/test.sh builds
(FEX_SERVER, FEX_CLIENT), a fex-server process on 127.0.0.1:0, the model
configs that forward to a Triton, and the framed request files fex-client
writes. Imports nothing of fex's Python package, so a test that needs only
the binaries runs without it.
"""

import json
import os
import shutil
import struct
import subprocess
import threading

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RANKER = os.path.join(ROOT, "examples", "triton", "ranker.yaml")


def binary(name):
    path = os.environ.get(name)
    if not path:
        pytest.fail(f"{name} is not set: scripts/test.sh sets it to the debug build")
    return path


def ranker_config(triton_url, name="ranker", model="ranker"):
    """examples/triton/ranker.yaml pointed at this Triton, as fex model
    `name` forwarding to Triton model `model`."""
    text = open(RANKER).read().replace("http://127.0.0.1:8001", f"http://{triton_url}")
    text = text.replace("name: ranker\n", f"name: {name}\n", 1)
    return text.replace("  model: ranker\n", f"  model: {model}\n", 1)


def models_dir(tmp, triton_url, extra=None):
    """default.yaml, the ranker pointed at this Triton, and `extra` files."""
    tmp.mkdir(exist_ok=True)
    shutil.copy(os.path.join(ROOT, "models", "default.yaml"), tmp / "default.yaml")
    (tmp / "ranker.yaml").write_text(ranker_config(triton_url))
    for name, body in (extra or {}).items():
        (tmp / name).write_text(body)
    return tmp


class FexServer:
    """A fex-server process on 127.0.0.1:0, stopped with SIGTERM. Its log
    lines after startup are kept in `.log` (JSON objects)."""

    def __init__(self, models, extra_args=()):
        args = [binary("FEX_SERVER"), "--listen-addr", "127.0.0.1:0", "--metrics-addr", "off"]
        args += ["--models", str(models), "--log-format", "json", "--reload-interval", "0s", *extra_args]
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
        self.addr = None
        self.log = []
        timer = threading.Timer(30, self.proc.kill)
        timer.start()
        for line in self.proc.stderr:
            fields = json.loads(line).get("fields", {})
            if fields.get("message") == "fex-server listening":
                self.addr = fields["addr"]
                break
        timer.cancel()
        if self.addr is None:
            raise RuntimeError(f"fex-server exited before listening (code {self.proc.wait(5)})")
        threading.Thread(target=self._keep_log, daemon=True).start()

    def _keep_log(self):
        for line in self.proc.stderr:
            try:
                self.log.append(json.loads(line))
            except ValueError:
                self.log.append({"text": line})

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def example_batch(request):
    tensor = grpcclient.InferInput("example_batch", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([request], dtype=np.object_))
    return tensor


def generated(out, batch_size, count=1, seed=1):
    """`count` ExampleBatches of `batch_size` rows from `fex-client gen`."""
    path = out / f"gen_b{batch_size}_s{seed}.pb"
    args = ["gen", "--count", str(count), "--batch-size", str(batch_size), "--seed", str(seed), "--out", str(path)]
    subprocess.run([binary("FEX_CLIENT"), *args], check=True, capture_output=True)
    return framed(path.read_bytes())


def framed(data):
    """The records of a framed file: a u64 little-endian length, then the
    record (fex-client gen's --out)."""
    records, at = [], 0
    while at < len(data):
        (n,) = struct.unpack_from("<Q", data, at)
        records.append(data[at + 8 : at + 8 + n])
        at += 8 + n
    return records
