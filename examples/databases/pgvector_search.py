"""A dprp release in PostgreSQL + pgvector: publish, load, search with raw queries, re-rank with
error bars — checked on held-out queries. Runs against a throwaway server it starts itself
(dprp.postgres.TemporaryServer, on a unix socket in a temporary directory, removed at the end), or
against yours with --url.

    pip install ".[postgres-server]"        # or: bash test.sh (target/test-venv has it all)
    python examples/databases/pgvector_search.py [--url postgresql://me@/db?host=/run/postgresql]

Steps, as a data holder and then as a user of the release would take them:
1. publish 10 000 MNIST training images (pixels / 255) as DP-OPORP sketches: ε = 16, δ = 10⁻⁶,
   k = 256, neighbours differ in one pixel by at most 1 (the command line:
   dprp publish data/mnist/train-images-idx3-ubyte.gz --scale 255 -m dp-oporp -e 16 -d 1e-6 -k 256);
2. load it into a table with an HNSW index (`dprp export` does the same from the command line);
3. project 200 held-out test images with the release's public map and search them in SQL: the
   exact top-10 is the same as `dprp query`'s, and the database ranks by its raw scores on the
   noisy sketches;
4. take 100 candidates from the database and re-rank them by dprp's debiased cosine, with the
   standard error of each — against the true top-10 by the cosine of the raw pixels.
"""

import argparse
import pathlib
import tempfile

import numpy as np

import dprp
import dprp.postgres as pg
from mnist import cosines, images, precision, true_top

ROWS, QUERIES = 10_000, 200


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="your server (default: a throwaway one)")
    ap.add_argument("--table", default="mnist_sketches")
    a = ap.parse_args()
    db, db_digits = images("train", ROWS)
    with tempfile.TemporaryDirectory() as tmp:
        release = dprp.publish(db, mechanism="dp-oporp", epsilon=16.0, delta=1e-6, k=256,
                               labels=db_digits.astype(np.float32),
                               output=pathlib.Path(tmp) / "mnist.dprp")
        print(f"published {release.n} rows, k = {release.k}: {release.guarantee}")
        print(f"fingerprint {release.fingerprint[:16]}…")
        if a.url:
            run(release, db, db_digits, a.url, a.table)
        else:
            with pg.TemporaryServer() as server:
                print(f"throwaway server at {server.socket_dir}")
                run(release, db, db_digits, server.url, a.table)


def run(release, db, db_digits, url: str, table: str) -> None:
    # The command line does the same: dprp export mnist.dprp --postgres URL --table T --index hnsw
    done = release.to_postgres(url, table, replace=True, index="hnsw")
    print(f"loaded {done['rows']} rows into {table} in {done['total_seconds']:.2f} s "
          f"(COPY {done['rows'] / done['copy_seconds']:.0f} rows/s), measure {done['measure']}")
    # Raw queries: held-out test images, on the scale of the raw rows (pixels / 255; a release
    # records its scaling, and project/search apply it)
    queries, q_digits = images("t10k", QUERIES)
    truth = true_top(db, queries)
    import psycopg

    with psycopg.connect(url) as conn:
        # what any SQL client can do with a projected query
        q = release.project(queries[:1])[0]
        literal = "[" + ",".join(f"{v:.7g}" for v in q) + "]"
        rows = conn.execute(
            f"SELECT id, 1 - (sketch <=> %s::vector) AS cosine FROM {table} "
            "ORDER BY sketch <=> %s::vector LIMIT 5", (literal, literal)).fetchall()
        print("SQL, query 0:", ", ".join(f"{i} ({c:.3f})" for i, c in rows))
        exact, scores = pg.search(conn, release, table, queries, top=10, exact=True)
        hnsw, _ = pg.search(conn, release, table, queries, top=10, exact=False, ef_search=100)
        r_ids, est, se = pg.search_reranked(conn, release, table, queries, top=10,
                                            candidates=100, ef_search=100)
    want, _ = release.search(queries, top=10)  # dprp query's exact search
    same = np.mean([set(x.tolist()) == set(y.tolist()) for x, y in zip(exact, want)])
    print(f"exact SQL top-10 = dprp query's top-10 for {same:.0%} of {QUERIES} held-out queries")
    print(f"HNSW (ef_search 100) recall@10 against the exact top-10: {precision(hnsw, want):.3f}")
    true = cosines(db, queries, r_ids)
    print(f"precision@10 against the true top-10 (cosine of the raw pixels; chance "
          f"{10 / ROWS:.3f}): database {precision(exact, truth):.3f}, HNSW top-100 re-ranked "
          f"{precision(r_ids, truth):.3f}")
    digit = lambda ids: np.mean(db_digits[np.asarray(ids).astype(np.int64)] == q_digits[:, None])
    print(f"top-10 of the query's digit: database {digit(exact):.0%}, re-ranked "
          f"{digit(r_ids):.0%} (the true top-10: {digit(truth):.0%})")
    print(f"re-ranked cosines: mean {np.nanmean(est):.3f} (true {true.mean():.3f}), "
          f"{np.mean(np.abs(est - true) <= 2 * se):.0%} within 2 standard errors of the truth")
    # the error bars where the rows were chosen without the noise: the true top-10's estimates
    t_ids, t_est, t_se = release.rerank(queries, truth, top=10)
    t_true = cosines(db, queries, t_ids)
    print(f"the true top-10's estimated cosines: {np.mean(np.abs(t_est - t_true) <= 2 * t_se):.1%} "
          "within 2 standard errors of the truth")
    print("(± is the standard error of each pair's estimate. The top of a ranking by noisy "
          "estimates over-estimates its true values — the largest of many noisy numbers is "
          "selected — so compare the rows, not the top values, with the truth; the error bars "
          "hold their level on rows chosen without the noise, such as the true top-10.)")
    for qi in range(3):
        print(f"query {qi} (digit {q_digits[qi]}): database   " + "  ".join(
            f"{i:>4}:{db_digits[i]} {s:+.3f}" for i, s in zip(exact[qi][:5], scores[qi][:5])))
        print("                   re-ranked  " + "  ".join(
            f"{i:>4}:{db_digits[i]} {e:+.3f}±{s:.3f}"
            for i, e, s in zip(r_ids[qi][:5], est[qi][:5], se[qi][:5])))


if __name__ == "__main__":
    main()
