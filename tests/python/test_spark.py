"""examples/spark_publish.py in Spark local mode (pyspark from PyPI, the machine's Java 17): a
Parquet dataset published shard by shard in executors (Spark reading the data, or each task
reading its shard's rows with pyarrow), then read by the CLI. Under a test-only
--noise-seed the sharded payload equals `dprp publish --shards N` on the same rows, so the
executors privatise exactly what the CLI does; with OS noise the release is private and complete.
Needs Java on PATH (or JAVA_HOME): a missing Java is a failure, not a skip."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import dprp
from conftest import ROOT, run_cli

EXAMPLE = ROOT / "examples" / "spark_publish.py"


def spark_publish(*args):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    out = subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, f"spark_publish.py {' '.join(args)} failed:\n{out.stderr[-4000:]}"
    return out.stdout


def test_java_is_there():
    assert shutil.which("java") or os.environ.get("JAVA_HOME"), "Java 17 is needed for pyspark"


def test_spark_local_mode_publishes_a_sharded_release(tmp_path: pathlib.Path):
    rng = np.random.default_rng(11)
    n, p = 1500, 24
    x = rng.random((n, p), dtype=np.float32)
    table = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "emb": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), p),
    })
    # several row groups and files: Spark's partitions are not the shards
    (tmp_path / "data").mkdir()
    pq.write_table(table.slice(0, 700), tmp_path / "data" / "a.parquet", row_group_size=300)
    pq.write_table(table.slice(700), tmp_path / "data" / "b.parquet", row_group_size=300)
    np.save(tmp_path / "x.npy", x)
    common = ["--order-by", "id", "--mechanism", "dp-oporp", "--epsilon", "5", "--delta", "1e-6", "--k", "16",
              "--projection-seed", "5eed"]

    # test-only noise seed: the executors' shards are the CLI's --shards release, byte for byte
    out = spark_publish(str(tmp_path / "data"), str(tmp_path / "spark"), "--column", "emb",
                        "--shards", "3", "--noise-seed", "t", *common)
    assert "1500 rows in 3 shards" in out, out
    run_cli("publish", str(tmp_path / "x.npy"), "-m", "dp-oporp", "-e", "5", "-d", "1e-6",
            "-k", "16", "--projection-seed", "5eed", "--noise-seed", "t", "--shards", "3",
            "-o", str(tmp_path / "cli"))
    a, b = dprp.Release.open(tmp_path / "spark"), dprp.Release.open(tmp_path / "cli")
    assert [s.n for s in a.shards] == [s.n for s in b.shards]
    for s, t in zip(a.shards, b.shards):
        assert np.array_equal(s.sketches, t.sketches)
    q = x[:5]
    np.save(tmp_path / "q.npy", q)
    query = lambda rel: run_cli("query", str(tmp_path / rel), "--queries",  # noqa: E731
                                str(tmp_path / "q.npy"), "--top", "4")
    assert query("spark") == query("cli")

    # --read direct: Spark only schedules one task per shard, in which dprp reads the shard's rows
    # from the files (file-name then row-group order: a.parquet, b.parquet — the order of x);
    # same bytes again, here written as Parquet shards that pyarrow reads as one table
    no_order = [c for c in common if c not in ("--order-by", "id")]
    out = spark_publish(str(tmp_path / "data"), str(tmp_path / "direct"), "--column", "emb",
                        "--shards", "3", "--noise-seed", "t", "--read", "direct",
                        "--output-format", "parquet", *no_order)
    assert "1500 rows in 3 shards" in out, out
    c = dprp.Release.open(tmp_path / "direct")
    for s, t in zip(c.shards, b.shards):
        assert np.array_equal(s.sketches, t.sketches)
    assert query("direct") == query("cli")
    table = pq.read_table(tmp_path / "direct", columns=["id", "sketch"]).sort_by("id")
    assert np.array_equal(table["id"].to_numpy(), np.arange(n))
    assert np.array_equal(np.stack(table["sketch"].to_numpy(zero_copy_only=False)),
                          np.concatenate([t.sketches for t in b.shards]))

    # OS noise (the real use): private, complete, queryable by the CLI
    out = spark_publish(str(tmp_path / "data"), str(tmp_path / "private"), "--column", "emb",
                        "--shards", "2", *common)
    info = json.loads(run_cli("info", "--json", str(tmp_path / "private")))
    assert info["n"] == n and info["private"] is True
    assert [s["n"] for s in info["shards"]] == [750, 750]
    assert info["noise"]["source"] == "os-csprng"
    r = dprp.Release.open(tmp_path / "private")
    assert not np.array_equal(r.shards[0].sketches, b.shards[0].sketches[:750])
    assert len(query("private").splitlines()) == 5 * 4


def spark_session(master="local[2,3]"):
    """A local Spark session whose tasks are retried (local[N, maxFailures])."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master(master).appName("dprp-test").config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "1g")
            # a few hundred rows: 4 partitions after a sort, not Spark's default 200 tasks
            .config("spark.sql.shuffle.partitions", "4").getOrCreate())


