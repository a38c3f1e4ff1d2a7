"""Dropouts at every SecAgg+ stage (issue 38 §3), in Flower's simulation engine, and the rules
for SecAgg+'s reconstruction threshold and timeouts.

A node that fails at stage 0 (setup: no public keys) or 1 (share keys: no encrypted shares) has
no mask in anyone's vector; one that fails at stage 2 (masking) shared its keys, so its pairwise
masks are removed with its key shares; one that fails at stage 3 (unmask) after its masked
vector arrived is still in the sum. Flower 1.42 lost the round in the first two cases (the
survivors were asked for shares they never received: `KeyError`); the power check runs the same
dropouts with that behaviour restored and sees the round lost."""

import numpy as np
import pytest
from flwr.common.secure_aggregation.secaggplus_constants import Stage
from flwr.server.workflow import SecAggPlusWorkflow

import dprp
from flower_apps import DIM, Misbehaviour, Recording, client_app, initial_weights, residue_sum, server_app, simulate
from dprp.flower import DistributedConfig, DistributedDpFedAvg, DistributedSecAggPlusWorkflow
from dprp.flower.distributed import secagg_threshold

CLIENTS = 10
# one partition per stage: 1 at setup, 4 at share keys, 6 at masking, 8 at unmask
DROPS = {1: Stage.SETUP, 4: Stage.SHARE_KEYS, 6: Stage.COLLECT_MASKED_VECTORS, 8: Stage.UNMASK}


def config(**kw):
    kw.setdefault("min_clients", 6)
    return DistributedConfig("ddg", epsilon=12.0, delta=1e-5, rounds=3, clip=1.0, clients=CLIENTS, dim=DIM, bits=20, **kw)


class FlowerDropouts(DistributedSecAggPlusWorkflow):
    """Flower 1.42's handling of early dropouts restored (for the power check): the nodes that
    failed at stage 0 or 1 stay among the sampled ones, and a dropped node's masks are removed
    against all its neighbours."""

    def _check_threshold(self, state):
        return SecAggPlusWorkflow._check_threshold(self, state)

    def unmask_stage(self, grid, context, state):
        with dprp.flower.distributed.server_masks(), self._pass(context, "unmask"):
            return SecAggPlusWorkflow.unmask_stage(self, grid, context, state)


def run(tmp_path, cfg, rounds, drops, workflow=DistributedSecAggPlusWorkflow):
    strategy = Recording(cfg, initial_parameters=initial_weights())
    bad = Misbehaviour(drop=drops)
    simulate(server_app(strategy, rounds, lambda s: workflow(cfg, s)), client_app(["distributed"], tmp_path, bad), CLIENTS)
    return strategy


def test_a_dropout_at_each_stage_leaves_the_round_complete(tmp_path):
    cfg = config()
    s = run(tmp_path, cfg, 1, DROPS)
    assert s.halts == [] and s.halted is None, s.halts
    (r,) = s.reports
    # in the sum: everyone but the three that failed before sending a masked vector; the one that
    # failed at unmask had sent it
    assert r["sampled"] == CLIENTS and r["clients"] == CLIENTS - 3, r
    assert r["failures"] == 3 and r["refused"] == 0, r  # each failed node once
    recorded_nodes = {int(f.stem.split("node")[1]) for f in tmp_path.glob("round1-node*.npy")}
    assert set(r["nodes"]) <= recorded_nodes and len(recorded_nodes) == CLIENTS - 3
    # the unmasked sum is exactly the plain sum mod 2^b of the residues of the nodes in it
    np.testing.assert_array_equal(s.residues[1], residue_sum(tmp_path, 1, cfg, set(r["nodes"])))
    # charged at the seven noise shares the sum holds
    assert abs(r["epsilon_round"] - cfg.encoder().guarantee_at(CLIENTS - 3)["epsilon"]) <= 1e-12
    assert s.accountant.total()["rounds"] == 1


def test_power_flowers_handling_loses_the_round(tmp_path):
    s = run(tmp_path, config(), 1, {1: Stage.SETUP, 4: Stage.SHARE_KEYS}, workflow=FlowerDropouts)
    assert s.reports == [] and s.accountant.total()["rounds"] == 0
    assert [r for r, _ in s.halts] == [1] and "SecAgg+ halted the round" in s.halts[0][1]


@pytest.mark.parametrize(
    "drops,why",
    [
        # 7 masked vectors arrive, fewer than min_clients = 8: halted before the sum
        ({1: Stage.SETUP, 4: Stage.SHARE_KEYS, 6: Stage.COLLECT_MASKED_VECTORS}, "only 7 valid masked vector(s) of 8 clients"),
        # 7 public keys: halted at once, before any key share or vector is asked for
        ({1: Stage.SETUP, 4: Stage.SETUP, 6: Stage.SETUP}, "only 7 of 10 sampled clients answered SecAgg+'s setup stage"),
        ({1: Stage.SETUP, 4: Stage.SHARE_KEYS, 6: Stage.SHARE_KEYS}, "only 7 of 10 sampled clients answered SecAgg+'s share_keys stage"),
    ],
)
def test_dropouts_below_min_clients_halt_before_unmasking(tmp_path, drops, why):
    s = run(tmp_path, config(min_clients=8), 1, drops)
    assert s.reports == [] and s.accountant.total()["rounds"] == 0
    assert s.halted and "fewer than min_clients = 8" in s.halted and why in s.halted, s.halted
    assert [r for r, _ in s.halts] == [1]
    if Stage.COLLECT_MASKED_VECTORS not in drops.values():
        assert list(tmp_path.glob("round1-node*.npy")) == []  # no client was asked to train


