"""Publishing on Spark (`pip install "dprp[spark]"`): a DataFrame's vector column, or a Parquet
dataset read by dprp in the executors, published as a sharded release, one shard per task, safe
under Spark's task retries.

    import dprp.spark
    release = dprp.spark.publish(df, "out.release", column="emb", shards=8,
                                 mechanism="dp-oporp", epsilon=5, delta=1e-6, k=64)

What runs where:

* the driver numbers the rows 0..n−1 (after `order_by` if given, else in Spark's read order)
  from a count per partition, with DataFrame expressions only, splits them into `shards`
  contiguous ranges as even as possible (the split of `dprp publish --shards N`), and draws the
  public projection seed once (or takes `projection_seed`);
* each task, in `mapInArrow`, publishes its shard with `dprp.publish(x, shard=(i, N),
  first_row=start_i, seed=SEED, …)` into a directory of its own attempt; it is sent only the
  public seed, and draws its secret noise from its own operating system inside dprp;
* the driver commits exactly one attempt per shard and finishes the release (below).

**The commit protocol.** Spark runs a task again after an executor is lost or a fetch fails, and
runs speculative copies of slow tasks; each attempt privatises its rows with fresh noise, so two
finished attempts of one shard are two noisy copies of the same rows — together they would
reveal more than the release's guarantee allows (averaging them halves the noise variance). So:

1. every attempt writes each of its shards into `OUTPUT/_attempts/<task attempt>-shard<i>/` (its
   own directory; the file written atomically by dprp) and returns the shard it wrote and where;
2. the driver takes, for every shard, the attempt whose result Spark returned (`collect` returns
   one result per partition: the attempt Spark counted as successful), creates
   `OUTPUT/_attempts.closed`, moves that attempt's shard file into `OUTPUT/`, and deletes
   `OUTPUT/_attempts/` with every other attempt's output in it;
3. an attempt that finishes after that (a speculative copy Spark had not stopped yet) finds
   `_attempts.closed` after writing and deletes its own output; if it looked before the marker
   existed, its output was complete before the driver's deletion began and was deleted with the
   rest; one that starts after the deletion cannot write (dprp creates the attempt's directory,
   not its parent `_attempts/`, which the driver made before the job);
4. `dprp.finish_shards(OUTPUT)` checks the shards and writes the manifest.

A row's privatised output therefore exists once in the release and nowhere else dprp wrote (on a
file system whose renames and deletions are atomic and seen by every node, as POSIX local file
systems; on NFS with close-to-open consistency the marker is read after the attempt's close).
When the job fails (a task fails `spark.task.maxFailures` times, bad rows, Ctrl-C on the driver),
every attempt's output is deleted and nothing is published: the output directory is left without
shards, and the error is raised. A job stopped before any publishing task was launched (over a
ledger's budget, no rows) leaves no output directory it made.
"""

from __future__ import annotations

import os
import shutil
import warnings
from typing import Any, Optional

ATTEMPTS = "_attempts"
CLOSED = "_attempts.closed"


