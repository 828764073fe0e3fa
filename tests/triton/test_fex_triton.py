"""fex-server in front of a real Triton (issue 22): Triton's own Python
client (tritonclient) calls fex's v2 endpoint and gets the tensors fex.v1
returns; a model with an `upstream:` forwards its tensors to Triton, whose
scores equal the ranker applied in-process to fex's Python package output,
bit for bit, through v2 and through fex.v1; Triton's INVALID_ARGUMENT comes
back naming Triton; `--check-config` checks the mapping against Triton's
metadata. scripts/test.sh runs it with FEX_SERVER and FEX_CLIENT set.
"""

import json
import os
import subprocess
import sys

import grpc
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

import fex

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import model_repository  # noqa: E402
import ranker  # noqa: E402
from fexserver import RANKER, FexServer, binary, example_batch, models_dir  # noqa: E402
from test_triton import requests  # noqa: E402,F401 (the fixture)
from tritonserver import Triton  # noqa: E402


@pytest.fixture(scope="module")
def triton(tmp_path_factory):
    repository = model_repository.write(tmp_path_factory.mktemp("models"))
    with Triton(repository) as server:
        yield server


@pytest.fixture(scope="module")
def fex_server(triton, tmp_path_factory):
    bad = open(RANKER).read().replace("{name: user_embedding, from: user_embedding}", "{name: user_embedding, from: item_embedding}")
    bad = bad.replace("name: ranker\n", "name: ranker_miswired\n", 1)
    bad = bad.replace("http://127.0.0.1:8001", f"http://{triton.grpc_url}")
    models = models_dir(tmp_path_factory.mktemp("fex") / "models", triton.grpc_url, {"miswired.yaml": bad})
    server = FexServer(models)
    yield server
    server.stop()


@pytest.fixture
def fex_v2(fex_server):
    with grpcclient.InferenceServerClient(fex_server.addr) as c:
        yield c


