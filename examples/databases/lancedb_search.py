"""A dprp release as a LanceDB table: publish, write, search with raw queries (exact and with an
ANN index), re-rank with error bars — checked on held-out queries. LanceDB is embedded: the table
is a directory.

    pip install ".[lancedb]"                # or: bash test.sh (target/test-venv has it all)
    python examples/databases/lancedb_search.py [--db /path/to/lancedb-dir]

1. publish 10 000 MNIST training images (pixels / 255) as DP-OPORP sketches (ε = 16, δ = 10⁻⁶,
   k = 256) and as sign sketches with randomised response (dp-signoporp-rr, ε = 4, k = 768;
   Hamming distance in LanceDB);
2. write each as a table (ids, labels, sketches; the release's fingerprint in its schema);
3. search 200 held-out test images: exact (the same top-10 as `dprp query`), then with LanceDB's
   default index for each (IVF_HNSW_SQ for real sketches — its quantised distances need
   `refine_factor` to re-score candidates exactly — IVF_FLAT for signs);
4. re-rank 100 candidates of the real release by dprp's debiased cosine, each with its standard
   error, against the true top-10 by the cosine of the raw pixels.
"""

import argparse
import pathlib
import tempfile

import numpy as np

import dprp
import dprp.lancedb as dl
from mnist import images, precision, true_top

ROWS, QUERIES = 10_000, 200


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="LanceDB directory (default: a temporary one)")
    a = ap.parse_args()
    db_rows, digits = images("train", ROWS)
    queries, _ = images("t10k", QUERIES)
    truth = true_top(db_rows, queries)
    with tempfile.TemporaryDirectory() as tmp:
        db = a.db or str(pathlib.Path(tmp) / "lancedb")
        labels = digits.astype(np.float32)
        real = dprp.publish(db_rows, mechanism="dp-oporp", epsilon=16.0, delta=1e-6, k=256,
                            labels=labels, output=pathlib.Path(tmp) / "real.dprp")
        signs = dprp.publish(db_rows, mechanism="dp-signoporp-rr", epsilon=4.0, k=768,
                             labels=labels, output=pathlib.Path(tmp) / "signs.dprp")
        for name, release in (("real", real), ("signs", signs)):
            table = dl.to_lancedb(release, db, f"mnist_{name}", mode="overwrite")
            stamp = dl.table_stamp(table)
            print(f"{name}: {release.n} rows → LanceDB table mnist_{name} "
                  f"(measure {stamp['measure']}, fingerprint {stamp['fingerprint'][:16]}…)")
            ids, _ = dl.search(release, table, queries, top=10)
            want, _ = release.search(queries, top=10)  # dprp query's exact search
            same = np.mean([set(x.tolist()) == set(y.tolist()) for x, y in zip(ids, want)])
            print(f"  exact search: top-10 = dprp query's for {same:.0%} of {QUERIES} "
                  "held-out queries")
            dl.create_index(table, release)
            if name == "real":
                raw, _ = dl.search(release, table, queries, top=10, exact=False)
                ann, _ = dl.search(release, table, queries, top=10, exact=False,
                                   refine_factor=10)
                print(f"  IVF_HNSW_SQ recall@10: {precision(raw, want):.3f} on its quantised "
                      f"distances, {precision(ann, want):.3f} with refine_factor=10")
            else:
                ann, _ = dl.search(release, table, queries, top=10, exact=False, nprobes=20)
                print(f"  IVF_FLAT recall@10 (nprobes 20): {precision(ann, want):.3f}")
            if name == "signs":
                # the debiased cosine of signs is an increasing function of the agreements:
                # re-ranking changes no order (docs/databases.md), so it is not shown here
                print(f"  precision@10 against the true top-10: LanceDB's exact Hamming "
                      f"{precision(ids, truth):.3f}")
                continue
            r_ids, est, se = dl.search_reranked(release, table, queries, top=10,
                                                candidates=100, refine_factor=10)
            print(f"  precision@10 against the true top-10: LanceDB's exact cosine of the "
                  f"noisy sketches {precision(ids, truth):.3f}, its top-100 re-ranked by "
                  f"dprp's debiased cosine {precision(r_ids, truth):.3f}")
            print("  query 0 (row:digit estimate±standard error): " + "  ".join(
                f"{i}:{digits[i]} {e:+.3f}±{s:.3f}"
                for i, e, s in zip(r_ids[0][:5], est[0][:5], se[0][:5])))

if __name__ == "__main__":
    main()
