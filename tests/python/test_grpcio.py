"""fex-server called from Python with the standard grpcio client, using only
the .proto files: proves a non-Rust caller needs nothing else.

Usage: python3 tests/python/test_grpcio.py path/to/fex-server
Prints 'N passed, N failed' and exits non-zero on any failure."""

import array
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_tools import protoc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def compile_protos(out):
    """Generates Python modules from proto/ with grpcio-tools' bundled compiler."""
    import grpc_tools

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    files = ["monolith/line_id.proto", "monolith/example.proto", "fex/v1/tensor.proto", "fex/v1/service.proto"]
    args = ["protoc", f"-I{ROOT}/proto", f"-I{include}", f"--python_out={out}", f"--grpc_python_out={out}"] + files
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed")
    # Regular packages, not namespace ones: once the `fex` Python package is
    # installed in the same virtualenv (scripts/test.sh installs it after this
    # test, so a second run finds it), a regular package named `fex` would
    # win over a namespace directory wherever it sits on sys.path.
    for package in ["fex", "fex/v1", "monolith"]:
        open(os.path.join(out, package, "__init__.py"), "a").close()
    sys.path.insert(0, out)


def start_server(binary):
    proc = subprocess.Popen(
        [binary, "--listen-addr", "127.0.0.1:0", "--metrics-addr", "off", "--log-format", "json"],
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr:
        fields = json.loads(line).get("fields", {})
        if fields.get("message") == "fex-server listening":
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, fields["addr"]
    raise RuntimeError("fex-server exited before listening")


def wait_serving(channel):
    stub = health_pb2_grpc.HealthStub(channel)
    for _ in range(500):
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service="fex.v1.FeatureExtractor"), timeout=1)
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return
        except grpc.RpcError:
            pass
        time.sleep(0.01)
    raise RuntimeError("fex-server never reported SERVING")


def sample_batch(example_pb2, rows):
    batch = example_pb2.ExampleBatch(batch_size=rows)
    user = batch.named_feature_list.add(name="user_id", type=example_pb2.SHARED)
    user.feature.add().fid_v2_list.value.append((1 << 48) | 42)
    items = batch.named_feature_list.add(name="item_id", type=example_pb2.INDIVIDUAL)
    ctr = batch.named_feature_list.add(name="item_ctr_7d", type=example_pb2.INDIVIDUAL)
    for r in range(rows):
        items.feature.add().fid_v2_list.value.extend([(3 << 48) | r, (3 << 48) | (r + 100)])
        ctr.feature.add().float_list.value.append(r / 10)
    return batch.SerializeToString()


def main():
    binary = sys.argv[1]
    passed, failed = 0, 0
    with tempfile.TemporaryDirectory() as out:
        compile_protos(out)
        from fex.v1 import service_pb2, service_pb2_grpc, tensor_pb2
        from monolith import example_pb2

        proc, addr = start_server(binary)
        channel = grpc.insecure_channel(addr)
        stub = service_pb2_grpc.FeatureExtractorStub(channel)

        def check(name, fn):
            nonlocal passed, failed
            try:
                fn()
                passed += 1
                print(f"test {name} ... ok")
            except Exception as e:  # report every failure, keep going
                failed += 1
                print(f"test {name} ... FAILED: {e!r}")

        def extract():
            reply = stub.Extract(service_pb2.ExtractRequest(model="default", example_batch=sample_batch(example_pb2, 3)), timeout=5)
            tensors = {t.name: t for t in reply.tensors}
            assert reply.batch_size == 3, reply.batch_size
            items = tensors["item_id"]
            assert items.layout == tensor_pb2.LAYOUT_RAGGED
            assert list(array.array("q", items.row_splits)) == [0, 2, 4, 6]
            assert array.array("q", items.values)[2] == (3 << 48) | 1
            user = tensors["user_id"]
            assert user.shared and list(user.shape) == [1, -1]
            ctr = tensors["item_ctr_7d"]
            assert list(ctr.shape) == [3, 1]
            assert [round(v, 5) for v in array.array("f", ctr.values)] == [0.0, 0.1, 0.2]

        def unknown_model():
            try:
                stub.Extract(service_pb2.ExtractRequest(model="nope", example_batch=b""), timeout=5)
                raise AssertionError("expected NOT_FOUND")
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.NOT_FOUND, e.code()

        def malformed():
            try:
                stub.Extract(service_pb2.ExtractRequest(model="default", example_batch=b"\xff" * 32), timeout=5)
                raise AssertionError("expected INVALID_ARGUMENT")
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e.code()
                assert "@ byte" in e.details(), e.details()

        def describe():
            reply = stub.DescribeModel(service_pb2.DescribeModelRequest(model="default"), timeout=5)
            emb = [o for o in reply.outputs if o.name == "item_embedding"][0]
            assert list(emb.shape) == [-1, 16] and emb.dtype == tensor_pb2.DATA_TYPE_F32

        try:
            check("health_serving", lambda: wait_serving(channel))
            check("extract_default_model", extract)
            check("unknown_model_is_not_found", unknown_model)
            check("malformed_bytes_are_invalid_argument", malformed)
            check("describe_model", describe)
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=30)
        check("sigterm_exits_0", lambda: (_ for _ in ()).throw(AssertionError(code)) if code != 0 else None)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
