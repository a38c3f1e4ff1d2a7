"""dprp.flower in Flower's deployment engine: a SuperLink and three or five SuperNodes as
separate OS processes on loopback (examples/flower/local_deployment.py), running the Flower App
in tests/python/flower_app (DDG summed under SecAgg+), with SuperNodes killed (SIGKILL, the whole
process group) at each SecAgg+ stage, and the round completing whenever enough nodes remain:

* stage 3, after the server received its masked vector (before it answers "unmask"): SecAgg+
  rebuilds its self-mask from the other nodes' shares; its vector is in the sum;
* stage 2, before it sent its masked vector: its pairwise masks are removed with its key shares;
  the round completes with the other two (min_clients = 2);
* stages 0 and 1 (no public keys; keys sent but no key shares), one node each, in one round of
  five: the three others complete it, and the next round (the dead nodes possibly sampled again)
  too. Flower 1.42 lost such rounds (`KeyError` on every survivor); dprp's workflow drops the
  node from the later stages (`distributed._leave`).

A killed client holds the stage's request (the app's `holds` run config) until the launcher
kills its SuperNode, so the kill lands between two SecAgg+ stages every time. A test takes 45–120
s on 2 busy CPUs: Flower's SuperNodes poll every 3 s and start a ClientApp process for every
message, `flwr` CLI calls take seconds, and each stage with a killed node lasts its timeout.
Round halts with too few nodes are tested in the simulation engine (test_flower_dropouts.py,
test_flower.py)."""

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

EPSILON, DELTA, BITS = 150.0, 1e-5, 16
# SecAgg+'s per-stage timeout. A stage takes 4–11 s here at load 2 (Flower's SuperNodes poll
# every 3 s and start a ClientApp process per message), more on a busier machine, and a live node
# slower than the timeout would be dropped; Flower's own grid pulls replies every 3 s, so with it
# the stage of the killed node lasts 24–27 s.
TIMEOUT = 24.0


def deploy(tmp_path, *, nodes, rounds, min_clients, holds, grid_poll, min_available=0):
    """Run the app; `holds` is [(partition, round, stage)], each partition killed at its hold."""
    markers = tmp_path / "markers"
    markers.mkdir()
    result = tmp_path / "result.json"
    run_config = {
        "num-server-rounds": rounds,
        "mechanism": "ddg",
        "epsilon": EPSILON,
        "delta": DELTA,
        "bits": BITS,
        "clients": nodes,
        "min-clients": min_clients,
        "min-available-clients": min_available,
        "secagg-timeout": TIMEOUT,
        "secagg-fit-timeout": TIMEOUT,
        "grid-poll-seconds": grid_poll,
        "debug-log": True,
        "result-path": str(result),
        "marker-dir": str(markers),
        "holds": ",".join(f"{p}:{r}:{s}" for p, r, s in holds),
        "hold-seconds": 4 * TIMEOUT,
    }
    hold_files = {p: markers / f"hold-round{r}-partition{p}.json" for p, r, _ in holds}
    with local_deployment.LocalDeployment(nodes, workdir=str(tmp_path / "deployment"), keep_workdir=True) as d:
        run = d.run(APP, run_config, kill_on=hold_files, timeout=240, done_file=result)
        killed = {p: d.procs[f"supernode{p}"] for p in hold_files}
        others = [d.procs[f"supernode{i}"].poll() for i in range(nodes) if i not in hold_files]
    assert not local_deployment._processes(d.token), "processes of the deployment left running"
    print(run.server_log)
    assert run.status == "finished:completed", (run.status, run.server_log[-3000:])
    held = {}
    for p, node in killed.items():
        # the kill happened, at the held stage, to the whole node (the holding ClientApp included)
        assert p in run.killed, f"SuperNode {p} was not killed (no {hold_files[p].name}):\n{run.server_log[-3000:]}"
        assert node.returncode == -signal.SIGKILL
        held[p] = json.loads(hold_files[p].read_text())
        assert held[p]["pid"] in run.killed[p].pids
    assert others == [None] * len(others), "the other SuperNodes must have lived through the run"
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


def epsilon_at(n, nodes, min_clients, rounds):
    cfg = DistributedConfig("ddg", epsilon=EPSILON, delta=DELTA, rounds=rounds, clip=1.0, clients=nodes, min_clients=min_clients, dim=DIM, bits=BITS)
    return cfg.encoder().guarantee_at(n)["epsilon"]


