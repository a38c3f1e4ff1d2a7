"""dprp.spark on a real Spark standalone cluster (issue 40 §3): a master and two workers as
separate JVMs on loopback (tests/python/spark_cluster.py), one executor per worker.

* publish from a DataFrame equals `dprp publish --shards N` byte for byte under a test noise seed,
  in each case below;
* an executor JVM SIGKILLed after its task wrote its shard (a complete noisy copy on disk) and
  before the task reported: Spark runs the task again elsewhere, the job completes, the release
  equals the no-failure release, and no attempt's output remains;
* `spark.speculation` with a task that lags after writing: a speculative copy wins, one shard is
  committed, no second copy remains (the lagging attempt deletes its own output when it wakes);
* `dprp.spark.search` and `dprp.spark.mean` equal `dprp query` and `dprp mean`;
* a job that fails on a bad row, published with a ledger, leaves only the marker and withdraws
  the charge its driver reserved before the tasks ran.
"""

import json
import os
import pathlib
import signal
import threading
import time

import numpy as np
import pytest

import dprp
import dprp.spark
from conftest import run_cli
from spark_cluster import StandaloneCluster

N, P, SHARDS = 1200, 16, 4
OPTS = dict(column="emb", shards=SHARDS, order_by="id", mechanism="dp-oporp", epsilon=5.0, delta=1e-6, k=8,
            projection_seed="5eed", noise_seed="t")


