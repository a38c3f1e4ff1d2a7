"""dprp's HNSW index against LanceDB and pgvector on one release, and pgvector's load rate.

    bash benches/run-db-compare.sh                # full settings (about 20-30 min on 2 cores)
    bash benches/run-db-compare.sh --rows 5000 --queries 200 --big-rows 20000   # quick check

(A) Equal recall on a dp-oporp release (eps 4, delta 1e-6, k 128, normalize l2) of --rows MNIST
training images (float32/255), queried with --queries raw MNIST test images. Truth: dprp's exact
cosine top-10 (Release.search); LanceDB's exact search (bypass_vector_index) and pgvector's
(sequential scan, 100 queries) are checked against it, allowing exact score ties. Swept:
dprp HNSW (`dprp index`, m 16, ef-construction 200; `dprp query --index --ef EF --json`, time =
wall of the process minus that of a 1-query process); LanceDB IVF_HNSW_SQ (1 partition, m 16,
ef_construction 200) over ef x refine_factor (none; 2 from ef 256) and IVF_PQ (sqrt(n)
partitions, 16 sub-vectors) over nprobes x refine_factor (none, 10; 50, 200 from nprobes 128),
all queries in one dprp.lancedb.search call; pgvector HNSW (Release.to_postgres(index="hnsw"):
m 16, ef_construction 64) over hnsw.ef_search, one SQL query per query. Recall@10 is computed
here for all. Build time, index size on disk, and peak RSS while building: of the `dprp index`
process (/usr/bin/time), the increase of this process (LanceDB; sampled every 50 ms), or of the
largest PostgreSQL server process (sampled; with the shared buffers it touched). Query times: the
best of --reps runs.

(B) pgvector load rate: `dprp export` (CLI wall, and the COPY time it reports) and
Release.to_postgres (copy_seconds) of a dp-oporp release (k 128) of --big-rows Gaussian rows
(p 128, normalize l2); exact SQL top-10 vs dprp's on 100 queries; `dprp export --index hnsw`
(index time = total - COPY) of --hnsw-rows rows (auto: 2x10^5, then all rows when the n log n
extrapolation stays under --hnsw-max-minutes); a sign release (dp-signrp-rr k 1024, since
OPORP needs k <= p) as bit(1024).

Every timed part records /proc/loadavg before and after. Writes results.json and table.md to
--out (default target/db-compare); work files go to --out/work, removed unless --keep-work.
"""

import argparse
import contextlib
import gzip
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import numpy as np
import psutil

os.environ.setdefault("LANCEDB_LOG", "error")  # dprp.lancedb's select(["id"]) warns per search

import dprp  # noqa: E402
import dprp.lancedb as dl  # noqa: E402
import dprp.postgres as dpg  # noqa: E402

TOP = 10
TIMELINE = []
MIB = 2**20


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


@contextlib.contextmanager
def timed(name=None):
    """A timed part: .wall, .cpu (this process, all threads) seconds; logs it with the load."""
    t = SimpleNamespace(load0=loadavg(), c0=time.process_time(), t0=time.perf_counter())
    yield t
    t.wall, t.cpu = time.perf_counter() - t.t0, time.process_time() - t.c0
    if name:
        TIMELINE.append({"part": name, "wall_s": round(t.wall, 3), "load_before": t.load0,
                         "load_after": loadavg()})
        print(f"[{time.strftime('%H:%M:%S')}] {name}: {t.wall:.2f} s (load {t.load0} -> "
              f"{loadavg()})", flush=True)


@contextlib.contextmanager
def peak_rss(procs):
    """Samples the RSS of the processes procs() every 50 ms: .peak, .base (MiB, largest one)."""
    def rss():
        sizes = [0]
        for p in procs():
            with contextlib.suppress(psutil.Error):
                sizes.append(p.memory_info().rss)
        return max(sizes) / MIB
    m, stop = SimpleNamespace(base=rss(), peak=0.0), threading.Event()

    def run():
        while not stop.wait(0.05):
            m.peak = max(m.peak, rss())
    th = threading.Thread(target=run, daemon=True)
    th.start()
    yield m
    stop.set()
    th.join()
    m.peak = max(m.peak, rss())