def test_the_threshold_follows_min_clients():
    # every client shares with every other: the threshold is min_clients
    assert secagg_threshold(config(min_clients=6), 1.0, None) == 6
    assert secagg_threshold(config(min_clients=10), 1.0, None) == 10
    c7 = config(min_clients=7)
    wf = DistributedSecAggPlusWorkflow(c7, DistributedDpFedAvg(c7, initial_parameters=initial_weights()))
    assert wf.reconstruction_threshold == 7 and wf.timeout == 60.0 and wf.fit_timeout == 600.0
    # half the shares or fewer: refused, whether it comes from min_clients or is given
    with pytest.raises(dprp.DprpError, match="5 of 10 shares is not more than half.*raise min_clients to at least 6"):
        secagg_threshold(config(min_clients=5), 1.0, None)
    with pytest.raises(dprp.DprpError, match="4 of 10 shares is not more than half"):
        secagg_threshold(config(), 1.0, 0.4)
    with pytest.raises(dprp.DprpError, match="5 of 10 shares"):
        secagg_threshold(config(), 1.0, 0.5)
    # above min_clients: min_clients would not be kept
    with pytest.raises(dprp.DprpError, match="8 shares are needed to unmask, more than min_clients = 6"):
        secagg_threshold(config(), 1.0, 8)
    # fewer shares per client: Flower's 0.6 of them by default; a given one must be above half
    assert secagg_threshold(config(), 5, None) == 0.6
    assert secagg_threshold(config(), 5, 3) == 3
    with pytest.raises(dprp.DprpError, match="2 of 5 shares"):
        secagg_threshold(config(), 5, 2)
    for shares in ("3", True):
        with pytest.raises(dprp.DprpError, match="num_shares: must be an integer or a fraction"):
            secagg_threshold(config(), shares, 3)
    for t in ("3", True):
        with pytest.raises(dprp.DprpError, match="reconstruction_threshold: must be an integer or a fraction"):
            secagg_threshold(config(), 1.0, t)
    cfg = config()
    strategy = DistributedDpFedAvg(cfg, initial_parameters=initial_weights())
    for t in (0, -1.0, float("nan"), float("inf"), "60", True):
        with pytest.raises(dprp.DprpError, match="timeout must be a positive number of seconds or None"):
            DistributedSecAggPlusWorkflow(cfg, strategy, timeout=t)
        with pytest.raises(dprp.DprpError, match="fit_timeout must be a positive number"):
            DistributedSecAggPlusWorkflow(cfg, strategy, fit_timeout=t)
    assert DistributedSecAggPlusWorkflow(cfg, strategy, timeout=None, fit_timeout=None).timeout is None


def test_a_client_refuses_an_unmask_request_that_would_reveal_a_node(monkeypatch):
    """An unmask request naming a node both active and dropped (or the client itself as dropped)
    is refused before Flower's mod answers; a consistent one reaches it (power)."""
    from flwr.app import ConfigRecord, Context, Message, RecordDict
    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key
    from flwr.supercore.task_identity import TaskIdentity

    from dprp.flower import _masks, secaggplus_mod

    for k in ("_run_id", "_node_id", "_task_id"):
        monkeypatch.setattr(TaskIdentity, k, 1)
    ctxt = Context(run_id=1, node_id=7, node_config={}, state=RecordDict(), run_config={})
    reached = []
    monkeypatch.setattr(_masks._client_secagg, "secaggplus_mod", lambda m, c, n: reached.append(m) or Message(RecordDict(), reply_to=m))

    def unmask(active, dead):
        cfg = ConfigRecord({Key.STAGE: Stage.UNMASK, Key.ACTIVE_NODE_ID_LIST: active, Key.DEAD_NODE_ID_LIST: dead})
        return Message(content=RecordDict({RECORD_KEY_CONFIGS: cfg}), dst_node_id=7, message_type="train")

    with pytest.raises(dprp.DprpError, match=r"lists nodes \[3\] both active and dropped.*No share was sent"):
        secaggplus_mod(unmask([7, 3, 5], [3]), ctxt, None)
    with pytest.raises(dprp.DprpError, match="lists this node as dropped"):
        secaggplus_mod(unmask([3, 5], [7]), ctxt, None)
    assert reached == []
    secaggplus_mod(unmask([7, 3, 5], [2]), ctxt, None)
    assert len(reached) == 1
