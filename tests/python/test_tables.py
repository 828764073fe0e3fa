"""`fex extract` tables read back by pyarrow and DuckDB with the types a user
expects: ragged ids as list<int64>, dense as fixed_size_list<float>[d],
strings as binary, a keyed-jagged output as one list column per key; the
file metadata names the model, its version and fex's version; the row group
size is honoured; Parquet and Arrow IPC hold the same table; the output does
not depend on --threads.

Usage: test_tables.py FEX FEX_CLIENT (the built binaries).
"""

import os
import subprocess
import sys
import tempfile

import duckdb
import pyarrow as pa
import pyarrow.ipc
import pyarrow.parquet as pq

FEX, FEX_CLIENT = sys.argv[1], sys.argv[2]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT = os.path.join(ROOT, "models", "default.yaml")

KJT_MODEL = """\
name: kjt_table
version: "7"
features:
  - {name: cat_0, kind: sparse}
  - {name: cat_1, kind: sparse}
  - {name: kjt, op: kjt, inputs: [cat_0, cat_1]}
"""


def run(*args):
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stderr}"
    return done


def extract(model, records, out, *flags):
    run(FEX, "extract", "--model", model, "--output", out, *flags, records)


def check_default_model(d):
    records = os.path.join(d, "requests.bin")
    run(FEX_CLIENT, "gen", "--count", "20", "--batch-size", "8", "--out", records)
    parquet = os.path.join(d, "t.parquet")
    extract(DEFAULT, records, parquet, "--row-group-size", "50", "--threads", "1")
    table = pq.read_table(parquet)
    assert table.num_rows == 160, table.num_rows
    schema = table.schema
    assert schema.field("user_id").type == pa.large_list(pa.field("item", pa.int64(), nullable=False)), schema
    assert schema.field("user_embedding").type == pa.list_(pa.field("item", pa.float32(), nullable=False), 32)
    assert schema.field("item_title").type == pa.large_binary()
    assert schema.field("instance_weight").type == pa.float32()
    meta = {k.decode(): v.decode() for k, v in schema.metadata.items()}
    assert meta["fex.model"] == "default" and meta["fex.model_version"] == "1", meta
    assert meta["fex.version"] and len(meta["fex.model_digest"]) == 16, meta
    # A SHARED user feature is broadcast: every row of a request holds it.
    first = table.column("user_id").to_pylist()[:8]
    assert all(row == first[0] for row in first) and first[0], first
    assert pq.ParquetFile(parquet).metadata.num_row_groups == 4  # 160 rows by 50

    # The same table through two threads is the same file, byte for byte.
    again = os.path.join(d, "t2.parquet")
    extract(DEFAULT, records, again, "--row-group-size", "50", "--threads", "2")
    assert open(parquet, "rb").read() == open(again, "rb").read()

    # Arrow IPC holds the same table.
    ipc = os.path.join(d, "t.arrows")
    extract(DEFAULT, records, ipc, "--format", "arrow")
    with pa.ipc.open_stream(ipc) as reader:
        streamed = reader.read_all()
    assert streamed.equals(table), "arrow and parquet tables differ"

    con = duckdb.connect()
    types = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet('{parquet}'))").fetchall())
    assert types["user_id"] == "BIGINT[]", types
    assert types["item_title"] == "BLOB", types
    assert types["user_click_seq"] == "BIGINT[][]", types
    assert types["instance_weight"] == "FLOAT", types
    count, ids = con.execute(f"SELECT count(*), sum(len(item_id)) FROM read_parquet('{parquet}')").fetchone()
    assert count == 160 and ids > 0, (count, ids)
    kv = dict(con.execute(f"SELECT key::VARCHAR, value::VARCHAR FROM parquet_kv_metadata('{parquet}')").fetchall())
    assert kv["fex.model"] == "default", kv
    # DuckDB reads the IPC stream's fixed-size lists as arrays.
    arrow_types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM streamed)").fetchall())
    assert arrow_types["user_embedding"] == "FLOAT[32]", arrow_types


def check_keyed_jagged(d):
    model = os.path.join(d, "kjt.yaml")
    with open(model, "w") as f:
        f.write(KJT_MODEL)
    records = os.path.join(d, "kjt.bin")
    run(FEX_CLIENT, "gen", "--model-config", model, "--count", "3", "--batch-size", "5", "--out", records)
    parquet = os.path.join(d, "kjt.parquet")
    extract(model, records, parquet)
    table = pq.read_table(parquet)
    assert table.column_names == ["cat_0", "cat_1", "kjt.cat_0", "kjt.cat_1"], table.column_names
    assert table.num_rows == 15
    # Each key's part holds that key's ids, row by row.
    assert table.column("kjt.cat_0").to_pylist() == table.column("cat_0").to_pylist()
    assert table.column("kjt.cat_1").to_pylist() == table.column("cat_1").to_pylist()
    meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items()}
    assert meta["fex.model"] == "kjt_table" and meta["fex.model_version"] == "7", meta


with tempfile.TemporaryDirectory() as d:
    check_default_model(d)
    check_keyed_jagged(d)
print("2 passed, 0 failed")
