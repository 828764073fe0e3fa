"""Conversions of fex columns to other libraries' types. Each imports its
library only when called, so the package needs nothing but numpy. Every
conversion shares the column's memory; none copies values unless its
docstring says so."""

import warnings
from collections import namedtuple

import numpy as np

#: A ragged (or strings) column as arrays: values, row_splits, weights.
Ragged = namedtuple("Ragged", ["values", "row_splits", "weights"])
#: A keyed-jagged column as arrays.
KeyedJagged = namedtuple("KeyedJagged", ["keys", "values", "lengths", "offsets", "weights"])


def to_numpy(col):
    """Dense: the ``[rows, dims...]`` array. Ragged and strings: a
    ``Ragged`` tuple. Keyed-jagged: a ``KeyedJagged`` tuple."""
    if col.layout == "dense":
        return col.values
    if col.layout == "keyed_jagged":
        return KeyedJagged(col.keys, col.values, col.lengths, col.offsets, col.weights)
    return Ragged(col.values, col.row_splits, col.weights)


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("to_torch() needs torch: pip install torch") from e
    return torch


def _from_numpy(torch, a):
    if a is None:
        return None
    # The views are read-only (Arrow may share the memory); torch warns that
    # it cannot express that. The tensors must not be written to.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(a)


def to_torch(col):
    """torch tensors over the column's memory (``torch.from_numpy``): a
    tensor for dense columns, a ``Ragged`` or ``KeyedJagged`` tuple of
    tensors otherwise. Read-only: do not write to them."""
    torch = _torch()
    parts = to_numpy(col)
    if col.layout == "dense":
        return _from_numpy(torch, parts)
    fields = {k: (v if k == "keys" else _from_numpy(torch, v)) for k, v in parts._asdict().items()}
    return type(parts)(**fields)


def _ids_as_int64(values):
    """uint64 ids as int64 (the same bits): torchrec's embedding ops take
    signed ids."""
    return values.view(np.int64) if values.dtype == np.uint64 else values


def to_kjt(col):
    """A ``torchrec.KeyedJaggedTensor``. A keyed-jagged column maps over
    directly (values, lengths, offsets, weights shared); a ragged column
    becomes a one-key KJT named after the output, whose lengths are computed
    from its row splits (a new, small array). uint64 ids are reinterpreted
    as int64, bit for bit."""
    try:
        from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
    except ImportError as e:
        raise ImportError("to_kjt() needs torchrec: pip install torchrec") from e
    torch = _torch()
    if col.layout == "keyed_jagged":
        keys, lengths, offsets = col.keys, col.lengths, col.offsets
    elif col.layout == "ragged" and col.values.ndim == 1:
        keys = [col.name]
        offsets = col.row_splits.astype(np.int64, copy=False)
        lengths = np.diff(offsets).astype(np.int32)
    else:
        raise TypeError(f"output {col.name!r} is {col.layout}; to_kjt() takes keyed-jagged or ragged id columns")
    weights = col.weights
    return KeyedJaggedTensor(
        keys=list(keys),
        values=_from_numpy(torch, _ids_as_int64(col.values)),
        lengths=_from_numpy(torch, lengths),
        offsets=_from_numpy(torch, offsets),
        weights=_from_numpy(torch, weights),
    )


def to_arrow(col):
    """A ``pyarrow.Array`` through the Arrow C data interface (the
    column's buffers, shared). Ragged → list (large_list for i64 splits),
    dense → fixed_size_list (a plain array without inner dimensions),
    strings → large_binary, keyed-jagged → large_list per key and row;
    values with weights are a struct of ``value`` and ``weight``."""
    try:
        import pyarrow as pa
    except ImportError as e:
        raise ImportError("to_arrow() needs pyarrow: pip install pyarrow") from e
    return pa.array(col)


def extracted_to_arrow(extracted):
    """Every output as one ``pyarrow.RecordBatch`` (extract with
    ``shared="broadcast"`` so every column has a row per sample)."""
    import pyarrow as pa

    names = list(extracted.keys())
    arrays = [to_arrow(extracted[n]) for n in names]
    return pa.RecordBatch.from_arrays(arrays, names=names)


def to_tf_ragged(col):
    """A ``tf.RaggedTensor`` (ragged columns, from row splits) or a
    ``tf.Tensor`` (dense). TensorFlow copies into its own tensors."""
    try:
        import tensorflow as tf
    except ImportError as e:
        raise ImportError("to_tf_ragged() needs tensorflow: pip install tensorflow-cpu") from e
    if col.layout == "dense":
        return tf.constant(col.values)
    if col.layout != "ragged":
        raise TypeError(f"output {col.name!r} is {col.layout}; to_tf_ragged() takes ragged or dense columns")
    values = col.values
    if values.dtype == np.uint64:
        values = values.view(np.int64)
    return tf.RaggedTensor.from_row_splits(values, col.row_splits.astype(np.int64, copy=False), validate=False)
