"""fex.read_records: the library's PBDataset reader from Python (framing,
compression, errors that say where)."""

import gzip
import struct

import pytest

import fex


def framed(records, header=None):
    out = b""
    for r in records:
        if header is not None:
            out += struct.pack("<Q", header)
        out += struct.pack("<Q", len(r)) + r
    return out


def test_plain_and_gzip_files_give_the_same_records(tmp_path):
    records = [b"first", b"", b"x" * 1000]
    plain = tmp_path / "a.pb"
    plain.write_bytes(framed(records))
    packed = tmp_path / "a.pb.gz"
    packed.write_bytes(gzip.compress(framed(records)))
    assert list(fex.read_records(plain)) == records
    assert list(fex.read_records(str(packed))) == records
    assert list(fex.read_records(packed, compression="gzip")) == records


def test_lagrangex_headers_and_metadata(tmp_path):
    path = tmp_path / "l.pb"
    # Low byte: pb type 2; bits 8..31: the data source key.
    path.write_bytes(framed([b"ab", b"cde"], header=(7 << 8) | 2))
    got = list(fex.read_records(path, lagrangex_header=True, with_meta=True))
    assert [(p, i, pb, key) for p, i, _, pb, key in got] == [(b"ab", 0, 2, 7 << 8), (b"cde", 1, 2, 7 << 8)]
    assert got[1][2] == 8 + 8 + 2, "record 1 starts after record 0's header, length and payload"


def test_a_truncated_record_says_file_index_and_offset(tmp_path):
    path = tmp_path / "t.pb"
    path.write_bytes(framed([b"ok"]) + struct.pack("<Q", 100) + b"short")
    it = fex.read_records(path)
    assert next(it) == b"ok"
    with pytest.raises(fex.RecordError) as info:
        next(it)
    e = info.value
    assert (e.file, e.index, e.offset, e.kind) == (str(path), 1, 10, "truncated")
    assert "record 1 at byte 10" in str(e)


def test_records_feed_extraction(tmp_path):
    data = open(__import__("conftest").ROOT + "/benches/data/default_b256.pb", "rb").read()
    path = tmp_path / "r.pb"
    path.write_bytes(framed([data, data]))
    plan = fex.Plan.default()
    sizes = [plan.extract_batch(r, outputs=["item_id"]).batch_size for r in fex.read_records(path)]
    assert sizes == [256, 256]


def test_bad_options_and_missing_files():
    with pytest.raises(ValueError, match="compression="):
        fex.read_records("x", compression="lz4")
    with pytest.raises(fex.RecordError) as info:
        fex.read_records("/nonexistent/file.pb")
    assert info.value.kind == "io" and isinstance(info.value, OSError)


def test_a_stream_in_memory_reads_as_its_file(tmp_path):
    data = gzip.compress(framed([b"a", b"bc"], header=(3 << 8) | 1))
    path = tmp_path / "m.pb.gz"
    path.write_bytes(data)
    options = dict(lagrangex_header=True, with_meta=True)
    from_file = [r[1:] + (r[0],) for r in fex.read_records(path, **options)]
    from_bytes = [r[1:] + (r[0],) for r in fex.read_records(data, name="s3://b/m.pb.gz", **options)]
    assert from_bytes == from_file and [r[-1] for r in from_bytes] == [b"a", b"bc"]
    it = fex.read_records(framed([b"ok"]) + struct.pack("<Q", 9), name="mem")
    assert next(it) == b"ok"
    with pytest.raises(fex.RecordError) as info:
        next(it)
    assert (info.value.file, info.value.index, info.value.offset) == ("mem", 1, 10)