def test_a_retried_task_leaves_one_copy_of_its_shard(tmp_path: pathlib.Path):
    """dprp.spark.publish's commit protocol: shard 1's first attempt writes its shard, then fails;
    Spark runs it again; the release equals the CLI's --shards release (test noise seed), and no
    attempt's output remains (the failed attempt's noisy copy of the shard is gone). A job that
    fails for good publishes nothing and leaves no attempt behind. Power: the first attempt's
    shard file did exist before the commit (the injected failure comes after writing it)."""
    import pyarrow.parquet as pq
    import pytest

    import dprp.spark

    rng = np.random.default_rng(12)
    n, p = 900, 16
    x = rng.random((n, p), dtype=np.float32)
    pq.write_table(pa.table({"emb": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), p)}), tmp_path / "x.parquet", row_group_size=200)
    np.save(tmp_path / "x.npy", x)
    opts = dict(column="emb", shards=3, mechanism="dp-oporp", epsilon=5.0, delta=1e-6, k=8, projection_seed="5eed", noise_seed="t")
    spark = spark_session()
    try:
        df = spark.createDataFrame([(i, x[i].tolist()) for i in range(n)], "id long, emb array<float>")
        seen = []
        real_commit = dprp.spark._commit

        def watching_commit(out, done, count):
            seen.extend(sorted(os.listdir(os.path.join(out, dprp.spark.ATTEMPTS))))
            return real_commit(out, done, count)

        dprp.spark._commit = watching_commit
        try:
            with pytest.warns(UserWarning, match="NOT private"):
                rel = dprp.spark.publish(df, tmp_path / "retried", order_by="id", _inject={1: "after-write"}, **opts)
            with pytest.warns(UserWarning, match="NOT private"):
                direct = dprp.spark.publish(str(tmp_path / "x.parquet"), tmp_path / "direct", spark=spark, _inject={0: "after-write"}, **opts)
        finally:
            dprp.spark._commit = real_commit
        # two attempts of the injected shard reached the commit (the failed one had written)
        assert len(seen) == 3 + 1 + 3 + 1, seen
        for out in ("retried", "direct"):
            left = sorted(os.listdir(tmp_path / out))
            assert dprp.spark.ATTEMPTS not in left and [f for f in left if f.startswith("shard-")] == [
                f"shard-{i:05d}-of-00003.dprp" for i in range(3)], left
        run_cli("publish", str(tmp_path / "x.npy"), "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "8",
                "--projection-seed", "5eed", "--noise-seed", "t", "--shards", "3", "-o", str(tmp_path / "cli"))
        cli = dprp.Release.open(tmp_path / "cli")
        for r in (rel, direct):
            assert r.n == n and [s.n for s in r.shards] == [s.n for s in cli.shards]
            for s, t in zip(r.shards, cli.shards):
                assert np.array_equal(s.sketches, t.sketches)

        # a job that fails for good (a NaN row: every attempt of its shard refuses it)
        bad = x.copy()
        bad[700, 3] = np.nan
        df_bad = spark.createDataFrame([(i, bad[i].tolist()) for i in range(n)], "id long, emb array<float>")
        with pytest.raises(Exception, match="(?s)NaN|not finite|finite"):
            dprp.spark.publish(df_bad, tmp_path / "failed", order_by="id", **opts)
        assert sorted(os.listdir(tmp_path / "failed")) == [dprp.spark.CLOSED]
    finally:
        spark.stop()


def cli_top(release, queries_path, top, *extra):
    """`dprp query --csv` → {query: [(id, score), ...]}."""
    out = {}
    for line in run_cli("query", str(release), "--queries", str(queries_path), "--top", str(top), "--csv", *extra).splitlines()[1:]:
        q, _, nb, score = line.split(",")
        out.setdefault(int(q), []).append((int(nb), float(score)))
    return out


