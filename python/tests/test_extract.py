"""The Python package against the library: columns are views of the
library's buffers (no copy), errors carry their fields, plans pickle with
their files, and the conversions keep values and memory."""

import gc
import pickle
import threading
import tracemalloc

import numpy as np
import pytest

import fex


@pytest.fixture(scope="module")
def extracted(plan, request_bytes):
    return plan.extract_batch(request_bytes)


def test_signature_and_identity(plan):
    names = [s.name for s in plan.outputs]
    assert names[:2] == ["user_id", "user_gender"] and len(names) == 22
    spec = {s.name: s for s in plan.outputs}
    assert (spec["item_embedding"].layout, spec["item_embedding"].dtype) == ("dense", "float32")
    assert spec["item_embedding"].shape == [-1, 16]
    assert spec["user_id"].shared_once and spec["item_id"].splits_dtype == "int64"
    assert plan.identity.version == "1" and plan.identity.digest != 0
    assert plan.name == "default" and plan.compat == "native"


def test_columns_have_the_signature_shapes(plan, extracted):
    assert extracted.batch_size == 256 and len(extracted) == 22
    assert list(extracted) == [s.name for s in plan.outputs]
    emb = extracted["item_embedding"]
    assert emb.values.shape == (256, 16) and emb.values.dtype == np.float32
    ids = extracted["item_id"]
    splits = ids.row_splits
    assert ids.layout == "ragged" and splits.dtype == np.int64 and len(splits) == 257
    assert splits[0] == 0 and splits[-1] == len(ids.values) and np.all(np.diff(splits) >= 0)
    user = extracted["user_id"]
    assert user.shared and user.rows == 1 and len(user.row_splits) == 2
    seq = extracted["user_click_seq"]
    assert seq.values.ndim == 2 and seq.values.shape[1] == 1
    title = extracted["item_title"]
    assert title.layout == "strings" and title.values.dtype == np.uint8
    first = bytes(title.values[title.row_splits[0] : title.row_splits[1]])
    assert first.startswith(b"item-")
    assert "nope" not in extracted and extracted.get("nope") is None
    with pytest.raises(KeyError):
        extracted["nope"]


def test_numpy_views_are_the_library_buffers_not_copies(plan, request_bytes):
    out = plan.extract_batch(request_bytes)
    col = out["item_embedding"]
    a, b = col.values, col.values
    # Both views have a fex Buffer as base, at the same address: the memory
    # the library wrote, not a copy made by numpy.
    assert isinstance(a.base, fex.Buffer) and not a.flags.owndata and not a.flags.writeable
    assert a.__array_interface__["data"][0] == a.base.address == b.base.address
    assert np.shares_memory(a, b)
    # numpy reports its data allocations to tracemalloc in its own domain:
    # making the views allocates no data there, while a copy would.
    ids = out["item_id"]
    views, copied = numpy_data_allocated(lambda: [ids.values, ids.row_splits, col.values])
    assert copied == 0, f"{copied} bytes of array data allocated for views"
    _, copied = numpy_data_allocated(lambda: views[0].copy())
    assert copied >= views[0].nbytes, "sanity: the counter sees a real copy"


def numpy_data_allocated(fn):
    domain = tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces([domain])
        result = fn()
        after = tracemalloc.take_snapshot().filter_traces([domain])
    finally:
        tracemalloc.stop()
    return result, sum(s.size_diff for s in after.compare_to(before, "filename") if s.size_diff > 0)


def test_views_keep_the_memory_alive(plan, request_bytes):
    values = plan.extract_batch(request_bytes)["item_ctr_7d"].values
    expected = values.copy()
    gc.collect()
    # The Extracted and Column are gone; the view's base holds the buffer.
    assert np.array_equal(values, expected)


