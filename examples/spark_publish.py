"""Publish a Parquet dataset on Spark as a sharded dprp release: a thin command over
`dprp.spark.publish` (python/dprp/spark.py, which says what runs where and how task retries are
committed).

    python examples/spark_publish.py INPUT.parquet OUTPUT_DIR --column emb --shards 8 \
        --mechanism dp-oporp --epsilon 5 --delta 1e-6 --k 64
    dprp query OUTPUT_DIR --queries q.npy --top 10        # the CLI reads the sharded release

(or `spark-submit examples/spark_publish.py ...` on a cluster; see docs/shards.md, "Publishing
on Spark"). OUTPUT_DIR must be a directory every executor can write (local mode: any local path;
a cluster: a shared file system mounted at the same path on every node). Each executor holds one
shard's rows in memory while publishing it (n·p·4 bytes / N).

`--noise-seed` is for tests only: every executor then derives its noise from that seed, the
release is NOT private, and its payload equals `dprp publish --shards N --noise-seed ...` on the
same rows (tests/python/test_spark.py checks this).
"""

import argparse
import os
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("input", help="Parquet file or directory")
    ap.add_argument("output", help="the sharded release's directory (new or empty)")
    ap.add_argument("--column", required=True, help="a list<float>/array<float> column")
    ap.add_argument("--order-by", help="number the rows in this column's order (e.g. an id); "
                    "without it, in the order Spark reads them, which is not the files' order")
    ap.add_argument("--shards", type=int, required=True)
    ap.add_argument("--mechanism", required=True)
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--delta", type=float)
    ap.add_argument("--k", type=int)
    ap.add_argument("--projection-seed", help="public seed, hex (default: fresh from the OS)")
    ap.add_argument("--noise-seed", help="TESTS ONLY: reproducible noise, NOT private")
    ap.add_argument("--output-format", choices=["native", "parquet"], default="native",
                    help="the shard files: dprp's own (memory-mapped by readers) or Parquet "
                         "(columns id, label, sketch: `spark.read.parquet(OUTPUT_DIR)` reads the "
                         "release as one table)")
    ap.add_argument("--read", choices=["spark", "direct"], default="spark",
                    help="spark: Spark reads the data and moves each shard's rows to one task "
                         "(any Spark source; --order-by); direct: Spark only schedules one task "
                         "per shard, in which dprp reads the shard's rows from the Parquet file "
                         "(or the directory's *.parquet files in name order) itself, skipping "
                         "whole row groups before them (every executor must see the files)")
    ap.add_argument("--master", default=os.environ.get("SPARK_MASTER", "local[2]"))
    ap.add_argument("--driver-memory", default="4g",
                    help="JVM heap of the driver (in local mode also the executors'); Spark's 1g "
                         "default runs out on large vector columns")
    a = ap.parse_args(argv)

    # executors run the same Python as the driver (local mode; on a cluster set PYSPARK_PYTHON)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import dprp.spark

    spark = (SparkSession.builder.master(a.master).appName("dprp-publish")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.memory", a.driver_memory).getOrCreate())
    try:
        if a.read == "direct":
            if a.order_by:
                raise SystemExit("--order-by needs --read spark (direct reading keeps file order)")
            data = a.input
        else:
            data = spark.read.parquet(a.input)
        try:
            rel = dprp.spark.publish(
                data, a.output, column=a.column, shards=a.shards, mechanism=a.mechanism,
                epsilon=a.epsilon, delta=a.delta, k=a.k, order_by=a.order_by,
                projection_seed=a.projection_seed, noise_seed=a.noise_seed,
                output_format=a.output_format, spark=spark)
        except ValueError as e:
            raise SystemExit(str(e))
    finally:
        spark.stop()
    print(f"published {a.output}: {rel.n} rows in {len(rel.shards)} shards "
          f"({', '.join(str(s.n) for s in rel.shards)} rows), {rel.k} per row with {a.mechanism}")
    if a.noise_seed:
        print("warning: --noise-seed makes the release reproducible and therefore NOT private",
              file=sys.stderr)
    print(f"guarantee: {rel.guarantee}")


if __name__ == "__main__":
    main()
