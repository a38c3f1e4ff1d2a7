#!/usr/bin/env python3
"""Peer benchmark: `dprp publish` against the same job written in numpy.

Both sides read the same native dprp dataset (`dataset.bin`, MNIST pixels / 255), project every
row, add Gaussian noise and write the n×k float32 result to a file (a new file, fsync'ed and
renamed into place, as dprp's atomic writer does). Usage:

    python3 benches/peer_numpy.py target/release/dprp target/bench-data/mnist-train.bin \
        [--reps 5] [--mnist-gz /path/train-images-idx3-ubyte.gz]

Timings are medians of --reps runs after one untimed warm-up, measured with time.perf_counter
around subprocess.run (dprp, so process start-up is included) or around the numpy function.
"""

import argparse
import gzip
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

EPSILON = 5.0
DELTA = 1e-6
# Analytic Gaussian σ for ε = 5, δ = 1e-6, Δ₂ = 1 (what dprp calibrates; only the timing matters).
SIGMA = 0.98

SETTINGS = [
    ("dp-oporp", 256),
    ("dp-oporp", 512),
    ("dp-rp-g-opt", 256),
    ("dp-rp-g-opt", 1024),
]


def read_native(path):
    """The float32 payload of a dprp native dataset as an (n, p) array."""
    head = np.fromfile(path, dtype="<u8", count=8)  # 64 bytes
    if head[:1].tobytes() != b"DPRPDATA":
        sys.exit(f"{path}: not a dprp native dataset")
    n, p, off = int(head[2]), int(head[3]), int(head[4])
    return np.fromfile(path, dtype="<f4", count=n * p, offset=off).reshape(n, p)


def load_idx_gz(path):
    """MNIST IDX images (.gz) → float32 / 255, (n, rows·cols)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    n, r, c = (int.from_bytes(raw[i : i + 4], "big") for i in (4, 8, 12))
    u8 = np.frombuffer(raw, dtype=np.uint8, offset=16)
    return (u8.astype(np.float32) / np.float32(255.0)).reshape(n, r * c)


def write_out(x, path):
    """Write like dprp's atomic writer: a new temporary file in the same directory, fsync, rename
    over the destination (so each run writes a fresh file rather than truncating the old one)."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        x.tofile(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def add_noise(x, rng):
    z = rng.standard_normal(x.shape, dtype=np.float32)
    z *= np.float32(SIGMA)
    x += z
    return x


def rademacher(rng, p, k):
    return (rng.integers(0, 2, size=(p, k), dtype=np.int8) * 2 - 1).astype(np.float32)


def dense_project(u, w):
    x = u @ w
    x *= np.float32(1.0 / math.sqrt(w.shape[1]))
    return x


