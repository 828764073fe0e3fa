"""Local Spark throughput of fex.spark.extract: records (output rows) per
second through mapInArrow, with the Arrow batch size used.

Usage: python benches/spark_throughput.py FRAMED_FILE [ARROW_BATCH_ROWS...]
FRAMED_FILE holds ExampleBatches for the default model (`fex-client gen`).
First `fex.spark.read_pbdataset` alone is timed (the file split into
records on the executors, written to Spark's `noop` sink). Then each run
extracts every output of the default model and writes to the `noop` sink
(the whole plan runs, nothing is stored); the input DataFrame is cached and
counted first, so its reading is not timed. Median of 3 runs each.
"""

import os
import statistics
import sys
import time

import fex
import fex.spark


def main():
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    sizes = [int(x) for x in sys.argv[2:]] or [10000]
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    plan = fex.Plan.default()
    path = os.path.abspath(sys.argv[1])
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fex.spark.read_pbdataset(spark, path).write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - start)
    records = sum(1 for _ in fex.read_records(path))
    t = statistics.median(times)
    print(f"read_pbdataset: {records} records in {t:.2f} s: {records / t:,.0f} records/s ({os.path.getsize(path) / t / 1e6:.1f} MB/s)")
    df = fex.spark.read_pbdataset(spark, path).select("sample").repartition(2).cache()
    batches = [r.sample for r in df.collect()]
    rows = sum(plan.extract_batch(b, outputs=["item_id"]).batch_size for b in batches)
    print(f"{len(batches)} ExampleBatches, {rows} records, {sum(map(len, batches))} bytes; local[2]")
    print("| arrow batch rows (input) | records/s | seconds |")
    print("|---:|---:|---:|")
    for size in sizes:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(size))
        times = []
        for _ in range(3):
            out = fex.spark.extract(df, config=plan, format="batch")
            start = time.perf_counter()
            out.write.format("noop").mode("overwrite").save()
            times.append(time.perf_counter() - start)
        t = statistics.median(times)
        print(f"| {size} | {rows / t:,.0f} | {t:.2f} |")
    spark.stop()


if __name__ == "__main__":
    main()
