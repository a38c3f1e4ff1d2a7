"""Spark local mode against the CLI (issue 14): the same rows published as a sharded release by
examples/spark_publish.py (local[2]) and by `dprp publish --shards`, rows per second of each.

    target/test-venv/bin/python benches/spark_vs_cli.py [--rows 1000000] [--shards 2]

Rows: n × 96 float32 uniform in [-1, 1] from numpy PCG64 seed 2026 (the data of
benches/large_publish.py), written once as .npy and as Parquet (an `id` and a list<float> column,
row groups of 65536) under target/spark-bench. Spark's time includes starting its session (about
7 s on a 2-core VM). The CLI runs twice: on the .npy, and on the Parquet file Spark reads
(`--column emb`); the ratio is printed against each.
"""

import argparse
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--read", choices=["spark", "direct"], default="direct")
    ap.add_argument("--order-by-id", action="store_true",
                    help="number rows by the id column (a sort: one more shuffle)")
    a = ap.parse_args()
    d = os.path.join(ROOT, "target", "spark-bench")
    os.makedirs(d, exist_ok=True)
    npy = os.path.join(d, f"x-{a.rows}.npy")
    pqt = os.path.join(d, f"x-{a.rows}.parquet")
    if not os.path.exists(pqt):
        x = np.random.Generator(np.random.PCG64(2026)).uniform(-1, 1, (a.rows, 96)).astype(np.float32)
        np.save(npy, x)
        t = pa.table({"id": pa.array(np.arange(a.rows, dtype=np.int64)),
                      "emb": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), 96)})
        pq.write_table(t, pqt, row_group_size=65536)
    dprp = os.path.join(ROOT, "target", "release", "dprp")
    common = ["--mechanism", "dp-oporp", "--epsilon", "5", "--delta", "1e-6", "--k", "64"]
    for out in ("cli", "cli-parquet", "spark"):
        subprocess.run(["rm", "-rf", os.path.join(d, out)], check=True)
    t = time.perf_counter()
    subprocess.run([dprp, "publish", npy, "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "64",
                    "--shards", str(a.shards), "-o", os.path.join(d, "cli")], check=True,
                   capture_output=True)
    cli = time.perf_counter() - t
    # the CLI on the very file Spark reads (dprp reads Parquet itself)
    t = time.perf_counter()
    subprocess.run([dprp, "publish", pqt, "--column", "emb", "-m", "dp-oporp", "-e", "5", "-d",
                    "1e-6", "-k", "64", "--shards", str(a.shards), "-o",
                    os.path.join(d, "cli-parquet")], check=True, capture_output=True)
    cli_pq = time.perf_counter() - t
    t = time.perf_counter()
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "spark_publish.py"), pqt,
                    os.path.join(d, "spark"), "--column", "emb",
                    *(["--order-by", "id"] if a.order_by_id else []), "--read", a.read,
                    "--shards", str(a.shards), *common], check=True, capture_output=True,
                   env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    spark = time.perf_counter() - t
    print(f"{a.rows} rows x 96, dp-oporp k = 64, {a.shards} shards, {os.cpu_count()} cores: "
          f"CLI {cli:.2f} s ({a.rows / cli:,.0f} rows/s), Spark local[2] --read {a.read} {spark:.2f} s "
          f"({a.rows / spark:,.0f} rows/s); Spark / CLI time = {spark / cli:.2f}; CLI on the "
          f"Parquet file {cli_pq:.2f} s, Spark / that = {spark / cli_pq:.2f}")


if __name__ == "__main__":
    main()
