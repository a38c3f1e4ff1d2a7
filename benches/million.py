"""What dprp costs at scale: N rows (default 1 000 000 × 768 float32) end to end, each step a
separate process timed on its own (wall, CPU, peak RSS from `wait4`), with the same pipeline in
numpy + hnswlib beside it. `benches/run-million.sh` makes the virtualenv and runs this.

    python benches/million.py --dprp target/release/dprp [--rows 1000000] [--dim 768] [--k 256]
        [--queries 10000] [--epsilon 16] [--delta 1e-6] [--workdir target/million] [--keep]

Steps:

1. generate: synthetic clustered rows in [−1, 1]^p (C = rows/1000 cluster centres uniform in
   [−0.8, 0.8]^p, each row its centre plus N(0, 0.25²) per coordinate, clipped), written in chunks
   as `.npy` and as Parquet (a `fixed_size_list<float32>` column); the queries are rows picked at
   random plus N(0, 0.02²) per coordinate, so each has a known nearest row (its source);
2. `dprp publish` from `.npy` (dp-oporp and dp-rp-g-opt, k = 256), and dp-oporp from Parquet;
3. `dprp index` of each release (M = 16, ef_construction = 200);
4. `dprp query --index` (ef 64) and the exact `dprp query`, 10 000 raw queries, top 10;
5. `dprp.lancedb.to_lancedb` of the dp-oporp release;
6. the peer: numpy reads the `.npy`, projects with a Rademacher matrix (`X @ W / √k`, float32,
   OpenBLAS) plus Gaussian noise of dprp's σ (read from dprp's report), in chunks, writes `.npy`;
   hnswlib (inner product, M = 16, ef_construction = 200, all cores) indexes it and answers the
   same queries at ef 64.

Printed: one row per step (wall s, CPU s, peak RSS MiB, rows/s), recall@10 of each search (the
share of queries whose source row is in the top 10; and the index's recall against dprp's exact
scan), the ratios dprp / peer, and an extrapolation to 10⁸ rows from the measured rates.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import numpy as np

CHUNK = 50_000


def run(name: str, cmd: list[str], rows: int, results: list, **kw) -> subprocess.CompletedProcess:
    """Run one step as its own process; record wall, CPU and peak RSS (`wait4`)."""
    t0 = time.perf_counter()
    out = open(kw.pop("stdout_path"), "wb") if "stdout_path" in kw else subprocess.DEVNULL
    err_path = pathlib.Path(kw.pop("stderr_path", os.devnull))
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, **kw)
        _, status, ru = os.wait4(proc.pid, 0)
    if out is not subprocess.DEVNULL:
        out.close()
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        tail = err_path.read_text(errors="replace")[-2000:] if err_path.is_file() else ""
        sys.exit(f"{name}: exit {code}: {' '.join(cmd)}\n{tail}")
    r = {"step": name, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mib": ru.ru_maxrss / 1024, "rows": rows}
    results.append(r)
    print(f"{name:<34} {wall:9.1f} s wall {r['cpu']:9.1f} s CPU {r['rss_mib']:9.0f} MiB {rows / wall:12.0f} rows/s", flush=True)
    return proc


GENERATE = r"""
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
rows, dim, nq, chunk, seed, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
rng = np.random.default_rng(seed)
clusters = max(1, rows // 1000)
centres = rng.uniform(-0.8, 0.8, size=(clusters, dim)).astype(np.float32)
x = np.lib.format.open_memmap(f"{out}/data.npy", mode="w+", dtype="<f4", shape=(rows, dim))
typ = pa.list_(pa.float32(), dim)
writer = pq.ParquetWriter(f"{out}/data.parquet", pa.schema([("embedding", typ)]))
for a in range(0, rows, chunk):
    b = min(rows, a + chunk)
    c = centres[rng.integers(0, clusters, size=b - a)]
    block = np.clip(c + rng.normal(0.0, 0.25, size=c.shape).astype(np.float32), -1.0, 1.0)
    x[a:b] = block
    flat = pa.array(block.reshape(-1), type=pa.float32())
    writer.write_table(pa.table({"embedding": pa.FixedSizeListArray.from_arrays(flat, dim)}))
writer.close()
x.flush()
src = np.sort(rng.choice(rows, size=nq, replace=False))
q = np.clip(x[src] + rng.normal(0.0, 0.02, size=(nq, dim)).astype(np.float32), -1.0, 1.0)
np.save(f"{out}/queries.npy", q.astype("<f4"))
np.save(f"{out}/truth.npy", src.astype("<i8"))
"""

NUMPY_PUBLISH = r"""
import os, sys, numpy as np
src, dst, k, sigma, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
x = np.load(src, mmap_mode="r")
rng = np.random.default_rng()
w = (rng.integers(0, 2, size=(x.shape[1], k), dtype=np.int8) * 2 - 1).astype(np.float32) / np.float32(np.sqrt(k))
np.save(dst + ".w.npy", w)
tmp = dst + ".tmp.npy"
out = np.lib.format.open_memmap(tmp, mode="w+", dtype="<f4", shape=(x.shape[0], k))
for a in range(0, x.shape[0], chunk):
    b = min(x.shape[0], a + chunk)
    out[a:b] = np.asarray(x[a:b]) @ w + rng.normal(0.0, sigma, size=(b - a, k)).astype(np.float32)
out.flush()
del out
os.replace(tmp, dst)
"""

HNSW_BUILD = r"""
import sys, numpy as np, hnswlib
src, dst = sys.argv[1], sys.argv[2]
x = np.load(src, mmap_mode="r")
index = hnswlib.Index(space="ip", dim=x.shape[1])
index.init_index(max_elements=x.shape[0], M=16, ef_construction=200)
for a in range(0, x.shape[0], 100_000):
    index.add_items(np.asarray(x[a:a + 100_000]), np.arange(a, min(x.shape[0], a + 100_000)))
index.save_index(dst)
"""

HNSW_QUERY = r"""
import sys, numpy as np, hnswlib
index_path, w_path, queries, dim, rows, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
w = np.load(w_path)
index = hnswlib.Index(space="ip", dim=w.shape[1])
index.load_index(index_path, max_elements=rows)
index.set_ef(64)
labels, _ = index.knn_query(np.load(queries) @ w, k=10)
np.save(out, labels.astype("<i8"))
"""

LANCEDB = r"""
import sys, dprp, dprp.lancedb as dl
dl.to_lancedb(dprp.Release.open(sys.argv[1]), sys.argv[2], "million", measure="ip")
"""


def top10_csv(path: pathlib.Path, nq: int) -> np.ndarray:
    """`dprp query --csv` → (queries, 10) neighbour ids."""
    ids = np.full((nq, 10), -1, dtype=np.int64)
    with open(path) as f:
        next(f)
        for line in f:
            q, rank, nb, _ = line.split(",")
            ids[int(q), int(rank) - 1] = int(nb)
    return ids


def recall_of_source(ids: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([t in row for t, row in zip(truth, ids)]))


def recall_against(ids: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, exact)]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dprp", required=True, type=pathlib.Path)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--k", type=int, default=256)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--epsilon", type=float, default=16.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--memory", type=int, default=256, help="dprp's --memory (MiB)")
    ap.add_argument("--workdir", type=pathlib.Path, default=pathlib.Path("target/million"))
    ap.add_argument("--keep", action="store_true", help="keep the work directory (data, releases, indexes)")
    args = ap.parse_args(argv)
    py, dprp, n, k = sys.executable, str(args.dprp.resolve()), args.rows, args.k
    w = args.workdir.resolve()
    if w.exists():
        shutil.rmtree(w)
    w.mkdir(parents=True)
    print(f"load: {os.getloadavg()}, {os.cpu_count()} CPUs; {n} rows × {args.dim}, k = {k}, {args.queries} queries", flush=True)
    res: list[dict] = []
    run("generate (npy + parquet)", [py, "-c", GENERATE, str(n), str(args.dim), str(args.queries), str(CHUNK), "7", str(w)], n, res)
    truth = np.load(w / "truth.npy")
    pub = ["-e", str(args.epsilon), "-d", str(args.delta), "-k", str(k), "--memory", str(args.memory)]
    run("dprp publish dp-oporp (npy)", [dprp, "publish", str(w / "data.npy"), "-m", "dp-oporp", *pub, "-o", str(w / "oporp.dprp")], n, res)
    run("dprp publish dp-oporp (parquet)", [dprp, "publish", str(w / "data.parquet"), "-m", "dp-oporp", *pub, "-o", str(w / "oporp-pq.dprp")], n, res)
    run("dprp publish dp-rp-g-opt (npy)", [dprp, "publish", str(w / "data.npy"), "-m", "dp-rp-g-opt", *pub, "-o", str(w / "rp.dprp")], n, res, stdout_path=w / "rp.log")
    sigma = float(re.search(r"σ = ([0-9.eE+-]+)", (w / "rp.log").read_text())[1])
    recalls = {}
    for name in ("oporp", "rp"):
        rel = str(w / f"{name}.dprp")
        run(f"dprp index {name}", [dprp, "index", rel, "-o", str(w / f"{name}.hnsw"), "--measure", "ip"], n, res)
        q = ["--queries", str(w / "queries.npy"), "--measure", "ip", "--top", "10", "--csv", "--memory", str(args.memory)]
        run(f"dprp query --index {name}", [dprp, "query", rel, *q, "--index", str(w / f"{name}.hnsw"), "--ef", "64"], args.queries, res, stdout_path=w / f"{name}-index.csv")
        run(f"dprp query exact {name}", [dprp, "query", rel, *q], args.queries, res, stdout_path=w / f"{name}-exact.csv")
        got, exact = top10_csv(w / f"{name}-index.csv", args.queries), top10_csv(w / f"{name}-exact.csv", args.queries)
        recalls[name] = {"index_source": recall_of_source(got, truth), "exact_source": recall_of_source(exact, truth), "index_vs_exact": recall_against(got, exact)}
    run("dprp.lancedb export oporp", [py, "-c", LANCEDB, str(w / "oporp.dprp"), str(w / "lancedb")], n, res)
    run("numpy publish (rp + noise)", [py, "-c", NUMPY_PUBLISH, str(w / "data.npy"), str(w / "peer.npy"), str(k), str(sigma), str(CHUNK)], n, res)
    run("hnswlib build", [py, "-c", HNSW_BUILD, str(w / "peer.npy"), str(w / "peer.hnsw")], n, res)
    run("hnswlib query", [py, "-c", HNSW_QUERY, str(w / "peer.hnsw"), str(w / "peer.npy.w.npy"), str(w / "queries.npy"), str(args.dim), str(n), str(w / "peer-top10.npy")], args.queries, res)
    recalls["numpy+hnswlib"] = {"index_source": recall_of_source(np.load(w / "peer-top10.npy"), truth)}

    by = {r["step"]: r for r in res}
    print("\n| step | wall (s) | CPU (s) | peak RSS (MiB) | rows/s |\n|---|---|---|---|---|")
    for r in res:
        print(f"| {r['step']} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['rss_mib']:.0f} | {r['rows'] / r['wall']:.0f} |")
    print("\nrecall@10 (source row in the top 10; index against dprp's exact scan):")
    print(json.dumps(recalls, indent=1))
    pairs = [
        ("dprp publish dp-rp-g-opt (npy)", "numpy publish (rp + noise)"),
        ("dprp index rp", "hnswlib build"),
        ("dprp query --index rp", "hnswlib query"),
    ]
    print("\n| dprp / peer | wall | CPU |\n|---|---|---|")
    for a, b in pairs:
        print(f"| {a} / {b} | {by[a]['wall'] / by[b]['wall']:.2f}× | {by[a]['cpu'] / by[b]['cpu']:.2f}× |")
    scale = 1e8 / n
    print(f"\nextrapolated to 10⁸ rows (linear in rows; an HNSW build grows a little faster, log n):")
    for step in ("dprp publish dp-oporp (npy)", "dprp publish dp-rp-g-opt (npy)", "dprp index oporp", "dprp index rp"):
        print(f"  {step}: {by[step]['wall'] * scale / 3600:.1f} h")
    (w.parent / "million.json").write_text(json.dumps({"results": res, "recalls": recalls, "rows": n, "dim": args.dim, "k": k, "load_end": os.getloadavg()}, indent=1))
    print(f"load at the end: {os.getloadavg()}")
    if not args.keep:
        shutil.rmtree(w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
