"""Writes the Triton model repository of the tests: one model, `ranker`,
served by Triton's python backend, whose model.py calls ranker.score
(tests/triton/ranker.py, copied beside it: Triton and the tests run the
same code).

    repository/
      ranker/config.pbtxt
      ranker/1/model.py
      ranker/1/ranker.py
"""

import pathlib
import shutil

import ranker

MODEL = "ranker"

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


def write(directory):
    """Writes the repository into `directory` (which must exist); returns
    its path."""
    root = pathlib.Path(directory)
    version = root / MODEL / "1"
    version.mkdir(parents=True)
    (root / MODEL / "config.pbtxt").write_text(config())
    (version / "model.py").write_text(MODEL_PY)
    shutil.copy(ranker.__file__, version / "ranker.py")
    return root


def config():
    inputs = ",\n".join(_tensor(*t) for t in ranker.signature())
    return CONFIG.format(
        name=MODEL,
        inputs=f"input [\n{inputs}\n]",
        outputs=f"output [\n{_tensor(*ranker.OUTPUT)}\n]",
    )


def _tensor(name, datatype, shape):
    return f'  {{ name: "{name}", data_type: TYPE_{datatype}, dims: {shape} }}'
