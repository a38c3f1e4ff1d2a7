"""Publish a Parquet dataset on Spark as a sharded dprp release: one shard per partition.

    python examples/spark_publish.py INPUT.parquet OUTPUT_DIR --column emb --shards 8 \
        --mechanism dp-oporp --epsilon 5 --delta 1e-6 --k 64
    dprp query OUTPUT_DIR --queries q.npy --top 10        # the CLI reads the sharded release

(or `spark-submit examples/spark_publish.py ...` on a cluster; see docs/shards.md, "Publishing
on Spark"). What runs where:

* the driver numbers the rows 0..n-1 (in the order of --order-by, else Spark's read order) from
  a count per partition, with DataFrame expressions only (no row passes through Python), splits
  them into N contiguous ranges as even as possible (shard i: rows ⌊in/N⌋..⌊(i+1)n/N⌋ — the
  split of `dprp publish --shards N`), repartitions by shard, and draws the
  public projection seed once (or takes --projection-seed);
* each executor, in `mapInArrow`, gathers each shard's rows in its partition, in order, and calls
  `dprp.publish(x, ..., shard=(i, N), first_row=start_i, seed=SEED, output=OUTPUT_DIR)`: the
  public seed is the only thing it is sent; its secret noise comes from its own operating system's
  CSPRNG inside dprp and never leaves it;
* the driver then calls `dprp.finish_shards(OUTPUT_DIR)`, which checks the shards (all present,
  one release, disjoint rows) and writes the manifest.

OUTPUT_DIR must be a directory every executor can write (local mode: any local path; a cluster: a
shared file system mounted at the same path on every node). Each executor holds one shard's rows
in memory while publishing it (n·p·4 bytes / N).

`--noise-seed` is for tests only: every executor then derives its noise from that seed, the
release is NOT private, and its payload equals `dprp publish --shards N --noise-seed ...` on the
same rows (tests/python/test_spark.py checks this).
"""

import argparse
import os
import sys