def run_cli(argv, out_path, name=None):
    """Run a dprp command (stdout to out_path): wall s, CPU s (wait4), peak RSS MiB, stderr.
    The peak RSS comes from /usr/bin/time (None without it): wait4's ru_maxrss of a child of
    this process starts at this process's own RSS, which the child held before its exec."""
    timer = ["/usr/bin/time", "-f", "%M", "-o", out_path + ".rss"]
    timer = timer if os.access(timer[0], os.X_OK) else []
    with open(out_path, "wb") as o, open(out_path + ".err", "w+") as e, timed(name) as t:
        p = subprocess.Popen(timer + argv, stdout=o, stderr=e, stdin=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        e.seek(0)
        err = e.read()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(argv)}\n{err}")
    rss = int(open(out_path + ".rss").read().split()[-1]) / 1024 if timer else None
    return t.wall, ru.ru_utime + ru.ru_stime, rss, err


def mnist(path, rows):
    with gzip.open(path, "rb") as f:
        raw = np.frombuffer(f.read(), dtype=np.uint8, offset=16)
    return raw.reshape(-1, 784)[:rows].astype(np.float32) / 255.0


def recall(ids, truth):
    return float(np.mean([len(set(a.tolist()) & set(t.tolist())) / truth.shape[1]
                          for a, t in zip(ids, truth)]))


def tie_check(release, queries, ids, truth, tol=1e-5):
    """How many top-10 sets are identical to the truth's, differ only at ties (rows in one set
    only score within tol of the truth's 10th; float64 cosines of the sketches), or differ."""
    q = np.asarray(release.project(queries), dtype=np.float64)
    q /= np.linalg.norm(q, axis=1, keepdims=True)

    def cos(i, js):
        r = np.asarray(release.sketches[np.array(sorted(js), dtype=np.int64)], dtype=np.float64)
        return (r @ q[i]) / np.linalg.norm(r, axis=1)

    c = {"identical": 0, "tie_only": 0, "different": 0}
    for i, (a, t) in enumerate(zip(ids, truth)):
        a, t = set(a.tolist()), set(t.tolist())
        if a == t:
            c["identical"] += 1
        elif any(j >= release.n for j in a):
            c["different"] += 1
        else:
            tie = np.all(np.abs(cos(i, a ^ t) - cos(i, t).min()) <= tol)
            c["tie_only" if tie else "different"] += 1
    return c


def best_of(reps, fn):
    """(wall, CPU of this process, result) of the fastest of reps calls (fewer past 10 s)."""
    runs = []
    while len(runs) < reps and sum(r[0] for r in runs) < 10:
        c, t = time.process_time(), time.perf_counter()
        out = fn()
        runs.append((time.perf_counter() - t, time.process_time() - c, out))
    return min(runs, key=lambda r: r[0])


def sweep_row(system, param, ids, truth, wall, cpu, nq, **extra):
    row = {"system": system, "param": param, "recall": recall(ids, truth), "total_s": wall,
           "ms_per_query": 1000 * wall / nq, "cpu_s": cpu, **extra}
    print(f"  {system:15s} {param:22s} recall {row['recall']:.4f} {row['ms_per_query']:.3f} "
          "ms/query", flush=True)
    return row


def pg_procs(conn):
    post = psutil.Process(psutil.Process(conn.info.backend_pid).ppid())
    return post.children


def pg_index_mib(conn, table):
    r = conn.execute("SELECT sum(pg_relation_size(i.indexrelid)) FROM pg_index i JOIN pg_class c "
                     "ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam WHERE "
                     "i.indrelid = %s::regclass AND a.amname = 'hnsw'", (table,)).fetchone()
    return float(r[0] or 0) / MIB


