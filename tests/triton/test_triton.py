"""A real Triton (the tritonserver of the nvidia-pytriton wheel, on CPU)
serving the ranker (tests/triton/ranker.py) on fex's extracted tensors:
Triton's scores equal the model computed in-process bit for bit, a bad
request gets Triton's error, and the model's signature is the one fex maps
onto. scripts/test.sh runs it in target/venv-triton with FEX_CLIENT set:

    FEX_CLIENT=target/debug/fex-client target/venv-triton/bin/python -m pytest -q tests/triton

Nothing is skipped: if Triton cannot start, the tests fail with its log's
tail. The module's `triton` fixture and `requests` are meant for more tests
(fex-server in front of Triton, Triton's client against fex's v2 endpoint).
"""

import os
import subprocess
import sys

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
from tritonserver import Triton, TritonError  # noqa: E402


@pytest.fixture(scope="module")
def triton(tmp_path_factory):
    repository = model_repository.write(tmp_path_factory.mktemp("models"))
    with Triton(repository) as server:
        yield server


@pytest.fixture
def client(triton):
    with grpcclient.InferenceServerClient(triton.grpc_url) as c:
        yield c


@pytest.fixture(scope="module")
def plan():
    return fex.Plan.default()


@pytest.fixture(scope="module")
def requests(tmp_path_factory):
    """ExampleBatches of the default model: the benchmark's 256 candidates,
    and generated ones of 1, 7 and 64 candidates whose lists may be empty
    (empty bags), with lists the model does not read."""
    with open(os.path.join(ROOT, "benches", "data", "default_b256.pb"), "rb") as f:
        batches = {"b256": f.read()}
    client = os.environ.get("FEX_CLIENT")
    if not client:
        pytest.fail("FEX_CLIENT is not set: scripts/test.sh sets it to target/debug/fex-client")
    out = tmp_path_factory.mktemp("gen")
    for size, seed in [(1, 3), (7, 5), (64, 9)]:
        path = out / f"b{size}.pb"
        args = ["gen", "--count", "1", "--batch-size", str(size), "--list-len", "0..4"]
        args += ["--noise-lists", "2", "--seed", str(seed), "--out", str(path)]
        subprocess.run([client, *args], check=True, capture_output=True)
        (batches[f"b{size}"],) = fex.read_records(str(path))
    return batches


def infer(client, inputs):
    """The ranker's score through Triton's gRPC API."""
    tensors = []
    for name, datatype, _ in ranker.signature():
        tensor = grpcclient.InferInput(name, list(inputs[name].shape), datatype)
        tensor.set_data_from_numpy(np.ascontiguousarray(inputs[name]))
        tensors.append(tensor)
    result = client.infer(model_repository.MODEL, tensors, outputs=[grpcclient.InferRequestedOutput("score")])
    return result.as_numpy("score")


def test_triton_scores_equal_the_model_in_process(client, plan, requests):
    for name, request in requests.items():
        inputs = ranker.inputs_from_fex(plan.extract_batch(request))
        batch = len(inputs["item_id_offsets"]) - 1
        expected = ranker.score(inputs)
        got = infer(client, inputs)
        assert got.dtype == np.float32 and got.shape == (batch,), name
        assert np.array_equal(got.view(np.uint32), expected.view(np.uint32)), name
    # The generated requests do hold empty bags.
    inputs = ranker.inputs_from_fex(plan.extract_batch(requests["b64"]))
    assert np.any(np.diff(inputs["item_tags_offsets"]) == 0)


def test_ids_at_or_above_2_pow_63_are_read_as_unsigned(client, plan, requests):
    """fex's uint64 ids travel as INT64 with the same bits: those ≥ 2^63
    read negative, and the ranker reads them back as unsigned (in Triton
    as in-process)."""
    assert list(ranker.table_rows(np.array([-1, -1000, 5], dtype=np.int64))) == [615, 616, 5]
    inputs = ranker.inputs_from_fex(plan.extract_batch(requests["b64"]))
    for name, *_ in ranker.BAGS:
        inputs[f"{name}_values"] = inputs[f"{name}_values"] | np.int64(-(2**63))
    expected = ranker.score(inputs)
    assert not np.array_equal(expected, ranker.score(ranker.inputs_from_fex(plan.extract_batch(requests["b64"]))))
    got = infer(client, inputs)
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))


def test_a_bad_request_gets_invalid_argument(client, plan, requests):
    inputs = ranker.inputs_from_fex(plan.extract_batch(requests["b7"]))
    inputs["item_id_offsets"] = inputs["item_id_offsets"].copy()
    inputs["item_id_offsets"][-1] -= 1
    with pytest.raises(InferenceServerException) as error:
        infer(client, inputs)
    # The model returns pb_utils.TritonError(..., INVALID_ARG): Triton 2.51
    # answers gRPC INVALID_ARGUMENT with the model's message unchanged. (An
    # exception escaping execute() would be INTERNAL instead, with the message
    # "Failed to process the request(s) for model 'ranker_0_0', message:
    # RuntimeError: ..." and a Python traceback: hence the explicit error.)
    assert error.value.status() == "StatusCode.INVALID_ARGUMENT"
    n = len(inputs["item_id_values"])
    assert error.value.message() == (
        f"item_id_offsets: found offsets from 0 to {n - 1}, expected from 0 to {n} (the length of item_id_values)"
    )


def test_model_metadata_lists_the_inputs_fex_maps_onto(client):
    metadata = client.get_model_metadata(model_repository.MODEL)
    inputs = [(t.name, t.datatype, list(t.shape)) for t in metadata.inputs]
    assert inputs == [
        ("item_id_values", "INT64", [-1]),
        ("item_id_offsets", "INT64", [-1]),
        ("item_tags_values", "INT64", [-1]),
        ("item_tags_offsets", "INT32", [-1]),
        ("ctx_device_values", "INT64", [-1]),
        ("ctx_device_offsets", "INT64", [-1]),
        ("user_id_values", "INT64", [-1]),
        ("user_id_offsets", "INT64", [-1]),
        ("item_embedding", "FP32", [-1, 16]),
        ("item_ctr_7d", "FP32", [-1, 1]),
        ("user_embedding", "FP32", [-1, 32]),
    ]
    assert [(t.name, t.datatype, list(t.shape)) for t in metadata.outputs] == [("score", "FP32", [-1])]


def test_a_triton_that_cannot_start_raises_with_its_log(tmp_path):
    """The harness fails loudly: a model Triton cannot load stops it, and the
    error carries the tail of its log."""
    repository = model_repository.write(tmp_path)
    config = repository / model_repository.MODEL / "config.pbtxt"
    config.write_text(config.read_text().replace('backend: "python"', 'backend: "no_such_backend"'))
    with pytest.raises(TritonError, match="tritonserver exited with code") as error:
        with Triton(repository):
            pass
    assert "no_such_backend" in str(error.value)
