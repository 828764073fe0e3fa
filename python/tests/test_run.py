"""fex.run, the offline pipeline from Python: for the same inputs and
model config it writes exactly the bytes `fex extract` writes (Parquet,
Arrow IPC, framed responses; with the model's `offline:` transforms), keeps
the same table in memory when given no output, and says where a bad record
is, as an exception with fields or, skipping, in the result."""

import os
import struct
import subprocess

import pytest

import fex

from conftest import ROOT, binary

DEFAULT_YAML = os.path.join(ROOT, "models", "default.yaml")

# The default model with transforms that drop rows and hold some back: a
# label filter, a seeded shuffle and batches with the remainder dropped.
TRANSFORMS = """
offline:
  transforms:
    - {transform: filter_by_label, label_threshold: [0.5, 0.5]}
    - {transform: shuffle, buffer_size: 8, seed: 3}
    - {transform: batch, batch_size: 10, drop_remainder: true}
"""


def framed(records):
    return b"".join(struct.pack("<Q", len(r)) + r for r in records)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, batches):
    """Two record files of generated ExampleBatches."""
    d = tmp_path_factory.mktemp("run")
    paths = [d / "a.pb", d / "b.pb"]
    paths[0].write_bytes(framed(batches[:3]))
    paths[1].write_bytes(framed(batches[3:]))
    return [str(p) for p in paths]


def cli(model, inputs, out, *args):
    """`fex extract`, the command line, on the same inputs; its stderr."""
    cmd = [binary("FEX_CLI"), "extract", "--model", str(model), "-o", str(out), *args, *inputs]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stderr


@pytest.mark.parametrize(
    "fmt,flag", [("parquet", "parquet"), ("arrow", "arrow"), ("responses", "responses")]
)
def test_run_writes_the_bytes_fex_extract_writes(tmp_path, inputs, fmt, flag):
    plan = fex.Plan.from_yaml(DEFAULT_YAML)
    result = fex.run(plan, inputs, tmp_path / "py.out", format=fmt, threads=2)
    cli(DEFAULT_YAML, inputs, tmp_path / "cli.out", "--format", flag, "--threads", "2")
    ours, theirs = (tmp_path / "py.out").read_bytes(), (tmp_path / "cli.out").read_bytes()
    assert len(ours) > 1000 and ours == theirs
    assert (result.files, result.records, result.bad_records, result.rows_written) == (2, 4, 0, 64)
    assert result.input_bytes == sum(os.path.getsize(p) for p in inputs)
    assert not result.has_table and result.responses is None


def test_transforms_run_as_in_fex_extract(tmp_path, inputs):
    model = tmp_path / "model.yaml"
    model.write_text(open(DEFAULT_YAML).read() + TRANSFORMS)
    plan = fex.Plan.from_yaml(model)
    result = fex.run(plan, inputs, tmp_path / "py.parquet", threads=2)
    stderr = cli(model, inputs, tmp_path / "cli.parquet", "--threads", "2")
    assert (tmp_path / "py.parquet").read_bytes() == (tmp_path / "cli.parquet").read_bytes()
    # The counters are the ones `fex extract` prints, and they did something.
    for name, count in result.transforms.items():
        assert f"{name}: {count}\n" in stderr
    dropped = result.transforms["filter_by_label: dropped"]
    assert dropped > 0 and result.transforms["batch: dropped"] > 0
    kept = 64 - dropped
    assert result.rows_written == kept - kept % 10
    # transforms=False writes every row.
    assert fex.run(plan, inputs, tmp_path / "all.parquet", transforms=False).rows_written == 64