def part_a(a, work, server, res):
    mn = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data/mnist")
    x = mnist(os.path.join(mn, "train-images-idx3-ubyte.gz"), a.rows)
    qs = mnist(os.path.join(mn, "t10k-images-idx3-ubyte.gz"), a.queries)
    nq = len(qs)
    with timed("A publish") as t:
        rel = dprp.publish(x, output=os.path.join(work, "a.dprp"), mechanism="dp-oporp",
                           epsilon=a.epsilon, delta=1e-6, k=a.k, normalize="l2")
    A = res["A"] = {"rows": rel.n, "p": rel.p, "k": rel.k, "queries": nq, "publish_s": t.wall,
                    "release_mib": os.path.getsize(rel.path) / MIB, "sweep": [], "builds": {}}
    sweep, builds = A["sweep"], A["builds"]
    with timed("A dprp exact (Release.search)"):
        w, cpu, (truth, _) = best_of(a.reps, lambda: rel.search(qs, top=TOP))
    truth = truth.astype(np.int64)
    sweep.append(sweep_row("dprp exact", "scan", truth, truth, w, cpu, nq))

    # dprp HNSW, through the CLI
    qpath, q1path, idx = (os.path.join(work, f) for f in ("q.npy", "q1.npy", "a.idx"))
    np.save(qpath, qs)
    np.save(q1path, qs[:1])
    wall, cpu, rss, _ = run_cli([a.dprp, "index", rel.path, "-o", idx], idx + ".log",
                                "A dprp index (HNSW build)")
    builds["dprp HNSW"] = {"build_s": wall, "cpu_s": cpu, "index_mib": os.path.getsize(idx) / MIB,
                           "peak_rss_mib": rss, "rss_of": "the dprp index process (/usr/bin/time)",
                           "params": "m 16, ef_construction 200"}
    out = os.path.join(work, "a.json")
    cmd = lambda q, ef: [a.dprp, "query", rel.path, "--queries", q, "--index", idx, "--ef",
                         str(ef), "--top", str(TOP), "--json"]
    with timed("A dprp HNSW query sweep"):
        t1 = A["dprp_one_query_process_s"] = min(run_cli(cmd(q1path, 64), out)[0]
                                                 for _ in range(3))
        for ef in a.hnsw_efs:
            wall, cpu = best_of(a.reps, lambda: run_cli(cmd(qpath, ef), out)[:2])[2]
            found = sorted(json.load(open(out))["results"], key=lambda r: r["query"])
            ids = np.array([[h["id"] for h in r["neighbours"]] for r in found], dtype=np.int64)
            sweep.append(sweep_row("dprp HNSW", f"ef={ef}", ids, truth, max(wall - t1, 1e-9),
                                   cpu, nq, process_wall_s=wall))
        err = run_cli(cmd(qpath, 64) + ["--check-recall"], out)[3]
    A["dprp_check_recall_ef64"] = (re.findall(r"recall@\d+ of the index[^\n]*", err) or [""])[0]

    # LanceDB: one table per index kind
    db = os.path.join(work, "lance")
    kinds = {"IVF_HNSW_SQ": dict(num_partitions=1, m=16, ef_construction=200),
             "IVF_PQ": dict(num_partitions=max(1, round(math.sqrt(rel.n))), num_sub_vectors=16)}
    with timed("A LanceDB write tables"):
        tables = {kind: dl.to_lancedb(rel, db, "a_" + kind.lower()) for kind in kinds}
    with timed("A LanceDB exact (bypass index)"):
        w, cpu, (ids, _) = best_of(a.reps, lambda: dl.search(rel, tables["IVF_PQ"], qs, TOP,
                                                             exact=True))
    ids = ids.astype(np.int64)
    A["lancedb_exact_vs_dprp"] = {"recall": recall(ids, truth), **tie_check(rel, qs, ids, truth)}
    sweep.append(sweep_row("LanceDB exact", "bypass index", ids, truth, w, cpu, nq))
    for kind, params in kinds.items():
        tb, name = tables[kind], "LanceDB " + kind.replace("IVF_HNSW_SQ", "HNSW_SQ")
        with timed(f"A LanceDB {kind} build") as t, peak_rss(lambda: [psutil.Process()]) as m:
            dl.create_index(tb, rel, kind=kind, **params)
        builds["LanceDB " + kind] = {
            "build_s": t.wall, "cpu_s": t.cpu, "peak_rss_mib": m.peak - m.base,
            "rss_of": "increase of this Python process (sampled)",
            "index_mib": sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(
                os.path.join(db, f"a_{kind.lower()}.lance", "_indices")) for f in fs) / MIB,
            "params": ", ".join(f"{k} {v}" for k, v in params.items())}
        dl.search(rel, tb, qs, TOP, exact=False)  # warm-up: loads the index
        grid = ([(None, ef, rf) for rf in (None, 2) for ef in a.lance_efs
                 if ef >= (TOP if rf is None else 256)]  # ef >= top * refine_factor
                if kind == "IVF_HNSW_SQ" else
                [(n, None, rf) for rf in (None, 10, 50, 200) for n in a.nprobes
                 if (rf or 0) <= 10 or n >= 128])  # few probes cap the recall anyway
        with timed(f"A LanceDB {kind} query sweep"):
            for n, ef, rf in grid:
                w, cpu, (ids, _) = best_of(a.reps, lambda: dl.search(
                    rel, tb, qs, TOP, exact=False, nprobes=n, ef=ef, refine_factor=rf))
                param = (f"ef={ef}" if ef else f"nprobes={n}") + (f" refine={rf}" if rf else "")
                sweep.append(sweep_row(name, param, ids.astype(np.int64), truth, w, cpu, nq))

    # pgvector, through Release.to_postgres and dprp.postgres.search
    with server.connect(autocommit=True) as conn:
        with timed("A pgvector load + HNSW build"), peak_rss(pg_procs(conn)) as m:
            d = rel.to_postgres(server.url, "a_hnsw", index="hnsw")
        builds["pgvector HNSW"] = {
            "build_s": d["total_seconds"] - d["copy_seconds"], "copy_s": d["copy_seconds"],
            "peak_rss_mib": m.peak, "index_mib": pg_index_mib(conn, "a_hnsw"),
            "rss_of": "largest PostgreSQL server process (sampled, shared buffers included)",
            "params": "m 16, ef_construction 64 (pgvector defaults)"}
        backend = psutil.Process(conn.info.backend_pid)
        srv_cpu = lambda: sum(backend.cpu_times()[:2])
        nx = min(100, nq)
        with timed(f"A pgvector exact ({nx} queries)") as t:
            c0 = srv_cpu()
            ids, _ = dpg.search(conn, rel, "a_hnsw", qs[:nx], TOP, exact=True)
        ids = ids.astype(np.int64)
        A["pgvector_exact_vs_dprp"] = {"queries": nx, **tie_check(rel, qs[:nx], ids, truth[:nx])}
        sweep.append(sweep_row("pgvector exact", f"seq scan, {nx} queries", ids, truth[:nx],
                               t.wall, t.cpu, nx, server_cpu_s=srv_cpu() - c0))
        dpg.search(conn, rel, "a_hnsw", qs[:50], TOP, exact=False, ef_search=40)  # warm-up
        with timed("A pgvector HNSW query sweep"):
            for ef in a.pg_efs:
                c0 = srv_cpu()
                w, cpu, (ids, _) = best_of(a.reps, lambda: dpg.search(
                    conn, rel, "a_hnsw", qs, TOP, exact=False, ef_search=ef))
                sweep.append(sweep_row("pgvector HNSW", f"ef_search={ef}", ids.astype(np.int64),
                                       truth, w, cpu, nq, server_cpu_s=(srv_cpu() - c0) / a.reps))
        conn.execute("DROP TABLE a_hnsw")