def test_arrow_shares_the_same_buffers(extracted):
    pa = pytest.importorskip("pyarrow")
    ids = extracted["item_id"]
    arr = ids.to_arrow()
    assert arr.type == pa.large_list(pa.field("item", pa.int64(), nullable=False))
    assert arr.values.buffers()[1].address == ids.values.base.address
    assert arr.offsets.to_numpy().tolist() == ids.row_splits.tolist()
    emb = extracted["item_embedding"].to_arrow()
    assert pa.types.is_fixed_size_list(emb.type) and emb.type.list_size == 16
    title = extracted["item_title"].to_arrow()
    assert title.type == pa.large_binary() and title[0].as_py().startswith(b"item-")
    assert extracted["instance_weight"].to_arrow().type == pa.float32()


def test_whole_extraction_as_a_record_batch(plan, request_bytes):
    pytest.importorskip("pyarrow")
    batch = plan.extract_batch(request_bytes, shared="broadcast").to_arrow()
    assert batch.num_rows == 256 and batch.schema.names == [s.name for s in plan.outputs]


def test_selected_outputs_and_shared_policy(plan, request_bytes):
    out = plan.extract_batch(request_bytes, outputs=["item_id", "user_id"], shared="broadcast")
    assert list(out) == ["item_id", "user_id"]
    assert out["user_id"].rows == 256 and not out["user_id"].shared
    with pytest.raises(ValueError, match='has no output "nope"'):
        plan.extract_batch(request_bytes, outputs=["nope"])
    with pytest.raises(ValueError, match="shared="):
        plan.extract_batch(request_bytes, shared="sometimes")


def test_decode_error_carries_offset_and_path(plan, request_bytes):
    with pytest.raises(fex.ExtractError) as info:
        plan.extract_batch(request_bytes[:1000])
    e = info.value
    assert isinstance(e, ValueError) and e.kind == "decode"
    assert e.offset is not None and 0 < e.offset <= 1000
    assert e.path and e.path.startswith("named_feature_list[")
    assert str(e.offset) in str(e)


def test_type_mismatch_names_row_source_and_path(protos):
    ex = protos["example"]
    plan = fex.Plan.from_yaml("name: m\nfeatures:\n  - {name: ctr, kind: dense, dtype: f32, shape: [1]}\n")
    batch = ex.ExampleBatch(batch_size=3)
    ctr = batch.named_feature_list.add(name="ctr")
    ctr.feature.add().float_list.value.append(0.5)
    ctr.feature.add().float_list.value.append(0.25)
    ctr.feature.add().fid_v2_list.value.append(7)
    with pytest.raises(fex.ExtractError) as info:
        plan.extract_batch(batch.SerializeToString())
    e = info.value
    assert (e.kind, e.row, e.source, e.offset) == ("type_mismatch", 2, "ctr", None)
    assert e.path == "named_feature_list[0].feature[2]", e.path


def test_a_missing_config_file_is_a_config_error(tmp_path):
    missing = str(tmp_path / "ranker.yaml")
    with pytest.raises(fex.ConfigError) as info:
        fex.Plan.from_yaml(missing)
    assert info.value.errors[0][0] == missing


def test_config_error_lists_every_problem():
    text = "name: m\nfeatures:\n  - {name: a, kind: sparze}\n  - {name: b, kind: dense, shape: [1], colour: red}\n"
    with pytest.raises(fex.ConfigError) as info:
        fex.Plan.from_yaml(text)
    paths = [p for p, _ in info.value.errors]
    assert paths == ["features.a.kind", "features.b"], info.value.errors
    assert "colour" in info.value.errors[1][1] and "2 errors" in str(info.value)


VOCAB_MODEL = """name: v
version: "3"
features:
  - {name: city, kind: sparse, output: false}
  - {name: city_id, op: vocab, input: city, file: vocab/city.txt}
"""


