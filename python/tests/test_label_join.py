"""The near-line label join's calls (issue 23): the model's label_join:
section, a logged request's join keys, its samples with actions attached,
and fex.run over a record stream held in memory, which writes the bytes a
run over the same records in a file writes. Samples are encoded here by
hand (a few protobuf fields), so the test needs no protobuf package."""

import struct

import pytest

import fex

MODEL = """
name: joined
features:
  - {name: item, kind: sparse}
  - {name: acts, kind: line_id, field: actions, shape: [3]}
label_join:
  user_id: {line_id: uid}
  item_id: {line_id: item_id}
  refresh: {feature: f_refresh}
  emit: {requests_back: 3, after: 30m}
  late_actions: correction
"""


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, body):
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(body)) + body


def number(field_number, n):
    return varint(field_number << 3) + varint(n)


def line_id(uid, item, actions=()):
    # proto/monolith/line_id.proto: uid = 2 (fixed64), item_id = 4 (fixed64), actions = 6.
    out = varint(2 << 3 | 1) + struct.pack("<Q", uid) + varint(4 << 3 | 1) + struct.pack("<Q", item)
    return out + b"".join(number(6, a) for a in actions)


def bytes_feature(value):
    return field(6, field(1, value))  # Feature.bytes_list = 6, BytesList.value = 1


def fid_feature(fid):
    return field(2, field(1, struct.pack("<Q", fid)))  # fid_v2_list = 2, packed fixed64


def int_feature(v):
    return field(5, field(1, varint(v)))  # int64_list = 5


def named_list(name, features, shared=False):
    out = field(1, name.encode()) + b"".join(field(2, f) for f in features)
    return out + (number(3, 1) if shared else b"")


def batch(rows=3):
    lists = [
        named_list("f_refresh", [int_feature(1)], shared=True),
        named_list("__LINE_ID__", [bytes_feature(line_id(42, 100 + r, [9] if r == 1 else [])) for r in range(rows)]),
        named_list("item", [fid_feature(100 + r) for r in range(rows)]),
    ]
    return b"".join(field(1, body) for body in lists) + number(3, rows)


def example(r):
    named = field(1, field(1, b"item") + field(2, fid_feature(200 + r)))
    return named + field(100, line_id(7, 200 + r))


def logged(payload_field, payload, request_id="req-1", micros=1_700_000_000_123_456):
    """A fex.v1.LoggedRequest: request = 1, model = 2, unix_micros = 5, request_id = 6."""
    request = field(1, b"joined") + field(payload_field, payload)
    return field(1, request) + field(2, b"joined") + number(5, micros) + field(6, request_id.encode())


def logged_batch():
    return logged(2, batch())  # ExtractRequest.example_batch = 2


def logged_examples(n=2):
    return logged(3, b"".join(field(1, example(r)) for r in range(n)))  # examples = 3


def framed(records):
    return b"".join(struct.pack("<Q", len(r)) + r for r in records)


@pytest.fixture(scope="module")
def plan():
    return fex.Plan.from_yaml(MODEL)


def test_the_section_is_a_dict_of_what_the_job_needs(plan):
    assert plan.label_join == {
        "requests_back": 3,
        "after_ms": 1_800_000,
        "watermark_delay_ms": 60_000,
        "late_actions": "correction",
        "retention_ms": 3_600_000,
        "has_refresh": True,
    }
    assert fex.Plan.default().label_join is None


def test_keys_of_a_batch(plan):
    keys = plan.request_keys(logged_batch())
    assert (keys.request_id, keys.user_id, keys.time_ms, keys.refresh) == ("req-1", "42", 1_700_000_000_123, True)
    assert (keys.item_ids, keys.payload, keys.rows, keys.model) == (["100", "101", "102"], "batch", 3, "joined")


def test_keys_of_examples(plan):
    keys = plan.request_keys(logged_examples())
    assert (keys.user_id, keys.refresh, keys.item_ids, keys.payload) == ("7", False, ["200", "201"], "examples")


def test_bad_bytes_raise_join_error_with_the_offset(plan):
    data = logged_batch()
    with pytest.raises(fex.JoinError, match=r"logged request: request @ byte 3: needs 174 bytes, only 17 remain") as e:
        plan.request_keys(data[:20])
    assert e.value.offset == 3 and isinstance(e.value, ValueError)
    with pytest.raises(fex.JoinError, match="label_join.user_id: row 0 has no LineId field uid") as e:
        plan.request_keys(logged(2, named_list_batch_without_line_ids()))
    assert e.value.offset is None
    with pytest.raises(fex.JoinError, match="found actions for 2 rows; the request has 3"):
        plan.attach_actions(data, [[1], [2]])
    with pytest.raises(fex.JoinError, match="no label_join: section"):
        fex.Plan.default().request_keys(data)


def named_list_batch_without_line_ids():
    return field(1, named_list("item", [fid_feature(1)])) + number(3, 1)


def actions_of(plan, payload, samples):
    if payload == "batch":
        return plan.extract_batch(samples[0])["acts"].to_numpy().tolist()
    return plan.extract_examples(samples)["acts"].to_numpy().tolist()


def test_attached_actions_are_read_by_the_extractor(plan):
    out = plan.attach_actions(logged_batch(), [[1, 2], [3], []])
    assert len(out) == 1
    assert actions_of(plan, "batch", out) == [[1, 2, 0], [9, 3, 0], [0, 0, 0]]
    out = plan.attach_actions(logged_examples(), [[], [5]])
    assert out[0] == example(0) and actions_of(plan, "examples", out) == [[0, 0, 0], [5, 0, 0]]
    assert plan.attach_actions(logged_batch(), [[], [], []]) == [batch()]


@pytest.mark.parametrize("payload", ["batch", "examples"])
def test_run_over_bytes_writes_what_a_run_over_a_file_writes(plan, tmp_path, payload):
    data = logged_batch() if payload == "batch" else logged_examples(3)
    samples = plan.attach_actions(data, [[1], [], [2, 3]])
    stream = framed(samples)
    path = tmp_path / "joined.pb"
    path.write_bytes(stream)
    in_memory = fex.run(plan, stream, format="responses", payload=payload, threads=1)
    from_file = fex.run(plan, str(path), tmp_path / "out.responses", format="responses", payload=payload, threads=1)
    assert in_memory.responses is not None and len(in_memory.responses) == len(samples)
    assert framed(in_memory.responses) == (tmp_path / "out.responses").read_bytes()
    assert (in_memory.records, in_memory.rows_written, in_memory.input_bytes) == (
        from_file.records,
        from_file.rows_written,
        len(stream),
    )


def test_a_bad_stream_in_memory_is_named(plan):
    with pytest.raises(fex.BadRecordError, match="<memory>"):
        fex.run(plan, framed([b"\xff\xff"]), format="responses")


def test_run_over_bytes_writes_what_fex_extract_writes(plan, tmp_path):
    from conftest import binary
    import subprocess

    stream = framed(plan.attach_actions(logged_batch(), [[1], [], [2]]))
    (tmp_path / "joined.pb").write_bytes(stream)
    (tmp_path / "model.yaml").write_text(MODEL)
    cmd = [binary("FEX_CLI"), "extract", "--model", str(tmp_path / "model.yaml"), "--format", "responses"]
    subprocess.run([*cmd, "-o", str(tmp_path / "cli.out"), str(tmp_path / "joined.pb")], check=True, capture_output=True)
    in_memory = fex.run(plan, stream, format="responses")
    assert framed(in_memory.responses) == (tmp_path / "cli.out").read_bytes()
