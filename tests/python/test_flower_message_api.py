"""dprp.flower on Flower's Message API (issue 38 §2), in Flower's simulation engine with 4
clients: local DP with an `@app.train()` client under `local_dp_mod` and `MessageLocalDpFedAvg`
on the server — the model moves by exactly dprp's estimate from the messages the server
received, the budget is charged per round as the legacy `LocalDpFedAvg` charges it, no client
model reaches the server in clear (power check: without the mod it does, and the strategy refuses
it); distributed DP refused on the Message API (no SecAgg+ there in Flower 1.42) before anything
is sent; the mods on hand-made Message-API messages; Flower `Parameters` accepted as weights."""

from __future__ import annotations

import re

import numpy as np
import pytest
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.common import ndarrays_to_parameters
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

import dprp
from dprp.flower import (
    DistributedConfig,
    DistributedDpFedAvg,
    LocalConfig,
    LocalDpFedAvg,
    MessageLocalDpFedAvg,
    distributed_dp_mod,
    local_dp_mod,
    secaggplus_mod,
)
from flower_apps import DIM, SHAPES, SpyGrid, client_app, initial_weights, server_app, simulate, true_update

CLIENTS = 4


class RoundSpy(SpyGrid):
    """The server's grid, keeping each non-empty exchange (messages sent, replies received) as it
    happens: one per training round (evaluation is off)."""

    def __init__(self) -> None:
        super().__init__()
        self.exchanges: list[tuple[list, list]] = []

    def send_and_receive(self, messages, timeout=None):
        messages = list(messages)
        replies = super().send_and_receive(messages, timeout=timeout)
        if messages:
            self.exchanges.append((messages, list(replies)))
        return replies


def message_client(mods_of) -> ClientApp:
    """A Message-API client: `@app.train()` adds its partition's known update to the model it
    received and replies with the new model and its metrics. `mods_of(partition)` is its chain."""

    def by_partition(msg, ctxt, call_next):
        chain = list(mods_of(int(ctxt.node_config["partition-id"])))

        def run(i, m, c):
            return chain[i](m, c, lambda m2, c2: run(i + 1, m2, c2)) if i < len(chain) else call_next(m, c)

        return run(0, msg, ctxt)

    app = ClientApp(mods=[by_partition])

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        p = int(context.node_config["partition-id"])
        received = msg.content["arrays"].to_numpy_ndarrays()
        flat = np.concatenate([a.ravel() for a in received]) + true_update(p)
        new, at = [], 0
        for a in received:
            new.append(flat[at : at + a.size].reshape(a.shape).astype(a.dtype))
            at += a.size
        content = RecordDict({"arrays": ArrayRecord(new), "metrics": MetricRecord({"num-examples": 10, "loss": 0.25})})
        return Message(content, reply_to=msg)

    return app


def message_server(strategy, rounds: int, spy: RoundSpy, results: list) -> ServerApp:
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        spy.grid = grid
        results.append(strategy.start(grid=spy, initial_arrays=ArrayRecord(initial_weights()), num_rounds=rounds))

    return app


def sampled(**kw):
    return dict(min_train_nodes=CLIENTS, min_available_nodes=CLIENTS, **kw)


def flat(arrays) -> np.ndarray:
    return np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])


def model_sent(messages) -> np.ndarray:
    (model,) = {flat(m.content["arrays"].to_numpy_ndarrays()).tobytes() for m in messages}  # the same to all
    return np.frombuffer(model)


