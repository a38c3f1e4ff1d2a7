"""dprp.calibrate against the formulas, and the local-DP client/server round trip."""

import json
import math

import numpy as np
import pytest

import dprp


def phi(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def analytic_delta(sigma, sens, eps):
    """δ achieved by N(0, σ²) at ℓ₂ sensitivity Δ (Balle & Wang 2018, Theorem 8)."""
    a, b = sens / (2 * sigma), eps * sigma / sens
    return phi(a - b) - math.exp(eps) * phi(-a - b)


@pytest.mark.parametrize("eps,delta,sens", [(1.0, 1e-5, 1.0), (4.0, 1e-6, 2.5), (0.3, 1e-3, 0.7)])
def test_sigma_for_a_sensitivity(eps, delta, sens):
    c = dprp.calibrate(epsilon=eps, delta=delta, sensitivity=sens)
    assert c["sensitivity"] == sens
    # the analytic σ achieves δ exactly; 1% less noise would not (power)
    assert analytic_delta(c["sigma_analytic"], sens, eps) == pytest.approx(delta, rel=1e-6)
    assert analytic_delta(0.99 * c["sigma_analytic"], sens, eps) > delta * 1.01
    assert c["sigma_classical"] == pytest.approx(
        math.sqrt(2 * math.log(1.25 / delta)) * sens / eps, rel=1e-12)
    assert c["classical_proven"] == (eps < 1.0)


def test_mechanism_calibration_is_what_publish_uses(tmp_path, data):
    c = dprp.calibrate(epsilon=5.0, delta=1e-6, mechanism="dp-oporp", k=32, dim=48, seed=9)
    rel = dprp.publish(data, output=tmp_path / "r.dprp", mechanism="dp-oporp", epsilon=5.0,
                       delta=1e-6, k=32, seed=9)
    g = rel.meta["mechanism"]["gaussian"]
    assert c["sigma"] == g["sigma"] and c["sensitivity"] == g["sensitivity"]
    assert c["record"] == rel.meta["mechanism"]
    assert c["guarantee"] == rel.guarantee
    assert (c["p"], c["k"]) == (48, 32)
    # the OPORP σ meets (ε, δ) for its Δ₂ (float noise: the lattice adds its rounding terms)
    f = dprp.calibrate(epsilon=5.0, delta=1e-6, mechanism="dp-oporp", k=32, dim=48, seed=9,
                       noise="float")
    assert analytic_delta(f["sigma"], f["sensitivity"], 5.0) <= 1e-6 * (1 + 1e-6)


def test_local_dp_mean_round_trip():
    """1000 users privatise the same unit vector with privunitg; the server's mean must be within
    4 root-mean-square errors of it (‖mean − v‖² ≤ 16·E‖mean − v‖²: Markov alone bounds the
    failure probability by 1/16, and the sum of 16 independent squared errors concentrates far
    tighter), and a decoder off by a factor of 2 either way (mean 0.5·v or 2·v, an error of
    0.25 or 1) must be caught: 16·E‖mean − v‖² ≈ 0.11 here."""
    d, n, seed = 16, 1000, "5eed"
    v = np.zeros(d)
    v[0], v[1] = 0.6, 0.8
    server = dprp.MeanAccumulator(mechanism="privunitg", epsilon=4.0, dim=d, seed=seed)
    other = dprp.MeanAccumulator(mechanism="privunitg", epsilon=4.0, dim=d, seed=seed)
    for user in range(n):
        msg = dprp.privatise(v, mechanism="privunitg", epsilon=4.0, seed=seed, row=user)
        (server if user % 2 == 0 else other).add(user, msg)
    server.merge_json(other.to_json())
    assert server.n == n
    with pytest.raises(dprp.DprpError):
        server.merge(other)  # the same users twice
    est = server.finish()
    assert est["n"] == n
    assert est["expected_sq_error"] == pytest.approx(est["mse_per_user"] / n)
    err2 = float(np.sum((est["mean"] - v) ** 2))
    assert err2 <= 16 * est["expected_sq_error"], (err2, est["expected_sq_error"])
    for wrong in (0.5, 2.0):
        assert float(np.sum((wrong * est["mean"] - v) ** 2)) > 16 * est["expected_sq_error"]
    with pytest.raises(dprp.DprpError, match="not a local"):
        dprp.MeanAccumulator(mechanism="dp-oporp", epsilon=1.0, dim=d, seed=seed)
    wrong = dprp.MeanAccumulator(mechanism="privunitg", epsilon=3.0, dim=d, seed=seed)
    with pytest.raises(dprp.DprpError, match="different mechanism configuration"):
        wrong.merge(server)
