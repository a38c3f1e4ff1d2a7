"""dprp.eval_retrieval: the `dprp eval retrieval` report as dicts, on numpy arrays."""

import numpy as np
import pytest

import dprp


def test_retrieval_report_and_its_reference():
    """At ε = 10⁴ the noise is negligible, so dp-oporp's precision@10 must be close to its
    noiseless reference's, and far above what a random ranking gives (10/n = 0.025): a
    report that mixed up rows or metrics would fail one of the two."""
    rng = np.random.default_rng(8)
    centres = rng.random((20, 32))
    train = np.clip(centres[rng.integers(0, 20, 400)] + 0.05 * rng.standard_normal((400, 32)), 0, 1)
    test = np.clip(centres[rng.integers(0, 20, 40)] + 0.05 * rng.standard_normal((40, 32)), 0, 1)
    rep = dprp.eval_retrieval(train.astype(np.float32), test, mechanisms="dp-oporp",
                              epsilons=[1e4], ks=[16], query_mode="raw", seed="1")
    assert rep["kind"] == "retrieval"
    assert rep["metrics"] == ["precision@10", "recall@100"]
    rows = {r["mechanism"]: r for r in rep["rows"]}
    mech = rows["dp-oporp"]
    ref = rows[mech["reference"]]
    assert mech["metrics"][0]["name"] == "precision@10" and mech["epsilon"] == 1e4
    p_mech, p_ref = mech["metrics"][0]["mean"], ref["metrics"][0]["mean"]
    assert p_mech > 0.25 and abs(p_mech - p_ref) < 0.1, (p_mech, p_ref)


def test_retrieval_errors():
    x = np.random.default_rng(1).random((50, 8))
    with pytest.raises(dprp.DprpError, match="mechanism"):
        dprp.eval_retrieval(x, x, mechanisms="nope", epsilons=[1.0], ks=[4])
    with pytest.raises(dprp.DprpError):
        dprp.eval_retrieval(x, x[:, :4], mechanisms="dp-oporp", epsilons=[1.0], ks=[4])
    with pytest.raises(dprp.DprpError, match="query mode"):
        dprp.eval_retrieval(x, x, mechanisms="dp-oporp", epsilons=[1.0], ks=[4],
                            query_mode="sideways")
    with pytest.raises(dprp.DprpError, match="ε|epsilon"):
        dprp.eval_retrieval(x, x, mechanisms="dp-oporp", epsilons=[], ks=[4])
    # through the request layer, the command's checks: a value outside [-1, 1] names its side,
    # row and column (issue 41); the same rows scaled into the domain run
    big = x.copy()
    big[7, 2] = 1.5
    with pytest.raises(dprp.DprpError, match=r"(?s)test.*row 7"):
        dprp.eval_retrieval(np.tile(x, (3, 1)), big, mechanisms="dp-oporp", epsilons=[1.0], ks=[4])
    with pytest.raises(dprp.DprpError, match="test"):
        dprp.eval_retrieval(np.tile(x, (3, 1)), x[:0], mechanisms="dp-oporp", epsilons=[1.0], ks=[4])
    rep = dprp.eval_retrieval(np.tile(x, (3, 1)), x, mechanisms="dp-oporp", epsilons=[1.0], ks=[4], seed="5eed")
    assert rep["rows"]