def oporp_structure(rng, p, k):
    """Permutation, signs (per permuted position) and bin start offsets (position i → bin ⌊ik/p⌋)."""
    perm = rng.permutation(p)
    signs = (rng.integers(0, 2, size=p, dtype=np.int8) * 2 - 1).astype(np.float32)
    starts = np.array([-(-j * p // k) for j in range(k)], dtype=np.intp)  # ⌈jp/k⌉
    return perm, signs, starts


def oporp_project(u, perm, signs, starts):
    """Matrix-free OPORP: gather the permuted columns, apply the signs, sum each bin."""
    up = u[:, perm]
    up *= signs
    return np.add.reduceat(up, starts, axis=1)


def oporp_matrix(perm, signs, starts):
    """The same OPORP map as an explicit p×k matrix S (one ±1 per row), for a BLAS matmul."""
    p, k = len(perm), len(starts)
    bins = np.searchsorted(starts, np.arange(p), side="right") - 1  # permuted position → bin
    s = np.zeros((p, k), dtype=np.float32)
    s[perm, bins] = signs
    return s


# How numpy builds and applies each map: name → (build(rng, p, k) → map, apply(u, map) → x).
IMPLS = {
    "reduceat": (oporp_structure, lambda u, st: oporp_project(u, *st)),
    "matmul-S": (lambda rng, p, k: oporp_matrix(*oporp_structure(rng, p, k)), lambda u, s: u @ s),
    "matmul-W": (rademacher, dense_project),
}


def dense_job(load, k, out):
    """The numpy script a user would write for dense Rademacher publishing: load the rows, project
    with a fresh ±1 matrix, add Gaussian noise, write the result."""
    rng = np.random.default_rng()
    u = load()
    x = dense_project(u, rademacher(rng, u.shape[1], k))
    add_noise(x, rng)
    write_out(x, out)


def numpy_job(impl, k, dataset, out):
    """End to end: read, build the public map, project, add noise, write."""
    build, apply = IMPLS[impl]
    rng = np.random.default_rng()
    u = read_native(dataset)
    x = apply(u, build(rng, u.shape[1], k))
    add_noise(x, rng)
    write_out(x, out)


def median_time(reps, fn):
    fn()  # warm-up (page cache, BLAS threads, allocator)
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dprp", help="path to the dprp binary (release build)")
    ap.add_argument("dataset", help="native dprp dataset (dprp convert ... --scale 255)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mnist-gz", help="also check the dataset against this IDX .gz file")
    args = ap.parse_args()

    print(f"numpy {np.__version__}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"{args.reps} timed runs per cell (median)")
    u = read_native(args.dataset)
    n, p = u.shape
    print(f"dataset {args.dataset}: n = {n}, p = {p}, range [{u.min():.3f}, {u.max():.3f}]")
    if args.mnist_gz:
        t = time.perf_counter()
        ref = load_idx_gz(args.mnist_gz)
        dt = time.perf_counter() - t
        same = ref.shape == u.shape and np.array_equal(ref, u)
        print(f"IDX .gz load (gzip + frombuffer + /255): {dt:.3f} s; identical to dataset.bin: {same}")
        del ref

    rng = np.random.default_rng()
    rows = []
    with tempfile.TemporaryDirectory(prefix="dprp-peer-") as tmp:
        np_out = os.path.join(tmp, "numpy.f32")
        dp_out = os.path.join(tmp, "dprp.release")
        read_t = median_time(args.reps, lambda: read_native(args.dataset))
        for mech, k in SETTINGS:
            cmd = [args.dprp, "publish", args.dataset, "-m", mech, "-k", str(k),
                   "-e", str(EPSILON), "-d", str(DELTA), "-o", dp_out]
            if mech != "dp-oporp":
                cmd += ["--projection", "rademacher"]
            dprp_t = median_time(args.reps, lambda: subprocess.run(cmd, check=True, capture_output=True))
            impls = ["reduceat", "matmul-S"] if mech == "dp-oporp" else ["matmul-W"]
            for impl in impls:
                np_t = median_time(args.reps, lambda: numpy_job(impl, k, args.dataset, np_out))
                # Components, on the array already in memory.
                build, apply = IMPLS[impl]
                m = build(rng, p, k)
                build_t = median_time(args.reps, lambda: build(rng, p, k))
                proj_t = median_time(args.reps, lambda: apply(u, m))
                x = apply(u, m)
                noise_t = median_time(args.reps, lambda: add_noise(x, rng))
                write_t = median_time(args.reps, lambda: write_out(x, np_out))
                rows.append((f"{mech} k={k}", impl, dprp_t, np_t, read_t, build_t, proj_t,
                             noise_t, write_t))
            print(f"  done {mech} k={k}", file=sys.stderr, flush=True)

    print()
    hdr = ("setting", "numpy impl", "dprp s", "numpy s", "dprp/np", "np read", "np build",
           "np proj", "np noise", "np write", "dprp/(np proj+noise)")
    print("{:<20} {:<10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>21}".format(*hdr))
    for name, impl, d, t, r, b, pr, nz, wr in rows:
        print(f"{name:<20} {impl:<10} {d:>8.3f} {t:>8.3f} {d / t:>8.2f} {r:>8.3f} {b:>8.4f} "
              f"{pr:>8.3f} {nz:>8.3f} {wr:>8.3f} {d / (pr + nz):>21.2f}")
    print("\nnumpy impl: reduceat = gather·signs + np.add.reduceat (matrix-free OPORP); matmul-S = "
          "OPORP as an explicit sparse-pattern p×k matrix through BLAS; matmul-W = dense Rademacher "
          "U@W/√k.\nnp proj = that projection alone; np noise = standard_normal(float32)·σ added in "
          "place (1 thread); np write = tofile to a new file + fsync + rename (as dprp);\n"
          "dprp s includes process start-up.")
    seen = set()
    parts = []
    for name, _, _, _, _, _, _, nz, _ in rows:
        if name not in seen:
            seen.add(name)
            parts.append(f"{name}: {n * int(name.split('=')[1]) / nz / 1e6:.0f} M samples/s")
    print("numpy noise-only throughput: " + ", ".join(parts))

if __name__ == "__main__":
    main()