def export_cli(a, rel, url, table, extra=(), name=None):
    log = os.path.join(os.path.dirname(rel.path), table + ".log")
    wall, cpu, rss, err = run_cli([a.dprp, "export", rel.path, "--postgres", url, "--table",
                                   table, *extra], log, name)
    m = re.search(r"in ([\d.]+) s \((\d+) rows/s loading", err)
    total, rate = float(m.group(1)), float(m.group(2))
    return {"rows": rel.n, "wall_s": wall, "cli_cpu_s": cpu, "cli_peak_rss_mib": rss,
            "export_total_s": total, "copy_s": rel.n / rate, "rows_per_s_copy": rate,
            "rows_per_s_cli_wall": rel.n / wall, "note": err.strip().splitlines()[-1]}


def part_b(a, work, server, res):
    B = res["B"] = {"rows": a.big_rows, "p": 128, "k": 128, "hnsw": []}
    rng = np.random.default_rng(2026)
    with timed("B generate Gaussian rows"):
        x = rng.standard_normal((a.big_rows, 128), dtype=np.float32)
        qs = rng.standard_normal((100, 128), dtype=np.float32)
    pub = lambda rows, name, **kw: dprp.publish(
        rows, output=os.path.join(work, name), epsilon=a.epsilon, delta=1e-6, normalize="l2",
        **{"mechanism": "dp-oporp", "k": 128, **kw})
    with timed("B publish dp-oporp k=128") as t:
        rel = pub(x, "b.dprp")
    B["publish_s"] = t.wall
    sub = pub(x[:min(200_000, a.big_rows) if a.hnsw_rows == "auto" else int(a.hnsw_rows)],
              "b_sub.dprp")
    if not a.no_sign:
        with timed("B publish dp-signrp-rr k=1024"):
            sign = pub(x, "b_sign.dprp", mechanism="dp-signrp-rr", k=1024)
    del x
    url = server.url
    B["cli_no_index"] = export_cli(a, rel, url, "b_plain", name="B dprp export (no index)")
    with timed("B Release.to_postgres (no index)") as t:
        d = rel.to_postgres(url, "b_py")
    B["python_no_index"] = {"rows": rel.n, "copy_s": d["copy_seconds"], "wall_s": t.wall,
                            "total_s": d["total_seconds"],
                            "rows_per_s_copy": rel.n / d["copy_seconds"]}
    with server.connect(autocommit=True) as conn:
        conn.execute("DROP TABLE b_py")
        B["table_mib"] = conn.execute(
            "SELECT pg_total_relation_size('b_plain')").fetchone()[0] / MIB
        with timed("B dprp exact (100 queries)") as t:
            truth, _ = rel.search(qs, top=TOP)
        B["dprp_exact_s"] = t.wall
        with timed("B pgvector exact (100 queries)") as t:
            ids, _ = dpg.search(conn, rel, "b_plain", qs, TOP, exact=True)
        B["pg_exact_s"] = t.wall
        B["exact_agreement"] = {"queries": len(qs), "recall": recall(ids, truth),
                                **tie_check(rel, qs, ids.astype(np.int64), truth.astype(np.int64))}
        conn.execute("DROP TABLE b_plain")
        todo = [sub]
        while todo:
            r = todo.pop()
            table = f"b_hnsw_{r.n}"
            with peak_rss(pg_procs(conn)) as m:
                e = export_cli(a, r, url, table, ["--index", "hnsw"],
                               name=f"B dprp export --index hnsw ({r.n} rows)")
            e.update(index_s=e["export_total_s"] - e["copy_s"], server_peak_rss_mib=m.peak,
                     index_mib=pg_index_mib(conn, table))
            B["hnsw"].append(e)
            conn.execute(f"DROP TABLE {table}")
            if a.hnsw_rows == "auto" and r.n < rel.n:
                pred = B["hnsw_full_predicted_s"] = (e["index_s"] * rel.n / r.n
                                                     * math.log(rel.n) / math.log(r.n))
                if pred <= 60 * a.hnsw_max_minutes:
                    todo.append(rel)
                else:
                    B["hnsw_full_skipped"] = f"> {a.hnsw_max_minutes} min: not run"
    if not a.no_sign:
        B["sign"] = export_cli(a, sign, url, "b_sign", name="B dprp export sign k=1024")
        B["sign"]["mechanism"] = "dp-signrp-rr k 1024, bit(1024)"


