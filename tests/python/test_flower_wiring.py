"""Wrong wirings of dprp.flower's distributed DP (issue 38 §1), in Flower's simulation engine:
each is refused before a client's vector reaches the server and before anything is charged.

* server: `DistributedDpFedAvg` under Flower's `DefaultWorkflow` alone, or under Flower's own
  `SecAggPlusWorkflow` → the strategy refuses at round 1's `configure_fit` (nothing is sent);
* client: no SecAgg+ mod, or Flower's own `secaggplus_mod` → `distributed_dp_mod` refuses to
  train and reply, even when the server is wrong too (its guard switched off here);
* power checks: with the guards switched off (the server's monkeypatched, the clients' bypassed
  by a mod that fakes dprp's masking marker), the same spy on the server's grid does see every
  client's residues in clear, and the budget is charged — the defect the guards close.

What the server saw is recorded by `SpyGrid` (every message sent, every reply received)."""

import numpy as np
import pytest

import dprp
from flower_apps import (
    DIM,
    SpyGrid,
    client_app,
    flower_secagg_workflow,
    initial_weights,
    recorded,
    secagg_workflow,
    server_app,
    simulate,
)
from dprp.flower import DistributedConfig, DistributedDpFedAvg, DistributedSecAggPlusWorkflow

CLIENTS = 4


def config(**kw):
    return DistributedConfig("ddg", epsilon=12.0, delta=1e-5, rounds=3, clip=1.0, clients=CLIENTS, dim=DIM, **kw)


def nothing_spent(strategy):
    return strategy.accountant.total()["rounds"] == 0 and strategy.reports == [] and all(w.sum() == 0 for w in strategy.weights)


def guard_off(monkeypatch, *stages):
    """Switch the strategy's workflow guard off for `stages` ("setup", "unmask")."""
    real = DistributedDpFedAvg._require_workflow

    def require(self, stage, server_round):
        if stage not in stages:
            real(self, stage, server_round)

    monkeypatch.setattr(DistributedDpFedAvg, "_require_workflow", require)


@pytest.mark.parametrize("server", ["default", "flower-secagg"])
def test_a_strategy_outside_dprps_workflow_is_refused_at_round_one(tmp_path, server):
    cfg = config()
    strategy = DistributedDpFedAvg(cfg, initial_parameters=initial_weights())
    spy = SpyGrid()
    workflow = None if server == "default" else flower_secagg_workflow(cfg)
    with pytest.raises(dprp.DprpError) as e:
        simulate(server_app(strategy, 2, workflow, spy=spy), client_app(["distributed"], tmp_path), CLIENTS)
    msg = str(e.value)
    assert msg.startswith("round 1: DistributedDpFedAvg.configure_fit was called outside DistributedSecAggPlusWorkflow")
    assert "DefaultWorkflow(fit_workflow=dprp.flower.DistributedSecAggPlusWorkflow(cfg, strategy))" in msg
    assert "Nothing was sent to the clients and nothing charged" in msg
    assert strategy.stopped == msg
    assert spy.sent == [] and spy.replies == []  # not one message left the server
    assert recorded(tmp_path) == {}  # no client encoded anything
    assert nothing_spent(strategy)


@pytest.mark.parametrize("server", ["dprp", "default-unguarded"])
def test_a_client_without_secaggplus_mod_refuses_to_reply(tmp_path, monkeypatch, server):
    cfg = config()
    strategy = DistributedDpFedAvg(cfg, initial_parameters=initial_weights())
    spy = SpyGrid()
    client = client_app(["no-secagg"], tmp_path)
    if server == "dprp":
        # SecAgg+'s setup stage reaches distributed_dp_mod itself: every client refuses, SecAgg+
        # halts the round (too few public keys) before anything else is asked
        simulate(server_app(strategy, 1, secagg_workflow(cfg), spy=spy), client, CLIENTS)
        assert [r for r, _ in strategy.halts] == [1]
    else:
        # a server whose guard is off sends the training instructions in clear: the clients
        # refuse them; aggregate_fit (its own guard on) refuses the empty round
        guard_off(monkeypatch, "setup")
        with pytest.raises(dprp.DprpError, match="did not come through DistributedSecAggPlusWorkflow's unmask stage"):
            simulate(server_app(strategy, 1, spy=spy), client, CLIENTS)
    assert len(spy.sent) == CLIENTS  # one request per client, then nothing more
    errors = spy.errors()
    assert len(errors) == CLIENTS and len(spy.replies) == CLIENTS
    assert all("distributed_dp_mod: refused to train and reply" in r for r in errors), errors[0]
    assert all("dprp.flower.secaggplus_mod is missing before it" in r for r in errors), errors[0]
    assert spy.vectors() == []  # the server received no vector, in clear or masked
    assert recorded(tmp_path) == {}
    assert nothing_spent(strategy)


