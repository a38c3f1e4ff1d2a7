"""HNSW index build and search: dprp against hnswlib and faiss on the same noisy sketches.

Run by benches/run-index-peers.sh (which makes the virtualenv and builds dprp). Steps:

1. rows: MNIST train (60 000 x 784, pixels / 255) with MNIST test images as queries, or
   `--synthetic N` clustered rows (N x 784, 100 clusters) with held-out queries;
2. `dprp publish` a dp-oporp release (k = --k, epsilon = --epsilon) and a sign release
   (dp-signoporp-rr, k = --k); `dprp project` puts the raw queries through each release's map;
   the release payloads are read as the peers' database (f32 rows; packed signs);
3. builds, alternated, `--reps` times: `dprp index` (the whole command), hnswlib 0.8 (cosine on
   real sketches; inner product on +-1 vectors for signs, which ranks as Hamming does) and faiss
   (IndexHNSWFlat, inner product on unit rows; IndexBinaryHNSW for signs), the same M and
   ef_construction, all cores; each in its own process, whose peak RSS (GNU time) is reported;
4. recall@10 against the exact top-10 (numpy, from the same sketches) and query time for a sweep
   of ef; the cheapest ef reaching each recall target gives "query time at equal recall".

Times: dprp's are whole processes (`dprp index`: read and verify the release, code it, build,
write the index with fsync; `dprp query`: open the release, load and check the index, project
the raw queries, search, print CSV); the peers' are the build or search call alone (their
processes also load numpy and the data). The ratios are therefore conservative for dprp.
"""

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

TOP = 10


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def uptime():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


TIME = "/usr/bin/time"


def child_rss(args):
    """Run a process; return (wall seconds, its peak RSS in MiB or None, stdout).

    The peak RSS comes from GNU time (`/usr/bin/time -f %M`), which forks the command from its
    own small process: a child spawned by this (large) driver would inherit the driver's
    high-water mark in its ru_maxrss."""
    t = time.perf_counter()
    with tempfile.NamedTemporaryFile() as rf, tempfile.TemporaryFile() as ef:
        pre = [TIME, "-f", "%M", "-o", rf.name] if os.path.exists(TIME) else []
        p = subprocess.run(pre + list(args), stdout=subprocess.PIPE, stderr=ef)
        wall = time.perf_counter() - t
        if p.returncode != 0:
            ef.seek(0)
            sys.exit(f"{' '.join(args)} failed ({p.returncode}):\n{ef.read().decode()}")
        rf.seek(0)
        txt = rf.read().decode().split()
    rss = int(txt[-1]) / 1024 if pre and txt else None
    return wall, rss, p.stdout.decode()


# ----------------------------------------------------------------------------- data

def mnist(path):
    b = gzip.open(path).read()
    return (np.frombuffer(b, dtype=np.uint8, offset=16).reshape(-1, 784) / 255.0).astype(np.float32)


def synthetic(n, nq, p=784, clusters=100, seed=7):
    r = np.random.default_rng(seed)
    centres = r.normal(size=(clusters, p)).astype(np.float32)
    def rows(m, rr):
        out = np.empty((m, p), np.float32)
        for s in range(0, m, 100_000):
            e = min(m, s + 100_000)
            c = rr.integers(0, clusters, e - s)
            out[s:e] = centres[c] + 0.7 * rr.normal(size=(e - s, p)).astype(np.float32)
        return out
    return rows(n, np.random.default_rng(seed + 1)), rows(nq, np.random.default_rng(seed + 2))


def release_payload(path):
    """(n, k, rows) of a native release: f32 rows, or uint64 packed signs."""
    with open(path, "rb") as f:
        head = f.read(128)
    assert head[:8] == b"DPRPSKCH", path
    n, k, off, length = (int.from_bytes(head[o:o + 8], "little") for o in (16, 24, 32, 40))
    if length == n * k * 4:
        x = np.fromfile(path, dtype="<f4", count=n * k, offset=off).reshape(n, k)
    else:
        w = (k + 63) // 64
        assert length == n * w * 8, (length, n, k)
        x = np.fromfile(path, dtype="<u8", count=n * w, offset=off).reshape(n, w)
    return n, k, x


def unpack_pm1(bits, k):
    """Packed sign words -> +-1 float32 rows (bit set = +1)."""
    b = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :k]
    return (b.astype(np.float32) * 2 - 1)


