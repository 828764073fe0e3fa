"""The golden corpus (tests/corpus/*.yaml) through the Python package: each
case's model compiled by `fex.Plan.from_yaml`, its sample (encoded by the
library's corpus reader with prost, as every front end's tests encode it)
extracted by `extract_batch` / `extract_examples`, and the columns, read
back through their numpy views, rendered as `src/corpus/render.rs` renders
them: the text must be the case's `expect` block, byte for byte.

The renderer here is written against the numpy views, not the library's
columns, so a value, split, shape or flag that the Python edge changed
shows up as a differing line."""

import os

import numpy as np
import pytest

import fex
from fex import _fex

from conftest import ROOT

CORPUS = os.path.join(ROOT, "tests", "corpus")
CASES = sorted(f for f in os.listdir(CORPUS) if f.endswith(".yaml"))

DTYPES = {"uint64": "u64", "int64": "i64", "int32": "i32", "float32": "f32", "float64": "f64", "bytes": "bytes"}


def rust_float(x):
    """A float as Rust's `{:?}` prints it: shortest round-trip digits,
    decimal between 1e-4 and 1e16 (at least one fractional digit), else
    exponential (`1e20`, `1.1754944e-38`); compared in the value's own
    precision, as Rust compares an f32 with f32 bounds."""
    t = type(x)
    if np.isnan(x):
        return "NaN"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    a = np.abs(x)
    if x == 0:
        return "-0.0" if np.signbit(x) else "0.0"
    if t(1e-4) <= a < t(1e16):
        return np.format_float_positional(x, unique=True, trim="0")
    return np.format_float_scientific(x, unique=True, trim="-", exp_digits=1).replace("e+", "e")


def fmt_list(items):
    return "[" + ", ".join(items) + "]"


def values_text(values):
    if values.dtype.kind == "f":
        return fmt_list(rust_float(v) for v in values)
    return fmt_list(str(int(v)) for v in values)


def escape_ascii(b):
    """Rust's `<[u8]>::escape_ascii`."""
    special = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r", 0x5C: "\\\\", 0x27: "\\'", 0x22: '\\"'}
    return "".join(special.get(c, chr(c) if 0x20 <= c < 0x7F else f"\\x{c:02x}") for c in b)


def render_column(name, c):
    shape = fmt_list(str(d) for d in c.shape)
    line = f"{name}: {c.layout} {DTYPES[c.dtype]} shape={shape}"
    if c.layout == "ragged":
        line += f" splits={DTYPES[c.splits_dtype]}"
    out = [line + (" shared" if c.shared else "")]
    if c.layout == "ragged":
        splits = c.row_splits
        out.append(f"  splits: {fmt_list(str(int(s)) for s in splits)}")
        values, weights = c.values, c.weights
        width = c.shape[2] if len(c.shape) == 3 else None
        for row in range(len(splits) - 1):
            lo, hi = int(splits[row]), int(splits[row + 1])
            if width is None:
                text = values_text(values[lo:hi])
            elif width == 0:
                text = "[]"
            else:
                text = fmt_list(values_text(pos) for pos in values[lo:hi])
            out.append(f"  row {row}: {text}")
            if weights is not None and len(weights):
                w = weights[lo:hi].reshape(-1)
                out.append(f"  weights {row}: {values_text(w)}")
    elif c.layout == "dense":
        flat = c.values.reshape(-1)
        rows = c.values.shape[0]
        w = int(np.prod(c.values.shape[1:], dtype=np.int64))
        for row in range(rows):
            out.append(f"  row {row}: {values_text(flat[row * w : (row + 1) * w])}")
    elif c.layout == "strings":
        offsets, data = c.row_splits, c.values.tobytes()
        out.append(f"  offsets: {fmt_list(str(int(o)) for o in offsets)}")
        for row in range(len(offsets) - 1):
            out.append(f'  row {row}: "{escape_ascii(data[offsets[row] : offsets[row + 1]])}"')
    elif c.layout == "keyed_jagged":
        out.append(f"  keys: {fmt_list(c.keys)}")
        out.append(f"  lengths: {values_text(c.lengths)}")
        out.append(f"  offsets: {values_text(c.offsets)}")
        out.append(f"  values: {values_text(c.values.reshape(-1))}")
        if c.weights is not None and len(c.weights):
            out.append(f"  weights: {values_text(c.weights)}")
    else:
        raise AssertionError(f"unknown layout {c.layout}")
    return "\n".join(out) + "\n"


def render(extracted):
    return f"batch_size: {extracted.batch_size}\n" + "".join(render_column(n, c) for n, c in extracted.items())


def run_case(case):
    try:
        plan = fex.Plan.from_yaml(case["model"])
    except fex.ConfigError as e:
        return f"error: {e}\n"
    try:
        if case["input"] == "batch":
            out = plan.extract_batch(case["samples"])
        else:
            out = plan.extract_examples(case["samples"])
    except fex.ExtractError as e:
        return f"error: {e}\n"
    return render(out)


@pytest.fixture
def in_corpus(monkeypatch):
    # Files a case's model names (vocabularies) resolve against the case's
    # directory, as tests/corpus.rs resolves them.
    monkeypatch.chdir(CORPUS)


def test_the_corpus_is_there():
    assert len(CASES) > 50


@pytest.mark.parametrize("name", CASES)
def test_case(name, in_corpus):
    with open(os.path.join(CORPUS, name)) as f:
        case = _fex._corpus_case(f.read())
    assert case["expect"], "a case states its expectation"
    assert run_case(case) == case["expect"]


def test_a_wrong_expectation_is_seen(in_corpus):
    # The check can fail: one value off in the rendering is a mismatch.
    with open(os.path.join(CORPUS, "fid_v1_becomes_v2.yaml")) as f:
        case = _fex._corpus_case(f.read())
    actual = run_case(case)
    assert actual == case["expect"]
    digit = next(ch for ch in reversed(actual) if ch.isdigit())
    at = actual.rindex(digit)
    changed = actual[:at] + str((int(digit) + 1) % 10) + actual[at + 1 :]
    assert changed != case["expect"]


def test_floats_print_as_rust_prints_them():
    # Rust's `{:?}` of these values (f32 unless noted).
    f = np.float32
    assert [rust_float(f(x)) for x in [0.1, 1.0, 100.0, -2.5, 1e-4, 1.1754944e-38, 1e16, 3e-5]] == [
        "0.1",
        "1.0",
        "100.0",
        "-2.5",
        "0.0001",
        "1.1754944e-38",
        "1e16",
        "3e-5",
    ]
    assert rust_float(np.float64(0.1)) == "0.1" and rust_float(np.float64(1e300)) == "1e300"
    assert rust_float(f("nan")) == "NaN" and rust_float(f(-0.0)) == "-0.0"