def test_node_killed_after_its_masked_vector_is_recovered(tmp_path):
    nodes, killed = 3, 1
    run, out, markers, held = deploy(tmp_path, nodes=nodes, rounds=2, min_clients=2, holds=[(killed, 2, "unmask")], grid_poll=0.5)
    held = held[killed]
    assert held["round"] == 2 and held["stage"] == "unmask"
    # it produced its masked vector (and the server asked it to unmask: its vector had arrived)
    assert (markers / f"masked-round2-partition{killed}.json").exists()
    reports = out["reports"]
    assert [r["round"] for r in reports] == [1, 2], out
    assert out["halted"] is None and out["stopped"] is None
    for r in reports:
        assert r["clients"] == nodes and r["failures"] == 0, r  # the killed node's vector is in round 2's sum
        assert r["refused"] == 0
        assert r["statement"], r
    assert held["node"] in reports[1]["nodes"]
    # the round's report came after the kill: the round finished without the node
    assert out["report_times"]["2"] > run.killed[killed].at
    # the secure sum is the plain sum mod 2^b of the three nodes' residues, the killed one's too
    for rnd in (1, 2):
        xs = residues(markers, rnd, range(nodes))
        got = np.array(out["residues"][str(rnd)])
        np.testing.assert_array_equal(got, plain_sum(xs.values(), BITS))
    survivors = residues(markers, 2, [p for p in range(nodes) if p != killed])
    assert not np.array_equal(np.array(out["residues"]["2"]), plain_sum(survivors.values(), BITS))
    # the account: both rounds charged at three noise shares, within the budget
    at3 = epsilon_at(nodes, nodes, 2, 2)
    assert abs(reports[1]["epsilon_round"] - at3) <= 1e-9 * at3
    assert out["account"]["rounds"] == 2 and reports[1]["epsilon_total"] <= EPSILON * (1 + 1e-9)
    assert all(np.isfinite(out["weights"])) and len(out["weights"]) == DIM
    # Flower: all three masked vectors arrived; the unmask stage waited its whole timeout (no
    # error reply for the dead node) and went on with the two replies it had
    log = run.server_log[run.server_log.index("[ROUND 2]"):]
    assert f"dprp round 2: {nodes} clients in the sum" in log
    (t_masked, masked), (t_ask, _), (t_got, got) = stage_log(log)[-3:]
    assert masked == "[Stage 2] Received masked vectors from 3 clients."
    assert got == "[Stage 3] Received key shares from 2 clients."
    assert TIMEOUT - 0.5 <= t_got - t_ask <= TIMEOUT + 2, (t_ask, t_got)


def test_node_killed_before_its_masked_vector_is_unmasked_away(tmp_path):
    nodes, killed = 3, 1
    run, out, markers, held = deploy(tmp_path, nodes=nodes, rounds=1, min_clients=2, holds=[(killed, 1, "masking")], grid_poll=0)
    assert held[killed]["round"] == 1 and held[killed]["stage"] == "collect_masked_vectors"
    assert not (markers / f"masked-round1-partition{killed}.json").exists()  # it never sent one
    (r,) = out["reports"]
    assert out["halted"] is None and r["clients"] == 2 and r["sampled"] == 3 and r["failures"] == 1, r
    assert held[killed]["node"] not in r["nodes"]
    # its pairwise masks were removed (its key shares, from the two others): the sum is exactly
    # the two survivors' residues
    survivors = residues(markers, 1, [p for p in range(nodes) if p != killed])
    np.testing.assert_array_equal(np.array(out["residues"]["1"]), plain_sum(survivors.values(), BITS))
    # charged at two noise shares
    at2 = epsilon_at(2, nodes, 2, 1)
    assert abs(r["epsilon_round"] - at2) <= 1e-9 * at2 and out["account"]["rounds"] == 1
    # Flower's own grid here: the stage waited its timeout for the killed node (Flower pulls
    # every 3 s: up to 3 s more), then SecAgg+ asked the two others for its key shares
    stages = stage_log(run.server_log)
    (t_ask, ask), (t_got, got) = stages[-4:-2]
    assert ask.startswith("[Stage 2] Forwarding") and got == "[Stage 2] Received masked vectors from 2 clients."
    assert TIMEOUT - 0.5 <= t_got - t_ask <= TIMEOUT + 4, (t_ask, t_got)
    assert stages[-1][1] == "[Stage 3] Received key shares from 2 clients."


