"""dprp.flower in Flower's simulation engine: 10 clients, 3 rounds per mod; the SecAgg+ sum
against the plain modular sum of the clients' residues; refusals of bad clients; dropouts past
the threshold; the budget across rounds; bad configurations refused before round 1."""

import math

import numpy as np
import pytest

import dprp
from flower_apps import (
    Recording,
    DIM,
    Misbehaviour,
    client_app,
    initial_weights,
    residue_sum,
    secagg_workflow,
    server_app,
    simulate,
    true_update,
)
from dprp.flower import DistributedConfig, DistributedDpFedAvg, LocalConfig, LocalDpFedAvg

CLIENTS = 10


def true_mean(partitions):
    return np.mean([true_update(p) for p in partitions], axis=0)


def run_distributed(tmp_path, cfg, rounds, bad=Misbehaviour()):
    strategy = Recording(cfg, initial_parameters=initial_weights())
    simulate(server_app(strategy, rounds, secagg_workflow(cfg)), client_app(["distributed"], tmp_path, bad), CLIENTS)
    return strategy


@pytest.mark.parametrize("mechanism,bits", [("ddg", 16), ("sketch-ddg", 16), ("binomial", 20)])
def test_secagg_sum_equals_the_plain_modular_sum(tmp_path, mechanism, bits):
    cfg = DistributedConfig(mechanism, epsilon=12.0, delta=1e-5, rounds=3, clip=1.0, clients=CLIENTS, dim=DIM, bits=bits)
    s = run_distributed(tmp_path, cfg, 3)
    assert [r["round"] for r in s.reports] == [1, 2, 3]
    for r in s.reports:
        got = s.residues[r["round"]]
        plain = residue_sum(tmp_path, r["round"], cfg, set(r["nodes"]))
        assert got.shape == (cfg.encoder().message_len,)
        np.testing.assert_array_equal(got, plain)
        assert r["clients"] == CLIENTS
    # power: the comparison sees a change of one residue in one client's message
    off = residue_sum(tmp_path, 1, cfg, set(s.reports[0]["nodes"][1:]))
    assert not np.array_equal(off, s.residues[1])
    # the account: three even shares of the budget add up to it (zCDP or basic composition)
    # (the planners reach at most each round's share: the total is at most, and close to, 12)
    assert 12.0 * (1 - 1e-4) <= s.reports[-1]["epsilon_total"] <= 12.0 * (1 + 1e-9)
    assert s.reports[0]["epsilon_round"] < 12.0


def test_distributed_mean_is_the_clients_mean_within_the_plan(tmp_path):
    cfg = DistributedConfig("ddg", epsilon=150.0, delta=1e-5, rounds=3, clip=1.0, clients=CLIENTS, dim=DIM)
    s = run_distributed(tmp_path, cfg, 3)
    mse = cfg.encoder().plan()["mse"]
    mu = true_mean(range(CLIENTS))
    # the weights move by the decoded mean each round: after 3 rounds, by 3 means
    final = np.concatenate([w.ravel() for w in s.weights])
    err = float(np.sum((final - 3 * mu) ** 2))
    # three independent rounds: E err = 3·mse; Markov at 20× gives a false failure ≤ 5 %
    assert err <= 20 * 3 * mse, (err, mse)
    # power: the signal is far above that tolerance (a decoder returning 0 fails)
    assert float(np.sum((3 * mu) ** 2)) > 20 * 3 * mse


def test_bad_clients_are_refused_and_the_round_goes_on(tmp_path):
    cfg = DistributedConfig("ddg", epsilon=12.0, delta=1e-5, rounds=3, clip=1.0, clients=CLIENTS, dim=DIM, min_clients=7, bits=20)
    s = run_distributed(tmp_path, cfg, 2, Misbehaviour(nan=(2,), rogue=(5,), plain=(7,)))
    assert len(s.reports) == 2
    for r in s.reports:
        # the NaN client's mod refused to send, and so did the one under Flower's own
        # secaggplus_mod (its distributed_dp_mod is not inside dprp's masking): error replies,
        # dropouts; the rogue one's masked vector (another configuration) was dropped before the
        # sum; SecAgg+ recovered the three clients' masks
        assert r["clients"] == CLIENTS - 3 and r["sampled"] == CLIENTS
        assert r["refused"] == 1 and r["failures"] >= 2
        np.testing.assert_array_equal(s.residues[r["round"]], residue_sum(tmp_path, r["round"], cfg, set(r["nodes"])))
        # fewer noise shares than planned for all ten: the round is charged more
        assert r["epsilon_round"] > cfg.encoder().guarantee_at(CLIENTS)["epsilon"]