@pytest.mark.parametrize("server", ["dprp", "flower-secagg-unguarded"])
def test_a_client_with_flowers_own_secaggplus_mod_refuses_to_reply(tmp_path, monkeypatch, server):
    cfg = config()
    strategy = DistributedDpFedAvg(cfg, initial_parameters=initial_weights())
    spy = SpyGrid()
    if server == "dprp":
        workflow = secagg_workflow(cfg)
    else:
        guard_off(monkeypatch, "setup", "unmask")  # both: only the clients' guard is left
        workflow = flower_secagg_workflow(cfg)
    simulate(server_app(strategy, 1, workflow, spy=spy), client_app(["flower-secagg"], tmp_path), CLIENTS)
    # stages 0 and 1 (keys) went through; at stage 2 every client refused to train
    errors = spy.errors()
    assert len(errors) == CLIENTS, errors
    assert all("inside a SecAgg+ mod that is not dprp's" in r and "replace it by dprp.flower.secaggplus_mod" in r for r in errors), errors[0]
    assert spy.vectors() == []  # no masked vector, no vector in clear
    assert recorded(tmp_path) == {}
    assert nothing_spent(strategy)
    if server == "dprp":
        assert "only 0 valid masked vector(s)" in strategy.halts[0][1]


def test_a_client_refuses_a_secagg_round_set_up_with_other_ranges(tmp_path, monkeypatch):
    """Flower's SecAggPlusWorkflow with its default ranges (server guard off): dprp's own client
    stack refuses at the masking stage, before training."""
    cfg = config()
    strategy = DistributedDpFedAvg(cfg, initial_parameters=initial_weights())
    spy = SpyGrid()
    guard_off(monkeypatch, "setup", "unmask")
    simulate(server_app(strategy, 1, flower_secagg_workflow(cfg, dprp_ranges=False), spy=spy), client_app(["distributed"], tmp_path), CLIENTS)
    errors = spy.errors()
    assert len(errors) == CLIENTS, errors
    assert all("the server set up SecAgg+ with clipping_range = 8.0" in r for r in errors), errors[0]
    assert spy.vectors() == [] and recorded(tmp_path) == {}
    assert nothing_spent(strategy)


def test_power_without_the_guards_the_server_sees_residues_in_clear(tmp_path, monkeypatch):
    """The defect the tests above look for, reproduced with every guard off: plain
    DefaultWorkflow, clients without a SecAgg+ mod. The spy then holds each client's residue
    vector exactly as it encoded it, and the round is charged."""
    cfg = config()
    strategy = DistributedDpFedAvg(cfg, initial_parameters=initial_weights())
    spy = SpyGrid()
    guard_off(monkeypatch, "setup", "unmask")
    simulate(server_app(strategy, 1, spy=spy), client_app(["no-secagg-bypassed"], tmp_path), CLIENTS)
    sent = recorded(tmp_path)
    seen = spy.vectors()
    assert len(sent) == CLIENTS and len(seen) == CLIENTS and spy.errors() == []
    for node, kind, v in seen:
        assert kind == "clear"
        np.testing.assert_array_equal(v, sent[(1, node)])  # one client's residues, in clear
    assert strategy.accountant.total()["rounds"] == 1 and len(strategy.reports) == 1  # and charged
    assert not nothing_spent(strategy)


def test_power_without_the_client_guard_flowers_mod_sends_a_masked_vector(tmp_path):
    """Clients with Flower's own secaggplus_mod and the guard bypassed send masked vectors (with
    Flower's 32-bit-seeded masks), which the spy sees; dprp's workflow then refuses them."""
    cfg = config()
    strategy = DistributedDpFedAvg(cfg, initial_parameters=initial_weights())
    spy = SpyGrid()
    simulate(server_app(strategy, 1, secagg_workflow(cfg), spy=spy), client_app(["flower-secagg-bypassed"], tmp_path), CLIENTS)
    masked = [(node, v) for node, kind, v in spy.vectors() if kind == "masked"]
    assert len(masked) == 2 * CLIENTS  # SecAgg+'s weight factor and the vector, per client
    assert len(recorded(tmp_path)) == CLIENTS
    assert "only 0 valid masked vector(s)" in strategy.halts[0][1]  # the server's second lock
    assert nothing_spent(strategy)


def test_a_workflow_and_strategy_that_do_not_match_are_refused():
    cfg = config()
    strategy = DistributedDpFedAvg(cfg, initial_parameters=initial_weights())
    with pytest.raises(dprp.DprpError, match="its configuration is not its strategy's"):
        DistributedSecAggPlusWorkflow(config(), strategy)  # another seed: another fingerprint
    with pytest.raises(dprp.DprpError, match="must be a DistributedDpFedAvg"):
        DistributedSecAggPlusWorkflow(cfg, object())
    # a strategy called directly, by no workflow at all
    with pytest.raises(dprp.DprpError, match="round 1: DistributedDpFedAvg.aggregate_fit was called with results"):
        strategy.aggregate_fit(1, [], [])
    assert nothing_spent(strategy)


