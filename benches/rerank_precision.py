#!/usr/bin/env python3
"""What two-stage re-ranking gains in precision@10 over a database's raw scores, on MNIST (or
the bundled sample).

Database = the 60000 MNIST training images (pixel/255, float32), published by dprp with
``normalize="l2"`` (every row a unit vector, inside the privacy domain); queries = a fixed subset of
the test images (``--queries``, drawn once with a fixed seed), raw and unprivatised. Ground truth =
the top-10 training rows by cosine on the original vectors. For each ε (δ = 1e-6 for the Gaussian
mechanism; the sign mechanism is pure ε-DP) and each mechanism —

* ``dp-oporp`` (real sketches, ``--k``, default 256), loaded into pgvector as ``vector(k)`` with an
  HNSW index for the cosine (``<=>``);
* ``dp-signoporp-rr`` (sign sketches, ``--sign-k``, default 768: OPORP needs k ≤ p = 784, so the
  k = 1024 of the paper's dense sign maps is refused), loaded as ``bit(k)`` with an HNSW index for
  the Hamming distance (``<~>``);

the release goes into one table of a throwaway PostgreSQL 16 + pgvector server
(``dprp.postgres.TemporaryServer``) and precision@10 = |found ∩ true top-10| / 10, averaged over
the queries, is measured for

1. ``pg exact``: the database's exact (sequential-scan) top-10 by its raw score — the SQL cosine of
   the noisy sketches, or the Hamming distance of the signs;
2. ``pg HNSW``: the database's HNSW top-10 (``hnsw.ef_search = --ef-search``, default 100);
3. ``HNSW+rerank``: the HNSW top-C (C = ``--candidates``, default 100) re-ranked by dprp's debiased
   cosine (``Release.rerank``; what ``dprp.postgres.search_reranked`` does);
4. ``exact+rerank``: the exact top-C re-ranked the same way;
5. ``dprp exact``: dprp's own exact search (``Release.search``, cosine / Hamming), the reference
   that should equal (1) up to ties.

Also reported: ``ε=∞``, the precision of the same public map without noise (``Release.project`` of
the database rows and of the queries, searched in numpy: the ceiling of the row); ``cand@C``, the
fraction of the true top-10 among the HNSW top-C candidates (the most re-ranking can recover);
``(1)=(5)``, the fraction of queries whose two top-10 id sets are equal; ``SE``, the mean standard
error of the re-ranked top-10 cosines of (3); ``NN∈top10``, the fraction of queries whose true
nearest neighbour is in the top-10 of (1) and of (3); ``est``/``true cos``/``±2SE cover``, the
mean re-ranked estimate of (3), the mean true cosine of the same rows, and how often the two are
within 2 SE; for real sketches ``by ip``, (4) and (5) ranked by the debiased inner product
instead (on unit rows it targets the same order as the cosine without dividing by a noisy norm).
Run (about 12 min on 2 busy cores)::

    target/test-venv/bin/python benches/rerank_precision.py [--eps 1,2,4,8] [--queries 500]
        [--k 256] [--sign-k 768] [--candidates 100] [--rows 60000] [--groups real,sign]
        [--normalize l2|none] [--dataset mnist|sample] [--out target/rerank-precision]

``--dataset sample`` runs the same on the bundled sample (data/sample.bin: 2000 rows × 64, ten
clusters): its last ``--queries`` rows are the queries, the others the database (use ``--k 64
--sign-k 64``: OPORP needs k ≤ p).

Deterministic apart from the DP noise (drawn from the OS): fixed query subset, fixed projection
seed. Writes ``results.json`` and ``table.md`` to ``--out`` and prints the table.
"""

import argparse
import gzip
import json
import os
import platform
import tempfile
import time

import numpy as np

import dprp
import dprp.postgres as dpg

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOP = 10
PADDING = np.uint64(2**64 - 1)


def read_images(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[4:8], "big")
    assert int.from_bytes(data[0:4], "big") == 2051 and data[8:16] == (28).to_bytes(4, "big") * 2
    return (np.frombuffer(data, dtype=np.uint8, offset=16).reshape(n, 784)
            .astype(np.float32) / np.float32(255))


def read_sample(path):
    """The bundled sample's rows (dprp's native dataset: n and p at bytes 16 and 24, the data
    offset at 32, then n × p float32), values in [0, 1]."""
    raw = open(path, "rb").read()
    n, p, off = (int.from_bytes(raw[i:i + 8], "little") for i in (16, 24, 32))
    return np.frombuffer(raw, dtype="<f4", count=n * p, offset=off).reshape(n, p).copy()


def unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def top_by_score(scores, top):
    """Indices of the `top` largest scores per row, best first (ties: smaller index first)."""
    part = np.argpartition(-scores, top, axis=1)[:, :top + 1]
    out = np.empty((scores.shape[0], top), dtype=np.int64)
    for i, row in enumerate(part):
        order = np.lexsort((row, -scores[i, row]))
        out[i] = row[order][:top]
    return out


def true_top(db_unit, q_unit, top, chunk=100):
    return np.vstack([top_by_score(q_unit[s:s + chunk] @ db_unit.T, top)
                      for s in range(0, len(q_unit), chunk)])


def precision(found, truth):
    """Mean |found ∩ truth| / |truth| (padding ids in `found` never match)."""
    found = np.asarray(found).astype(np.uint64)
    return float(np.mean([len(set(f.tolist()) & set(t.tolist())) / truth.shape[1]
                          for f, t in zip(found, truth.astype(np.uint64))]))


def nn_in(found, truth):
    return float(np.mean([t in set(f.tolist()) for f, t in
                          zip(np.asarray(found).astype(np.uint64), truth[:, 0].astype(np.uint64))]))


def noiseless(release, db, queries, bits, k):
    """Precision@10 ids of the release's public map without noise (the ε = ∞ ceiling)."""
    pdb = np.asarray(release.project(db))
    pq = np.asarray(release.project(queries))
    if bits:  # agreements = k − Hamming, through ±1 dot products
        def signs(w):
            b = np.unpackbits(np.ascontiguousarray(w, dtype="<u8").view(np.uint8), axis=1,
                              bitorder="little")[:, :k]
            return b.astype(np.float32) * 2 - 1
        return true_top(signs(pdb), signs(pq), TOP)
    return true_top(unit(pdb).astype(np.float32), unit(pq).astype(np.float32), TOP)


def calibration(ids, est, se, db_unit, q_unit):
    """Mean estimate, mean true cosine and the fraction of |estimate − true| ≤ 2 SE."""
    ok = (ids != PADDING) & np.isfinite(est)
    rows = np.where(ok, ids, 0).astype(np.int64)
    true = np.einsum("qtd,qd->qt", db_unit[rows], q_unit)
    cover = np.abs(est - true) <= 2 * se
    return (float(est[ok].mean()), float(true[ok].mean()), float(cover[ok].mean()))