def shard_starts(n, shards):
    """Global id of each shard's first row, plus n: the split of `dprp publish --shards`."""
    if shards > n:
        raise SystemExit(f"{shards} shards of {n} rows would leave a shard empty: use at most "
                         f"{max(n, 1)}")
    return [i * n // shards for i in range(shards)] + [n]


def to_matrix(table, column, what):
    """The list column of an Arrow table as an n x p float32 array (one copy at most)."""
    import numpy as np

    vec = table.column(column).combine_chunks()
    lengths = vec.value_lengths().to_numpy(zero_copy_only=False)
    if vec.null_count or len(set(lengths.tolist())) > 1:
        raise RuntimeError(f"{what}: column {column!r} has nulls or rows of different lengths")
    x = vec.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return x.reshape(len(vec), int(lengths[0]) if len(lengths) else 0)


def count_rows(path):
    """Rows of the Parquet file, or of the `*.parquet` files of the directory (top level, not
    hidden or `_`-prefixed, in name order: the dataset dprp reads), from their footers."""
    import pyarrow.parquet as pq

    if os.path.isfile(path):
        files = [path]
    else:
        files = sorted(os.path.join(path, f) for f in os.listdir(path)
                       if f.lower().endswith(".parquet") and not f.startswith(("_", ".")))
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


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
    from pyspark import StorageLevel
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import dprp

    if os.path.isdir(a.output) and os.listdir(a.output):
        raise SystemExit(f"{a.output} is a directory that is not empty")
    seed = a.projection_seed or os.urandom(32).hex()  # public: recorded in every shard
    spark = (SparkSession.builder.master(a.master).appName("dprp-publish")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.memory", a.driver_memory).getOrCreate())
    try:
        out = os.path.abspath(a.output)
        opts = dict(mechanism=a.mechanism, epsilon=a.epsilon, delta=a.delta, k=a.k, seed=seed,
                    output=out, noise_seed=a.noise_seed, output_format=a.output_format)
        column, count = a.column, a.shards
        if a.read == "direct":
            if a.order_by:
                raise SystemExit("--order-by needs --read spark (direct reading keeps file order)")
            source = os.path.abspath(a.input)
            n = count_rows(source)
            if n == 0:
                raise SystemExit(f"{a.input}: no rows")
            starts = shard_starts(n, count)

            def publish_shards(batches):
                """One task per shard: dprp reads its rows from the files and publishes them."""
                import warnings

                import pyarrow as pa

                import dprp as d

                for b in batches:
                    for i in b.column("shard").to_pylist():
                        lo, hi = starts[i], starts[i + 1]
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")  # said once by the driver
                            r = d.publish(source, column=column, rows=(lo, hi),
                                          shard=(i, count), first_row=lo, **opts)
                        yield pa.RecordBatch.from_pydict(
                            {"shard": [i], "first_row": [lo], "rows": [r.n]})

            shards = spark.range(0, count, 1, count).withColumnRenamed("id", "shard")
            done = shards.mapInArrow(publish_shards,
                                     "shard long, first_row long, rows long").collect()
        else:
            df = spark.read.parquet(a.input)
            if a.order_by:
                df = df.orderBy(a.order_by)
            # Number the rows 0..n-1 without moving them through Python: each partition's rows get
            # its offset (from a count per partition) plus their position in it.
            df = (df.select(a.column)
                  .withColumn("_pid", F.spark_partition_id())
                  .withColumn("_mid", F.monotonically_increasing_id())
                  .persist(StorageLevel.MEMORY_AND_DISK))
            counts = dict(df.groupBy("_pid").count().collect())
            n = sum(counts.values())
            if n == 0:
                raise SystemExit(f"{a.input}: no rows")
            starts = shard_starts(n, count)
            offsets, acc = {}, 0
            for pid in sorted(counts):
                offsets[pid] = acc
                acc += counts[pid]
            offset_of = F.create_map(*[F.lit(x) for kv in offsets.items() for x in kv])
            pid = F.col("_pid").cast("long")
            idx = offset_of[F.col("_pid")] + (F.col("_mid") - F.shiftleft(pid, 33))
            # shard of a row: the last i with ⌊in/N⌋ ≤ idx, i.e. ⌊((idx + 1)·N − 1)/n⌋
            shard = F.floor(((idx + 1) * count - 1) / n).cast("long")
            indexed = (df.select(shard.alias("shard"), idx.cast("long").alias("idx"), a.column)
                       .repartition(count, "shard"))

            def publish_partition(batches):
                """Publish every shard in this partition (hash partitioning by shard puts each
                shard's rows in one partition, sometimes two shards in one)."""
                import warnings

                import numpy as np
                import pyarrow as pa
                import pyarrow.compute as pc

                import dprp as d

                batches = list(batches)
                if not batches:  # an empty partition (hash partitioning can leave some)
                    return
                table = pa.Table.from_batches(batches)
                for i in sorted(set(table.column("shard").to_pylist())):
                    part = table.filter(pc.equal(table.column("shard"), i)).sort_by("idx")
                    ids = part.column("idx").to_numpy()
                    lo = starts[i]
                    if not np.array_equal(ids, np.arange(lo, lo + len(ids))):
                        raise RuntimeError(f"shard {i}: rows are not ids {lo}.. in order")
                    x = to_matrix(part, column, f"shard {i}")
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # the driver says NOT private once, below
                        r = d.publish(x, shard=(i, count), first_row=lo, **opts)
                    yield pa.RecordBatch.from_pydict(
                        {"shard": [i], "first_row": [lo], "rows": [r.n]})

            done = indexed.mapInArrow(publish_partition,
                                      "shard long, first_row long, rows long").collect()
            df.unpersist()
    finally:
        spark.stop()
    rel = dprp.finish_shards(a.output)
    print(f"published {a.output}: {rel.n} rows in {len(done)} shards "
          f"({', '.join(f'{s.first_row}+{s.rows}' for s in sorted(done))}), "
          f"{rel.k} per row with {a.mechanism}")
    if a.noise_seed:
        print("warning: --noise-seed makes the release reproducible and therefore NOT private",
              file=sys.stderr)
    print(f"guarantee: {rel.guarantee}")


if __name__ == "__main__":
    main()
