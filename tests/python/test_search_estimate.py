"""Release.search agrees with `dprp query`; Release.estimate's value and standard error."""

import json

import numpy as np
import pytest

import dprp
from conftest import run_cli


@pytest.mark.parametrize("mechanism,extra", [
    ("dp-oporp", dict(delta=1e-6)),
    ("dp-signoporp-rr", dict()),
])
def test_search_matches_cli_query(tmp_path, data, mechanism, extra):
    rel = dprp.publish(data, output=tmp_path / "r.dprp", mechanism=mechanism, epsilon=8.0,
                       k=32, **extra)
    queries = np.random.default_rng(3).random((70, 48))
    np.save(tmp_path / "q.npy", queries)
    ids, scores = rel.search(queries, top=5)
    assert ids.shape == scores.shape == (70, 5)
    assert ids.dtype == np.uint64 and scores.dtype == np.float32
    cli = json.loads(run_cli("query", str(tmp_path / "r.dprp"), "--queries",
                             str(tmp_path / "q.npy"), "--top", "5", "--json"))
    assert cli["measure"] == ("hamming" if "sign" in mechanism else "cosine")
    for q, res in enumerate(cli["results"]):
        assert res["query"] == q
        assert [h["id"] for h in res["neighbours"]] == ids[q].tolist()
        # JSON carries the f32 score printed as shortest round-trip decimal
        assert np.array_equal(np.float32([h["score"] for h in res["neighbours"]]), scores[q])
    if "sign" not in mechanism:
        ids_ip, _ = rel.search(queries[:3], top=4, measure="ip")
        cli_ip = json.loads(run_cli("query", str(tmp_path / "r.dprp"), "--queries",
                                    str(tmp_path / "q.npy"), "--top", "4", "--json",
                                    "--measure", "ip"))
        for q in range(3):
            assert [h["id"] for h in cli_ip["results"][q]["neighbours"]] == ids_ip[q].tolist()


def test_search_finds_the_row_itself_at_high_epsilon(tmp_path, data):
    """Power for the query path: with little noise each row's own sketch ranks first; a query
    projected with a wrong map, or scaled differently, would not."""
    rel = dprp.publish(data, output=tmp_path / "r.dprp", mechanism="dp-oporp", epsilon=1e4,
                       delta=1e-6, k=48)
    ids, _ = rel.search(data[:50] - data.mean(axis=0) * 0, top=1)
    assert (ids[:, 0] == np.arange(50)).mean() >= 0.9


def test_estimate_matches_cli_and_its_standard_error_is_calibrated(tmp_path):
    """Inner products of 300 disjoint pairs: z = (estimate − true)/se must have mean square
    near 1 (E z² = 1 when the se is right; the plug-in se errs on the large side, so allow
    down to 0.5). 300 pairs give sd(mean z²) ≈ √(2/300) = 0.08: the band [0.5, 1.35] is over
    4 sd above, and a se off by 2× in either direction (mean z² ≈ 4 or 0.25) is caught."""
    rng = np.random.default_rng(99)
    x = rng.random((600, 256)).astype(np.float32)
    rel = dprp.publish(x, output=tmp_path / "e.dprp", mechanism="dp-oporp", epsilon=4.0,
                       delta=1e-6, k=128, seed=11, noise_seed="estimate-test")
    truth = np.einsum("ij,ij->i", x[0::2].astype(np.float64), x[1::2].astype(np.float64))
    est = np.array([rel.estimate(2 * i, 2 * i + 1) for i in range(300)])
    z = (est[:, 0] - truth) / est[:, 1]
    msq = float(np.mean(z * z))
    assert 0.5 <= msq <= 1.35, msq
    assert np.mean(((est[:, 0] - truth) / (2 * est[:, 1])) ** 2) < 0.5  # se ×2: caught
    assert np.mean(((est[:, 0] - truth) / (0.5 * est[:, 1])) ** 2) > 1.35  # se ÷2: caught
    line = json.loads(run_cli("estimate", str(tmp_path / "e.dprp"), "--rows", "0,1", "--json"))
    got = rel.estimate(0, 1)
    assert line[0]["inner_product"] == pytest.approx(got[0], rel=1e-12)
    assert line[0]["se"] == pytest.approx(got[1], rel=1e-12)


def test_sign_estimate_is_a_debiased_cosine(tmp_path):
    """100 pairs with cosines near 0.9 (b = 0.7·a + 0.3·noise, centred); at ε = 50 the flips are
    rare, so the debiased cosine tracks the true one: within 4 se + 0.1 (the SRP angle model is
    exact only for Gaussian projections) for nearly all pairs, and not against the negated
    cosine (power: an estimate with the wrong sign or no debiasing is caught)."""
    rng = np.random.default_rng(5)
    a = rng.random((100, 48)) - 0.5
    b = 0.7 * a + 0.3 * (rng.random((100, 48)) - 0.5)
    x = np.empty((200, 48), dtype=np.float32)
    x[0::2], x[1::2] = a, b
    rel = dprp.publish(x, output=tmp_path / "s.dprp", mechanism="dp-signoporp-rr",
                       epsilon=50.0, k=48)
    est = np.array([rel.estimate(2 * i, 2 * i + 1) for i in range(100)])
    a, b = x[0::2].astype(np.float64), x[1::2].astype(np.float64)
    true = np.einsum("ij,ij->i", a, b) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert np.all((est[:, 0] >= -1) & (est[:, 0] <= 1) & (est[:, 1] >= 0))
    ok = np.abs(est[:, 0] - true) <= 4 * est[:, 1] + 0.1
    assert ok.mean() >= 0.9, ok.mean()
    assert (np.abs(est[:, 0] + true) <= 4 * est[:, 1] + 0.1).mean() < 0.1
