"""A dprp release as a LanceDB table: publish, write, search with raw queries (exact and with an
ANN index), re-rank with error bars. LanceDB is embedded: the table is a directory.

    pip install ".[lancedb]"                # or: bash test.sh (target/test-venv has it all)
    python examples/databases/lancedb_search.py [--db /path/to/lancedb-dir]

1. publish the bundled sample (2000 rows × 64) as DP-OPORP sketches (ε = 8, δ = 10⁻⁶, k = 64)
   and as sign sketches with randomised response (ε = 3, k = 256; Hamming distance in LanceDB);
2. write each as a table (ids, labels, sketches; the release's fingerprint in its schema);
3. search raw queries: exact (the same top-10 as `dprp query`), then with an IVF index;
4. re-rank 50 candidates by dprp's debiased estimates, each with its standard error.
"""

import argparse
import pathlib
import tempfile

import numpy as np

import dprp
import dprp.lancedb as dl

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample.bin"


def sample_rows(rows):
    """Rows of the bundled sample (native layout, docs/formats.md), with a little noise."""
    raw = SAMPLE.read_bytes()
    n, p, off = (int.from_bytes(raw[i:i + 8], "little") for i in (16, 24, 32))
    x = np.frombuffer(raw, dtype="<f4", count=n * p, offset=off).reshape(n, p)
    rng = np.random.default_rng(1)
    return np.clip(x[rows] + rng.normal(0, 0.05, (len(rows), p)), 0, 1).astype(np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="LanceDB directory (default: a temporary one)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = a.db or str(pathlib.Path(tmp) / "lancedb")
        real = dprp.publish(SAMPLE, mechanism="dp-oporp", epsilon=8.0, delta=1e-6, k=64,
                            normalize="l2", output=pathlib.Path(tmp) / "real.dprp")
        signs = dprp.publish(SAMPLE, mechanism="dp-signrp-rr", epsilon=3.0, delta=1e-6,
                             k=256, normalize="l2", output=pathlib.Path(tmp) / "signs.dprp")
        queries = sample_rows([3, 400, 800])
        for name, release in (("real", real), ("signs", signs)):
            table = dl.to_lancedb(release, db, f"sample_{name}", mode="overwrite")
            stamp = dl.table_stamp(table)
            print(f"{name}: {release.n} rows → LanceDB table sample_{name} "
                  f"(measure {stamp['measure']}, fingerprint {stamp['fingerprint'][:16]}…)")
            ids, scores = dl.search(release, table, queries, top=10)
            want, _ = release.search(queries, top=10)
            same = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, want)])
            print(f"  exact search: top-10 shared with dprp query {same:.0%}")
            dl.create_index(table, release, num_partitions=8)
            ann, _ = dl.search(release, table, queries, top=10, exact=False, nprobes=4)
            hit = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ann, want)])
            print(f"  IVF index, 4 of 8 partitions probed: recall@10 {hit:.0%}")
            r_ids, est, se = dl.search_reranked(release, table, queries, top=5, candidates=50)
            what = "cosine" if name == "signs" else "cosine (known unit norms)"
            print(f"  re-ranked by the debiased {what}, query 0: " + "  ".join(
                f"{i} {e:+.3f}±{s:.3f}" for i, e, s in zip(r_ids[0], est[0], se[0])))


if __name__ == "__main__":
    main()
