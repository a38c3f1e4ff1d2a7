"""dprp.lancedb: a release written as a LanceDB table and searched there, against dprp's own
search: rows read back, exact top-k for ip, cosine and Hamming, ANN recall, the fingerprint
stamp, re-ranking."""

import json
import sys

import numpy as np
import pyarrow as pa
import pytest

import dprp
import dprp.lancedb as dl
import lancedb
from topk import assert_same_top, recall

PAD = np.uint64(2**64 - 1)
N, P = 400, 64


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """A real-valued release with labels, a sign release (k = 60: bits past k in the last
    byte), both of the same centred data, and another release of it (another fingerprint)."""
    d = tmp_path_factory.mktemp("lance-releases")
    rng = np.random.default_rng(20261128)
    x = rng.random((N, P), dtype=np.float32) - 0.5
    real = dprp.publish(x, output=d / "real.dprp", mechanism="dp-oporp", epsilon=8.0,
                        delta=1e-6, k=64, labels=np.linspace(-1, 1, N))
    signs = dprp.publish(x, output=d / "signs.dprp", mechanism="dp-signoporp-rr", epsilon=8.0,
                         k=60)
    other = dprp.publish(x, output=d / "other.dprp", mechanism="dp-oporp", epsilon=8.0,
                         delta=1e-6, k=64)
    q = x[rng.integers(0, N, 25)] + 0.2 * (rng.random((25, P)) - 0.5)
    return dict(real=real, signs=signs, other=other, q=q)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return lancedb.connect(tmp_path_factory.mktemp("lance-db"))


@pytest.fixture(scope="module")
def tables(db, releases):
    return dict(real=dl.to_lancedb(releases["real"], db, "real", batch_rows=37),
                signs=dl.to_lancedb(releases["signs"], db, "signs", batch_rows=37))


def test_rows_read_back(tables, releases):
    rel, t = releases["real"], tables["real"]
    assert t.count_rows() == N
    a = t.to_arrow().sort_by("id")
    assert a.schema.field("id").type == pa.int64()
    assert a.schema.field("vector").type == pa.list_(pa.float32(), rel.k)
    assert np.array_equal(a["id"].to_numpy().astype(np.uint64), rel.ids)
    assert np.array_equal(a["label"].to_numpy(), rel.labels)
    vec = a["vector"].combine_chunks().flatten().to_numpy().reshape(N, rel.k)
    assert np.array_equal(vec, rel.sketches)


