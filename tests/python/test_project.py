"""Raw queries projected for a database: `dprp project` (.npy, .parquet) and Release.project give
the sketches `dprp query` / Release.search compare with the rows; Release.rerank re-ranks
candidates by the estimates `dprp estimate --query-vector` prints."""

import json
import subprocess

import numpy as np
import pyarrow.parquet as pq
import pytest

import dprp
from conftest import dprp_bin

N, P = 300, 48


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    d = tmp_path_factory.mktemp("project")
    rng = np.random.default_rng(11)
    x = rng.standard_normal((N, P)).astype(np.float32)
    real = dprp.publish(x, output=d / "real.dprp", mechanism="dp-oporp", epsilon=6.0,
                        delta=1e-6, k=32, scale=8.0)
    signs = dprp.publish(x, output=d / "signs.dprp", mechanism="dp-signrp-rr", epsilon=6.0, delta=1e-6,
                         k=70, normalize="l2")
    q = rng.standard_normal((7, P)).astype(np.float32)
    np.save(d / "q.npy", q)
    return dict(dir=d, real=real, signs=signs, q=q, x=x)


def project_cli(release, queries, out, *extra):
    return subprocess.run([dprp_bin(), "project", str(release.path), "--queries", str(queries),
                           "-o", str(out), *extra], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("kind", ["real", "signs"])
def test_cli_and_python_project_alike_and_match_search(made, kind):
    r, d = made[kind], made["dir"]
    got = r.project(made["q"])
    if kind == "real":
        assert got.dtype == np.float32 and got.shape == (7, r.k)
    else:
        assert got.dtype == np.uint64 and got.shape == (7, (r.k + 63) // 64)
    out = project_cli(r, d / "q.npy", d / f"{kind}.npy")
    assert out.returncode == 0, out.stderr
    assert "note: queries scaled" in out.stderr and "projected 7 queries" in out.stderr
    np.testing.assert_array_equal(np.load(d / f"{kind}.npy"), got)
    out = project_cli(r, d / "q.npy", d / f"{kind}.parquet")
    assert out.returncode == 0, out.stderr
    t = pq.read_table(d / f"{kind}.parquet")
    assert t.column("id").to_pylist() == list(range(7))
    meta = pq.read_metadata(d / f"{kind}.parquet").metadata
    assert meta[b"dprp.projected_for"].decode() == r.fingerprint
    assert b"dprp.release" not in meta  # not itself a release
    if kind == "real":
        vals = np.array(t.column("sketch").to_pylist(), dtype=np.float32)
        np.testing.assert_array_equal(vals, got)
        # the projection is what search compares: inner products of the projected query with
        # the rows rank as Release.search(measure="ip") does
        scores = got @ np.asarray(r.sketches).T
        ids, s = r.search(made["q"], top=5, measure="ip")
        for qi in range(7):
            np.testing.assert_array_equal(ids[qi], np.argsort(-scores[qi], kind="stable")[:5])
    else:
        raw = np.frombuffer(b"".join(t.column("sketch").to_pylist()), dtype="<u8")
        np.testing.assert_array_equal(raw.reshape(got.shape), got)
        ids, s = r.search(made["q"], top=5)
        words = np.asarray(r.sketches)
        mask = np.uint64((1 << (r.k % 64)) - 1)
        for qi in range(7):
            x = np.bitwise_xor(words, got[qi])
            x[:, -1] &= mask
            agree = r.k - np.unpackbits(x.view(np.uint8), axis=1).sum(axis=1)
            assert np.array_equal(np.sort(agree)[::-1][:5], s[qi].astype(int))


def test_no_scale_and_bad_input(made):
    r, d = made["real"], made["dir"]
    assert np.array_equal(r.project(made["q"]), r.project(made["q"] / 8, no_scale=True))
    with pytest.raises(dprp.DprpError, match="no_scale"):
        r.project(made["q"], no_scale=True)
    with pytest.raises(dprp.DprpError, match="features"):
        r.project(made["q"][:, :10])
    np.save(d / "narrow.npy", made["q"][:, :10])
    out = project_cli(r, d / "narrow.npy", d / "narrow-out.npy")
    assert out.returncode != 0 and "--queries" in out.stderr and "features" in out.stderr
    assert not (d / "narrow-out.npy").exists()
    out = project_cli(r, d / "q.npy", d / "q.csv")
    assert out.returncode != 0 and ".npy or .parquet" in out.stderr
    assert not (d / "q.csv").exists()


def test_rerank_gives_dprp_estimate_numbers(made):
    r, d = made["real"], made["dir"]
    q = made["q"][:1]
    np.save(d / "q1.npy", q)
    cand = np.array([[3, 17, 17, 250, 2**64 - 1]], dtype=np.uint64)
    ids, est, se = r.rerank(q, cand, top=4, measure="ip")
    assert set(ids[0, :3].tolist()) == {3, 17, 250} and ids[0, 3] == 2**64 - 1
    assert np.all(np.diff(est[0, :3]) <= 0) and np.isnan(est[0, 3])
    out = subprocess.run([dprp_bin(), "estimate", str(r.path), "--rows", "3,17,250",
                          "--query-vector", str(d / "q1.npy"), "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    by_row = {e["b"]["row"]: e for e in json.loads(out.stdout)}
    for i, e, s in zip(ids[0, :3], est[0, :3], se[0, :3]):
        assert e == pytest.approx(by_row[int(i)]["inner_product"], rel=1e-12)
        assert s == pytest.approx(by_row[int(i)]["se"], rel=1e-12)
    with pytest.raises(dprp.DprpError, match="candidate"):
        r.rerank(q, np.array([[N + 5]], dtype=np.uint64))
    with pytest.raises(dprp.DprpError, match="negative"):
        r.rerank(q, np.array([[-1]]))
    with pytest.raises(dprp.DprpError, match="hamming"):
        r.rerank(q, cand, measure="hamming")
