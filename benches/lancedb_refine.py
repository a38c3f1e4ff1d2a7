#!/usr/bin/env python3
"""What LanceDB's default index for real sketches loses without ``refine_factor``, on the docs'
example release (docs/databases.md): the 60 000 MNIST training images (pixels / 255) published as
dp-oporp sketches (ε = 16, δ = 1e-6, k = 256), 1000 held-out test images as raw queries.

1. the exact (flat) LanceDB top-10 against ``Release.search`` (what ``dprp query`` answers):
   the fraction of queries with the same id set;
2. ``dprp.lancedb.create_index`` with its defaults (IVF_HNSW_SQ, cosine), then recall@10 of the
   index search against that exact top-10 for ``refine_factor`` None (LanceDB's default: ranks by
   the 8-bit quantised vectors), 1, 2, 5 and 10 (the ``r × 10`` best re-scored by the full
   vectors), with the wall time per query of one batched call.

Run::

    target/test-venv/bin/python benches/lancedb_refine.py [--rows 60000] [--queries 1000]
        [--epsilon 16] [--out target/lancedb-refine]

Writes ``results.json`` to ``--out`` and prints a table.
"""

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

import dprp
import dprp.lancedb as dl

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "examples", "databases"))
from mnist import images  # noqa: E402  (the examples' reader of data/mnist)


def recall(found, want):
    return float(np.mean([len(set(f.tolist()) & set(w.tolist())) / w.shape[0]
                          for f, w in zip(found, want)]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=60000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--epsilon", type=float, default=16.0)
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "lancedb-refine"))
    a = ap.parse_args()
    db, _ = images("train", a.rows)
    queries, _ = images("t10k", a.queries)
    out = {"args": vars(a), "load_before": open("/proc/loadavg").read().strip()}
    with tempfile.TemporaryDirectory() as tmp:
        rel = dprp.publish(db, mechanism="dp-oporp", epsilon=a.epsilon, delta=1e-6, k=256,
                           output=os.path.join(tmp, "r.dprp"))
        want, _ = rel.search(queries, top=10)
        table = dl.to_lancedb(rel, os.path.join(tmp, "lancedb"), "mnist")
        ids, _ = dl.search(rel, table, queries, top=10)
        out["exact_equals_dprp"] = float(np.mean([set(x.tolist()) == set(y.tolist())
                                                  for x, y in zip(ids, want)]))
        t = time.time()
        dl.create_index(table, rel)
        out["index_build_s"] = time.time() - t
        rows = []
        for refine in (None, 1, 2, 5, 10):
            dl.search(rel, table, queries[:10], top=10, exact=False, refine_factor=refine)
            t = time.time()
            found, _ = dl.search(rel, table, queries, top=10, exact=False, refine_factor=refine)
            ms = (time.time() - t) / len(queries) * 1e3
            rows.append({"refine_factor": refine, "recall_at_10": recall(found, want),
                         "ms_per_query": ms})
        out["index"] = rows
    out["load_after"] = open("/proc/loadavg").read().strip()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(out, f, indent=1)
    print(f"exact LanceDB top-10 = dprp's for {out['exact_equals_dprp']:.1%} of {a.queries} "
          f"queries; IVF_HNSW_SQ built in {out['index_build_s']:.1f} s")
    print("| refine_factor | recall@10 | ms/query |\n|---|---|---|")
    for r in rows:
        print(f"| {r['refine_factor'] or 'none (default)'} | {r['recall_at_10']:.4f} | "
              f"{r['ms_per_query']:.2f} |")
    print(f"load {out['load_before']} → {out['load_after']}")


if __name__ == "__main__":
    main()