def test_message_api_local_dp_moves_the_model_by_dprps_estimate_and_charges_as_legacy():
    cfg = LocalConfig("privunit2", epsilon=24.0, rounds=3, clip=1.0, dim=DIM)
    strategy, spy, results = MessageLocalDpFedAvg(cfg, **sampled()), RoundSpy(), []
    simulate(message_server(strategy, 4, spy, results), message_client(lambda p: [local_dp_mod]), CLIENTS)

    # rounds 1-3 decoded, round 4 past the budget: nothing sent
    assert [r["round"] for r in strategy.reports] == [1, 2, 3]
    assert len(spy.exchanges) == 3 and "past the budget" in strategy.stopped
    assert all(r["clients"] == CLIENTS and r["refused"] == 0 for r in strategy.reports)
    models = [model_sent(sent) for sent, _ in spy.exchanges] + [flat(strategy.weights)]
    assert np.array_equal(models[0], np.zeros(DIM))
    for r, (sent, replies) in enumerate(spy.exchanges, start=1):
        assert all(m.content["config"]["dprp.round"] == r for m in sent)
        acc = dprp.MeanAccumulator(dim=DIM, **cfg.mechanism_args(r))
        for m in replies:
            assert not m.has_error(), m.error.reason
            # the reply carries the private message and dprp's record, nothing else of the client's
            assert set(m.content.keys()) == {"arrays", "dprp"}, m.content.keys()
            (vector,) = m.content["arrays"].to_numpy_ndarrays()
            meta = m.content["dprp"]
            assert meta["dprp.fingerprint"] == cfg.fingerprint
            assert meta["dprp.row"] == m.metadata.src_node_id % (1 << 63)
            # not a client's model in clear (the power check below sees them without the mod)
            assert vector.shape != (DIM,) or not any(
                np.allclose(vector, models[r - 1] + true_update(p)) or np.allclose(vector, true_update(p)) for p in range(CLIENTS)
            )
            acc.add(meta["dprp.row"], vector)
        est = acc.finish()
        np.testing.assert_allclose(models[r], models[r - 1] + cfg.clip * est["mean"], rtol=0, atol=1e-12)
        assert strategy.reports[r - 1]["expected_sq_error"] == pytest.approx(est["expected_sq_error"])
    (result,) = results
    np.testing.assert_array_equal(flat(result.arrays.to_numpy_ndarrays()), models[-1])
    assert result.train_metrics_clientapp[3]["epsilon_total"] == pytest.approx(24.0)

    # the legacy strategy (given Flower Parameters) charges the same rounds the same ε
    legacy = LocalDpFedAvg(
        cfg, initial_parameters=ndarrays_to_parameters(initial_weights()), min_fit_clients=CLIENTS, min_available_clients=CLIENTS
    )
    simulate(server_app(legacy, 4), client_app(["local"]), CLIENTS)
    charged = [(r["round"], r["epsilon_round"], r["epsilon_total"]) for r in strategy.reports]
    assert charged == [(r["round"], r["epsilon_round"], r["epsilon_total"]) for r in legacy.reports]
    assert charged == [(1, pytest.approx(8.0), pytest.approx(8.0)), (2, pytest.approx(8.0), pytest.approx(16.0)), (3, pytest.approx(8.0), pytest.approx(24.0))]
    assert strategy.accountant.total() == legacy.accountant.total()
    assert "past the budget" in legacy.stopped


def test_power_without_the_mod_models_arrive_in_clear_and_are_refused():
    """Two clients without local_dp_mod: their models reach the server in clear (what the test
    above would see if the mod did not privatise), and the strategy refuses them, averaging only
    the two private messages; the round is charged (the replies were sent)."""
    cfg = LocalConfig("privunit2", epsilon=8.0, rounds=2, clip=1.0, dim=DIM)
    strategy, spy = MessageLocalDpFedAvg(cfg, **sampled()), RoundSpy()
    simulate(message_server(strategy, 1, spy, []), message_client(lambda p: [local_dp_mod] if p < 2 else []), CLIENTS)
    ((_, replies),) = spy.exchanges
    clear = [m for m in replies if "dprp" not in m.content]
    assert len(clear) == 2
    for m in clear:
        v = flat(m.content["arrays"].to_numpy_ndarrays())
        assert any(np.allclose(v, true_update(p)) for p in (2, 3))  # the client's model, in clear
    (r,) = strategy.reports
    assert r["clients"] == 2 and r["refused"] == 2
    assert all("without dprp's local_dp_mod" in why for _, _, why in strategy.refusals)
    assert strategy.accountant.total()["epsilon"] == pytest.approx(4.0)


def test_distributed_dp_and_flowers_strategy_are_refused_on_the_message_api():
    """Flower's own Message-API FedAvg with dprp's client mods: every client refuses before it
    trains (local DP: no dprp configuration; distributed DP: no SecAgg+ on the Message API), so
    no array reaches the server."""
    spy, results = RoundSpy(), []
    mods = {0: [local_dp_mod], 1: [secaggplus_mod, distributed_dp_mod], 2: [distributed_dp_mod], 3: [local_dp_mod]}
    simulate(message_server(FedAvg(fraction_evaluate=0.0, **sampled()), 1, spy, results), message_client(mods.get), CLIENTS)
    ((_, replies),) = spy.exchanges
    assert all(m.has_error() for m in replies) and spy.vectors() == []
    reasons = sorted(m.error.reason for m in replies)
    assert sum("the server's 'train' message carries 0 dprp configurations" in r for r in reasons) == 2, reasons
    assert sum("no distributed DP on the Message API because Flower 1.42 has SecAgg+ only" in r for r in reasons) == 2, reasons
    with pytest.raises(dprp.DprpError, match="DistributedDpFedAvg, on Flower's legacy API only"):
        MessageLocalDpFedAvg(DistributedConfig("ddg", epsilon=4.0, delta=1e-5, rounds=2, clip=1.0, clients=4, dim=DIM))