def test_vocabularies_from_bytes_from_disk_and_through_pickle(tmp_path, protos):
    words = b"1\n2\n3\n"
    in_memory = fex.Plan.from_yaml(VOCAB_MODEL, files={"vocab/city.txt": words})
    (tmp_path / "vocab").mkdir()
    (tmp_path / "vocab" / "city.txt").write_bytes(words)
    (tmp_path / "model.yaml").write_text(VOCAB_MODEL)
    on_disk = fex.Plan.from_yaml(tmp_path / "model.yaml")
    named = fex.Plan.from_yaml(VOCAB_MODEL, files={"vocab/city.txt": tmp_path / "vocab" / "city.txt"})
    shipped = pickle.loads(pickle.dumps(on_disk))
    digests = {p.identity.digest for p in (in_memory, on_disk, named, shipped)}
    assert len(digests) == 1 and shipped.identity.version.startswith("3+files.")
    changed = fex.Plan.from_yaml(VOCAB_MODEL, files={"vocab/city.txt": b"1\n2\n"})
    assert changed.identity.digest not in digests, "a changed vocabulary is a new identity"
    ex = protos["example"]
    batch = ex.ExampleBatch(batch_size=2)
    city = batch.named_feature_list.add(name="city")
    city.feature.add().fid_v2_list.value.append(2)
    city.feature.add().fid_v2_list.value.append(9)
    data = batch.SerializeToString()
    got = [p.extract_batch(data)["city_id"].values.tolist() for p in (in_memory, on_disk, shipped)]
    assert got[0] == got[1] == got[2] and len(got[0]) == 2
    with pytest.raises(fex.ConfigError, match="no in-memory file"):
        fex.Plan.from_yaml(VOCAB_MODEL, files={"other.txt": b""})


def test_examples_and_threads(plan, request_bytes, protos):
    ex = protos["example"]
    example = ex.Example()
    f = example.named_feature.add(name="item_id")
    f.feature.fid_v2_list.value.extend([5, 6])
    samples = [example.SerializeToString()] * 3
    out = plan.extract_examples(samples, outputs=["item_id"])
    assert out["item_id"].row_splits.tolist() == [0, 2, 4, 6]
    # Several Python threads extract at once (the GIL is released during
    # extraction; each call takes its own scratch from the plan's pool).
    expected = plan.extract_batch(request_bytes)["item_tags"].values.tolist()
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(plan.extract_batch(request_bytes)["item_tags"].values.tolist())
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors and len(results) == 20 and all(r == expected for r in results)


def test_to_torch_shares_memory(extracted):
    torch = pytest.importorskip("torch", reason="torch is not installed (optional)")
    emb = extracted["item_embedding"]
    t = emb.to_torch()
    assert t.shape == (256, 16) and t.data_ptr() == emb.values.base.address
    r = extracted["item_id"].to_torch()
    assert r.values.dtype == torch.int64 and r.row_splits.shape == (257,)


def test_to_kjt_round_trip(extracted):
    pytest.importorskip("torchrec", reason="torchrec is not installed (optional)")
    ids = extracted["item_id"]
    kjt = ids.to_kjt()
    assert kjt.keys() == ["item_id"]
    jt = kjt["item_id"]
    assert jt.values().tolist() == ids.values.tolist()
    assert jt.offsets().tolist() == ids.row_splits.tolist()


def test_to_tf_ragged(extracted):
    pytest.importorskip("tensorflow", reason="TensorFlow is not installed (optional)")
    ids = extracted["item_id"]
    rt = ids.to_tf_ragged()
    assert rt.row_splits.numpy().tolist() == ids.row_splits.tolist()
    assert rt.flat_values.numpy().tolist() == ids.values.tolist()


def test_the_installed_extension_is_stripped():
    """The wheel's native module carries no symbols or debug info
    (pyproject's maturin `strip`): a release build is about 9 MB installed
    where an unstripped one is 75 MB. Read from its ELF section table, so
    the check holds whatever profile built it (the suite builds dev)."""
    import struct
    import sys

    import fex._fex

    if not sys.platform.startswith("linux"):
        pytest.skip("reads an ELF section table")
    with open(fex._fex.__file__, "rb") as f:
        elf = f.read()
    assert elf[:4] == b"\x7fELF" and elf[4] == 2, "a 64-bit ELF"
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    def section(i):
        name, _type, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)
        return name, offset, size
    _, names_at, _ = section(shstrndx)
    def name(i):
        start = names_at + section(i)[0]
        return elf[start:elf.index(b"\0", start)].decode()
    names = [name(i) for i in range(shnum)]
    assert ".dynsym" in names, names
    left = [n for n in names if n == ".symtab" or n.startswith(".debug")]
    assert not left, f"fex/_fex keeps {left}: is the wheel stripped?"