def md(head, rows):
    """A markdown table; floats get 2 decimals (format others beforehand)."""
    cell = lambda v: "" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)
    return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            + ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows])


def write_table(res, path):
    L = [f"# db-compare ({res['started']}, dprp {res['dprp_version']}, {res['cpus']} CPUs, "
         f"total {res['total_wall_s']:.0f} s)", ""]
    A = res.get("A", {})
    if "pgvector_exact_vs_dprp" in A:
        srow = lambda r: [r["system"], r["param"], f"{r['recall']:.4f}",
                          f"{r['ms_per_query']:.3f}", r["total_s"], r["cpu_s"],
                          r.get("server_cpu_s")]
        shead = ["system", "setting", "recall@10", "ms/query", "total s", "CPU s",
                 "server CPU s"]
        L += [f"## A. Equal recall: {A['rows']} MNIST rows, dp-oporp eps {res['args']['epsilon']}"
              f" k {A['k']}, {A['queries']} queries, recall@10 vs dprp exact", "",
              f"* LanceDB exact vs dprp exact: {A['lancedb_exact_vs_dprp']}",
              f"* pgvector exact vs dprp exact: {A['pgvector_exact_vs_dprp']}",
              f"* dprp query --check-recall at ef 64: {A['dprp_check_recall_ef64']}", ""]
        L += md(["index", "params", "build s", "index MiB", "build peak RSS MiB", "RSS of"],
                [[k, b["params"], b["build_s"], f"{b['index_mib']:.1f}",
                  b["peak_rss_mib"], b["rss_of"]] for k, b in A["builds"].items()])
        best = []
        for target in (0.95, 0.99):
            for name in dict.fromkeys(r["system"] for r in A["sweep"]):
                ok = [r for r in A["sweep"] if r["system"] == name and r["recall"] >= target]
                best.append([target] + (srow(min(ok, key=lambda r: r["ms_per_query"])) if ok
                                        else [name, "not reached"]))
        L += ["", "Cheapest setting reaching each recall. ms/query = total s / queries. dprp "
              "HNSW: wall of the CLI process minus that of a 1-query process "
              f"({A['dprp_one_query_process_s']:.3f} s); CPU s of the CLI process. LanceDB: one "
              "batched call. pgvector: one SQL query per query; CPU s of the Python client, "
              "server CPU s of the backend (one per run).", ""]
        L += md(["target"] + shead, best) + ["", "Full sweep:", ""]
        L += md(shead, [srow(r) for r in A["sweep"]])
    B = res.get("B", {})
    if "exact_agreement" in B:
        row = lambda name, e: [name, e["rows"], e["wall_s"], e["copy_s"],
                               f"{e['rows_per_s_copy']:.0f}",
                               f"{e['rows_per_s_cli_wall']:.0f}" if "cli_cpu_s" in e else None,
                               e.get("index_s"), e.get("index_mib"), e.get("server_peak_rss_mib"),
                               e.get("cli_peak_rss_mib")]
        rows = [row("dprp export", B["cli_no_index"]),
                row("Release.to_postgres", B["python_no_index"])]
        rows += [row("dprp export --index hnsw", h) for h in B["hnsw"]]
        if "sign" in B:
            rows.append(row(f"dprp export ({B['sign']['mechanism']})", B["sign"]))
        L += ["", f"## B. pgvector load: {B['rows']} Gaussian rows (p 128), dp-oporp k 128; "
              f"table {B['table_mib']:.0f} MiB", ""]
        L += md(["export", "rows", "wall s", "COPY s", "rows/s (COPY)", "rows/s (CLI wall)",
                 "index s", "index MiB", "server peak RSS MiB", "CLI peak RSS MiB"], rows)
        L += ["", f"Exact SQL top-10 vs dprp top-10: {B['exact_agreement']} (dprp "
              f"{B['dprp_exact_s']:.2f} s, pgvector {B['pg_exact_s']:.2f} s for 100 queries)"]
        if "hnsw_full_predicted_s" in B:
            L.append(f"HNSW index of all rows predicted at {B['hnsw_full_predicted_s'] / 60:.1f}"
                     f" min (n log n from the smaller build): {B.get('hnsw_full_skipped', 'run')}")
    L += ["", f"PostgreSQL settings: {res.get('pg_settings')}", ""]
    L += md(["timed part", "wall s", "load before", "load after"],
            [[t["part"], t["wall_s"], t["load_before"], t["load_after"]] for t in TIMELINE])
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ints = lambda s: [int(v) for v in s.split(",")]
    for flag, typ, default in [
            ("--dprp", str, os.path.join(root, "target/release/dprp")),
            ("--out", str, os.path.join(root, "target/db-compare")),
            ("--rows", int, 60000), ("--queries", int, 1000), ("--epsilon", float, 4.0),
            ("--k", int, 128), ("--reps", int, 2), ("--big-rows", int, 1_000_000),
            ("--hnsw-efs", ints, "10,32,64,128,256,384,512,768,1024,1536,2048"),
            ("--lance-efs", ints, "16,64,128,256,512,1024,2048"),
            ("--nprobes", ints, "8,32,128,256"),
            ("--pg-efs", ints, "10,32,64,128,256,400,600,800,1000"),  # pgvector's limit: 1000
            ("--hnsw-rows", str, "auto"), ("--hnsw-max-minutes", float, 15.0),
            ("--pg-maintenance-work-mem", str, "2GB")]:  # ALTER SYSTEM; "default": left alone
        ap.add_argument(flag, type=typ, default=default)
    for flag in ("--no-sign", "--skip-a", "--skip-b", "--keep-work"):
        ap.add_argument(flag, action="store_true")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stops the server on the way out
    if not os.access(a.dprp, os.X_OK):
        sys.exit(f"no dprp binary at {a.dprp}")
    work = os.path.join(a.out, "work")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    res = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "dprp_version": dprp.__version__,
           "cpus": os.cpu_count(), "args": vars(a), "timeline": TIMELINE}
    t0 = time.perf_counter()
    try:
        with dpg.TemporaryServer() as server:
            with server.connect(autocommit=True) as conn:
                if a.pg_maintenance_work_mem != "default":
                    conn.execute("ALTER SYSTEM SET maintenance_work_mem = "
                                 f"'{a.pg_maintenance_work_mem}'")
                    conn.execute("SELECT pg_reload_conf()")
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                names = ("server_version", "maintenance_work_mem", "shared_buffers",
                         "max_parallel_maintenance_workers", "max_parallel_workers_per_gather")
                res["pg_settings"] = dict(zip(names + ("pgvector",), conn.execute(
                    "SELECT " + ", ".join(f"current_setting('{n}')" for n in names) + ", (SELECT "
                    "extversion FROM pg_extension WHERE extname = 'vector')").fetchone()))
            if not a.skip_a:
                part_a(a, work, server, res)
            if not a.skip_b:
                part_b(a, work, server, res)
    finally:
        res["total_wall_s"] = time.perf_counter() - t0
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump(res, f, indent=1, default=str)
        write_table(res, os.path.join(a.out, "table.md"))
        if not a.keep_work:
            shutil.rmtree(work, ignore_errors=True)
    print(open(os.path.join(a.out, "table.md")).read())
    print(f"total {res['total_wall_s']:.0f} s: {a.out}/results.json and table.md")


if __name__ == "__main__":
    main()
