"""dprp.flower in Flower's deployment engine: a SuperLink and three SuperNodes as separate OS
processes on loopback (examples/flower/local_deployment.py), running the Flower App in
tests/python/flower_app (DDG summed under SecAgg+), with one SuperNode killed mid-round:

* after the server received its masked vector (before it answers "unmask"): SecAgg+ rebuilds its
  self-mask from the other two nodes' shares, the round completes, and its vector is in the sum
  (three clients, and the decoded residues are the plain sum of all three nodes' residues);
* before it sent its masked vector, with min_clients = 3: the round is halted before anything is
  unmasked, nothing is charged.

The killed client holds the stage's request (the app's `hold-*` run config) until the launcher
kills its SuperNode, so the kill lands between two SecAgg+ stages every time. A test takes 45–80 s
on 2 busy CPUs: Flower's SuperNodes poll every 3 s and start a ClientApp process for every
message, `flwr` CLI calls take seconds, and the stage of the killed node lasts its timeout. The
first test's ServerApp pulls replies every 0.5 s (`grid-poll-seconds`) instead of Flower's 3 s;
the second runs Flower's own grid."""

import datetime
import json
import pathlib
import re
import signal
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
APP = pathlib.Path(__file__).resolve().parent / "flower_app"
sys.path.insert(0, str(ROOT / "examples" / "flower"))
sys.path.insert(0, str(APP))

import local_deployment  # noqa: E402
from dprp_flower_app.task import DIM  # noqa: E402

from dprp.flower import DistributedConfig  # noqa: E402

NODES = 3
KILLED = 1  # the partition whose SuperNode is killed
EPSILON, DELTA, BITS = 150.0, 1e-5, 16
# SecAgg+'s per-stage timeout. A stage takes 4–11 s here (Flower's SuperNodes poll every 3 s
# and start a ClientApp process per message; 2 busy CPUs); Flower's own grid pulls replies every
# 3 s, so with it a reply must come within 15 s, and the stage of the killed node lasts 18 s.
TIMEOUT = 16.0


def deploy(tmp_path, *, rounds, min_clients, hold_round, hold_stage, grid_poll):
    markers = tmp_path / "markers"
    markers.mkdir()
    result = tmp_path / "result.json"
    run_config = {
        "num-server-rounds": rounds,
        "mechanism": "ddg",
        "epsilon": EPSILON,
        "delta": DELTA,
        "bits": BITS,
        "clients": NODES,
        "min-clients": min_clients,
        "secagg-timeout": TIMEOUT,
        "grid-poll-seconds": grid_poll,
        "debug-log": True,
        "result-path": str(result),
        "marker-dir": str(markers),
        "hold-partition": KILLED,
        "hold-round": hold_round,
        "hold-stage": hold_stage,
        "hold-seconds": 4 * TIMEOUT,
    }
    hold = markers / f"hold-round{hold_round}-partition{KILLED}.json"
    with local_deployment.LocalDeployment(NODES, workdir=str(tmp_path / "deployment"), keep_workdir=True) as d:
        run = d.run(APP, run_config, kill_on={KILLED: hold}, timeout=150, done_file=result)
        node = d.procs[f"supernode{KILLED}"]
        others = [d.procs[f"supernode{i}"].poll() for i in range(NODES) if i != KILLED]
    assert not local_deployment._processes(d.token), "processes of the deployment left running"
    print(run.server_log)
    assert run.status == "finished:completed", (run.status, run.server_log[-3000:])
    # the kill happened, at the held stage, to the whole node (the holding ClientApp included)
    assert KILLED in run.killed, f"SuperNode {KILLED} was not killed (no {hold.name}):\n{run.server_log[-3000:]}"
    assert node.returncode == -signal.SIGKILL
    assert others == [None] * (NODES - 1), "the other SuperNodes must have lived through the run"
    held = json.loads(hold.read_text())
    assert held["pid"] in run.killed[KILLED].pids
    assert result.exists(), f"the ServerApp wrote no result:\n{run.server_log[-3000:]}"
    out = json.loads(result.read_text())
    assert out["finished"] and out["error"] is None, out["error"]
    return run, out, markers, held


def residues(markers, rnd, partitions):
    return {p: np.array(json.loads((markers / f"residues-round{rnd}-partition{p}.json").read_text())["x"]) for p in partitions}