def ancestors(pid: int) -> list[int]:
    out = []
    while pid > 1:
        try:
            pid = int(pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
        out.append(pid)
    return out


def published_equal(rel, cli):
    assert rel.n == N and [s.n for s in rel.shards] == [s.n for s in cli.shards]
    for s, t in zip(rel.shards, cli.shards):
        assert np.array_equal(s.sketches, t.sketches)


def no_attempts_left(out: pathlib.Path):
    left = sorted(os.listdir(out))
    assert dprp.spark.ATTEMPTS not in left, left
    assert [f for f in left if f.startswith("shard-")] == [f"shard-{i:05d}-of-{SHARDS:05d}.dprp" for i in range(SHARDS)]


def run_holding(spark, out, shard, on_hold):
    """publish with `shard`'s first attempt holding after its write; `on_hold(pid)` runs when it
    holds; returns the release, the held attempt's directory and the directory committed for
    the shard (or raises what publish raised)."""
    box, committed = {}, {}
    real_commit = dprp.spark._commit

    def watching_commit(o, done, count):
        committed.update(done)
        return real_commit(o, done, count)

    def target():
        try:
            box["rel"] = dprp.spark.publish(spark.createDataFrame(ROWS, "id long, emb array<float>"), out,
                                            _inject={shard: "hold-after-write"}, **OPTS)
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            box["error"] = e

    dprp.spark._commit = watching_commit
    t = threading.Thread(target=target)
    t0 = time.time()
    t.start()
    marker = out / dprp.spark.ATTEMPTS / f"hold-shard{shard}.json"
    end = time.time() + 120
    while not marker.exists() and t.is_alive() and time.time() < end:
        time.sleep(0.2)
    assert marker.exists(), f"shard {shard}'s first attempt never held: {box}"
    held = json.loads(marker.read_text())
    on_hold(held["pid"])
    try:
        t.join(240)
    finally:
        dprp.spark._commit = real_commit
    assert not t.is_alive(), "publish did not finish"
    print(f"{out.name}: published in {time.time() - t0:.1f} s")
    if "error" in box:
        raise box["error"]
    return box["rel"], held["dir"], committed[shard]


rng = np.random.default_rng(15)
X = rng.random((N, P), dtype=np.float32)
ROWS = [(i, X[i].tolist()) for i in range(N)]


def test_publish_on_a_standalone_cluster_survives_a_killed_executor_and_speculation(tmp_path):
    np.save(tmp_path / "x.npy", X)
    run_cli("publish", str(tmp_path / "x.npy"), "-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", "8",
            "--projection-seed", "5eed", "--noise-seed", "t", "--shards", str(SHARDS), "-o", str(tmp_path / "cli"))
    cli = dprp.Release.open(tmp_path / "cli")
    with StandaloneCluster(workers=2, tmp=tmp_path / "cluster") as c:
        spark = c.session()
        # an executor killed after its task wrote shard 2 (its noisy copy complete on disk)
        killed = []

        def kill_executor(pid):
            """SIGKILL the executor JVM above the holding Python worker, and its Python daemon
            and workers with it (a lost machine; the worker JVM sees the executor gone only
            when every process holding its output pipes has exited)."""
            jvms = [p for p in ancestors(pid) if p in c.executor_pids()]
            assert jvms, f"no executor JVM above the Python worker {pid}: {c.executor_pids()}"
            tree = [jvms[0]] + [q for q in c.pids() if jvms[0] in ancestors(q)]
            for q in tree:
                try:
                    os.kill(q, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            killed.append(jvms[0])

        with pytest.warns(UserWarning, match="NOT private"):
            rel, held, committed = run_holding(spark, tmp_path / "killed", 2, kill_executor)
        assert killed and committed != held  # power: the killed attempt had written its shard
        published_equal(rel, cli)
        no_attempts_left(tmp_path / "killed")
        spark.stop()

        # speculation: the first attempt of shard 1 lags after writing; a copy wins
        spark = c.session(**{"spark.speculation": "true", "spark.speculation.multiplier": "1.5",
                             "spark.speculation.quantile": "0.5", "spark.speculation.minTaskRuntime": "1s",
                             "spark.speculation.interval": "200ms",
                             # Spark ≥ 3.4 speculates only tasks it finds slow at processing
                             # their input; the held one has read all of it
                             "spark.speculation.efficiency.enabled": "false"})
        with pytest.warns(UserWarning, match="NOT private"):
            rel, held, committed = run_holding(spark, tmp_path / "speculated", 1, lambda pid: None)
        assert committed != held  # a speculative copy won (the held attempt sleeps 60 s)
        published_equal(rel, cli)
        no_attempts_left(tmp_path / "speculated")
        search_and_mean_equal_the_cli(spark, tmp_path)
        failed_job_withdraws_its_ledger_charge(spark, tmp_path)


def search_and_mean_equal_the_cli(spark, tmp_path):
    """On the cluster: `dprp.spark.search` gives `dprp query`'s neighbours and scores, and
    `dprp.spark.mean` of a sharded PrivUnit2 release gives `dprp mean`'s estimate to the bit
    (power: one shard's mean differs)."""
    q = (X[[3, 700, 1100]] * 0.99).astype(np.float32)
    np.save(tmp_path / "q.npy", q)
    ids, scores = dprp.spark.search(spark, tmp_path / "speculated", q, top=5)
    want = {}
    for line in run_cli("query", str(tmp_path / "speculated"), "--queries", str(tmp_path / "q.npy"),
                        "--top", "5", "--csv").splitlines()[1:]:
        j, _, nb, score = line.split(",")
        want.setdefault(int(j), []).append((int(nb), float(score)))
    for j in range(len(q)):
        assert [int(i) for i in ids[j]] == [w[0] for w in want[j]], (j, ids[j], want[j])
        np.testing.assert_allclose(scores[j], [w[1] for w in want[j]], rtol=1e-6)
    u = X / np.linalg.norm(X, axis=1, keepdims=True)
    np.save(tmp_path / "u.npy", u)
    ldp = tmp_path / "privunit2.release"
    run_cli("publish", str(tmp_path / "u.npy"), "-m", "privunit2", "-e", "4", "--shards", str(SHARDS), "-o", str(ldp))
    run_cli("mean", str(ldp), "-o", str(tmp_path / "mean.npy"))
    want_mean = np.load(tmp_path / "mean.npy")
    got = dprp.spark.mean(spark, ldp)
    assert got["n"] == N
    np.testing.assert_array_equal(np.asarray(got["mean"], dtype=want_mean.dtype), want_mean)
    one = dprp.spark.mean(spark, dprp.Release.open(ldp).shards[0].path)
    assert not np.allclose(one["mean"], want_mean)


def failed_job_withdraws_its_ledger_charge(spark, tmp_path):
    """On the cluster, with a ledger: a job that fails on a NaN row (every attempt of its shard
    refuses it) publishes nothing, leaves only the marker, and its reservation — made by the
    driver before the tasks — is withdrawn: `dprp ledger` counts no release. Power: the journal
    holds the reservation line (it was charged before the tasks ran)."""
    bad = X.copy()
    bad[900, 5] = np.nan
    led = tmp_path / "ledger"
    rows = [(i, bad[i].tolist()) for i in range(N)]
    opts = {k: v for k, v in OPTS.items() if k != "noise_seed"}
    with pytest.raises(Exception, match="(?s)NaN|not finite"):
        dprp.spark.publish(spark.createDataFrame(rows, "id long, emb array<float>"), led / "failed",
                           ledger=led, budget=(20, 1e-5), **opts)
    assert sorted(os.listdir(led / "failed")) == [dprp.spark.CLOSED]
    journal = [json.loads(x) for x in (led / ".dprp-ledger" / "journal.jsonl").read_text().splitlines()]
    assert [j["reservation"]["state"] for j in journal] == ["reserved", "withdrawn"], journal
    assert json.loads(run_cli("ledger", str(led), "--json"))["datasets"] == []