# fex.v1 from Python without generated stubs: a minimal protobuf reader and
# writer for the two messages this test needs (proto/fex/v1/service.proto,
# tensor.proto: ExtractRequest model = 1, example_batch = 2, outputs = 4;
# ExtractResponse tensors = 4; Tensor fields 1..11).
def _varint(n):
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number, payload):
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _fields(buf):
    at = 0
    while at < len(buf):
        key, at = _read_varint(buf, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _read_varint(buf, at)
        elif wire == 2:
            n, at = _read_varint(buf, at)
            value, at = buf[at : at + n], at + n
        else:
            raise ValueError(f"wire type {wire}")
        yield number, value


def _read_varint(buf, at):
    shift = result = 0
    while True:
        b = buf[at]
        at += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, at


def extract_v1(addr, model, request):
    """fex.v1 Extract: {tensor name: {field number: value}}."""
    message = _field(1, model.encode()) + _field(2, request)
    with grpc.insecure_channel(addr) as channel:
        call = channel.unary_unary("/fex.v1.FeatureExtractor/Extract")
        reply = call(message, timeout=30)
    tensors = {}
    for number, value in _fields(reply):
        if number == 4:
            fields = {}
            for n, v in _fields(value):
                fields.setdefault(n, []).append(v)
            tensors[fields[1][0].decode()] = fields
    return tensors


def test_tritons_client_gets_the_tensors_fex_v1_returns(fex_v2, fex_server, requests):
    meta = fex_v2.get_model_metadata("default")
    assert [(t.name, t.datatype, list(t.shape)) for t in meta.inputs] == [
        ("example_batch", "BYTES", [1]),
        ("examples", "BYTES", [-1]),
    ]
    for name, request in requests.items():
        result = fex_v2.infer("default", [example_batch(request)])
        v1 = extract_v1(fex_server.addr, "default", request)
        by_name = {o.name: o for o in result.get_response().outputs}
        assert [t.name for t in meta.outputs] == list(by_name), name
        for tensor_name, fields in v1.items():
            layout = fields.get(2, [0])[0]
            values = fields.get(5, [b""])[0]
            if layout == 3:  # strings: BYTES elements
                splits = np.frombuffer(fields[7][0], dtype=np.int64)
                got = result.as_numpy(tensor_name)
                assert [bytes(x) for x in got] == [values[a:b] for a, b in zip(splits[:-1], splits[1:])], name
            elif layout == 2:  # ragged
                assert result.as_numpy(f"{tensor_name}__values").tobytes() == values, (name, tensor_name)
                assert result.as_numpy(f"{tensor_name}__offsets").tobytes() == fields[7][0], (name, tensor_name)
            else:  # dense
                assert result.as_numpy(tensor_name).tobytes() == values, (name, tensor_name)


def test_scores_through_fex_and_triton_equal_the_model_in_process(fex_v2, fex_server, requests):
    plan = fex.Plan.default()
    assert fex_v2.is_model_ready("ranker")
    for name, request in requests.items():
        expected = ranker.score(ranker.inputs_from_fex(plan.extract_batch(request)))
        result = fex_v2.infer("ranker", [example_batch(request)], outputs=[grpcclient.InferRequestedOutput("score")])
        got = result.as_numpy("score")
        assert got.dtype == np.float32 and got.shape == expected.shape, name
        assert np.array_equal(got.view(np.uint32), expected.view(np.uint32)), name
        # The same through fex.v1: Triton's score as a dense FP32 tensor.
        score = extract_v1(fex_server.addr, "ranker", request)["score"]
        assert np.array_equal(np.frombuffer(score[5][0], dtype=np.uint32), expected.view(np.uint32)), name


def test_tritons_invalid_argument_comes_back_naming_triton(fex_v2, triton, requests):
    with pytest.raises(InferenceServerException) as error:
        fex_v2.infer("ranker_miswired", [example_batch(requests["b7"])])
    assert error.value.status() == "StatusCode.INVALID_ARGUMENT"
    message = error.value.message()
    assert message.startswith(f'upstream http://{triton.grpc_url} model "ranker": InvalidArgument: '), message
    assert "user_embedding" in message, message


def test_check_config_checks_the_mapping_against_tritons_metadata(triton, tmp_path):
    models = models_dir(tmp_path / "models", triton.grpc_url)
    out = subprocess.run(
        [binary("FEX_SERVER"), "--models", str(models / "ranker.yaml"), "--check-config"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert f'ranker: upstream http://{triton.grpc_url} model "ranker": the mapping matches' in out.stdout
    wrong = (models / "ranker.yaml").read_text().replace("item_tags_offsets, from: item_tags__offsets, datatype: INT32", "item_tags_offsets, from: item_tags__offsets, datatype: INT64")
    (models / "ranker.yaml").write_text(wrong)
    out = subprocess.run(
        [binary("FEX_SERVER"), "--models", str(models / "ranker.yaml"), "--check-config"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 64, out.stdout
    assert 'input "item_tags_offsets" is INT32 on the model, INT64 in the mapping' in out.stderr
    assert out.stdout == "", "a model whose mapping does not fit is not printed valid"


def test_fex_client_measures_fex_v2_forwarding_and_the_relay(fex_server, triton, tmp_path):
    """One load generator, three paths: fex's v2 endpoint, fex forwarding to
    Triton, and the caller relaying fex.v1's tensors to Triton itself."""
    client = binary("FEX_CLIENT")
    requests_file = tmp_path / "requests.bin"
    subprocess.run([client, "gen", "--count", "4", "--batch-size", "16", "--out", str(requests_file)], check=True)
    ranker_config = tmp_path / "ranker.yaml"
    ranker_config.write_text(open(RANKER).read().replace("http://127.0.0.1:8001", f"http://{triton.grpc_url}"))
    runs = [
        ["--protocol", "v2", "--model", "default"],
        ["--protocol", "v2", "--model", "ranker"],
        ["--protocol", "relay", "--model", "default", "--model-config", str(ranker_config)],
    ]
    for run in runs:
        args = [client, "bench", "--addr", fex_server.addr, "--file", str(requests_file), "--requests", "12"]
        out = subprocess.run(args + run + ["--output", "json"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, (run, out.stderr)
        report = json.loads(out.stdout)
        assert report["ok"] == 12, (run, report)