def exact_top(db, qs, chunk=2048):
    """Exact top-10 by inner product (unit rows: cosine; +-1 rows: k - 2 Hamming), and each
    query's 10th best score (sign sketches tie often: any row scoring as well counts)."""
    out = np.empty((len(qs), TOP), np.int64)
    kth = np.empty(len(qs), np.float32)
    for s in range(0, len(qs), chunk):
        sc = qs[s:s + chunk] @ db.T
        idx = np.argpartition(-sc, TOP - 1, axis=1)[:, :TOP]
        out[s:s + chunk] = idx
        kth[s:s + chunk] = np.take_along_axis(sc, idx, axis=1).min(axis=1)
    return out, kth


def recall(found, truth, db=None, qs=None):
    """recall@10: the share of the exact top-10 found; with `db`, `qs` and `truth = (ids, kth)`,
    a found row scoring at least the query's 10th best score counts (ties)."""
    ids, kth = truth
    if db is None:
        hit = sum(len(set(a[a >= 0]) & set(b)) for a, b in zip(found, ids))
        return hit / ids.size
    hit = 0
    for i, a in enumerate(found):
        a = a[a >= 0]
        sc = db[a] @ qs[i]
        hit += min(TOP, int((sc >= kth[i] - 1e-4 * max(1.0, abs(kth[i]))).sum()))
    return hit / ids.size


def unit(x):
    nr = np.linalg.norm(x, axis=1, keepdims=True)
    nr[nr == 0] = 1
    return (x / nr).astype(np.float32)


# ----------------------------------------------------------------------------- peer children

def child_main(a):
    """`peer_index.py child LIB KIND ...`: one build or one ef sweep, in its own process."""
    db = np.load(a.db)
    threads = os.cpu_count()
    if a.lib == "hnswlib":
        import hnswlib
        dim = db.shape[1]
        space = "cosine" if a.kind == "real" else "ip"
        idx = hnswlib.Index(space=space, dim=dim)
        if a.action == "build":
            t = time.perf_counter()
            idx.init_index(max_elements=len(db), M=a.m, ef_construction=a.efc, random_seed=1)
            idx.add_items(db, np.arange(len(db)), num_threads=threads)
            build = time.perf_counter() - t
            idx.save_index(a.index)
            print(json.dumps({"build_s": build}))
            return
        idx.load_index(a.index, max_elements=len(db))
        idx.set_num_threads(threads)
        qs = np.load(a.queries)
        res = []
        for ef in a.efs:
            idx.set_ef(max(ef, TOP))
            t = time.perf_counter()
            labels, _ = idx.knn_query(qs, k=TOP, num_threads=threads)
            res.append({"ef": ef, "s": time.perf_counter() - t, "ids": labels.tolist()})
        print(json.dumps(res))
        return
    import faiss
    faiss.omp_set_num_threads(threads)
    if a.action == "build":
        t = time.perf_counter()
        if a.kind == "real":
            idx = faiss.IndexHNSWFlat(db.shape[1], a.m, faiss.METRIC_INNER_PRODUCT)
        else:
            idx = faiss.IndexBinaryHNSW(db.shape[1] * 8, a.m)
        idx.hnsw.efConstruction = a.efc
        idx.add(db)
        build = time.perf_counter() - t
        (faiss.write_index if a.kind == "real" else faiss.write_index_binary)(idx, a.index)
        print(json.dumps({"build_s": build}))
        return
    idx = (faiss.read_index if a.kind == "real" else faiss.read_index_binary)(a.index)
    qs = np.load(a.queries)
    res = []
    for ef in a.efs:
        idx.hnsw.efSearch = max(ef, TOP)
        t = time.perf_counter()
        _, labels = idx.search(qs, TOP)
        res.append({"ef": ef, "s": time.perf_counter() - t, "ids": labels.tolist()})
    print(json.dumps(res))


# ----------------------------------------------------------------------------- driver

def dprp_query_ids(dprp, release, queries, index, ef, nq):
    args = [dprp, "query", release, "--queries", queries, "--top", str(TOP), "--index", index,
            "--ef", str(max(ef, TOP)), "--csv"]
    wall, rss, out = child_rss(args)
    ids = np.full((nq, TOP), -1, np.int64)
    for line in out.splitlines()[1:]:
        q, rank, nb, _ = line.split(",")
        ids[int(q), int(rank) - 1] = int(nb)
    return wall, ids