def test_sign_rows_read_back(tables, releases):
    rel, t = releases["signs"], tables["signs"]
    a = t.to_arrow().sort_by("id")
    assert a.column_names == ["id", "vector"]  # no labels: no label column
    assert a.schema.field("vector").type == pa.list_(pa.uint8(), (rel.k + 7) // 8)
    assert np.array_equal(a["id"].to_numpy().astype(np.uint64), rel.ids)
    b = a["vector"].combine_chunks().flatten().to_numpy().reshape(N, -1)
    # sign i = bit i % 8 (LSB first) of byte i // 8; the bits past k are zero
    bits = np.unpackbits(b, axis=1, bitorder="little")
    assert np.array_equal(bits[:, :rel.k], (rel.unpack_signs() > 0).astype(np.uint8))
    assert not bits[:, rel.k:].any()


@pytest.mark.parametrize("kind", ["real", "signs"])
def test_stamp(tables, releases, kind):
    rel = releases[kind]
    stamp = json.loads(tables[kind].schema.metadata[b"dprp"])
    assert stamp == dl.table_stamp(tables[kind])
    assert stamp["fingerprint"] == rel.fingerprint and len(rel.fingerprint) == 64
    assert (stamp["p"], stamp["k"], stamp["rows"]) == (rel.p, rel.k, rel.n)
    assert stamp["payload"] == ("bits" if kind == "signs" else "f32")
    assert stamp["measure"] == ("hamming" if kind == "signs" else "cosine")
    assert stamp["tool"] == f"dprp {dprp.__version__}"


@pytest.mark.parametrize("kind,measure", [("real", "ip"), ("real", "cosine"),
                                          ("real", None), ("signs", "hamming")])
def test_exact_search_matches_dprp(tables, releases, kind, measure):
    rel, q = releases[kind], releases["q"]
    ids, scores = dl.search(rel, tables[kind], q, top=10, measure=measure)
    assert ids.dtype == np.uint64 and scores.dtype == np.float64
    want_ids, want_scores = rel.search(q, top=10, measure=measure)
    want_scores = want_scores.astype(np.float64)
    tol = 0.0 if kind == "signs" else 1e-4 * max(1.0, np.abs(want_scores).max())
    assert_same_top(ids, scores, want_ids, want_scores, tol)
    if kind == "real":  # continuous scores: no ties, the same lists in the same order
        assert (ids == want_ids).all(axis=1).mean() >= 0.95
    # one query alone gives the same answer as in a batch
    one_ids, one_scores = dl.search(rel, tables[kind], q[3], top=10, measure=measure)
    assert np.array_equal(one_ids, ids[3:4]) and np.array_equal(one_scores, scores[3:4])


def test_short_tables_are_padded(tables, releases):
    rel, q = releases["signs"], releases["q"][:3]
    ids, scores = dl.search(rel, tables["signs"], q, top=N + 5)
    assert np.all(ids[:, N:] == PAD) and np.all(np.isnan(scores[:, N:]))
    assert all(set(row[:N].tolist()) == set(range(N)) for row in ids)
    assert np.all(np.diff(scores[:, :N], axis=1) <= 0)


def test_write_modes_and_connections(tmp_path, releases):
    rel = releases["real"]
    t = dl.to_lancedb(rel, tmp_path / "db", "t")  # a path: connected here
    assert t.count_rows() == N
    with pytest.raises(Exception, match="(?i)exist"):
        dl.to_lancedb(releases["other"], lancedb.connect(tmp_path / "db"), "t")
    t = lancedb.connect(tmp_path / "db").open_table("t")
    assert dl.table_stamp(t)["fingerprint"] == rel.fingerprint
    t = dl.to_lancedb(releases["other"], tmp_path / "db", "t", mode="overwrite",
                      measure="ip")
    stamp = dl.table_stamp(lancedb.connect(tmp_path / "db").open_table("t"))
    assert stamp["fingerprint"] == releases["other"].fingerprint and stamp["measure"] == "ip"
    with pytest.raises(ValueError, match="hamming"):
        dl.to_lancedb(rel, tmp_path / "db", "u", measure="hamming")


def test_another_releases_table_is_refused(db, tables, releases):
    rel, other, q = releases["real"], releases["other"], releases["q"]
    assert other.fingerprint != rel.fingerprint
    with pytest.raises(ValueError, match="fingerprint") as e:
        dl.search(other, tables["real"], q)
    assert rel.fingerprint[:12] in str(e.value) and other.fingerprint[:12] in str(e.value)
    with pytest.raises(ValueError, match="fingerprint"):
        dl.search_reranked(other, tables["real"], q)
    with pytest.raises(ValueError, match="fingerprint"):
        dl.create_index(tables["real"], other)
    plain = db.create_table("plain", data=pa.table({"id": [1, 2], "vector": pa.array(
        [[0.0] * 64, [1.0] * 64], type=pa.list_(pa.float32(), 64))}))
    with pytest.raises(ValueError, match="no dprp stamp"):
        dl.search(rel, plain, q)


def test_wrong_queries_and_measures_are_refused(tables, releases):
    rel, q = releases["real"], releases["q"]
    with pytest.raises(ValueError, match="dimension 10.*dimension 64"):
        dl.search(rel, tables["real"], q[:, :10])
    with pytest.raises(ValueError, match="dimension"):
        dl.search_reranked(rel, tables["real"], np.zeros((2, P + 1)))
    with pytest.raises(ValueError, match="hamming"):
        dl.search(rel, tables["real"], q, measure="hamming")
    with pytest.raises(ValueError, match="sign sketches"):
        dl.search(releases["signs"], tables["signs"], q, measure="cosine")


@pytest.mark.parametrize("kind", ["real", "signs"])
def test_ann_index_search(tmp_path, releases, kind):
    rel, q = releases[kind], releases["q"]
    t = dl.to_lancedb(rel, tmp_path / "db", "t")
    dl.create_index(t, rel, num_partitions=2)
    idx = t.list_indices()
    assert len(idx) == 1 and idx[0].index_type == ("IvfFlat" if kind == "signs" else
                                                   "IvfHnswSq")
    assert idx[0].index_details["metric_type"] == ("HAMMING" if kind == "signs" else "COSINE")
    assert dl.table_stamp(t)["fingerprint"] == rel.fingerprint  # kept by indexing
    want_ids, want_scores = rel.search(q, top=10)
    want_scores = want_scores.astype(np.float64)
    ids, scores = dl.search(rel, t, q, top=10, exact=False, nprobes=2, ef=200,
                            refine_factor=None if kind == "signs" else 4)
    tol = 0.0 if kind == "signs" else 1e-4
    assert recall(ids, scores, want_ids, want_scores, tol) >= 0.9
    # exact=True bypasses the index: exact scores, where the 8-bit SQ index's are not
    exact_ids, exact_scores = dl.search(rel, t, q, top=10)
    assert_same_top(exact_ids, exact_scores, want_ids, want_scores, tol)
    if kind == "signs":
        with pytest.raises(ValueError, match="IVF_FLAT"):
            dl.create_index(t, rel, kind="IVF_PQ")
    else:
        _, sq_scores = dl.search(rel, t, q, top=10, exact=False, nprobes=2, ef=200)
        assert np.abs(sq_scores - want_scores).max() > 10 * tol
        dl.create_index(t, rel, kind="IVF_PQ", measure="ip", num_partitions=2,
                        num_sub_vectors=8)
        assert t.list_indices()[0].index_details["metric_type"] == "DOT"


@pytest.mark.parametrize("kind,measure", [("real", "ip"), ("real", None), ("signs", None)])
def test_search_reranked(tables, releases, kind, measure):
    rel, q = releases[kind], releases["q"]
    ids, est, se = dl.search_reranked(rel, tables[kind], q, top=5, candidates=40,
                                      measure=measure, exact=True)
    assert ids.shape == est.shape == se.shape == (len(q), 5)
    assert ids.dtype == np.uint64 and est.dtype == se.dtype == np.float64
    cand, _ = dl.search(rel, tables[kind], q, top=40, measure=measure)
    assert all(set(a.tolist()) <= set(c.tolist()) for a, c in zip(ids, cand))
    want = rel.rerank(q, cand, top=5, measure=None if kind == "signs" else
                      (measure or "cosine"))
    assert np.array_equal(ids, want[0])
    np.testing.assert_array_equal(est, want[1])
    np.testing.assert_array_equal(se, want[2])
    for e, s in zip(est, se):  # descending, an undefined (NaN) estimate last
        defined = ~np.isnan(e)
        assert defined[0] and np.all(defined[:defined.sum()])
        assert np.all(np.diff(e[defined]) <= 0) and np.all(s[defined] >= 0)


def test_signs_to_bytes():
    w = np.array([[0x0102030405060708, 0xFFFFFFFFFFFFFFFF]], dtype=np.uint64)
    assert dl.signs_to_bytes(w, 64).tolist() == [[8, 7, 6, 5, 4, 3, 2, 1]]
    assert dl.signs_to_bytes(w, 70).tolist() == [[8, 7, 6, 5, 4, 3, 2, 1, 0x3F]]
    assert dl.signs_to_bytes(w, 3).tolist() == [[0]]  # 0x08 & 0b111


def test_missing_lancedb_is_explained(monkeypatch, releases, tmp_path):
    monkeypatch.setitem(sys.modules, "lancedb", None)
    with pytest.raises(ImportError, match=r'pip install "dprp\[lancedb\]"'):
        dl.to_lancedb(releases["real"], tmp_path / "db", "t")
