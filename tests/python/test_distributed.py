"""dprp.DistributedEncoder and dprp.RoundsAccountant from Python: the planned error is the error
of the secure sum of fresh client messages (the noise is fresh per message, drawn from the OS),
guarantees at fewer survivors, residues checked, the accountant's refusals."""

import numpy as np
import pytest

import dprp

TRIALS = 200
CLIENTS = 10


@pytest.mark.parametrize("mechanism", ["ddg", "sketch-ddg", "binomial"])
def test_the_sum_of_fresh_messages_has_the_planned_error(mechanism):
    enc = dprp.DistributedEncoder(
        mechanism, dim=40, clients=CLIENTS, epsilon=2.0, delta=1e-5, clip=1.0, seed="cd" * 32, bits=20
    )
    mse = enc.plan()["mse"]
    x = np.random.default_rng(1).normal(size=40)
    x /= np.linalg.norm(x)  # at the clip: the plan's worst case for the sketch term
    m = 2**enc.bits
    errs = []
    for _ in range(TRIALS):
        s = sum(enc.encode(x).astype(np.int64) for _ in range(CLIENTS)) % m
        errs.append(float(np.sum((enc.decode(s, CLIENTS) - x) ** 2)))
    mean = float(np.mean(errs))
    se = float(np.std(errs)) / np.sqrt(TRIALS)
    # the plan's expected squared error, to ±15 %: at 200 trials the mean's standard error is
    # under 2 % of it (asserted), so the band is ≥ 7 standard errors wide.
    assert 0.85 * mse <= mean <= 1.15 * mse, (mean, se, mse)
    assert se < 0.03 * mse

    # Power, run: the same band fails (1) when the clients' noise is not independent — one
    # client's message counted for all ten, so its noise share adds up coherently — and (2) when
    # the noise is calibrated wrongly — an encoder planned for ε = 20 instead of 2.
    reused = []
    for _ in range(TRIALS // 4):
        s = (CLIENTS * enc.encode(x).astype(np.int64)) % m
        reused.append(float(np.sum((enc.decode(s, CLIENTS) - x) ** 2)))
    assert np.mean(reused) > 1.15 * mse, (np.mean(reused), mse)
    loose = dprp.DistributedEncoder(
        mechanism, dim=40, clients=CLIENTS, epsilon=20.0, delta=1e-5, clip=1.0, seed="cd" * 32, bits=20
    )
    wrong = []
    for _ in range(TRIALS // 4):
        s = sum(loose.encode(x).astype(np.int64) for _ in range(CLIENTS)) % m
        wrong.append(float(np.sum((loose.decode(s, CLIENTS) - x) ** 2)))
    assert np.mean(wrong) < 0.85 * mse, (np.mean(wrong), mse)


def test_messages_differ_and_fewer_survivors_cost_more():
    enc = dprp.DistributedEncoder("ddg", dim=40, clients=8, epsilon=1.0, delta=1e-5, clip=1.0, seed=7, max_clients=12)
    x = np.zeros(40)
    a, b = enc.encode(x), enc.encode(x)
    assert a.dtype == np.uint64 and a.shape == (enc.message_len,)
    assert not np.array_equal(a, b)  # fresh noise per message
    assert enc.guarantee_at(8)["epsilon"] == pytest.approx(enc.plan()["epsilon"], rel=1e-12)
    assert enc.guarantee_at(6)["epsilon"] > enc.guarantee_at(8)["epsilon"]
    assert enc.wrap_probability_at(12) <= 1e-6
    assert set(enc.guarantee_at(8)["cost"]) == {"rho"}
    with pytest.raises(dprp.DprpError, match="not below M"):
        enc.decode(np.full(enc.message_len, 2**16, dtype=np.uint64), 8)
    with pytest.raises(dprp.DprpError, match="negative"):
        enc.decode(np.full(enc.message_len, -1, dtype=np.int64), 8)
    with pytest.raises(dprp.DprpError, match="planned for dim = 40"):
        enc.encode(np.zeros(41))
    with pytest.raises(dprp.DprpError, match="not finite"):
        enc.encode(np.full(40, np.nan))
    with pytest.raises(dprp.DprpError, match="max_clients"):
        dprp.DistributedEncoder("ddg", dim=40, clients=8, epsilon=1.0, delta=1e-5, clip=1.0, seed=7, max_clients=4)
    with pytest.raises(dprp.DprpError, match="bits_per_parameter"):
        dprp.DistributedEncoder("ddg", dim=40, clients=8, epsilon=1.0, delta=1e-5, clip=1.0, seed=7, bits_per_parameter=2)


def test_rounds_accountant_from_python():
    acc = dprp.RoundsAccountant("zcdp", epsilon=1.0, delta=1e-3)
    for _ in range(8):
        acc.charge({"rho": 1 / 256})
    assert acc.total()["epsilon"] == pytest.approx(0.6880024554878086, abs=1e-11)
    with pytest.raises(dprp.DprpError, match="rho"):
        acc.charge({"epsilon": 0.1})
    local = dprp.RoundsAccountant("local", epsilon=3.0, delta=0.0)
    assert local.per_round(3)["epsilon"] == 1.0
    for _ in range(3):
        local.charge({"epsilon": 1.0})
    with pytest.raises(dprp.DprpError, match="past the budget"):
        local.charge({"epsilon": 1e-3})
    assert local.total()["rounds"] == 3
    with pytest.raises(dprp.DprpError, match="family"):
        dprp.RoundsAccountant("renyi", epsilon=1.0, delta=1e-5)