def driver(a):
    me = os.path.abspath(__file__)
    py = sys.executable
    w = a.work
    os.makedirs(w, exist_ok=True)
    loads = [uptime()]
    log(f"load (1/5/15 min): {loads[0]}")
    if a.synthetic:
        x, q = synthetic(a.synthetic, a.queries)
        what = f"synthetic clustered rows, {a.synthetic} x 784"
    else:
        x = mnist(os.path.join(a.mnist, "train-images-idx3-ubyte.gz"))[: a.rows]
        q = mnist(os.path.join(a.mnist, "t10k-images-idx3-ubyte.gz"))[: a.queries]
        what = f"MNIST train, {len(x)} x 784"
    np.save(os.path.join(w, "x.npy"), x)
    np.save(os.path.join(w, "qraw.npy"), q)
    del x
    d = a.dprp
    pj = lambda *s: os.path.join(w, *s)
    releases = {
        "real": ["-m", "dp-oporp", "-e", str(a.epsilon), "-d", "1e-6"],
        "sign": ["-m", "dp-signoporp-rr", "-e", str(a.epsilon)],
    }
    results = {"what": what, "k": a.k, "m": a.m, "ef_construction": a.efc, "epsilon": a.epsilon,
               "queries": len(q), "reps": a.reps, "kinds": {}}
    for kind in a.kinds:
        rel = pj(f"{kind}.dprp")
        for f in (rel, pj(f"q-{kind}.npy")):
            if os.path.exists(f):
                os.remove(f)
        subprocess.run([d, "publish", pj("x.npy"), *releases[kind], "-k", str(a.k),
                        "--projection-seed", "1", "-o", rel], check=True, capture_output=True)
        subprocess.run([d, "project", rel, "--queries", pj("qraw.npy"), "-o", pj(f"q-{kind}.npy")],
                       check=True, capture_output=True)
        n, k, db = release_payload(rel)
        qs = np.load(pj(f"q-{kind}.npy"))
        if kind == "real":
            dbp, qp = unit(db), unit(qs)
            truth = exact_top(dbp, qp)
            peer_db = {"hnswlib": db, "faiss": dbp}
            peer_q = {"hnswlib": qs, "faiss": qp}
        else:
            dbp, qp = unpack_pm1(db, k), unpack_pm1(qs, k)
            truth = exact_top(dbp, qp)
            peer_db = {"hnswlib": dbp, "faiss": np.ascontiguousarray(db).view(np.uint8)}
            peer_q = {"hnswlib": qp, "faiss": np.ascontiguousarray(qs).view(np.uint8)}
        for lib in ("hnswlib", "faiss"):
            np.save(pj(f"db-{kind}-{lib}.npy"), peer_db[lib])
            np.save(pj(f"qs-{kind}-{lib}.npy"), peer_q[lib])
        del db, peer_db, peer_q
        builds = {s: [] for s in ("dprp", "hnswlib", "faiss")}
        for rep in range(a.reps):
            for s in ("dprp", "hnswlib", "faiss"):
                if s == "dprp":
                    idx = pj(f"{kind}.hnsw")
                    wall, rss, _ = child_rss([d, "index", rel, "-o", idx, "--overwrite",
                                              "--m", str(a.m), "--ef-construction", str(a.efc)])
                    t = wall
                else:
                    wall, rss, out = child_rss([py, me, "child", s, kind, "build",
                                                "--db", pj(f"db-{kind}-{s}.npy"),
                                                "--index", pj(f"{kind}.{s}"),
                                                "--m", str(a.m), "--efc", str(a.efc)])
                    t = json.loads(out)["build_s"]
                builds[s].append({"s": t, "wall": wall, "rss_mib": rss, "load": uptime()})
                log(f"{kind} build {s} rep {rep + 1}: {t:.2f} s (process {wall:.2f} s, "
                    f"peak RSS {rss or 0:.0f} MiB, load {uptime()})")
        sweeps = {}
        efs = a.efs
        nq = len(truth[0])
        res = []
        for ef in efs:
            times = []
            for _ in range(a.query_reps):
                wall, ids = dprp_query_ids(d, rel, pj("qraw.npy"), pj(f"{kind}.hnsw"), ef, nq)
                times.append(wall)
            res.append({"ef": ef, "s": statistics.median(times),
                        "recall": recall(ids, truth, dbp, qp)})
        sweeps["dprp"] = res
        for s in ("hnswlib", "faiss"):
            runs = []
            for _ in range(a.query_reps):
                _, _, out = child_rss([py, me, "child", s, kind, "search",
                                       "--db", pj(f"db-{kind}-{s}.npy"), "--index", pj(f"{kind}.{s}"),
                                       "--queries", pj(f"qs-{kind}-{s}.npy"),
                                       "--efs", *map(str, efs)])
                runs.append(json.loads(out))
            sweeps[s] = [{"ef": r["ef"], "s": statistics.median(x["s"] for x in col),
                          "recall": recall(np.array(r["ids"]), truth, dbp, qp)}
                         for r, col in zip(runs[0], zip(*runs))]
        for s, rows in sweeps.items():
            for r in rows:
                log(f"{kind} {s} ef {r['ef']}: recall@10 {r['recall']:.4f}, {r['s']:.3f} s")
        results["kinds"][kind] = {"n": n, "builds": builds, "sweeps": sweeps}
    loads.append(uptime())
    results["load"] = loads
    with open(pj("results.json"), "w") as f:
        json.dump(results, f, indent=1)
    report(results)


