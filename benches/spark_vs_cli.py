"""dprp on Spark against the CLI on one machine (issues 14 and 40 §4): the same rows published
as a sharded release by `dprp.spark.publish` — in local mode, and on a standalone cluster (a
master and two 1-core workers as JVMs on loopback, tests/python/spark_cluster.py) — and by
`dprp publish --shards`; then the same queries searched exactly by `dprp.spark.search` and by
`dprp query`. Rows per second of each, and the ratios.

    target/test-venv/bin/python benches/spark_vs_cli.py [--rows 1000000] [--dim 768] [--shards 4]
        [--engines local,cluster] [--queries 1000] [--keep]

Rows: n × p float32 uniform in [−1, 1] (numpy PCG64 seed 2026), written in chunks as `.npy` and
as Parquet (a `fixed_size_list<float32>` column, row groups of 65 536) under target/spark-bench
(n·p·8 bytes in all; removed afterwards unless --keep). Publishing is `dp-oporp`, k = 256, ε = 5,
δ = 10⁻⁶; Spark reads the Parquet path itself in each task (dprp's reader, `rows=(lo, hi)`).
Spark's publish and search are timed from the call to its return, with the session already
started (its start is printed apart); the CLI is timed as a whole process.
"""

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
MECH = dict(mechanism="dp-oporp", epsilon=5.0, delta=1e-6, k=256)
CHUNK = 65_536


def write_data(d: str, n: int, p: int, nq: int):
    npy, pqt, qf = (os.path.join(d, f) for f in (f"x-{n}x{p}.npy", f"x-{n}x{p}.parquet", f"q-{nq}x{p}.npy"))
    if not os.path.exists(pqt):
        rng = np.random.Generator(np.random.PCG64(2026))
        x = np.lib.format.open_memmap(npy, mode="w+", dtype="<f4", shape=(n, p))
        w = pq.ParquetWriter(pqt, pa.schema([("emb", pa.list_(pa.float32(), p))]))
        for a in range(0, n, CHUNK):
            b = min(n, a + CHUNK)
            block = rng.uniform(-1, 1, (b - a, p)).astype(np.float32)
            x[a:b] = block
            w.write_table(pa.table({"emb": pa.FixedSizeListArray.from_arrays(pa.array(block.ravel()), p)}))
        w.close()
        x.flush()
        del x
        np.save(qf, rng.uniform(-1, 1, (nq, p)).astype(np.float32))
    return npy, pqt, qf


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t


def run_engine(name, spark, pqt, qf, out, shards, n, top):
    import dprp.spark

    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    dprp.spark.publish(pqt, out, column="emb", shards=shards, spark=spark, **MECH)
    pub = time.perf_counter() - t
    q = np.load(qf)
    t = time.perf_counter()
    ids, _ = dprp.spark.search(spark, out, q, top=top)
    srch = time.perf_counter() - t
    return {"engine": name, "publish": pub, "search": srch, "ids": ids}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--engines", default="local,cluster")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    d = os.path.join(ROOT, "target", "spark-bench")
    os.makedirs(d, exist_ok=True)
    print(f"load {os.getloadavg()}, {os.cpu_count()} CPUs; {a.rows} rows x {a.dim}, dp-oporp k = 256, "
          f"{a.shards} shards, {a.queries} queries", flush=True)
    t = time.perf_counter()
    npy, pqt, qf = write_data(d, a.rows, a.dim, a.queries)
    print(f"data written in {time.perf_counter() - t:.1f} s", flush=True)
    dprp = os.path.join(ROOT, "target", "release", "dprp")
    cli_args = ["-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "256", "--shards", str(a.shards)]
    res = {}
    for name, src, extra in (("CLI .npy", npy, []), ("CLI Parquet", pqt, ["--column", "emb"])):
        out = os.path.join(d, "cli")
        shutil.rmtree(out, ignore_errors=True)
        res[name] = {"publish": timed([dprp, "publish", src, *extra, *cli_args, "-o", out])}
    res["CLI Parquet"]["search"] = timed([dprp, "query", out, "--queries", qf, "--top", str(a.top), "--csv"])
    engines = a.engines.split(",")
    for engine in engines:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        out = os.path.join(d, f"spark-{engine}")
        t = time.perf_counter()
        if engine == "local":
            from pyspark.sql import SparkSession

            spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                     .config("spark.driver.memory", "2g").getOrCreate())
            start = time.perf_counter() - t
            r = run_engine("Spark local[2]", spark, pqt, qf, out, a.shards, a.rows, a.top)
            spark.stop()
        else:
            from spark_cluster import StandaloneCluster

            with StandaloneCluster(workers=2, tmp=pathlib.Path(d) / "cluster", memory="4g") as c:
                spark = c.session(**{"spark.executor.memory": "3g"})
                start = time.perf_counter() - t
                r = run_engine("Spark standalone, 2 workers", spark, pqt, qf, out, a.shards, a.rows, a.top)
                spark.stop()
        r["start"] = start
        res[r["engine"]] = r
        shutil.rmtree(out, ignore_errors=True)
    print("\n| engine | session start (s) | publish (s) | rows/s | / CLI .npy | / CLI Parquet | search (s) | / dprp query |")
    print("|---|---|---|---|---|---|---|---|")
    base, basepq, q = res["CLI .npy"]["publish"], res["CLI Parquet"]["publish"], res["CLI Parquet"]["search"]
    for name, r in res.items():
        s = r.get("search")
        print(f"| {name} | {r.get('start', 0):.1f} | {r['publish']:.2f} | {a.rows / r['publish']:,.0f} | "
              f"{r['publish'] / base:.2f}× | {r['publish'] / basepq:.2f}× | "
              + (f"{s:.2f} | {s / q:.2f}× |" if s is not None else "— | — |"))
    print(f"load at the end {os.getloadavg()}")
    if not a.keep:
        for f in (npy, pqt, qf):
            os.remove(f)
        shutil.rmtree(os.path.join(d, "cli"), ignore_errors=True)
        shutil.rmtree(os.path.join(d, "cluster"), ignore_errors=True)


if __name__ == "__main__":
    main()
