"""Writes the Triton model repository of the tests: `ranker`, served by
Triton's python backend, whose model.py calls ranker.score
(tests/triton/ranker.py, copied beside it: Triton and the tests run the
same code), and `ranker_slow`, the same model taking SLOW_SECONDS per
request (a model past its callers' deadlines).

    repository/
      ranker/config.pbtxt
      ranker/1/model.py
      ranker/1/ranker.py
      ranker_slow/...                (write(..., slow=True))
"""

import pathlib
import shutil

import ranker

MODEL = "ranker"
SLOW = "ranker_slow"
SLOW_SECONDS = 1.5

# Triton's python backend: one CPU instance; max_batch_size 0 because the
# inputs are ragged (values and offsets of different lengths), which
# Triton's own batching cannot stack.
CONFIG = """\
name: "{name}"
backend: "python"
max_batch_size: 0
{inputs}
{outputs}
instance_group [{{ kind: KIND_CPU, count: 1 }}]
"""

MODEL_PY = '''\
"""The ranker behind Triton's python backend: the request's tensors to
ranker.score, a bad request to an INVALID_ARG error response (gRPC
INVALID_ARGUMENT; an exception left to escape would be INTERNAL)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ranker  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402


class TritonPythonModel:
    def execute(self, requests):
        return [self._one(request) for request in requests]

    def _one(self, request):
        inputs = {}
        for name, _, _ in ranker.signature():
            tensor = pb_utils.get_input_tensor_by_name(request, name)
            if tensor is not None:
                inputs[name] = tensor.as_numpy()
        try:
            score = ranker.score(inputs)
        except ranker.InvalidInput as e:
            error = pb_utils.TritonError(str(e), pb_utils.TritonError.INVALID_ARG)
            return pb_utils.InferenceResponse(error=error)
        return pb_utils.InferenceResponse([pb_utils.Tensor(ranker.OUTPUT[0], score)])
'''

# The slow ranker: each request waits SLOW_SECONDS before it is scored, in
# short sleeps, and stops waiting when Triton cancels it (its caller's
# deadline passed: InferenceRequest.is_cancelled, python backend 23.10 and
# later), so cancelled requests do not hold the instances for the whole time.
SLOW_MODEL_PY = MODEL_PY.replace(
    "    def _one(self, request):\n",
    f"""    def _one(self, request):
        import time

        until = time.monotonic() + {SLOW_SECONDS}
        while time.monotonic() < until:
            if request.is_cancelled():
                error = pb_utils.TritonError("cancelled", pb_utils.TritonError.CANCELLED)
                return pb_utils.InferenceResponse(error=error)
            time.sleep(0.01)
""",
)


def write(directory, slow=False):
    """Writes the repository into `directory` (which must exist), with the
    slow ranker too if `slow`; returns its path."""
    root = pathlib.Path(directory)
    models = [(MODEL, MODEL_PY)]
    if slow:
        models.append((SLOW, SLOW_MODEL_PY))
    for name, model_py in models:
        version = root / name / "1"
        version.mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(config(name))
        (version / "model.py").write_text(model_py)
        shutil.copy(ranker.__file__, version / "ranker.py")
    return root


def config(name=MODEL):
    inputs = ",\n".join(_tensor(*t) for t in ranker.signature())
    return CONFIG.format(
        name=name,
        inputs=f"input [\n{inputs}\n]",
        outputs=f"output [\n{_tensor(*ranker.OUTPUT)}\n]",
    )


def _tensor(name, datatype, shape):
    return f'  {{ name: "{name}", data_type: TYPE_{datatype}, dims: {shape} }}'