def test_more_dropouts_than_the_threshold_halt_the_round(tmp_path):
    cfg = DistributedConfig("ddg", epsilon=12.0, delta=1e-5, rounds=3, clip=1.0, clients=CLIENTS, dim=DIM, min_clients=9, bits=20)
    s = run_distributed(tmp_path, cfg, 2, Misbehaviour(nan=(1, 4)))
    assert s.reports == []  # nothing was unmasked, nothing charged
    assert "fewer than min_clients = 9" in s.halted
    assert [r for r, _ in s.halts] == [1, 2] and all("min_clients = 9" in why for _, why in s.halts)
    assert s.accountant.total()["rounds"] == 0
    assert all(w.sum() == 0 for w in s.weights)


def test_the_budget_stops_the_run(tmp_path):
    cfg = DistributedConfig("ddg", epsilon=4.0, delta=1e-5, rounds=2, clip=1.0, clients=CLIENTS, dim=DIM)
    s = run_distributed(tmp_path, cfg, 3)
    assert [r["round"] for r in s.reports] == [1, 2]
    assert "past the budget" in s.stopped


@pytest.mark.parametrize(
    "mechanism,extra",
    [("privunit2", {}), ("projunit", {"k": 16, "projection": "srht"}), ("privunit2-norm", {"epsilon_norm": 0.5})],
)
def test_local_dp_rounds(mechanism, extra):
    cfg = LocalConfig(mechanism, epsilon=24.0, rounds=3, clip=1.0, dim=DIM, **extra)
    strategy = LocalDpFedAvg(cfg, initial_parameters=initial_weights(), min_fit_clients=CLIENTS, min_available_clients=CLIENTS)
    simulate(server_app(strategy, 3), client_app(["local"]), CLIENTS)
    assert [r["round"] for r in strategy.reports] == [1, 2, 3]
    assert all(r["clients"] == CLIENTS and r["refused"] == 0 for r in strategy.reports)
    assert strategy.reports[-1]["epsilon_total"] == pytest.approx(24.0)
    final = np.concatenate([w.ravel() for w in strategy.weights])
    err = float(np.sum((final - 3 * true_mean(range(CLIENTS))) ** 2))
    expected = sum(r["expected_sq_error"] for r in strategy.reports)
    assert err <= 20 * expected, (err, expected)  # Markov: a false failure ≤ 5 %


def test_local_dp_refuses_a_corrupted_message():
    cfg = LocalConfig("privunit2", epsilon=24.0, rounds=3, clip=1.0, dim=DIM)
    strategy = LocalDpFedAvg(cfg, initial_parameters=initial_weights(), min_fit_clients=CLIENTS, min_available_clients=CLIENTS)

    def corrupt_mod(msg, ctxt, call_next):
        out = call_next(msg, ctxt)
        if int(ctxt.node_config["partition-id"]) == 3 and msg.metadata.message_type == "train":
            from flwr.compat.common import recorddict_compat as compat
            from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays

            res = compat.recorddict_to_fitres(out.content, keep_input=True)
            m = parameters_to_ndarrays(res.parameters)[0]
            res.parameters = ndarrays_to_parameters([m[:-1]])  # one value short
            out.content = compat.fitres_to_recorddict(res, keep_input=True)
        return call_next(msg, ctxt) if False else out

    simulate(server_app(strategy, 1), client_app([corrupt_mod, dprp.flower.local_dp_mod]), CLIENTS)
    (r,) = strategy.reports
    assert r["clients"] == CLIENTS - 1 and r["refused"] == 1
    assert "has 39 values, the mechanism sends 40" in r["refusals"][0][1]