def test_config_integers_and_mechanism_names():
    cfg = config(bits=20)
    five = DistributedConfig("ddg", epsilon=12.0, delta=1e-5, rounds=5.0, clip=1.0, clients=4.0, dim=float(DIM))
    assert (five.rounds, five.clients, five.min_clients, five.dim) == (5, 4, 4, 40)
    assert type(five.rounds) is int and DistributedConfig.from_config(five.to_config()) == five
    assert cfg.bits == 20
    with pytest.raises(dprp.DprpError, match=r"^rounds: must be an integer, got 5\.5$"):
        DistributedConfig("ddg", epsilon=12.0, delta=1e-5, rounds=5.5, clip=1.0, clients=4, dim=DIM)
    with pytest.raises(dprp.DprpError, match="rounds: must be an integer, got True"):
        DistributedConfig("ddg", epsilon=12.0, delta=1e-5, rounds=True, clip=1.0, clients=4, dim=DIM)
    with pytest.raises(dprp.DprpError, match="rounds: must be ≥ 1, got 0"):
        DistributedConfig("ddg", epsilon=12.0, delta=1e-5, rounds=0.0, clip=1.0, clients=4, dim=DIM)
    with pytest.raises(dprp.DprpError, match="mechanism: 'dgg' is not a distributed mechanism: one of ddg, sketch-ddg, binomial"):
        DistributedConfig("dgg", epsilon=12.0, delta=1e-5, rounds=3, clip=1.0, clients=4, dim=DIM)
    with pytest.raises(dprp.DprpError, match="mechanism: 'BINOMIAL'"):
        DistributedConfig("BINOMIAL", epsilon=12.0, delta=1e-5, rounds=3, clip=1.0, clients=4, dim=DIM, min_clients=3)
    assert dprp.flower.LocalConfig("privunit2", epsilon=3.0, rounds=3.0, clip=1.0, dim=DIM).rounds == 3
    with pytest.raises(dprp.DprpError, match="mechanism: 'privunit' is not one of privunit2"):
        dprp.flower.LocalConfig("privunit", epsilon=3.0, rounds=3, clip=1.0, dim=DIM)


def test_the_client_mods_refuse_before_calling_the_client(monkeypatch):
    """The mods called directly on hand-made messages: no dprp masking marker, or a Message-API
    training action, is refused before the rest of the chain (the client's fit) is called; an
    evaluate message passes (power: the recording call_next does see a call)."""
    from flwr.app import Context, Message, RecordDict
    from flwr.common import FitIns, ndarrays_to_parameters
    from flwr.compat.common import recorddict_compat as compat

    from flwr.supercore.task_identity import TaskIdentity

    from dprp.flower import distributed_dp_mod, local_dp_mod, secaggplus_mod

    for k in ("_run_id", "_node_id", "_task_id"):  # what Flower's runtime sets in a ClientApp process
        monkeypatch.setattr(TaskIdentity, k, 1)
    cfg = config()
    content = compat.fitins_to_recorddict(FitIns(ndarrays_to_parameters(initial_weights()), cfg.to_config()), True)
    ctxt = Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={})
    calls = []

    def call_next(m, c):
        calls.append(m.metadata.message_type)
        return Message(RecordDict(), reply_to=m)

    def msg(kind):
        return Message(content=content, dst_node_id=1, message_type=kind)

    with pytest.raises(dprp.DprpError, match="dprp.flower.secaggplus_mod is missing before it"):
        distributed_dp_mod(msg("train"), ctxt, call_next)
    with pytest.raises(dprp.DprpError, match="the server sent training instructions outside SecAgg\\+"):
        secaggplus_mod(msg("train"), ctxt, call_next)
    for mod, name in [(distributed_dp_mod, "distributed_dp_mod"), (local_dp_mod, "local_dp_mod"), (secaggplus_mod, "secaggplus_mod")]:
        with pytest.raises(dprp.DprpError, match=f"{name}: refused a 'train.custom' message"):
            mod(msg("train.custom"), ctxt, call_next)
    assert calls == []
    distributed_dp_mod(msg("evaluate"), ctxt, call_next)
    secaggplus_mod(msg("evaluate"), ctxt, call_next)
    assert calls == ["evaluate", "evaluate"]
    # a marker with other SecAgg+ ranges than the configuration's: refused before the fit
    from dprp.flower import _masks

    token = _masks._MASKING.set(_masks.Masking(dict(cfg.secagg_ranges(), clipping_range=8.0)))
    try:
        with pytest.raises(dprp.DprpError, match="the server set up SecAgg\\+ with clipping_range = 8.0"):
            distributed_dp_mod(msg("train"), ctxt, call_next)
    finally:
        _masks._MASKING.reset(token)
    assert calls == ["evaluate", "evaluate"]