def run_one(server, db, queries, truth, units, mech, k, eps, measure, args, workdir):
    bits = measure == "hamming"
    rec = {"mechanism": mech, "k": k, "epsilon": eps, "measure": measure}
    t = time.time()
    rel = dprp.publish(db, output=os.path.join(workdir, f"{mech}-{eps}.dprp"), mechanism=mech,
                       epsilon=eps, delta=None if bits else args.delta, k=k, seed=args.seed,
                       normalize=None if args.normalize == "none" else args.normalize)
    rec["publish_s"] = time.time() - t
    gauss = rel.meta["mechanism"].get("gaussian")
    rec["sigma"] = gauss["sigma"] if gauss else None
    rec["guarantee"] = rel.guarantee
    t = time.time()
    info = rel.to_postgres(server.url, "items", replace=True, index="hnsw", measure=measure)
    rec["load_s"], rec["hnsw"] = time.time() - t, bool(info["hnsw"])
    C, ef = args.candidates, max(args.ef_search, args.candidates)
    times = {}
    with server.connect() as conn:
        def timed(name, f):
            t0 = time.time()
            r = f()
            times[name] = time.time() - t0
            return r
        ids1, _ = timed("pg_exact", lambda: dpg.search(conn, rel, "items", queries, top=TOP,
                                                       exact=True))
        ids2, _ = timed("pg_hnsw", lambda: dpg.search(conn, rel, "items", queries, top=TOP,
                                                      exact=False, ef_search=args.ef_search))
        cand_h, _ = timed("pg_hnsw_C", lambda: dpg.search(conn, rel, "items", queries, top=C,
                                                          exact=False, ef_search=ef))
        cand_x, _ = timed("pg_exact_C", lambda: dpg.search(conn, rel, "items", queries, top=C,
                                                           exact=True))
    rm = None if bits else "cosine"  # sign releases re-rank by their debiased cosine
    ids3, est3, se3 = timed("rerank_hnsw", lambda: rel.rerank(queries, cand_h, top=TOP,
                                                              measure=rm))
    with server.connect() as conn:  # the library's own two-stage call, on a few queries
        n = min(20, len(queries))
        chk, _, _ = dpg.search_reranked(conn, rel, "items", queries[:n], top=TOP, candidates=C,
                                        exact=False, ef_search=ef)
    rec["search_reranked_agrees"] = float(np.mean(np.all(chk == ids3[:n], axis=1)))
    ids4, _, se4 = timed("rerank_exact", lambda: rel.rerank(queries, cand_x, top=TOP, measure=rm))
    ids5, _ = timed("dprp_search", lambda: rel.search(queries, top=TOP, measure=measure))
    if not bits:  # the debiased inner product: on unit rows the same target ranking as cosine
        ids4ip, _, _ = rel.rerank(queries, cand_x, top=TOP, measure="ip")
        ids5ip, _ = rel.search(queries, top=TOP, measure="ip")
    ids_inf = timed("noiseless", lambda: noiseless(rel, db, queries, bits, k))
    rec["times_s"] = times
    rec["p10"] = {"pg_exact": precision(ids1, truth), "pg_hnsw": precision(ids2, truth),
                  "hnsw_rerank": precision(ids3, truth), "exact_rerank": precision(ids4, truth),
                  "dprp_exact": precision(ids5, truth), "noiseless": precision(ids_inf, truth)}
    if not bits:
        rec["p10"]["exact_rerank_ip"] = precision(ids4ip, truth)
        rec["p10"]["dprp_exact_ip"] = precision(ids5ip, truth)
    rec["cand_recall_hnsw"] = precision(cand_h, truth)
    rec["cand_recall_exact"] = precision(cand_x, truth)
    rec["hnsw_candidates_returned"] = float(np.mean(cand_h != PADDING)) * C
    rec["pg_exact_eq_dprp"] = float(np.mean([set(a.tolist()) == set(b.tolist())
                                             for a, b in zip(ids1, ids5)]))
    rec["pg_exact_top10_eq_exact_C_prefix"] = float(np.mean(
        [set(a.tolist()) == set(b.tolist()) for a, b in zip(ids1, cand_x[:, :TOP])]))
    rec["mean_se_hnsw_rerank"] = float(np.nanmean(se3))
    rec["mean_se_exact_rerank"] = float(np.nanmean(se4))
    rec["nan_estimates_hnsw_rerank"] = int(np.isnan(est3).sum())
    rec["frac_estimates_ge_1_hnsw_rerank"] = float(np.mean(est3 >= 1.0))
    (rec["mean_est_hnsw_rerank"], rec["mean_true_cos_hnsw_rerank"],
     rec["coverage_2se_hnsw_rerank"]) = calibration(ids3, est3, se3, *units)
    rec["nn_in_top10"] = {"pg_exact": nn_in(ids1, truth), "hnsw_rerank": nn_in(ids3, truth)}
    os.remove(rel.path)
    return rec


def fmt(v):
    return "–" if v is None else f"{v:.3f}"


