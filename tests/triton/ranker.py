"""The ranker: a small recommendation model, in numpy, that Triton serves
(tests/triton/model_repository.py puts this file beside the python
backend's model.py) and that the tests compute in-process to check Triton's
answers bit for bit.

Its inputs are the Open Inference Protocol (KServe v2) tensors fex sends:
a ragged output `x` as `x_values` and `x_offsets` (B + 1 offsets, from 0 to
len(values)), a dense output as [rows, d]. Item and context features have
B rows; user features are fex's shared-once outputs, one row that the model
broadcasts to every candidate. Ids are fex's uint64 ids carried as INT64
with the same bits.

score = sigmoid(w2 · relu(W1 · [bags..., dense...] + b1) + b2), where each
bag is the sum of its ids' embedding rows (row = id mod VOCAB, the id read
as unsigned; an empty bag is zeros).

Bit-for-bit reproducibility across processes: every sum is computed in a
fixed order without BLAS (np.add.at for the bags, np.einsum with
optimize=False for the layers), in float64, and only the result is rounded
to float32. The weights come from a fixed-seed generator, so Triton's copy
and the test's copy of this module hold the same model.
"""

import numpy as np

# Not a power of two, so reading ids as signed would pick other rows.
VOCAB = 1000
HIDDEN = 32
SEED = 22

# (name, offsets dtype, embedding width, rows: "batch" or "one")
BAGS = [
    ("item_id", np.int64, 8, "batch"),
    ("item_tags", np.int32, 8, "batch"),
    ("ctx_device", np.int64, 4, "batch"),
    ("user_id", np.int64, 8, "one"),
]
# (name, width, rows)
DENSE = [
    ("item_embedding", 16, "batch"),
    ("item_ctr_7d", 1, "batch"),
    ("user_embedding", 32, "one"),
]


def signature():
    """The model's inputs as (name, v2 datatype, shape), in the order the
    Triton config lists them; -1 is a variable dimension."""
    inputs = []
    for name, offsets_dtype, _, _ in BAGS:
        offsets_type = "INT32" if offsets_dtype == np.int32 else "INT64"
        inputs.append((f"{name}_values", "INT64", [-1]))
        inputs.append((f"{name}_offsets", offsets_type, [-1]))
    for name, width, _ in DENSE:
        inputs.append((name, "FP32", [-1, width]))
    return inputs


OUTPUT = ("score", "FP32", [-1])


def _weights():
    rng = np.random.default_rng(SEED)
    tables = {name: rng.standard_normal((VOCAB, width), dtype=np.float32) for name, _, width, _ in BAGS}
    width = sum(w for _, _, w, _ in BAGS) + sum(w for _, w, _ in DENSE)
    w1 = rng.standard_normal((width, HIDDEN), dtype=np.float32) / np.float32(np.sqrt(width))
    b1 = rng.standard_normal(HIDDEN, dtype=np.float32) * np.float32(0.1)
    w2 = rng.standard_normal(HIDDEN, dtype=np.float32) / np.float32(np.sqrt(HIDDEN))
    b2 = np.float32(0.1)
    return tables, w1, b1, w2, b2


TABLES, W1, B1, W2, B2 = _weights()


class InvalidInput(ValueError):
    """A request the model cannot score; its message names the tensor."""


def score(inputs):
    """Scores B candidates: `inputs` maps every name of `signature()` to a
    numpy array; returns float32 [B]. Raises InvalidInput on a missing,
    mistyped or inconsistent tensor."""
    batch = _batch_size(inputs)
    parts = []
    for name, offsets_dtype, _, rows in BAGS:
        values = _tensor(inputs, f"{name}_values", np.int64, 1)
        offsets = _tensor(inputs, f"{name}_offsets", offsets_dtype, 1)
        _check_offsets(name, offsets, len(values), batch if rows == "batch" else 1)
        parts.append(_broadcast(_bag(TABLES[name], values, offsets), batch))
    for name, width, rows in DENSE:
        dense = _tensor(inputs, name, np.float32, 2)
        want = batch if rows == "batch" else 1
        if dense.shape != (want, width):
            raise InvalidInput(f"{name}: found shape {list(dense.shape)}, expected [{want}, {width}]")
        parts.append(_broadcast(dense.astype(np.float64), batch))
    x = np.concatenate(parts, axis=1)
    hidden = np.maximum(np.einsum("bi,ih->bh", x, W1.astype(np.float64), optimize=False) + B1, 0.0)
    logit = np.einsum("bh,h->b", hidden, W2.astype(np.float64), optimize=False) + B2
    return (1.0 / (1.0 + np.exp(-logit))).astype(np.float32)


def _batch_size(inputs):
    offsets = _tensor(inputs, "item_id_offsets", np.int64, 1)
    if len(offsets) == 0:
        raise InvalidInput("item_id_offsets: found 0 offsets, expected B + 1 (at least 1)")
    return len(offsets) - 1


def _tensor(inputs, name, dtype, ndim):
    if name not in inputs:
        raise InvalidInput(f"{name}: missing")
    array = np.asarray(inputs[name])
    if array.dtype != dtype or array.ndim != ndim:
        raise InvalidInput(
            f"{name}: found {array.dtype} with {array.ndim} dimensions, expected {np.dtype(dtype)} with {ndim}"
        )
    return array


def _check_offsets(name, offsets, n_values, rows):
    if len(offsets) != rows + 1:
        raise InvalidInput(f"{name}_offsets: found {len(offsets)} offsets, expected {rows + 1} (rows + 1)")
    if offsets[0] != 0 or offsets[-1] != n_values:
        raise InvalidInput(
            f"{name}_offsets: found offsets from {offsets[0]} to {offsets[-1]}, "
            f"expected from 0 to {n_values} (the length of {name}_values)"
        )
    if np.any(np.diff(offsets) < 0):
        raise InvalidInput(f"{name}_offsets: offsets decrease at index {int(np.argmax(np.diff(offsets) < 0)) + 1}")


def _bag(table, values, offsets):
    """Sum of the rows of each bag's ids, in id order, in float64."""
    rows = table_rows(values)
    bag_of_value = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets).astype(np.intp))
    out = np.zeros((len(offsets) - 1, table.shape[1]), dtype=np.float64)
    np.add.at(out, bag_of_value, table[rows].astype(np.float64))
    return out


def table_rows(values):
    """Embedding rows of INT64 ids: the id's 64 bits read as unsigned
    (fex's uint64), mod VOCAB."""
    return (values.view(np.uint64) % np.uint64(VOCAB)).astype(np.intp)


def _broadcast(part, batch):
    return np.broadcast_to(part, (batch, part.shape[1])) if part.shape[0] == 1 else part


def inputs_from_fex(extracted):
    """The ranker's inputs from fex's extraction of the default model
    (`fex.Plan.default().extract_batch(request)`), by the v2 naming fex
    uses: a ragged column `x` gives `x_values` (its ids' bits as INT64) and
    `x_offsets` (its row splits; INT32 for item_tags, which the ranker
    declares narrower), a dense column gives its [rows, d] values."""
    inputs = {}
    for name, offsets_dtype, _, _ in BAGS:
        column = extracted[name]
        inputs[f"{name}_values"] = np.ascontiguousarray(column.values).view(np.int64)
        inputs[f"{name}_offsets"] = np.asarray(column.row_splits).astype(offsets_dtype)
    for name, _, _ in DENSE:
        inputs[name] = np.ascontiguousarray(extracted[name].values, dtype=np.float32)
    return inputs
