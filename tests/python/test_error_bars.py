"""Release.estimate's intervals hold their level over independent releases (issue 37 §5), and
the numbers that must not be printed (§4) are not: a row with itself, a zero query, ε above the
limit.

Coverage: 1000 releases of two rows (dp-oporp, p = 64, k = 32, ε = 5; a fresh projection seed
and test-only noise seed each), the 95% interval of ``Release.estimate(i, j, full=True)``
(``ip_lo``/``ip_hi``) must cover the true inner product a number of times inside the two-sided
binomial region whose tails are each at most 0.5e-6 under Binomial(1000, 0.95) — computed
below — and the interval shrunk by 20% must fall outside it (power).
"""

import json
import math

import numpy as np
import pytest

import dprp
from conftest import run_cli


def binomial_region(n, level=0.95, alpha=1e-6):
    """The covering counts a correct interval may give: both tails at most alpha/2."""
    lc = [0.0]
    for j in range(1, n + 1):
        lc.append(lc[-1] + math.log(n - j + 1) - math.log(j))
    pmf = [math.exp(lc[j] + j * math.log(level) + (n - j) * math.log(1 - level))
           for j in range(n + 1)]
    lo, below = 0, 0.0
    while below + pmf[lo] <= alpha / 2:
        below += pmf[lo]
        lo += 1
    hi, above = n, 0.0
    while above + pmf[hi] <= alpha / 2:
        above += pmf[hi]
        hi -= 1
    return lo, hi


def pair(p=64):
    rng = np.random.default_rng(11)
    u = rng.uniform(-1, 1, p)
    v = 0.5 * u + 0.5 * rng.uniform(-1, 1, p)
    return np.stack([u, v]).astype(np.float32)


@pytest.mark.filterwarnings("ignore:--noise-seed makes the release reproducible")
def test_release_estimate_intervals_cover_at_their_level(tmp_path):
    x = pair()
    truth = float(np.dot(x[0].astype(np.float64), x[1].astype(np.float64)))
    n = 1000
    covered = shrunk = 0
    for t in range(n):
        out = tmp_path / f"r{t}.dprp"
        rel = dprp.publish(x, output=out, mechanism="dp-oporp", epsilon=5.0, delta=1e-6, k=32,
                           seed=f"{0xe00000 + t:x}", noise_seed=f"py-{t}")
        e = rel.estimate(0, 1, full=True)
        assert rel.estimate(0, 1) == (e["inner_product"], e["se"])
        assert e["interval_level"] == 0.95
        lo, hi, est = e["ip_lo"], e["ip_hi"], e["inner_product"]
        covered += lo <= truth <= hi
        shrunk += est - 0.8 * (est - lo) <= truth <= est + 0.8 * (hi - est)
        del rel
        out.unlink()
    lo, hi = binomial_region(n)
    assert lo <= covered <= hi, (covered, lo, hi)
    assert not lo <= shrunk <= hi, ("no power", shrunk)


def test_full_estimate_is_the_cli_json(tmp_path, data):
    rel = dprp.publish(data, output=tmp_path / "r.dprp", mechanism="dp-oporp", epsilon=8.0,
                       delta=1e-6, k=32)
    for i, j in [(0, 1), (3, 3)]:
        cli = json.loads(run_cli("estimate", str(tmp_path / "r.dprp"), "--rows", f"{i},{j}",
                                 "--json"))[0]
        assert rel.estimate(i, j, full=True) == cli


def test_a_row_with_itself_is_its_squared_norm(tmp_path, data):
    rel = dprp.publish(data, output=tmp_path / "r.dprp", mechanism="dp-oporp", epsilon=8.0,
                       delta=1e-6, k=32)
    e = rel.estimate(3, 3, full=True)
    x = np.asarray(rel.sketches[3], dtype=np.float64)
    assert e["self_pair"] is True and e["cosine"] == 1.0
    # the noise energy kσ² removed, not ‖x̃‖² (which counts it as signal)
    assert e["inner_product"] == pytest.approx(float(x @ x) - e["noise_norm_sq"], rel=1e-9)
    assert e["ip_lo"] <= e["inner_product"] <= e["ip_hi"]


def test_zero_query_has_no_cosine_neighbours(tmp_path, data):
    rel = dprp.publish(data, output=tmp_path / "r.dprp", mechanism="dp-oporp", epsilon=8.0,
                       delta=1e-6, k=32)
    q = np.zeros((2, data.shape[1]))
    q[1] = data[0]
    ids, scores = rel.search(q, top=3)
    assert (ids[0] == 2**64 - 1).all() and np.isnan(scores[0]).all()
    assert (ids[1] != 2**64 - 1).all() and np.isfinite(scores[1]).all()
    ids, scores = rel.search(q, top=3, measure="ip")
    assert np.isfinite(scores[0]).all() and (scores[0] == 0).all()


def test_epsilon_above_the_limit_is_refused(tmp_path, data):
    with pytest.raises(dprp.DprpError, match="1e6"):
        dprp.calibrate(epsilon=1e300, mechanism="dp-oporp", delta=1e-6, dim=64, k=32)
    with pytest.raises(dprp.DprpError, match="1e6"):
        dprp.publish(data, output=tmp_path / "r.dprp", mechanism="dp-oporp", epsilon=1e300,
                     delta=1e-6, k=32)
    assert not (tmp_path / "r.dprp").exists()
    # the limit itself is accepted, and nothing in the report is NaN or infinite
    c = dprp.calibrate(epsilon=1e6, mechanism="dp-oporp", delta=1e-6, dim=64, k=32)
    text = json.dumps(c)
    assert c and "NaN" not in text and "Infinity" not in text