def test_without_out_the_table_stays_in_memory(tmp_path, inputs):
    pq = pytest.importorskip("pyarrow.parquet")
    plan = fex.Plan.from_yaml(DEFAULT_YAML)
    result = fex.run(plan, inputs, threads=2)
    assert result.has_table and result.rows_written == 64
    table = result.to_arrow()
    cli(DEFAULT_YAML, inputs, tmp_path / "cli.parquet")
    written = pq.read_table(tmp_path / "cli.parquet")
    assert table.num_rows == 64 and table.equals(written)
    assert table.schema.metadata[b"fex.model"] == b"default"
    # The responses, framed by the pipeline, are the CLI's records.
    responses = fex.run(plan, inputs, format="responses").responses
    cli(DEFAULT_YAML, inputs, tmp_path / "cli.resp", "--format", "responses")
    data = (tmp_path / "cli.resp").read_bytes()
    assert len(responses) == 4 and framed(responses) == data


def test_an_empty_run_keeps_the_models_columns(tmp_path):
    empty = tmp_path / "empty.pb"
    empty.write_bytes(b"")
    table = fex.run(fex.Plan.from_yaml(DEFAULT_YAML), str(empty)).to_arrow()
    assert table.num_rows == 0 and "item_id" in table.column_names


def test_a_bad_record_raises_with_its_file_index_and_offset(tmp_path, batches):
    path = tmp_path / "bad.pb"
    path.write_bytes(framed([batches[0], b"\xff" * 16, batches[1]]))
    plan = fex.Plan.from_yaml(DEFAULT_YAML)
    with pytest.raises(fex.BadRecordError) as info:
        fex.run(plan, str(path), tmp_path / "out.parquet")
    e = info.value
    at = 8 + len(batches[0])
    assert (e.file, e.index, e.offset, e.kind) == (str(path), 1, at, "extract")
    assert isinstance(e.cause, fex.ExtractError) and e.__cause__ is e.cause
    assert (e.cause.kind, e.cause.offset) == ("decode", 0)
    assert f"record 1 at byte {at}" in str(e) and "varint" in str(e)
    # Skipping: the record is reported in the result, the others written,
    # and the table is the one `fex extract --on-error skip` writes.
    result = fex.run(plan, str(path), tmp_path / "out.parquet", on_error="skip")
    assert (result.records, result.bad_records, result.rows_written) == (3, 1, 32)
    [bad] = result.bad
    assert (bad.file, bad.index, bad.offset, bad.kind) == (str(path), 1, at, "extract")
    assert isinstance(bad.cause, fex.ExtractError) and bad.message == str(e)
    cli(DEFAULT_YAML, [str(path)], tmp_path / "cli.parquet", "--on-error", "skip")
    assert (tmp_path / "out.parquet").read_bytes() == (tmp_path / "cli.parquet").read_bytes()


def test_a_broken_frame_is_a_read_error(tmp_path, batches):
    path = tmp_path / "cut.pb"
    path.write_bytes(framed([batches[0]]) + struct.pack("<Q", 100) + b"short")
    with pytest.raises(fex.BadRecordError) as info:
        fex.run(fex.Plan.from_yaml(DEFAULT_YAML), str(path))
    e = info.value
    assert (e.index, e.offset, e.kind) == (1, 8 + len(batches[0]), "read")
    assert isinstance(e.cause, fex.RecordError) and e.cause.kind == "truncated"


def test_bad_arguments_are_refused_before_running(tmp_path):
    plan = fex.Plan.default()
    with pytest.raises(ValueError, match="format="):
        fex.run(plan, DEFAULT_YAML, format="csv")
    with pytest.raises(ValueError, match="on_error="):
        fex.run(plan, DEFAULT_YAML, on_error="ignore")
    with pytest.raises(FileNotFoundError, match="no file matches"):
        fex.run(plan, str(tmp_path / "*.pb"))


def test_examples_payloads_write_what_fex_extract_writes(tmp_path, batches, protos):
    from test_spark import to_examples

    examples = [e for b in batches[:2] for e in to_examples(protos["example"], b)]
    path = tmp_path / "examples.pb"
    path.write_bytes(framed(examples))
    plan = fex.Plan.from_yaml(DEFAULT_YAML)
    result = fex.run(plan, str(path), tmp_path / "py.parquet", payload="examples", chunk_records=5)
    cli(DEFAULT_YAML, [str(path)], tmp_path / "cli.parquet", "--payload", "example", "--chunk-records", "5")
    assert (tmp_path / "py.parquet").read_bytes() == (tmp_path / "cli.parquet").read_bytes()
    assert (result.records, result.rows_written) == (32, 32)


