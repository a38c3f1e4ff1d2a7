"""dprp.privatise and dprp.MeanAccumulator: the inputs they take (float32, lists, ProjUnit's k),
the ones they refuse with a clear message (non-1-D vectors, non-finite messages), and ProjUnit
built from keyword arguments exactly as `dprp publish -m projunit -k K --projection MAP` builds it
(issue 25, item 5)."""

import json
import re

import numpy as np
import pytest

import dprp
from conftest import run_cli

D, SEED = 16, "5eed"
PRIVUNITG = dict(mechanism="privunitg", epsilon=4.0, seed=SEED)


def unit(d=D):
    v = np.zeros(d)
    v[0], v[1] = 0.6, 0.8
    return v


# ---- 1. a non-finite message is refused and does not poison the accumulator ----------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_message_is_refused_and_leaves_the_accumulator_unchanged(bad):
    acc = dprp.MeanAccumulator(dim=D, **PRIVUNITG)
    good = dprp.privatise(unit(), row=0, **PRIVUNITG)
    acc.add(0, good)
    state = acc.to_json()
    msg = good.copy()
    msg[3] = bad
    with pytest.raises(dprp.DprpError, match=r"message.*value 3 .*row 1's message"):
        acc.add(1, msg)
    assert acc.n == 1 and acc.to_json() == state
    # the refused row id was not claimed: a good message for it is still accepted
    acc.add(1, dprp.privatise(unit(), row=1, **PRIVUNITG))
    est = acc.finish()
    assert est["n"] == 2
    assert np.all(np.isfinite(est["mean"]))


def test_non_finite_message_in_add_rows_names_message_and_row():
    acc = dprp.MeanAccumulator(dim=D, **PRIVUNITG)
    msgs = np.stack([dprp.privatise(unit(), row=r, **PRIVUNITG) for r in range(10, 13)])
    msgs[2, 5] = np.inf
    with pytest.raises(dprp.DprpError, match=r"value 5 .*message 2 \(row 12\)"):
        acc.add_rows(10, msgs)
    assert acc.n == 0
    acc.add_rows(10, msgs[:2])
    assert acc.n == 2 and np.all(np.isfinite(acc.finish()["mean"]))


def test_float64_message_beyond_float32_range_is_refused():
    acc = dprp.MeanAccumulator(dim=D, **PRIVUNITG)
    msg = dprp.privatise(unit(), row=0, **PRIVUNITG).astype(np.float64)
    msg[0] = 1e300
    with pytest.raises(dprp.DprpError, match="value 0 .*inf"):
        acc.add(0, msg)
    assert acc.n == 0


# ---- 3. float32, float64 and lists ------------------------------------------------------------


@pytest.mark.parametrize("convert", [
    lambda v: v.astype(np.float32),
    lambda v: v.astype(np.float64),
    lambda v: v.astype(np.float32)[::-1][::-1],  # a strided view
    lambda v: list(v),
    lambda v: tuple(float(x) for x in v),
], ids=["float32", "float64", "view", "list", "tuple"])
def test_privatise_takes_float32_float64_and_lists(convert):
    msg = dprp.privatise(convert(unit()), row=0, **PRIVUNITG)
    assert msg.dtype == np.float32 and msg.shape == (D,)
    assert np.all(np.isfinite(msg))


def test_accumulator_takes_float64_messages_and_lists():
    acc = dprp.MeanAccumulator(dim=D, **PRIVUNITG)
    msgs = [dprp.privatise(unit(), row=r, **PRIVUNITG) for r in range(3)]
    acc.add(0, msgs[0].astype(np.float64))
    acc.add(1, [float(x) for x in msgs[1]])
    acc.add_rows(2, np.stack(msgs[2:]).astype(np.float64))
    ref = dprp.MeanAccumulator(dim=D, **PRIVUNITG)
    ref.add_rows(0, np.stack(msgs))
    assert acc.n == 3
    np.testing.assert_array_equal(acc.finish()["mean"], ref.finish()["mean"])


@pytest.mark.parametrize("v,exc,match", [
    (np.zeros(D, dtype=np.int64), TypeError, "dtype"),
    ("abc", TypeError, "1-D numpy array"),
    ([[0.1, 0.2], [0.3]], TypeError, "list of numbers"),
])
def test_privatise_refuses_other_types(v, exc, match):
    with pytest.raises(exc, match=match):
        dprp.privatise(v, row=0, **PRIVUNITG)


# ---- 4. one vector, not a matrix --------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1, D), (2, D), (2, 2, 4), ()])
def test_privatise_refuses_non_1d_input_naming_the_shape(shape):
    expected = re.escape(f"privatise takes one vector (1-D array of d values); got shape {shape}")
    with pytest.raises(dprp.DprpError, match=expected):
        dprp.privatise(np.zeros(shape), row=0, **PRIVUNITG)
    with pytest.raises(dprp.DprpError, match=expected):
        dprp.privatise(np.zeros(shape, dtype=np.float32), row=0, **PRIVUNITG)
    if shape:
        with pytest.raises(dprp.DprpError, match=expected):
            dprp.privatise(np.zeros(shape).tolist(), row=0, **PRIVUNITG)


