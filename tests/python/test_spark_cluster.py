"""dprp.spark on a real Spark standalone cluster (issue 40 §3): a master and two workers as
separate JVMs on loopback (tests/python/spark_cluster.py), one executor per worker.

* publish from a DataFrame equals `dprp publish --shards N` byte for byte under a test noise seed,
  in each case below;
* an executor JVM SIGKILLed after its task wrote its shard (a complete noisy copy on disk) and
  before the task reported: Spark runs the task again elsewhere, the job completes, the release
  equals the no-failure release, and no attempt's output remains;
* `spark.speculation` with a task that lags after writing: a speculative copy wins, one shard is
  committed, no second copy remains (the lagging attempt deletes its own output when it wakes).
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