def test_ctrl_c_stops_a_run_and_raises_keyboard_interrupt(tmp_path, batches):
    """SIGINT while `fex.run` reads a pipe that is still being written: the
    run stops at its next record, closes the pipe (the writer sees a broken
    pipe) and the call raises KeyboardInterrupt. Without the signal poll the
    run would go on reading; the writer gives up after 60 s, so a broken
    poll fails the test (no broken pipe) instead of hanging it."""
    import signal
    import threading
    import time

    fifo = tmp_path / "records.fifo"
    os.mkfifo(fifo)
    done = threading.Event()
    state = {"written": 0, "broken": False}

    def feed():
        deadline = time.monotonic() + 60
        try:
            with open(fifo, "wb", buffering=0) as pipe:
                while not done.is_set() and time.monotonic() < deadline:
                    pipe.write(framed([batches[state["written"] % len(batches)]]))
                    state["written"] += 1
                    if state["written"] == 5:
                        os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(0.01)
        except BrokenPipeError:
            state["broken"] = True

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    plan = fex.Plan.from_yaml(DEFAULT_YAML)
    try:
        with pytest.raises(KeyboardInterrupt):
            fex.run(plan, str(fifo), tmp_path / "out.parquet", chunk_records=1, threads=2)
        feeder.join(30)
        assert state["broken"], f"the run kept reading its input after Ctrl-C: {state}"
    finally:
        done.set()
        feeder.join(10)


NEGATIVES = """
offline:
  transforms:
    - {transform: negative_gen, neg_num: 1, item_features: [item_id, item_author], start_num: 0, max_item_num: 50, seed: 4}
"""


def test_an_item_pool_carries_from_one_run_to_the_next(tmp_path, inputs):
    """negative_gen's pool saved after the first file and restored before the
    second writes what `fex extract` writes with the same flags, and the
    second run with the pool differs from one without it."""
    model = tmp_path / "model.yaml"
    model.write_text(open(DEFAULT_YAML).read() + NEGATIVES)
    plan = fex.Plan.from_yaml(model)
    pool = tmp_path / "pool.bin"
    fex.run(plan, inputs[:1], tmp_path / "a.arrow", format="arrow", item_pool_save=pool)
    fex.run(plan, inputs[1:], tmp_path / "b.arrow", format="arrow", item_pool_restore=pool)
    cli(model, inputs[:1], tmp_path / "ca.arrow", "--format", "arrow", "--item-pool-save", tmp_path / "cpool.bin")
    cli(model, inputs[1:], tmp_path / "cb.arrow", "--format", "arrow", "--item-pool-restore", tmp_path / "cpool.bin")
    assert pool.read_bytes() == (tmp_path / "cpool.bin").read_bytes()
    assert (tmp_path / "b.arrow").read_bytes() == (tmp_path / "cb.arrow").read_bytes()
    fex.run(plan, inputs[1:], tmp_path / "fresh.arrow", format="arrow")
    assert (tmp_path / "fresh.arrow").read_bytes() != (tmp_path / "b.arrow").read_bytes()
    # A damaged pool file is refused before anything is written.
    pool.write_bytes(pool.read_bytes()[:-3])
    with pytest.raises(ValueError, match="item pool"):
        fex.run(plan, inputs[1:], tmp_path / "c.arrow", format="arrow", item_pool_restore=pool)
    with pytest.raises(ValueError, match="no negative_gen"):
        fex.run(fex.Plan.from_yaml(DEFAULT_YAML), inputs, tmp_path / "d.arrow", item_pool_save=pool)
    with pytest.raises(ValueError, match="transforms=True"):
        fex.run(plan, inputs, tmp_path / "e.arrow", transforms=False, item_pool_save=pool)