def cheapest(rows, target):
    ok = [r for r in rows if r["recall"] >= target]
    return min(ok, key=lambda r: r["s"]) if ok else None


def report(r):
    print(f"\n{r['what']}; k = {r['k']}, epsilon = {r['epsilon']}; M = {r['m']}, "
          f"ef_construction = {r['ef_construction']}; {r['queries']} queries; "
          f"{r['reps']} alternated builds (medians); load {r['load'][0]} -> {r['load'][-1]}")
    for kind, v in r["kinds"].items():
        b = v["builds"]
        med = {s: statistics.median(x["s"] for x in b[s]) for s in b}
        rss = {s: max((x["rss_mib"] or 0) for x in b[s]) for s in b}
        print(f"\n[{kind} sketches, {v['n']} rows] build: dprp {med['dprp']:.2f} s "
              f"(whole command), peak RSS {rss['dprp']:.0f} MiB")
        for s in ("hnswlib", "faiss"):
            print(f"  vs {s}: {med[s]:.2f} s (build call), peak RSS {rss[s]:.0f} MiB (process) "
                  f"-> time ratio dprp/{s} = {med['dprp'] / med[s]:.2f}, "
                  f"memory ratio = {rss['dprp'] / max(rss[s], 1e-9):.2f}")
        sw = v["sweeps"]
        for target in (0.9, 0.95, 0.99):
            row = {s: cheapest(sw[s], target) for s in sw}
            parts = []
            for s in ("hnswlib", "faiss"):
                if row["dprp"] and row[s]:
                    parts.append(f"dprp/{s} = {row['dprp']['s'] / row[s]['s']:.2f}")
            desc = ", ".join(
                f"{s} ef {x['ef']} ({x['recall']:.3f}, {x['s']:.3f} s)" if x else f"{s} -"
                for s, x in row.items())
            print(f"  recall >= {target}: {desc}; " + ("; ".join(parts) or "no ratio"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("child")
    c.add_argument("lib", choices=["hnswlib", "faiss"])
    c.add_argument("kind", choices=["real", "sign"])
    c.add_argument("action", choices=["build", "search"])
    c.add_argument("--db", required=True)
    c.add_argument("--index", required=True)
    c.add_argument("--queries")
    c.add_argument("--m", type=int, default=16)
    c.add_argument("--efc", type=int, default=200)
    c.add_argument("--efs", type=int, nargs="*", default=[])
    r = sub.add_parser("run")
    r.add_argument("--dprp", required=True)
    r.add_argument("--work", required=True)
    r.add_argument("--mnist")
    r.add_argument("--rows", type=int, default=60000)
    r.add_argument("--synthetic", type=int, default=0)
    r.add_argument("--queries", type=int, default=10000)
    r.add_argument("--k", type=int, default=128)
    r.add_argument("--epsilon", type=float, default=16)
    r.add_argument("--m", type=int, default=16)
    r.add_argument("--efc", type=int, default=200)
    r.add_argument("--reps", type=int, default=3)
    r.add_argument("--query-reps", type=int, default=1)
    r.add_argument("--efs", type=int, nargs="*", default=[10, 16, 24, 32, 48, 64, 96, 128, 200])
    r.add_argument("--kinds", nargs="*", default=["real", "sign"])
    r.add_argument("--report", help="print the report of a results.json and exit")
    a = ap.parse_args()
    if a.cmd == "child":
        child_main(a)
    elif a.report:
        with open(a.report) as f:
            report(json.load(f))
    else:
        driver(a)


if __name__ == "__main__":
    main()