def stage_log(log):
    """(time, text) of the ServerApp's SecAgg+ stage lines (its `debug-log` has timestamps)."""
    log = re.sub(r"\x1b\[[0-9;]*m", "", log)
    return [
        (datetime.datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f").timestamp(), m[2])
        for m in re.finditer(r"^DEBUG (\S+ \S+):\s+(\[Stage \d\] .*)$", log, re.M)
    ]


def plain_sum(xs, bits):
    return (sum(x + 2 ** (bits - 1) for x in xs)) % 2**bits


def test_node_killed_after_its_masked_vector_is_recovered(tmp_path):
    run, out, markers, held = deploy(tmp_path, rounds=2, min_clients=2, hold_round=2, hold_stage="unmask", grid_poll=0.5)
    assert held["round"] == 2 and held["stage"] == "unmask"
    # it produced its masked vector (and the server asked it to unmask: its vector had arrived)
    assert (markers / f"masked-round2-partition{KILLED}.json").exists()
    reports = out["reports"]
    assert [r["round"] for r in reports] == [1, 2], out
    assert out["halted"] is None and out["stopped"] is None
    for r in reports:
        assert r["clients"] == NODES, r  # the killed node's vector is in round 2's sum
        assert r["refused"] == 0
        assert r["statement"], r
    assert held["node"] in reports[1]["nodes"]
    # the round's report came after the kill: the round finished without the node
    assert out["report_times"]["2"] > run.killed[KILLED].at
    # the secure sum is the plain sum mod 2^b of the three nodes' residues, the killed one's too
    for rnd in (1, 2):
        xs = residues(markers, rnd, range(NODES))
        got = np.array(out["residues"][str(rnd)])
        np.testing.assert_array_equal(got, plain_sum(xs.values(), BITS))
    survivors = residues(markers, 2, [p for p in range(NODES) if p != KILLED])
    assert not np.array_equal(np.array(out["residues"]["2"]), plain_sum(survivors.values(), BITS))
    # the account: both rounds charged at three noise shares, within the budget
    cfg = DistributedConfig("ddg", epsilon=EPSILON, delta=DELTA, rounds=2, clip=1.0, clients=NODES, min_clients=2, dim=DIM, bits=BITS)
    at3 = cfg.encoder().guarantee_at(NODES)["epsilon"]
    assert abs(reports[1]["epsilon_round"] - at3) <= 1e-9 * at3
    assert out["account"]["rounds"] == 2 and reports[1]["epsilon_total"] <= EPSILON * (1 + 1e-9)
    assert all(np.isfinite(out["weights"])) and len(out["weights"]) == DIM
    # Flower: all three masked vectors arrived; the unmask stage waited its whole timeout (no
    # error reply for the dead node) and went on with the two replies it had
    log = run.server_log[run.server_log.index("[ROUND 2]"):]
    assert f"dprp round 2: {NODES} clients in the sum" in log
    (t_masked, masked), (t_ask, _), (t_got, got) = stage_log(log)[-3:]
    assert masked == "[Stage 2] Received masked vectors from 3 clients."
    assert got == "[Stage 3] Received key shares from 2 clients."
    assert TIMEOUT - 0.5 <= t_got - t_ask <= TIMEOUT + 2, (t_ask, t_got)


def test_node_killed_before_its_masked_vector_halts_the_round(tmp_path):
    run, out, markers, held = deploy(tmp_path, rounds=1, min_clients=NODES, hold_round=1, hold_stage="masking", grid_poll=0)
    assert held["round"] == 1 and held["stage"] == "collect_masked_vectors"
    assert not (markers / f"masked-round1-partition{KILLED}.json").exists()  # it never sent one
    assert out["reports"] == []  # nothing unmasked, nothing charged
    assert out["halted"] and f"fewer than min_clients = {NODES}" in out["halted"], out["halted"]
    assert "only 2 valid masked vector(s) of 3 clients" in out["halted"]
    assert out["account"]["rounds"] == 0
    assert all(w == 0 for w in out["weights"])
    # Flower's own grid here: the stage waited its timeout for the killed node (Flower pulls
    # every 3 s: 18 s for 16), dprp's check then passed nothing on to SecAgg+, which halted
    (t_ask, ask), (t_got, got) = stage_log(run.server_log)[-2:]
    assert ask.startswith("[Stage 2] Forwarding") and got.startswith("[Stage 2] Received masked vectors")
    assert TIMEOUT - 0.5 <= t_got - t_ask <= TIMEOUT + 4, (t_ask, t_got)
    assert "Secure aggregation halted." in run.server_log
