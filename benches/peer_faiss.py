#!/usr/bin/env python3
"""Peer benchmark: dprp's exact top-10 search against faiss's flat indexes, on the same sketches.

`cargo bench --bench search` (or `-- --export-only`) writes MNIST sketches at k = 1024 and dprp's
own top-10 results to target/bench-data/ (see benches/search.rs). This script loads them and times

* real sketches (inner product): faiss `IndexFlatIP` — add the 60000 database rows, search the
  10000 queries for k = 10;
* sign sketches (agreements = k − Hamming distance, the same ranking): faiss `IndexBinaryFlat`
  with d = 1024 bits — our u64 words are little-endian, so their bytes in memory order are the
  faiss codes (bit j of a row is bit j mod 8 of byte j/8 on both sides);

with `faiss.omp_set_num_threads(THREADS)`, median of --reps runs. dprp's times are the medians of
criterion's last run (target/criterion/search/exact-{ip,hamming}/k1024-top10/new/estimates.json).
It then checks that faiss's top-10 agrees with dprp's: every row found by one and not by the
other must score (exactly, in f64 from the sketches) the same as the 10th best up to float
rounding, i.e. the two differ only at ties. Usage:

    python3 benches/peer_faiss.py [--data-dir target/bench-data] [--criterion-dir target/criterion]
                                  [--reps 5] [--threads 2]
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

try:
    import faiss
except ImportError:  # pragma: no cover - the runner script installs it
    sys.exit("faiss is not installed (pip install faiss-cpu)")


def load(data_dir):
    with open(os.path.join(data_dir, "search-meta.json")) as f:
        meta = json.load(f)
    k, n, nq, w, top = (meta[x] for x in ("k", "db_rows", "query_rows", "words_per_row", "top"))

    def arr(name, dtype, rows, cols):
        path = os.path.join(data_dir, name)
        a = np.fromfile(path, dtype=dtype)
        if a.size != rows * cols:
            sys.exit(f"{path}: {a.size} values, expected {rows}×{cols}")
        return a.reshape(rows, cols)

    return meta, {
        "real-db": arr("search-real-db.bin", "<f4", n, k),
        "real-q": arr("search-real-q.bin", "<f4", nq, k),
        "bits-db": arr("search-bits-db.bin", "<u8", n, w),
        "bits-q": arr("search-bits-q.bin", "<u8", nq, w),
        "real-top": arr(f"search-real-top{top}.bin", "<u8", nq, top).astype(np.int64),
        "bits-top": arr(f"search-bits-top{top}.bin", "<u8", nq, top).astype(np.int64),
    }


def criterion_median(criterion_dir, bench, top, k):
    path = os.path.join(criterion_dir, "search", bench, f"k{k}-top{top}", "new", "estimates.json")
    try:
        with open(path) as f:
            return json.load(f)["median"]["point_estimate"] / 1e9, path
    except (OSError, KeyError, ValueError):
        return None, path


def timed(reps, fn):
    """Wall times and CPU times (this process, all threads) of `reps` calls of fn (seconds), and
    the last result."""
    times, cpus, out = [], [], None
    for _ in range(reps):
        c, t = time.process_time(), time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return times, cpus, out


def faiss_ip(db, q, top):
    index = faiss.IndexFlatIP(db.shape[1])
    t = time.perf_counter()
    index.add(db)
    add = time.perf_counter() - t
    _, ids = index.search(q, top)
    return add, ids


def faiss_bits(db, q, top):
    codes_db = db.view(np.uint8)  # little-endian words → bytes in bit order
    codes_q = q.view(np.uint8)
    index = faiss.IndexBinaryFlat(codes_db.shape[1] * 8)
    t = time.perf_counter()
    index.add(codes_db)
    add = time.perf_counter() - t
    _, ids = index.search(codes_q, top)
    return add, ids


def popcount64(x):
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).sum(axis=-1).astype(np.int64)
    return np.unpackbits(x.view(np.uint8), axis=-1).sum(axis=-1).astype(np.int64)


def scores(kind, data, qi, rows, k):
    """Exact scores (f64) of database rows `rows` for query qi."""
    if kind == "real":
        return data["real-db"][rows].astype(np.float64) @ data["real-q"][qi].astype(np.float64)
    diff = popcount64(np.bitwise_xor(data["bits-db"][rows], data["bits-q"][qi]))
    return (k - diff).astype(np.float64)


def agreement(kind, data, theirs, k):
    """(mean overlap of the top sets, fraction of identical lists, unexplained differences)."""
    ours = data[f"{kind}-top"]
    nq, top = ours.shape
    overlap, identical, unexplained = 0, 0, []
    for i in range(nq):
        a, b = ours[i], theirs[i]
        if np.array_equal(a, b):
            overlap += top
            identical += 1
            continue
        sa, sb = set(a.tolist()), set(b.tolist())
        overlap += len(sa & sb)
        boundary = scores(kind, data, i, a, k).min()  # our 10th best score
        diff = sorted((sa ^ sb) - {-1})
        if not diff:
            continue  # same rows, another order among ties
        s = scores(kind, data, i, np.array(diff), k)
        tol = 1e-5 * max(1.0, abs(boundary)) if kind == "real" else 0.0
        for row, v in zip(diff, s):
            if abs(v - boundary) > tol:
                unexplained.append((i, row, v, boundary))
    return overlap / (nq * top), identical / nq, unexplained


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=os.path.join(root, "target", "bench-data"))
    ap.add_argument("--criterion-dir", default=os.path.join(root, "target", "criterion"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    faiss.omp_set_num_threads(args.threads)
    meta, data = load(args.data_dir)
    k, top = meta["k"], meta["top"]
    nq, n = meta["query_rows"], meta["db_rows"]
    print(
        f"faiss {faiss.__version__} ({getattr(faiss, 'get_compile_options', lambda: '?')()}), "
        f"numpy {np.__version__}, python {platform.python_version()}, "
        f"{args.threads} OpenMP threads, {os.cpu_count()} CPUs; dprp with "
        f"{meta.get('rayon_threads', '?')} rayon threads"
    )
    print(f"{nq} queries × {n} database rows, k = {k}, top-{top}; median of {args.reps} runs\n")

    rows = []
    for kind, bench, index, fn, db, q in [
        ("real", "exact-ip", "IndexFlatIP", faiss_ip, data["real-db"], data["real-q"]),
        ("bits", "exact-hamming", "IndexBinaryFlat", faiss_bits, data["bits-db"], data["bits-q"]),
    ]:
        times, cpus, (add, ids) = timed(args.reps, lambda: fn(db, q, top))
        med, cpu = statistics.median(times), statistics.median(cpus)
        ours, path = criterion_median(args.criterion_dir, bench, top, k)
        our_run = meta.get("export_run", {}).get(kind, {})
        over, same, bad = agreement(kind, data, ids, k)
        print(
            f"{kind}: faiss {index} add+search runs: "
            + ", ".join(f"{t:.3f}" for t in times)
            + f" s wall; CPU " + ", ".join(f"{c:.2f}" for c in cpus)
            + f" s (add alone {add:.3f} s)"
        )
        print(
            f"{kind}: top-{top} agreement with dprp: {over:.4%} of ids shared, "
            f"{same:.2%} of queries identical lists, {len(bad)} differences not explained by ties"
        )
        for i, row, v, b in bad[:5]:
            print(f"    query {i}: row {row} scores {v}, the 10th best scores {b}")
        if ours is None:
            print(f"{kind}: no criterion estimate at {path} (run cargo bench --bench search)")
        rows.append((kind, index, ours, med, our_run.get("cpu_seconds"), cpu, len(bad)))

    def fmt(x, w=9, d=3):
        return f"{x:{w}.{d}f}" if x is not None else f"{'?':>{w}}"

    def ratio(a, b):
        return fmt(a / b, 10, 2) if a is not None and b else f"{'?':>10}"

    print(
        f"\n{'sketches':<8} {'faiss index':<16} {'dprp (s)':>9} {'faiss (s)':>9} {'dprp/faiss':>10}"
        f" {'dprp CPU':>9} {'faiss CPU':>9} {'CPU ratio':>10}"
    )
    for kind, index, ours, theirs, our_cpu, their_cpu, _ in rows:
        print(
            f"{kind:<8} {index:<16} {fmt(ours)} {fmt(theirs)} {ratio(ours, theirs)}"
            f" {fmt(our_cpu, 9, 2)} {fmt(their_cpu, 9, 2)} {ratio(our_cpu, their_cpu)}"
        )
    print(
        "(wall: dprp = criterion median of `cargo bench --bench search`, search only (it reads the "
        "rows in place); faiss = median of add + search. CPU: seconds of CPU over all threads — "
        "dprp from the one search run that exported its results, faiss the median; the fairer "
        "measure when other work shares the machine. Lower ratio = dprp faster.)"
    )
    if any(r[-1] for r in rows):
        sys.exit("top-10 results disagree beyond ties")


if __name__ == "__main__":
    main()