def test_nodes_killed_at_setup_and_at_share_keys_leave_the_round_to_the_others(tmp_path):
    nodes, min_clients = 5, 3
    holds = [(0, 1, "setup"), (1, 1, "share_keys")]
    run, out, markers, held = deploy(
        tmp_path, nodes=nodes, rounds=2, min_clients=min_clients, holds=holds, grid_poll=0.5, min_available=min_clients
    )
    assert held[0]["stage"] == "setup" and held[1]["stage"] == "share_keys"
    reports = out["reports"]
    assert [r["round"] for r in reports] == [1, 2] and out["halted"] is None, out
    survivors = [2, 3, 4]
    for r in reports:
        assert r["clients"] == len(survivors) and r["refused"] == 0, r
        assert r["failures"] == r["sampled"] - len(survivors), r
        assert {held[0]["node"], held[1]["node"]}.isdisjoint(r["nodes"])
        xs = residues(markers, r["round"], survivors)
        np.testing.assert_array_equal(np.array(out["residues"][str(r["round"])]), plain_sum(xs.values(), BITS))
        at3 = epsilon_at(3, nodes, min_clients, 2)
        assert abs(r["epsilon_round"] - at3) <= 1e-9 * at3
    assert reports[0]["sampled"] == nodes
    assert out["account"]["rounds"] == 2 and reports[1]["epsilon_total"] <= EPSILON * (1 + 1e-9)
    # round 1's stages: 4 nodes sent keys (stage 0 waited its timeout for node 0), 3 sent key
    # shares (stage 1 waited for node 1), 3 masked vectors, 3 unmask replies
    log = run.server_log[run.server_log.index("[ROUND 1]"):run.server_log.index("[ROUND 2]")]
    got = [text for _, text in stage_log(log) if "Received" in text]
    assert got == [
        "[Stage 0] Received public keys from 4 clients.",
        "[Stage 1] Received encrypted key shares from 3 clients.",
        "[Stage 2] Received masked vectors from 3 clients.",
        "[Stage 3] Received key shares from 3 clients.",
    ], got
    t = out["report_times"]
    print(f"round 2 (two nodes killed in round 1) ended {t['2'] - t['1']:.1f} s after round 1")


def test_message_api_local_dp_on_the_deployment_engine(tmp_path):
    """The Message-API path (issue 38 §2) deployed: three SuperNodes with an `@app.train()`
    client, two under `local_dp_mod` and one without it (partition 2, the power check: its model
    reaches the server in clear), and `MessageLocalDpFedAvg` for 2 rounds of a 3-round budget.
    The model moves each round by exactly `clip ×` dprp's estimate from the private messages the
    server received; the plain model is refused; ε is charged per round."""
    import shutil

    import dprp
    from dprp.flower import LocalConfig
    from dprp_flower_app.task import true_update

    app = tmp_path / "message_app"
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns("__pycache__"))
    py = app / "pyproject.toml"
    text = py.read_text()
    components = {"dprp_flower_app.server_app:app": "dprp_flower_app.message_app:server", "dprp_flower_app.client_app:app": "dprp_flower_app.message_app:client"}
    for old, new in components.items():
        assert old in text
        text = text.replace(old, new)
    py.write_text(text)
    result = tmp_path / "result.json"
    run_config = {"num-server-rounds": 2, "clients": 3, "epsilon": 24.0, "budget-rounds": 3, "plain-partitions": "2", "result-path": str(result)}
    with local_deployment.LocalDeployment(3, workdir=str(tmp_path / "deployment"), keep_workdir=True) as d:
        run = d.run(app, run_config, timeout=240, done_file=result)
    assert not local_deployment._processes(d.token), "processes of the deployment left running"
    print(run.server_log)
    assert run.status == "finished:completed", (run.status, run.server_log[-3000:])
    out = json.loads(result.read_text())
    assert out["finished"] and out["error"] is None, out["error"]
    cfg = LocalConfig("privunit2", epsilon=24.0, rounds=3, clip=1.0, dim=DIM, seed=out["seed"])
    reports = out["reports"]
    assert [r["round"] for r in reports] == [1, 2]
    model = np.zeros(DIM)
    for r in reports:
        assert r["clients"] == 2 and r["refused"] == 1, r
        replies = [e for e in out["replies"] if e["round"] == r["round"]]
        assert len(replies) == 3 and not any(e["error"] for e in replies), replies
        private = [e for e in replies if e["dprp"] is not None]
        (plain,) = [e for e in replies if e["dprp"] is None]
        # power: without the mod, the client's new model reaches the server in clear
        np.testing.assert_allclose(np.concatenate([np.array(a) for a in plain["arrays"]]), model + true_update(2), atol=1e-12)
        acc = dprp.MeanAccumulator(dim=DIM, **cfg.mechanism_args(r["round"]))
        for e in private:
            # only the private message and dprp's record: not the client's model or metrics
            assert e["keys"] == ["arrays", "dprp"] and e["dprp"]["dprp.fingerprint"] == cfg.fingerprint, e["keys"]
            (vector,) = e["arrays"]
            acc.add(e["dprp"]["dprp.row"], np.array(vector))
        model = model + cfg.clip * acc.finish()["mean"]
        assert abs(r["epsilon_round"] - 8.0) <= 1e-9
    np.testing.assert_allclose(np.array(out["weights"]), model, rtol=0, atol=1e-12)
    assert abs(reports[-1]["epsilon_total"] - 16.0) <= 1e-9