def shard_starts(n: int, shards: int) -> list[int]:
    """Global id of each shard's first row, plus n: the split of `dprp publish --shards`."""
    if not isinstance(shards, int) or isinstance(shards, bool) or shards < 1:
        raise ValueError(f"shards: must be a positive integer, got {shards!r}")
    if shards > n:
        raise ValueError(f"{shards} shards of {n} rows would leave a shard empty: use at most {max(n, 1)}")
    return [i * n // shards for i in range(shards)] + [n]


def to_matrix(table, column: str, what: str):
    """The list column of an Arrow table as an n × p float32 array (one copy at most)."""
    import numpy as np

    vec = table.column(column).combine_chunks()
    lengths = vec.value_lengths().to_numpy(zero_copy_only=False)
    if vec.null_count or len(set(lengths.tolist())) > 1:
        raise ValueError(f"{what}: column {column!r} has nulls or rows of different lengths")
    x = vec.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return x.reshape(len(vec), int(lengths[0]) if len(lengths) else 0)


def count_rows(path: str) -> int:
    """Rows of the Parquet file, or of the `*.parquet` files of the directory (top level, not
    hidden or `_`-prefixed, in name order: the dataset dprp reads), from their footers."""
    import pyarrow.parquet as pq

    if os.path.isfile(path):
        files = [path]
    else:
        files = sorted(os.path.join(path, f) for f in os.listdir(path)
                       if f.lower().endswith(".parquet") and not f.startswith(("_", ".")))
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def _attempt_dir(out: str, shard: int) -> str:
    """This task attempt's own directory for shard `shard` under OUTPUT/_attempts (a task may
    publish two shards: hash partitioning can put two in one partition)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    tag = f"{ctx.stageId()}-{ctx.partitionId()}-{ctx.taskAttemptId()}" if ctx is not None else f"pid{os.getpid()}"
    return os.path.join(out, ATTEMPTS, f"{tag}-shard{shard}")


def _attempt_number() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.attemptNumber() if ctx is not None else 0


def _publish_attempt(x_or_path, i: int, count: int, lo: int, out: str, opts: dict, inject: dict, **read):
    """Publish shard i into this attempt's directory; returns (directory, rows). After writing,
    an attempt that finds the driver's `_attempts.closed` deletes its output (step 3)."""
    import dprp as d

    where = _attempt_dir(out, i)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the driver says "NOT private" once for a noise seed
        r = d.publish(x_or_path, shard=(i, count), first_row=lo, output=where, **read, **opts)
    if os.path.exists(os.path.join(out, CLOSED)):
        shutil.rmtree(where, ignore_errors=True)
        raise RuntimeError(f"shard {i}: the release was committed without this attempt; its output was deleted")
    if inject and _attempt_number() == 0:
        _injected(inject.get(i), i, out, where)
    return where, r.n


def _injected(how: Optional[str], i: int, out: str, where: str) -> None:
    """Tests only (`publish(_inject={shard: how})`, first attempts only): "after-write" fails
    the attempt after its shard was written; "hold-after-write" writes
    `OUTPUT/_attempts/hold-shard<i>.json` (this process's pid, the attempt's directory) and waits, for the test to kill
    its executor or for a speculative copy to win."""
    import json
    import time

    if how == "after-write":
        raise RuntimeError(f"shard {i}: injected failure after the shard was written (tests)")
    if how == "hold-after-write":
        marker = os.path.join(out, ATTEMPTS, f"hold-shard{i}.json")
        with open(marker + ".tmp", "w") as f:
            json.dump({"pid": os.getpid(), "dir": where}, f)
        os.replace(marker + ".tmp", marker)
        time.sleep(60)


def _commit(out: str, done: list, count: int) -> None:
    """Step 2: one attempt per shard into OUTPUT, every other attempt's output deleted."""
    by_shard: dict[int, str] = {}
    for shard, where in done:
        if shard in by_shard:
            raise RuntimeError(f"shard {shard}: two results from Spark (attempts {by_shard[shard]} and {where})")
        by_shard[shard] = where
    missing = sorted(set(range(count)) - set(by_shard))
    if missing:
        raise RuntimeError(f"shards {missing}: no result from Spark")
    open(os.path.join(out, CLOSED), "w").close()
    moves = []
    for shard, where in sorted(by_shard.items()):
        files = [f for f in os.listdir(where) if f.startswith("shard-") and not f.startswith(".")]
        if len(files) != 1:
            raise RuntimeError(f"shard {shard}: attempt directory {where} holds {files}, not one shard file")
        moves.append((os.path.join(where, files[0]), os.path.join(out, files[0])))
    for src, dst in moves:
        if os.path.exists(dst):
            raise RuntimeError(f"{dst}: exists already; refusing to replace it")
        os.rename(src, dst)
    shutil.rmtree(os.path.join(out, ATTEMPTS))


def _discard(out: str) -> bool:
    """After a failed job: every attempt's output deleted, no shard or manifest left (nothing
    published; the output directory was new or empty). True when nothing but the marker remains."""
    open(os.path.join(out, CLOSED), "w").close()
    shutil.rmtree(os.path.join(out, ATTEMPTS), ignore_errors=True)
    for f in os.listdir(out):
        if f != CLOSED:
            path = os.path.join(out, f)
            try:
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
            except OSError:
                pass
    return os.listdir(out) == [CLOSED]


def _abandon(out: str, created: bool) -> bool:
    """A job that stopped before any publishing task was launched (over the budget, no rows, bad
    options): nothing was written but the empty attempts directory. Remove it, and the output
    directory if this call made it; if anything is there after all, `_discard` as for a failed job."""
    try:
        os.rmdir(os.path.join(out, ATTEMPTS))
        if created:
            os.rmdir(out)
        return True
    except OSError:
        return _discard(out)


# The options of `dprp.publish` that decide a release's guarantee: what the driver reserves in a
# ledger (`LedgerGate.reserve`) before the tasks publish.
_RESERVE_KEYS = {"delta", "k", "seed", "beta", "neighbour", "projection", "min_norm", "individual_dp",
                 "epsilon_norm", "radius", "noise", "noise_seed", "scale", "normalize", "clip", "clip_norm"}


def _fingerprint_file(spark, source: str, column: str, starts: list, rows_key: bytes) -> list:
    """The fingerprint parts of a Parquet input, one task per shard's rows (read by dprp, as the
    shard's task will read them)."""
    count = len(starts) - 1

    def run(batches):
        import pyarrow as pa

        import dprp as d

        for b in batches:
            for i in b.column("shard").to_pylist():
                rows, dim, part = d.fingerprint_part(source, rows_key, column=column, rows=(starts[i], starts[i + 1]))
                yield pa.RecordBatch.from_pydict({"n": [rows], "dim": [dim], "sum": pa.array([part], pa.binary())})

    plan = spark.range(0, count, 1, count).withColumnRenamed("id", "shard")
    return [(r["n"], r["dim"], bytes(r["sum"])) for r in plan.mapInArrow(run, "n long, dim long, sum binary").collect()]


def _reserve(gate, out: str, n: int, parts: list, opts: dict) -> dict:
    """The dataset's fingerprint from the parts, and the release charged to it in the ledger
    (refused over the budget): the dataset record the shards will state."""
    dims = {dim for rows, dim, _ in parts if rows}
    if len(dims) != 1:
        raise ValueError(f"the rows have different lengths: {sorted(dims)}")
    dim = dims.pop()
    rec = gate.dataset(dim, [(rows, s) for rows, _, s in parts])
    if rec["rows"] != n:
        raise RuntimeError(f"fingerprinted {rec['rows']} rows, counted {n}")
    dataset = {k: rec[k] for k in ("fingerprint", "key_id", "hashed")}
    gate.reserve(out, n, dataset, dim, mechanism=opts["mechanism"], epsilon=opts["epsilon"],
                 **{k: v for k, v in opts.items() if k in _RESERVE_KEYS})
    return dataset


def _count_partition(batches):
    """Rows per partition id, counted where they are (no shuffle: Spark's groupBy would make
    `spark.sql.shuffle.partitions` tasks)."""
    import pyarrow as pa

    n, pid = 0, None
    for b in batches:
        n += b.num_rows
        if b.num_rows:
            pid = b.column("_pid")[0].as_py()
    if pid is not None:
        yield pa.RecordBatch.from_pydict({"pid": pa.array([pid], pa.int32()), "n": [n]})


def _hash_partition(column: str, rows_key: bytes):
    """A partition's rows counted and fingerprinted with the ledger's row key (`mapInArrow`):
    one row (pid, n, dim, sum of the row digests mod 2²⁵⁶)."""

    def run(batches):
        import pyarrow as pa

        import dprp as d

        n, dim, total, pid = 0, 0, 0, None
        for b in batches:
            if not b.num_rows:
                continue
            pid = b.column("_pid")[0].as_py()
            rows, dim, part = d.fingerprint_part(to_matrix(pa.Table.from_batches([b]), column, f"partition {pid}"), rows_key)
            n += rows
            total = (total + int.from_bytes(part, "little")) % (1 << 256)
        if pid is not None:
            yield pa.RecordBatch.from_pydict({"pid": pa.array([pid], pa.int32()), "n": [n], "dim": [dim],
                                              "sum": pa.array([total.to_bytes(32, "little")], pa.binary())})

    return run


def _number_rows(df, column: str, order_by: Optional[str], count: int, rows_key: Optional[bytes] = None):
    """(rows, starts, DataFrame of shard, idx, column repartitioned by shard, the cached
    DataFrame, the fingerprint parts [(rows, dim, sum)] when `rows_key` is given)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    if order_by:
        # orderBy would sort into `spark.sql.shuffle.partitions` (200 by default) partitions
        # whatever the data's size, each a task in every pass below; the same global order
        # (range partitions, each sorted) over as many partitions as the data has
        parts = max(df.rdd.getNumPartitions(), count)
        df = df.repartitionByRange(parts, order_by).sortWithinPartitions(order_by)
    # each partition's rows get its offset (a count per partition) plus their position in it
    df = (df.select(column).withColumn("_pid", F.spark_partition_id())
          .withColumn("_mid", F.monotonically_increasing_id()).persist(StorageLevel.MEMORY_AND_DISK))
    counts: dict[int, int] = {}
    parts = []
    if rows_key is None:
        for r in df.select("_pid").mapInArrow(_count_partition, "pid int, n long").collect():
            counts[r["pid"]] = counts.get(r["pid"], 0) + r["n"]
    else:
        schema = "pid int, n long, dim long, sum binary"
        for r in df.select(column, "_pid").mapInArrow(_hash_partition(column, rows_key), schema).collect():
            counts[r["pid"]] = counts.get(r["pid"], 0) + r["n"]
            parts.append((r["n"], r["dim"], bytes(r["sum"])))
    n = sum(counts.values())
    if n == 0:
        raise ValueError("the DataFrame has no rows")
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
    indexed = df.select(shard.alias("shard"), idx.cast("long").alias("idx"), column).repartition(count, "shard")
    return n, starts, indexed, df, parts


def publish(data: Any, output: str, *, column: str, shards: int, mechanism: str, epsilon: float,
            order_by: Optional[str] = None, projection_seed: Optional[str] = None,
            ledger: Optional[str] = None, budget: Any = None,
            spark=None, _inject: Optional[dict] = None, **options):
    """Publish `data` — a Spark DataFrame with a vector column `column` (array<float> or a
    `pyspark.ml` vector), or the path of a Parquet file or directory that each task reads its
    rows from itself (every executor must see it) — as a sharded release in `output` (a new or
    empty directory every executor and the driver can write at the same path). `options` go to
    `dprp.publish` (delta, k, beta, neighbour, projection, output_format, noise_seed — tests only,
    NOT private — …). With `ledger=DIR` (and `budget=ε` or `(ε, δ)`), as `dprp publish --ledger
    DIR --budget …`: the driver holds the ledger's lock for the whole job, fingerprints the rows
    in the counting pass, and charges the release before any task publishes (refused over the
    budget, nothing run); a failed job's charge is withdrawn once its outputs are deleted.
    Returns the opened release. See the module's documentation for the commit protocol that
    keeps one noisy copy of each row under task retries."""
    import dprp as d

    out = os.path.abspath(os.fspath(output))
    if os.path.isdir(out) and os.listdir(out):
        raise ValueError(f"{output}: a directory that is not empty")
    if budget is not None and ledger is None:
        raise ValueError("budget: needs ledger= (the directory whose journal it is checked against)")
    if "dataset" in options:
        raise ValueError("dataset: set by the driver from the ledger; pass ledger=")
    gate = d.LedgerGate(os.fspath(ledger), budget) if ledger is not None else None
    try:
        return _publish(d, data, out, gate, column=column, shards=shards, mechanism=mechanism, epsilon=epsilon,
                        order_by=order_by, projection_seed=projection_seed, spark=spark, inject=_inject, options=options)
    finally:
        if gate is not None:
            gate.close()


def _publish(d, data, out: str, gate, *, column, shards, mechanism, epsilon, order_by, projection_seed,
             spark, inject, options):
    """`publish` with the ledger (if any) open."""
    created = not os.path.exists(out)
    os.makedirs(out, exist_ok=True)
    # the attempts' parent: made once here (dprp creates a shard directory, not its parents), so
    # an attempt that starts after the commit deleted it cannot write at all
    os.makedirs(os.path.join(out, ATTEMPTS))
    seed = projection_seed or os.urandom(32).hex()  # public: recorded in every shard
    opts = dict(mechanism=mechanism, epsilon=epsilon, seed=seed, **options)
    inject = dict(inject or {})
    count = shards
    cached = None
    rows_key = gate.rows_key() if gate is not None else None
    # reserved: the ledger charged; confirming: a refused confirmation keeps the charge
    reserved = confirming = launched = False
    try:
        if isinstance(data, (str, os.PathLike)):
            if order_by:
                raise ValueError("order_by needs a DataFrame (dprp reads a Parquet path in file order)")
            if spark is None:
                from pyspark.sql import SparkSession

                spark = SparkSession.getActiveSession()
                if spark is None:
                    raise ValueError("publish of a Parquet path needs a SparkSession: pass spark=")
            source = os.path.abspath(os.fspath(data))
            n = count_rows(source)
            if n == 0:
                raise ValueError(f"{data}: no rows")
            starts = shard_starts(n, count)
            if gate is not None:
                opts["dataset"] = _reserve(gate, out, n, _fingerprint_file(spark, source, column, starts, rows_key), opts)
                reserved = True

            def tasks(batches):
                import pyarrow as pa

                for b in batches:
                    for i in b.column("shard").to_pylist():
                        lo, hi = starts[i], starts[i + 1]
                        where, rows = _publish_attempt(source, i, count, lo, out, opts, inject, column=column, rows=(lo, hi))
                        yield pa.RecordBatch.from_pydict({"shard": [i], "dir": [where], "rows": [rows]})

            plan = spark.range(0, count, 1, count).withColumnRenamed("id", "shard")
        else:
            df = data
            if _is_ml_vector(df, column):
                from pyspark.ml.functions import vector_to_array

                df = df.withColumn(column, vector_to_array(column, "float32"))
            n, starts, plan, cached, parts = _number_rows(df, column, order_by, count, rows_key)
            if gate is not None:
                opts["dataset"] = _reserve(gate, out, n, parts, opts)
                reserved = True

            def tasks(batches):
                import numpy as np
                import pyarrow as pa
                import pyarrow.compute as pc

                batches = list(batches)
                if not batches:  # an empty partition (hash partitioning can leave some)
                    return
                table = pa.Table.from_batches(batches)
                for i in sorted(set(table.column("shard").to_pylist())):
                    part = table.filter(pc.equal(table.column("shard"), i)).sort_by("idx")
                    lo = starts[i]
                    if not np.array_equal(part.column("idx").to_numpy(), np.arange(lo, lo + part.num_rows)):
                        raise RuntimeError(f"shard {i}: rows are not ids {lo}.. in order")
                    x = to_matrix(part, column, f"shard {i}")
                    where, rows = _publish_attempt(x, i, count, lo, out, opts, inject)
                    yield pa.RecordBatch.from_pydict({"shard": [i], "dir": [where], "rows": [rows]})

        launched = True
        done = plan.mapInArrow(tasks, "shard long, dir string, rows long").collect()
        _commit(out, [(r["shard"], r["dir"]) for r in done], count)
        release = d.finish_shards(out)
        if gate is not None:
            confirming = True
            gate.confirm(out)
    except BaseException:
        clean = _discard(out) if launched else _abandon(out, created)
        if reserved and clean and not confirming:
            gate.withdraw()
        raise
    finally:
        if cached is not None:
            cached.unpersist()
    if options.get("noise_seed"):
        warnings.warn("noise_seed makes the release reproducible and therefore NOT private", stacklevel=2)
    return release


def _is_ml_vector(df, column: str) -> bool:
    try:
        from pyspark.ml.linalg import VectorUDT
    except ImportError:  # pragma: no cover - pyspark without ml
        return False
    return isinstance(df.schema[column].dataType, VectorUDT)


def _shard_files(release) -> list[str]:
    """The files of a release (a shard directory: its shards in order; else the one file),
    opened on the driver without reading the payloads (each executor verifies its own)."""
    import dprp as d

    rel = d.Release.open(os.fspath(release), verify=False)
    return [s.path for s in rel.shards] if rel.sharded else [rel.path]


def read_release(spark, release):
    """A release (one file or a shard directory, native or Parquet shards) as a DataFrame of
    `id` (the global row id), `label` (when the release has labels) and `sketch` (array<float>,
    or the packed sign words as array<long> for a sign release), one partition per file."""
    import dprp as d

    files = _shard_files(release)
    first = d.Release.open(files[0], verify=False)
    bits = first.sketches.dtype.kind == "u"
    labels = first.labels is not None
    schema = "id long" + (", label float" if labels else "") + (", sketch array<long>" if bits else ", sketch array<float>")

    def rows(batches):
        import numpy as np
        import pyarrow as pa

        import dprp as dd

        for b in batches:
            for i in b.column("file").to_pylist():
                r = dd.Release.open(files[i])
                x = np.ascontiguousarray(r.sketches)
                if bits:
                    x = x.view(np.int64)
                cols = {"id": pa.array(r.ids.astype(np.int64))}
                if labels:
                    cols["label"] = pa.array(r.labels)
                cols["sketch"] = pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), x.shape[1]).cast(
                    pa.list_(pa.int64() if bits else pa.float32()))
                yield pa.RecordBatch.from_pydict(cols)

    plan = spark.range(0, len(files), 1, len(files)).withColumnRenamed("id", "file")
    return plan.mapInArrow(rows, schema)


def search(spark, release, queries, top: int = 10, measure: Optional[str] = None, no_scale: bool = False):
    """Exact top-`top` of each query over a release too big for one machine: each executor
    searches its shards (`Release.search`: raw queries projected with the release's public map,
    the shard's rows with their global ids), and the driver keeps the best `top` of every query
    by (score descending, id ascending) — the exact scan's order, so the answer is `dprp query`'s
    on the same release. Returns (ids, scores) as `Release.search` does."""
    import numpy as np

    files = _shard_files(release)
    q = np.ascontiguousarray(np.asarray(queries, dtype=np.float32))
    if q.ndim != 2:
        raise ValueError(f"queries: expected a 2-d array (queries × p), got shape {q.shape}")
    shared = spark.sparkContext.broadcast(q)

    def one(i):
        import dprp as dd

        ids, scores = dd.Release.open(files[i]).search(shared.value, top, measure, no_scale)
        return [(ids, scores)]

    parts = spark.sparkContext.parallelize(range(len(files)), len(files)).flatMap(one).collect()
    shared.unpersist()
    ids = np.concatenate([p[0] for p in parts], axis=1)
    scores = np.concatenate([p[1] for p in parts], axis=1)
    none = np.iinfo(np.uint64).max
    out_ids = np.full((q.shape[0], top), none, dtype=np.uint64)
    out_scores = np.full((q.shape[0], top), np.nan, dtype=np.float32)
    for j in range(q.shape[0]):
        keep = ids[j] != none  # a shard's missing neighbours (a zero query, fewer rows than top)
        order = np.lexsort((ids[j][keep], -scores[j][keep].astype(np.float64)))[:top]
        out_ids[j, : order.size] = ids[j][keep][order]
        out_scores[j, : order.size] = scores[j][keep][order]
    return out_ids, out_scores


def mean(spark, release) -> dict:
    """The mean of a local-DP release (one file or a shard directory): each executor adds its
    shard's rows to the mechanism's accumulator (`MeanAccumulator.of_release`, as `dprp mean`
    builds it) and sends back its state; the driver merges the states in shard order and
    finishes. Returns `MeanAccumulator.finish()`'s dict (`mean`, `n`, the expected error), equal
    to `dprp mean` of the same release up to the order of floating-point sums."""
    import dprp as d

    files = _shard_files(release)

    def state(i):
        import dprp as dd

        return [(i, dd.MeanAccumulator.of_release(files[i]).to_json())]

    states = sorted(spark.sparkContext.parallelize(range(len(files)), len(files)).flatMap(state).collect())
    total = d.MeanAccumulator.of_release(os.fspath(release), rows=False)
    for _, s in states:
        total.merge_json(s)
    return total.finish()