def test_bad_configurations_are_refused_before_round_one():
    with pytest.raises(dprp.DprpError, match="bits"):
        DistributedConfig("ddg", epsilon=1.0, delta=1e-5, rounds=3, clip=1.0, clients=10, dim=DIM, bits=40)
    with pytest.raises(dprp.DprpError, match="min_clients"):
        DistributedConfig("ddg", epsilon=1.0, delta=1e-5, rounds=3, clip=1.0, clients=10, dim=DIM, min_clients=11)
    with pytest.raises(dprp.DprpError, match="min_clients"):
        DistributedConfig("binomial", epsilon=1.0, delta=1e-5, rounds=3, clip=1.0, clients=10, dim=DIM, min_clients=8)
    with pytest.raises(dprp.DprpError, match="ε"):
        DistributedDpFedAvg(
            DistributedConfig("ddg", epsilon=-1.0, delta=1e-5, rounds=3, clip=1.0, clients=10, dim=DIM),
            initial_parameters=initial_weights(),
        )
    with pytest.raises(dprp.DprpError, match="dim"):
        DistributedDpFedAvg(
            DistributedConfig("ddg", epsilon=1.0, delta=1e-5, rounds=3, clip=1.0, clients=10, dim=DIM + 1),
            initial_parameters=initial_weights(),
        )
    with pytest.raises(dprp.DprpError, match="epsilon_norm"):
        LocalConfig("privunit2-norm", epsilon=3.0, rounds=3, clip=1.0, dim=DIM, epsilon_norm=1.5)
    with pytest.raises(dprp.DprpError, match="mechanism"):
        LocalConfig("laplace", epsilon=3.0, rounds=3, clip=1.0, dim=DIM)


def test_masks_come_from_shake256_of_the_whole_seed():
    from dprp.flower import shake_masks

    seed = bytes(range(32))
    a = shake_masks(seed, 2**32, [(1,), (3, 4), ()])
    assert [x.shape for x in a] == [(1,), (3, 4), ()]
    assert all(x.dtype == np.int64 and (x >= 0).all() and (x < 2**32).all() for x in a)
    assert all(np.array_equal(x, y) for x, y in zip(a, shake_masks(seed, 2**32, [(1,), (3, 4), ()])))
    # every byte of the seed matters (Flower's XOR-folds it to 32 bits: these two collide there)
    other = bytes(range(4, 8)) + bytes(range(4)) + bytes(range(8, 32))
    import flwr.common.secure_aggregation.secaggplus_utils as fu

    assert np.array_equal(fu.pseudo_rand_gen(seed, 2**32, [(8,)])[0], fu.pseudo_rand_gen(other, 2**32, [(8,)])[0])
    assert not np.array_equal(shake_masks(seed, 2**32, [(8,)])[0], shake_masks(other, 2**32, [(8,)])[0])
    # uniform mod M: 2^16 draws mod 2^4 in 16 bins, chi-square with 15 degrees of freedom
    v = shake_masks(seed, 16, [(1 << 16,)])[0]
    counts = np.bincount(v, minlength=16)
    chi2 = float(((counts - 4096.0) ** 2 / 4096.0).sum())
    assert chi2 < 50.0, chi2  # P(χ²₁₅ > 50) ≈ 1e-5; power: Flower's draws never reach M − 1
    assert fu.pseudo_rand_gen(seed, 16, [(1 << 16,)])[0].max() == 14
    with pytest.raises(dprp.DprpError, match="power of two"):
        shake_masks(seed, 10, [(2,)])


def test_config_round_trips_and_refuses_tampering():
    cfg = DistributedConfig("sketch-ddg", epsilon=2.0, delta=1e-6, rounds=5, clip=0.5, clients=10, dim=DIM, bits_per_parameter=2.0)
    sent = cfg.to_config()
    assert DistributedConfig.from_config(sent) == cfg
    tampered = dict(sent, **{"dprp.clip": 5.0})
    with pytest.raises(dprp.DprpError, match="fingerprint"):
        DistributedConfig.from_config(tampered)
    with pytest.raises(dprp.DprpError, match="LocalConfig"):
        LocalConfig.from_config(sent)
    assert math.isfinite(cfg.encoder().bits_per_parameter) and cfg.encoder().bits_per_parameter <= 2.0