def test_distributed_search_and_read_release_equal_the_cli(tmp_path: pathlib.Path):
    """dprp.spark.search over a sharded release (real and sign sketches, a zero query among
    the queries) returns `dprp query`'s neighbours and scores; read_release gives every row once
    with its global id and sketch. Power: a search of one shard only differs."""
    import dprp.spark

    rng = np.random.default_rng(13)
    n, p = 800, 16
    x = rng.random((n, p), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    q = np.vstack([x[[5, 400, 799]] + 0.01, np.zeros((1, p), np.float32)]).astype(np.float32)
    np.save(tmp_path / "q.npy", q)
    run_cli("publish", str(tmp_path / "x.npy"), "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "8", "--shards", "3", "-o", str(tmp_path / "real"))
    run_cli("publish", str(tmp_path / "x.npy"), "-m", "dp-signrp-rr", "-e", "5", "-d", "1e-6", "--min-norm", "0.5", "-k", "64", "--shards", "3", "--output-format", "parquet", "-o", str(tmp_path / "signs"))
    spark = spark_session("local[2]")
    try:
        for name in ("real", "signs"):
            ids, scores = dprp.spark.search(spark, tmp_path / name, q, top=5)
            want = cli_top(tmp_path / name, tmp_path / "q.npy", 5)
            for j in range(len(q)):
                got = [(int(i), float(s)) for i, s in zip(ids[j], scores[j]) if i != np.iinfo(np.uint64).max]
                assert [g[0] for g in got] == [w[0] for w in want.get(j, [])], (name, j, got, want.get(j))
                np.testing.assert_allclose([g[1] for g in got], [w[1] for w in want.get(j, [])], rtol=1e-6)
            # the zero query has no neighbours (its cosine, and its sign, is undefined)
            assert 3 not in want and all(i == np.iinfo(np.uint64).max for i in ids[3])
            # power: one shard alone is not the release
            one = dprp.Release.open(tmp_path / name).shards[1].path
            ids1, _ = dprp.spark.search(spark, one, q[:3], top=5)
            assert not np.array_equal(ids1, ids[:3])

            df = dprp.spark.read_release(spark, tmp_path / name).orderBy("id").toPandas()
            rel = dprp.Release.open(tmp_path / name)
            assert df["id"].tolist() == list(range(n))
            want_sk = np.concatenate([np.ascontiguousarray(s.sketches) for s in rel.shards])
            got_sk = np.stack(df["sketch"].to_numpy())
            if name == "signs":
                got_sk = got_sk.view(np.uint64)
            assert np.array_equal(got_sk, want_sk)
    finally:
        spark.stop()


def test_distributed_mean_equals_dprp_mean(tmp_path: pathlib.Path):
    """dprp.spark.mean of a sharded local-DP release (PrivUnit2 and ProjUnit, 3 shards) equals
    `dprp mean` of the directory; power: the mean of one shard does not."""
    import dprp.spark

    rng = np.random.default_rng(14)
    x = rng.normal(size=(600, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    np.save(tmp_path / "x.npy", x)
    spark = spark_session("local[2]")
    try:
        for mech, extra in (("privunit2", []), ("projunit", ["-k", "8"])):
            rel = tmp_path / f"{mech}.release"
            run_cli("publish", str(tmp_path / "x.npy"), "-m", mech, "-e", "4", *extra, "--shards", "3", "-o", str(rel))
            run_cli("mean", str(rel), "-o", str(tmp_path / f"{mech}.npy"))
            want = np.load(tmp_path / f"{mech}.npy")
            got = dprp.spark.mean(spark, rel)
            assert got["n"] == 600
            np.testing.assert_array_equal(np.asarray(got["mean"], dtype=want.dtype), want)
            one = dprp.spark.mean(spark, dprp.Release.open(rel).shards[2].path)
            assert one["n"] == 200 and not np.allclose(one["mean"], want)
    finally:
        spark.stop()


def test_a_ledger_is_charged_once_by_the_driver_before_any_task(tmp_path: pathlib.Path):
    """`dprp.spark.publish(…, ledger=, budget=)` against `dprp publish --ledger`, one ledger
    (pure ε = 2 per release, budget ε = 5: two releases fit, three do not):
    1. the CLI publishes the dataset (charged 2);
    2. a job that fails (a NaN row) was charged before its tasks, then withdrawn: the total stays 2;
    3. a job with a task retried after writing its shard is charged once: total 4, and its shards
       record the CLI's fingerprint of the same rows (the executors' partial sums, the driver's key);
    4. a fourth release is refused before any task ran (no attempt directory was made), and the
       journal holds the CLI's line and each job's reservation, withdrawal and confirmation.
    Power: step 3 fits only because step 2's charge was withdrawn (2 + 2 + 2 > 5); a Parquet path
    fingerprinted by dprp's reader in the tasks gives the same fingerprint as the DataFrame."""
    import pytest

    import dprp.spark

    rng = np.random.default_rng(13)
    n, p = 600, 12
    x = rng.random((n, p), dtype=np.float32) * 2 - 1
    pq.write_table(pa.table({"emb": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), p)}), tmp_path / "x.parquet", row_group_size=150)
    np.save(tmp_path / "x.npy", x)
    led = tmp_path / "ledger"
    led.mkdir()
    mech = ["-m", "dp-signoporp-rr", "-e", "2", "-k", "8"]
    run_cli("publish", str(tmp_path / "x.npy"), *mech, "--ledger", str(led), "-o", str(led / "cli.dprp"))
    cli_fp = dprp.Release.open(led / "cli.dprp").meta["dataset"]["fingerprint"]

    def totals():
        d = json.loads(run_cli("ledger", str(led), "--json"))["datasets"]
        assert len(d) == 1, d
        return d[0]["total"]["releases"], d[0]["total"]["epsilon"]

    opts = dict(column="emb", shards=3, mechanism="dp-signoporp-rr", epsilon=2.0, k=8, ledger=led, budget=5.0)
    spark = spark_session()
    try:
        rows = lambda m: [(i, m[i].tolist()) for i in range(n)]  # noqa: E731
        bad = x.copy()
        bad[400, 2] = np.nan
        df_bad = spark.createDataFrame(rows(bad), "id long, emb array<float>")
        with pytest.raises(Exception, match="(?s)NaN|not finite|finite"):
            dprp.spark.publish(df_bad, led / "failed", order_by="id", **opts)
        assert sorted(os.listdir(led / "failed")) == [dprp.spark.CLOSED]
        assert totals() == (1, 2.0)

        df = spark.createDataFrame(rows(x), "id long, emb array<float>")
        rel = dprp.spark.publish(df, led / "spark", order_by="id", _inject={1: "after-write"}, **opts)
        assert rel.n == n
        for s in rel.shards:
            assert s.meta["dataset"]["fingerprint"] == cli_fp
        assert totals() == (2, 4.0)

        # the Parquet path's parts, hashed by dprp's reader in the tasks, make the same fingerprint
        with dprp.LedgerGate(led) as gate:
            parts = dprp.spark._fingerprint_file(spark, str(tmp_path / "x.parquet"), "emb", [0, 250, 600], gate.rows_key())
            assert gate.dataset(p, [(r, s) for r, _, s in parts])["fingerprint"] == cli_fp
            # power: a part left out changes it
            assert gate.dataset(p, [(r, s) for r, _, s in parts[:1]])["fingerprint"] != cli_fp

        seen = []
        real_abandon = dprp.spark._abandon

        def watching_abandon(out, created):
            seen.append(sorted(os.listdir(os.path.join(out, dprp.spark.ATTEMPTS))))
            return real_abandon(out, created)

        dprp.spark._abandon = watching_abandon
        try:
            with pytest.raises(dprp.DprpError, match="exceed the privacy budget"):
                dprp.spark.publish(str(tmp_path / "x.parquet"), led / "refused", spark=spark, **opts)
        finally:
            dprp.spark._abandon = real_abandon
        assert seen == [[]], seen  # no task had made its attempt directory
        assert not (led / "refused").exists()  # and the refused job left no output
        assert totals() == (2, 4.0)
        journal = [json.loads(line) for line in (led / ".dprp-ledger" / "journal.jsonl").read_text().splitlines()]
        states = [(j.get("reservation") or {}).get("state") for j in journal]
        assert states == [None, "reserved", "withdrawn", "reserved", "confirmed"], states
    finally:
        spark.stop()