def _call_mod(monkeypatch, mod, content, reply, kind="train"):
    """Call a mod on a hand-made message; returns (reply or the exception, whether the client ran)."""
    from flwr.supercore.task_identity import TaskIdentity

    for k in ("_run_id", "_node_id", "_task_id"):  # what Flower's runtime sets in a ClientApp process
        monkeypatch.setattr(TaskIdentity, k, 1)
    ctxt = Context(run_id=1, node_id=7, node_config={}, state=RecordDict(), run_config={})
    calls = []

    def call_next(m, c):
        calls.append(m.metadata.message_type)
        return Message(reply(), reply_to=m)

    try:
        out = mod(Message(content=content, dst_node_id=7, message_type=kind), ctxt, call_next)
    except dprp.DprpError as e:
        out = e
    return out, calls


def test_the_mods_on_message_api_messages(monkeypatch):
    cfg = LocalConfig("projunit", epsilon=6.0, rounds=2, clip=1.0, dim=DIM, k=8)
    weights = [w.astype(np.float32) for w in initial_weights()]
    config = ConfigRecord({"server-round": 1, **cfg.to_config(), "dprp.round": 1})

    def content(**extra):
        return RecordDict({"arrays": ArrayRecord(weights), "config": config, **extra})

    def good():
        new = [w + 0.01 for w in weights]
        return RecordDict({"arrays": ArrayRecord(new), "metrics": MetricRecord({"num-examples": 5, "loss": 0.5})})

    out, calls = _call_mod(monkeypatch, local_dp_mod, content(), good)
    assert calls == ["train"] and set(out.content.keys()) == {"arrays", "dprp"}  # the metrics dropped
    (vector,) = out.content["arrays"].to_numpy_ndarrays()
    assert vector.shape == (8,) and out.content["dprp"]["dprp.row"] == 7
    assert out.content["dprp"]["dprp.fingerprint"] == cfg.fingerprint

    refusals = [
        # a server that sent no dprp configuration (Flower's own strategy): before the client runs
        (local_dp_mod, RecordDict({"arrays": ArrayRecord(weights), "config": ConfigRecord({"lr": 0.1})}), good, "train",
         "carries 0 dprp configurations", []),
        # two models sent
        (local_dp_mod, content(extra=ArrayRecord(weights)), good, "train", "carries 2 ArrayRecords", []),
        # a reply whose arrays are named otherwise, or of other shapes, or two records
        (local_dp_mod, content(), lambda: RecordDict({"arrays": ArrayRecord({"w": ArrayRecord(weights)["0"], "b": ArrayRecord(weights)["1"]})}),
         "train", "names its arrays \\['w', 'b'\\], the server sent \\['0', '1'\\]", ["train"]),
        (local_dp_mod, content(), lambda: RecordDict({"arrays": ArrayRecord([weights[1], weights[0]])}), "train",
         "the client returned arrays of shapes", ["train"]),
        (local_dp_mod, content(), lambda: RecordDict({"a": ArrayRecord(weights), "b": ArrayRecord(weights)}), "train",
         "the client's reply carries 2 ArrayRecords", ["train"]),
        # a training action: pointed to the Message-API path
        (local_dp_mod, content(), good, "train.custom", "register the training function as @app.train\\(\\).*MessageLocalDpFedAvg", []),
        # distributed DP: no Message-API path, said why, before the client runs
        (distributed_dp_mod, content(), good, "train", "no distributed DP on the Message API because Flower 1.42 has SecAgg\\+ only", []),
        (secaggplus_mod, content(), good, "train", "no distributed DP on the Message API", []),
        (distributed_dp_mod, content(), good, "train.custom", "distributed DP runs on the legacy API only", []),
    ]
    for mod, msg_content, reply, kind, why, ran in refusals:
        out, calls = _call_mod(monkeypatch, mod, msg_content, reply, kind)
        assert isinstance(out, dprp.DprpError), (why, out)
        assert re.search(why, str(out)), (why, str(out))
        assert calls == ran, (why, calls)


def test_flower_parameters_are_accepted_as_weights():
    from flwr.common import Parameters

    params = ndarrays_to_parameters(initial_weights())
    lcfg = LocalConfig("privunit2", epsilon=4.0, rounds=2, clip=1.0, dim=DIM)
    dcfg = DistributedConfig("ddg", epsilon=4.0, delta=1e-5, rounds=2, clip=1.0, clients=4, dim=DIM)
    for s in (
        LocalDpFedAvg(lcfg, initial_parameters=params),
        DistributedDpFedAvg(dcfg, initial_parameters=params),
        MessageLocalDpFedAvg(lcfg, initial_arrays=params),
        MessageLocalDpFedAvg(lcfg, initial_arrays=ArrayRecord(initial_weights())),
    ):
        assert [w.shape for w in s.weights] == SHAPES
    assert isinstance(LocalDpFedAvg(lcfg, initial_parameters=params).initial_parameters, Parameters)
    with pytest.raises(dprp.DprpError, match="the model has 20 parameters, the configuration says 40"):
        LocalDpFedAvg(lcfg, initial_parameters=ndarrays_to_parameters(initial_weights()[:1]))
    with pytest.raises(dprp.DprpError, match="a int is not model weights"):
        LocalDpFedAvg(lcfg, initial_parameters=3)
