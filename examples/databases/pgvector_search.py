"""A dprp release in PostgreSQL + pgvector: publish, load, search with raw queries, re-rank with
error bars. Runs against a throwaway server it starts itself (dprp.postgres.TemporaryServer, on
a unix socket in a temporary directory, removed at the end), or against yours with --url.

    pip install ".[postgres-server]"        # or: bash test.sh (target/test-venv has it all)
    python examples/databases/pgvector_search.py [--url postgresql://me@/db?host=/run/postgresql]

Steps, as a data holder and then as a user of the release would take them:
1. publish the bundled sample (2000 rows × 64) as DP-OPORP sketches (ε = 8, δ = 10⁻⁶, k = 64);
2. load it into a table with an HNSW index (`dprp export` does the same from the command line);
3. project raw query vectors with the release's public map and search them in SQL — the
   database ranks by its raw scores on the noisy sketches;
4. take 50 candidates from the database and re-rank them by dprp's debiased cosine, with the
   standard error of each.
"""

import argparse
import pathlib
import tempfile

import numpy as np

import dprp
import dprp.postgres as pg

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample.bin"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="your server (default: a throwaway one)")
    ap.add_argument("--table", default="sample_sketches")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        release = dprp.publish(SAMPLE, mechanism="dp-oporp", epsilon=8.0, delta=1e-6, k=64,
                               normalize="l2", output=pathlib.Path(tmp) / "sample.dprp")
        print(f"published {release.n} rows, k = {release.k}: {release.guarantee}")
        print(f"fingerprint {release.fingerprint[:16]}…")
        if a.url:
            run(release, a.url, a.table)
        else:
            with pg.TemporaryServer() as server:
                print(f"throwaway server at {server.socket_dir}")
                run(release, server.url, a.table)


def run(release, url: str, table: str) -> None:
    # The command line does the same: dprp export sample.dprp --postgres URL --table T --index hnsw
    done = release.to_postgres(url, table, replace=True, index="hnsw")
    print(f"loaded {done['rows']} rows into {table} in {done['total_seconds']:.2f} s "
          f"(COPY {done['rows'] / done['copy_seconds']:.0f} rows/s), measure {done['measure']}")
    # Raw queries: five rows of the sample itself (on the scale of its raw values; the release's
    # recorded scaling, here l2 normalisation, is applied by project/search).
    queries = sample_rows([3, 400, 800, 1200, 1600])
    import psycopg

    with psycopg.connect(url) as conn:
        # what any SQL client can do with a projected query
        q = release.project(queries[:1])[0]
        literal = "[" + ",".join(f"{v:.7g}" for v in q) + "]"
        rows = conn.execute(
            f"SELECT id, 1 - (sketch <=> %s::vector) AS cosine FROM {table} "
            "ORDER BY sketch <=> %s::vector LIMIT 5", (literal, literal)).fetchall()
        print("SQL, query 0:", ", ".join(f"{i} ({c:.3f})" for i, c in rows))
        ids, scores = pg.search(conn, release, table, queries, top=5, exact=True)
        r_ids, est, se = pg.search_reranked(conn, release, table, queries, top=5, candidates=50)
    print("(± is the standard error of each pair's estimate. The top of a ranking by noisy "
          "estimates over-estimates its true values — the largest of many noisy numbers is "
          "selected — so compare the rows, not the top values, with the truth.)")
    for qi in range(len(queries)):
        print(f"query {qi}: database   " +
              "  ".join(f"{i:>4} {s:+.3f}" for i, s in zip(ids[qi], scores[qi])))
        print(f"         re-ranked  " + "  ".join(
            f"{i:>4} {e:+.3f}±{s:.3f}" for i, e, s in zip(r_ids[qi], est[qi], se[qi])))


def sample_rows(rows):
    """Rows of the bundled sample (native layout, docs/formats.md: a 64-byte header with n and p
    at bytes 16 and 24 and the data offset at 32, then n × p float32), with a little noise: raw
    query vectors that are near, not equal to, released rows."""
    raw = SAMPLE.read_bytes()
    n, p, off = (int.from_bytes(raw[i:i + 8], "little") for i in (16, 24, 32))
    x = np.frombuffer(raw, dtype="<f4", count=n * p, offset=off).reshape(n, p)
    rng = np.random.default_rng(1)
    return np.clip(x[rows] + rng.normal(0, 0.05, (len(rows), p)), 0, 1).astype(np.float32)


if __name__ == "__main__":
    main()