def test_add_refuses_a_matrix_naming_the_shape():
    acc = dprp.MeanAccumulator(dim=D, **PRIVUNITG)
    with pytest.raises(dprp.DprpError, match=r"add_rows.*got shape \(2, 16\)"):
        acc.add(0, np.zeros((2, D), dtype=np.float32))
    with pytest.raises(dprp.DprpError, match="2-D"):
        acc.add_rows(0, np.zeros(D, dtype=np.float32))


# ---- 2. ProjUnit from keyword arguments, as the CLI builds it ---------------------------------


def test_missing_k_names_the_keyword():
    for f in (lambda: dprp.privatise(unit(), mechanism="projunit", epsilon=4.0, seed=SEED),
              lambda: dprp.MeanAccumulator(mechanism="projunit-correlated", epsilon=4.0, dim=D,
                                           seed=SEED)):
        with pytest.raises(dprp.DprpError, match=r"missing k: .*k="):
            f()
    with pytest.raises(dprp.DprpError, match=r"missing radius: .*radius="):
        dprp.privatise(unit(), mechanism="privunit2-norm", epsilon=4.0, epsilon_norm=1.0,
                       seed=SEED)
    with pytest.raises(dprp.DprpError, match=r"k"):
        dprp.privatise(unit(), mechanism="projunit", epsilon=4.0, seed=SEED, k=D + 1)
    with pytest.raises(dprp.DprpError, match=r"invalid k"):
        dprp.privatise(unit(), mechanism="privunitg", epsilon=4.0, seed=SEED, k=4)


PROJUNITS = [("projunit", None), ("projunit", "rotation"), ("projunit", "gaussian"),
             ("projunit", "srht-nearly-unbiased"), ("projunit-correlated", None)]


@pytest.mark.parametrize("mechanism,projection", PROJUNITS)
def test_projunit_accumulator_decodes_a_cli_release_as_dprp_mean(tmp_path, mechanism,
                                                                  projection):
    """The CLI publishes ProjUnit messages of 300 users; a MeanAccumulator built from the same
    keyword arguments decodes them (same public maps) into the mean `dprp mean` prints, and
    privatise sends messages of the release's width."""
    d, k, n, seed = 32, 8, 300, "5eed"
    x = np.random.default_rng(7).standard_normal((n, d))
    np.save(tmp_path / "users.npy", x)
    args = ["publish", str(tmp_path / "users.npy"), "-m", mechanism, "-k", str(k), "-e", "8",
            "--projection-seed", seed, "--normalize", "l2", "-o", str(tmp_path / "r.dprp")]
    if projection:
        args += ["--projection", projection]
    run_cli(*args)
    cli = json.loads(run_cli("mean", str(tmp_path / "r.dprp"), "--json"))
    rel = dprp.Release.open(tmp_path / "r.dprp")
    kw = dict(mechanism=mechanism, epsilon=8.0, seed=seed, k=k, projection=projection)
    acc = dprp.MeanAccumulator(dim=d, **kw)
    acc.add_rows(0, rel.sketches)
    est = acc.finish()
    np.testing.assert_allclose(est["mean"], cli["mean"], rtol=1e-9, atol=1e-12)
    assert est["expected_sq_error"] == pytest.approx(cli["expected_sq_error"], rel=1e-12)
    # one row at a time, and a Python int seed for the same hex seed: the same mean
    one = dprp.MeanAccumulator(dim=d, **{**kw, "seed": 0x5EED})
    for r, msg in enumerate(rel.sketches):
        one.add(r, msg)
    np.testing.assert_allclose(one.finish()["mean"], cli["mean"], rtol=1e-9, atol=1e-12)
    msg = dprp.privatise(x[0] / np.linalg.norm(x[0]), row=n, **kw)
    assert msg.shape == (rel.k,) and msg.dtype == np.float32


@pytest.mark.parametrize("mechanism,projection", [("projunit", None),
                                                  ("projunit", "srht-nearly-unbiased"),
                                                  ("projunit-correlated", None)])
def test_projunit_round_trip(mechanism, projection):
    """800 users privatise one unit vector with ProjUnit; the server's mean is within 4 RMSE of
    it (as test_local_dp_mean_round_trip for privunitg)."""
    d, n = 32, 800
    v = unit(d)
    kw = dict(mechanism=mechanism, epsilon=8.0, seed="5eed", k=8, projection=projection)
    acc = dprp.MeanAccumulator(dim=d, **kw)
    for user in range(n):
        acc.add(user, dprp.privatise(v, row=user, **kw))
    est = acc.finish()
    err2 = float(np.sum((est["mean"] - v) ** 2))
    assert err2 <= 16 * est["expected_sq_error"], (err2, est["expected_sq_error"])
