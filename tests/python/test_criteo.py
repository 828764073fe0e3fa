"""fex's Criteo preprocessing (seed 004) checked from Python, with buffers
written by `cargo run --example criteo` (no Python binding yet):

1. A generated Criteo-format file of 250,000 lines (two "days"): the
   vocabularies fitted on day 0 and the batch read from each day must equal
   an independent numpy implementation of the seed's preprocessing, written
   here: identical labels, dense values (bit for bit) and categorical ids.
2. A real torchrec.sparse.jagged_tensor.KeyedJaggedTensor built from fex's
   buffers answers keys(), lengths(), offsets(), values(), stride(),
   length_per_key(), offset_per_key() and to_dict() as the seed defines them,
   for a plain batch and a multi-hot one.

Usage: python3 tests/python/test_criteo.py path/to/examples/criteo
Prints 'N passed, N failed' and exits non-zero on any failure."""

import os
import subprocess
import sys
import tempfile
import traceback

import numpy as np

INT, CAT = 13, 26
KEYS = [f"cat_{i}" for i in range(CAT)]


def generate(path, rows, seed):
    """Criteo-like lines: skewed categorical pools, negatives down to -5 in
    the dense fields (x + 3 <= 0 happens), about 10 % empty fields."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, rows)
    dense = rng.integers(-5, 2000, (rows, INT))
    dense_empty = rng.random((rows, INT)) < 0.1
    pools = [rng.integers(0, 2**32, 10 + 4000 * (c % 5)) for c in range(CAT)]
    cat_idx = np.minimum(rng.zipf(1.3, (rows, CAT)) - 1, np.array([len(p) - 1 for p in pools]))
    cat_empty = rng.random((rows, CAT)) < 0.1
    columns = [label.astype(str)]
    columns += [np.where(dense_empty[:, i], "", dense[:, i].astype(str)) for i in range(INT)]
    for c in range(CAT):
        hexes = np.array([format(int(x), "08x") for x in pools[c]])
        columns.append(np.where(cat_empty[:, c], "", hexes[cat_idx[:, c]]))
    with open(path, "w") as f:
        f.writelines(line + "\n" for line in map("\t".join, zip(*(c.tolist() for c in columns))))


def parse(path):
    """The reference reader: TorchRec's row_mapper rules
    (torchrec/datasets/criteo.py:226-236): empty is 0, categorical is hex."""
    labels, dense, cats = [], [], []
    with open(path) as f:
        for line in f:
            row = line[:-1].split("\t")
            labels.append(int(row[0] or "0"))
            dense.append([int(x or "0") for x in row[1 : 1 + INT]])
            cats.append([int(x or "0", 16) for x in row[1 + INT :]])
    return np.array(labels), np.array(dense, dtype=np.int64), np.array(cats, dtype=np.int64)


def reference_dense(dense):
    """ln(x + 3) in float64 rounded to float32, x clamped to -2 from below
    (fex's documented rule for x + 3 <= 0)."""
    return np.log(np.maximum(dense, -2).astype(np.float64) + 3.0).astype(np.float32)


def reference_vocab(train_col, threshold):
    """Values in first-appearance order, those seen fewer than `threshold`
    times left out (criteo.py:484-516); returns (sorted values, ids)."""
    values, first, counts = np.unique(train_col, return_index=True, return_counts=True)
    keep = counts >= threshold if threshold > 1 else np.ones(len(values), bool)
    ids = np.ones(len(values), np.int64)
    kept = np.nonzero(keep)[0]
    ids[kept[np.argsort(first[kept], kind="stable")]] = np.arange(2, 2 + len(kept))
    return values, ids


def reference_ids(col, vocab):
    values, ids = vocab
    at = np.clip(np.searchsorted(values, col), 0, len(values) - 1)
    return np.where(values[at] == col, ids[at], 1)


def load(out):
    """fex's dumped buffers: name -> numpy array (or string for keys/stride)."""
    arrays = {}
    with open(os.path.join(out, "manifest.txt")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3:
                name, dtype, count = parts
                a = np.fromfile(os.path.join(out, name + ".bin"), dtype="<" + dtype)
                assert len(a) == int(count), name
                arrays[name] = a
            else:
                arrays[parts[0]] = parts[1]
    return arrays


def run(exe, *args):
    subprocess.run([exe, *map(str, args)], check=True)


def test_matches_numpy_reference(exe, tmp):
    day0, day1 = os.path.join(tmp, "day_0.tsv"), os.path.join(tmp, "day_1.tsv")
    generate(day0, 200_000, seed=1)
    generate(day1, 50_000, seed=2)
    threshold = 3
    vocab_dir = os.path.join(tmp, "vocab")
    run(exe, "fit", vocab_dir, threshold, day0)
    _, _, train_cats = parse(day0)
    vocabs = [reference_vocab(train_cats[:, c], threshold) for c in range(CAT)]
    for c in range(CAT):
        values, ids = vocabs[c]
        written = np.loadtxt(os.path.join(vocab_dir, f"cat_{c}.txt"), dtype=np.int64, ndmin=1)
        kept = values[ids > 1][np.argsort(ids[ids > 1])]
        assert np.array_equal(written, kept), f"vocabulary of cat_{c}"
    for day, rows in [(day0, 200_000), (day1, 50_000)]:
        out = os.path.join(tmp, "out_" + os.path.basename(day))
        run(exe, "dump", out, vocab_dir, rows, day)
        got = load(out)
        labels, dense, cats = parse(day)
        assert np.array_equal(got["label.values"], labels.astype(np.float32)), "labels"
        want = reference_dense(dense)
        assert np.isfinite(got["dense.values"]).all()
        assert np.array_equal(got["dense.values"].view(np.uint32), want.reshape(-1).view(np.uint32)), "dense bits"
        ids = np.stack([reference_ids(cats[:, c], vocabs[c]) for c in range(CAT)])  # [26, B]: key-major
        assert np.array_equal(got["sparse.values"], ids.reshape(-1)), "categorical ids"
        assert (ids >= 1).all() and (ids == 1).any() and (ids > 1).any()


def kjt_from(arrays, prefix):
    import torch
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    return KeyedJaggedTensor(
        keys=arrays[prefix + ".keys"].split(","),
        values=torch.from_numpy(arrays[prefix + ".values"].copy()),
        lengths=torch.from_numpy(arrays[prefix + ".lengths"].copy()),
        offsets=torch.from_numpy(arrays[prefix + ".offsets"].copy()),
        stride=int(arrays[prefix + ".stride"]),
    )


def test_torchrec_keyed_jagged_tensor(exe, tmp):
    day = os.path.join(tmp, "small.tsv")
    generate(day, 4, seed=3)
    vocab_dir = os.path.join(tmp, "vocab_small")
    run(exe, "fit", vocab_dir, 0, day)
    b = 4
    num_embeddings = [len(open(os.path.join(vocab_dir, f"cat_{c}.txt")).read().split()) + 2 for c in range(CAT)]
    min_table, size = 5, 3
    out = os.path.join(tmp, "out_small")
    run(exe, "dump", out, vocab_dir, b, day, ",".join(map(str, num_embeddings)), min_table, size)
    got = load(out)
    _, _, cats = parse(day)
    vocabs = [reference_vocab(cats[:, c], 0) for c in range(CAT)]
    sparse = np.stack([reference_ids(cats[:, c], vocabs[c]) for c in range(CAT)], axis=1)  # [B, 26]

    # Seed 004, KeyedJaggedTensor 1-8.
    k = kjt_from(got, "sparse")
    assert k.keys() == KEYS
    assert k.stride() == b
    assert k.lengths().tolist() == [1] * (b * CAT)
    assert k.offsets().tolist() == list(range(b * CAT + 1))
    assert k.values().tolist() == sparse.T.reshape(-1).tolist(), "values key-major"
    assert k.length_per_key() == [b] * CAT
    assert k.offset_per_key() == [b * i for i in range(CAT + 1)]
    d = k.to_dict()
    assert list(d) == KEYS
    for c, key in enumerate(KEYS):
        assert d[key].values().tolist() == sparse[:, c].tolist(), key
        assert d[key].lengths().tolist() == [1] * b
        assert d[key].offsets().tolist() == list(range(b + 1))

    # Multi-hot (seed 004, steps 3-5): keys whose table has at least
    # min_table_size rows get `size` values per id, the first the id itself.
    m = kjt_from(got, "multi_hot")
    expanded = [n >= min_table for n in num_embeddings]
    assert any(expanded) and not all(expanded), num_embeddings
    per = [size if e else 1 for e in expanded]
    assert m.keys() == KEYS and m.stride() == b
    assert m.lengths().tolist() == [p for p in per for _ in range(b)]
    lso = [0] + [p for p in per for _ in range(b)]
    assert m.offsets().tolist() == np.cumsum(lso).tolist(), "offset_n of the seed, step 3"
    assert m.length_per_key() == [p * b for p in per]
    assert m.offset_per_key() == np.cumsum([0] + [p * b for p in per]).tolist()
    md = m.to_dict()
    for c, key in enumerate(KEYS):
        v = md[key].values().numpy().reshape(b, per[c])
        assert v[:, 0].tolist() == sparse[:, c].tolist(), f"{key}: first column is the original id"
        assert ((v >= 0) & (v < num_embeddings[c])).all(), key


def main():
    exe = sys.argv[1]
    passed = failed = 0
    for test in [test_matches_numpy_reference, test_torchrec_keyed_jagged_tensor]:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                test(exe, tmp)
                passed += 1
                print(f"ok {test.__name__}")
            except Exception:
                failed += 1
                print(f"FAILED {test.__name__}")
                traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