def table(records, rows, nq, args):
    head = ("| mechanism | k | ε | σ | (1) pg exact | (2) pg HNSW | (3) HNSW+rerank | "
            "(4) exact+rerank | (5) dprp exact | ε=∞ | cand@C | (1)=(5) | SE (3) | "
            "NN∈top10 (1) | NN∈top10 (3) | est (3) | true cos (3) | ±2SE cover (3) | "
            "(4) by ip | (5) by ip |")
    lines = [f"{args.dataset}, {rows} database rows, {nq} held-out queries, precision@10 vs the true cosine "
             f"top-10; C = {args.candidates} candidates, hnsw.ef_search = {args.ef_search} "
             f"(top-C: {max(args.ef_search, args.candidates)}), δ = {args.delta} (real only), "
             f"normalize = {args.normalize}",
             "", head, "|" + "---|" * (head.count("|") - 1)]
    for r in records:
        p = r["p10"]
        sigma = f"{r['sigma']:.3f}" if r["sigma"] is not None else "–"
        lines.append(
            f"| {r['mechanism']} | {r['k']} | {r['epsilon']:g} | {sigma} | {p['pg_exact']:.3f} | "
            f"{p['pg_hnsw']:.3f} | {p['hnsw_rerank']:.3f} | {p['exact_rerank']:.3f} | "
            f"{p['dprp_exact']:.3f} | {p['noiseless']:.3f} | {r['cand_recall_hnsw']:.3f} | "
            f"{r['pg_exact_eq_dprp']:.3f} | {r['mean_se_hnsw_rerank']:.3f} | "
            f"{r['nn_in_top10']['pg_exact']:.3f} | {r['nn_in_top10']['hnsw_rerank']:.3f} | "
            f"{r['mean_est_hnsw_rerank']:.3f} | {r['mean_true_cos_hnsw_rerank']:.3f} | "
            f"{r['coverage_2se_hnsw_rerank']:.3f} | "
            f"{fmt(p.get('exact_rerank_ip'))} | {fmt(p.get('dprp_exact_ip'))} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eps", default="1,2,4,8", help="comma-separated ε values")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--k", type=int, default=256, help="k of dp-oporp")
    ap.add_argument("--sign-k", type=int, default=768, help="k of the sign mechanism (≤ 784)")
    ap.add_argument("--sign-mechanism", default="dp-signoporp-rr")
    ap.add_argument("--candidates", type=int, default=100)
    ap.add_argument("--ef-search", type=int, default=100)
    ap.add_argument("--rows", type=int, default=60000, help="database rows (first N training)")
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--groups", default="real,sign", help="real, sign or real,sign")
    ap.add_argument("--normalize", default="l2", choices=["l2", "none"],
                    help="row scaling at publish (none: pixel/255 as is)")
    ap.add_argument("--seed", type=int, default=20240601, help="public projection seed")
    ap.add_argument("--dataset", default="mnist", choices=["mnist", "sample"],
                    help="mnist (train rows, test queries) or the bundled sample (2000 rows × 64 "
                         "in [0, 1]; the last --queries rows are the queries)")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "rerank-precision"))
    args = ap.parse_args()
    eps = [float(e) for e in args.eps.split(",")]
    p = 784 if args.dataset == "mnist" else 64
    for name, k in (("--k", args.k), ("--sign-k", args.sign_k)):
        if not 1 <= k <= p:
            ap.error(f"{name} = {k}: OPORP needs k ≤ p = {p}")

    t_all = time.time()
    if args.dataset == "mnist":
        mnist = os.path.join(ROOT, "data", "mnist")
        db = np.ascontiguousarray(read_images(os.path.join(mnist, "train-images-idx3-ubyte.gz"))
                                  [:args.rows])
        test = read_images(os.path.join(mnist, "t10k-images-idx3-ubyte.gz"))
    else:  # the bundled sample: its last --queries rows held out as the queries
        x = read_sample(os.path.join(ROOT, "data", "sample.bin"))
        db, test = x[:len(x) - args.queries][:args.rows], x[len(x) - args.queries:]
    qidx = np.sort(np.random.default_rng(12345).choice(len(test), args.queries, replace=False))
    queries = np.ascontiguousarray(test[qidx])
    units = (unit(db).astype(np.float32), unit(queries).astype(np.float32))
    truth = true_top(*units, TOP)
    print(f"{len(db)} rows, {len(queries)} queries, ground truth in {time.time() - t_all:.1f} s",
          flush=True)

    groups = [g for g in [("dp-oporp", args.k, "cosine"),
                          (args.sign_mechanism, args.sign_k, "hamming")]
              if ("real" if g[2] == "cosine" else "sign") in args.groups.split(",")]
    records = []
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rerank-") as workdir, \
            dpg.TemporaryServer() as server:
        with server.connect(autocommit=True) as conn:  # a big enough HNSW build buffer
            conn.execute("ALTER SYSTEM SET maintenance_work_mem = '1GB'")
            conn.execute("SELECT pg_reload_conf()")
        for mech, k, measure in groups:
            for e in eps:
                t = time.time()
                rec = run_one(server, db, queries, truth, units, mech, k, e, measure, args, workdir)
                rec["wall_s"] = time.time() - t
                records.append(rec)
                print(f"{mech} k={k} ε={e:g}: p@10 {json.dumps(rec['p10'])} "
                      f"load {rec['load_s']:.1f} s, total {rec['wall_s']:.1f} s", flush=True)
    md = table(records, len(db), len(queries), args)
    wall = time.time() - t_all
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(md)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"args": vars(args), "rows": len(db), "query_indices": qidx.tolist(),
                   "dprp_version": dprp.__version__, "machine": platform.platform(),
                   "loadavg_end": open("/proc/loadavg").read().strip(), "wall_s": wall,
                   "records": records}, f, indent=1)
    print()
    print(md)
    print(f"wall time {wall:.1f} s; written to {args.out}")


if __name__ == "__main__":
    main()
