#!/usr/bin/env python3
"""Issue 39 §2's publish benchmark: `dprp publish` of a dense map against dprp's own noiseless
projection of the same rows (`dprp project`) and against the same job in numpy, for every (p, k)
of the issue, on the same data in the same run.

    python3 benches/peer_publish.py DPRP DATA_DIR [--reps 5] [--only P] [--no-variants]

DATA_DIR holds uniform-20000xP.npy (rows uniform in [−1, 1], float32) for p = 384, 768, 1536,
4096 and mnist-train.bin (MNIST train / 255, dprp's native format); benches/run-publish-peers.sh
makes them. Per cell, three commands are timed alternated (publish, project, numpy, publish, …;
one untimed warm-up each), medians of --reps:

- publish: `dprp publish DATA -m dp-rp-g-opt -e 10 -d 1e-6 -k K` (Rademacher map, coordinate
  neighbours: the grid arithmetic and lattice noise), whole process (start-up, read, checks,
  product, noise, hash, atomic write with fsync);
- project: `dprp project RELEASE --queries DATA` (the release just published): the same rows
  through the same map in the same arithmetic, no noise, no privacy checks, written as .npy;
- numpy: read, Rademacher W, float32 `U @ W / √k` through OpenBLAS, Gaussian noise, write (fsync
  + rename), timed inside the interpreter (start-up and `import numpy` not counted: numpy's
  figure is its best case), as benches/peer_numpy.py does.

The ratios are publish / numpy (issue 39's limit 0.8) and publish / project (limit 1.3). With
variants (the default) the other dense mechanisms are timed at p = 768 and 4096, k = 256: the
Gaussian map and ℓ₁ neighbours (float64 arithmetic) and the two sign mechanisms whose values
come from the dense map (dp-signrp-rr, dp-signrp-rr-smooth), each against its own projection.
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_numpy  # noqa: E402  (read_native, dense_job)

WIDTHS = [384, 768, 1536, 4096]
KS = [256, 1024]


def run(cmd):
    """Wall and CPU (user + sys of the child) seconds of one command."""
    before = os.times()
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    wall = time.perf_counter() - t
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def timed_numpy(load, k, out):
    t = time.perf_counter()
    c = time.process_time()
    peer_numpy.dense_job(load, k, out)
    return time.perf_counter() - t, time.process_time() - c


def cell(dprp, tmp, data, load, k, mech_args, reps, with_numpy):
    rel = os.path.join(tmp, "r.dprp")
    proj = os.path.join(tmp, "q.npy")
    publish = [dprp, "publish", data, *mech_args, "-k", str(k), "-o", rel, "--overwrite"]
    project = [dprp, "project", rel, "--queries", data, "-o", proj, "--overwrite"]
    npout = os.path.join(tmp, "np.f32")
    run(publish)
    run(project)
    if with_numpy:
        timed_numpy(load, k, npout)
    t = {"publish": [], "project": [], "numpy": []}
    for _ in range(reps):
        t["publish"].append(run(publish))
        t["project"].append(run(project))
        if with_numpy:
            t["numpy"].append(timed_numpy(load, k, npout))
    med = {n: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for n, v in t.items() if v}
    return med


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dprp")
    ap.add_argument("data_dir")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--only", type=int, action="append", help="only this width (784 = MNIST); repeatable")
    ap.add_argument("--no-variants", action="store_true", help="only dp-rp-g-opt, Rademacher")
    a = ap.parse_args()
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at the start, "
          f"{a.reps} alternated runs per command (medians; wall, then CPU in brackets)")
    base = ["-m", "dp-rp-g-opt", "-e", "10", "-d", "1e-6"]
    cells = []
    for p in WIDTHS + [784]:
        if a.only and p not in a.only:
            continue
        if p == 784:
            data = os.path.join(a.data_dir, "mnist-train.bin")
            load = lambda data=data: peer_numpy.read_native(data)
            name = "MNIST 60000 × 784"
        else:
            data = os.path.join(a.data_dir, f"uniform-20000x{p}.npy")
            load = lambda data=data: np.load(data)
            name = f"uniform 20000 × {p}"
        for k in KS:
            cells.append((name, data, load, k, "dp-rp-g-opt", base, True))
        if not a.no_variants and p in (768, 4096):
            nu = 3.0 if p == 784 else round(0.5 * math.sqrt(p / 3.0), 1)
            for label, args in [
                ("dp-rp-g-opt, Gaussian map (f64)", base + ["--projection", "gaussian"]),
                ("dp-rp-g-opt, ℓ₁ neighbours (f64)", base + ["--neighbour", "l1"]),
                ("dp-signrp-rr", ["-m", "dp-signrp-rr", "-e", "5", "-d", "1e-6", "--min-norm", str(nu)]),
                ("dp-signrp-rr-smooth", ["-m", "dp-signrp-rr-smooth", "-e", "100"]),
            ]:
                cells.append((name, data, load, 256, label, args, False))
    print("| data | k | mechanism | publish (s) | project (s) | numpy (s) | publish / numpy | publish / project |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="dprp-publish-peers-") as tmp:
        for name, data, load, k, label, args, with_numpy in cells:
            m = cell(a.dprp, tmp, data, load, k, args, a.reps, with_numpy)
            pub, pro = m["publish"], m["project"]
            if "numpy" in m:
                nump = m["numpy"]
                np_cols = f"{nump[0]:.3f} [{nump[1]:.2f}] | **{pub[0] / nump[0]:.2f}**"
            else:
                np_cols = "— | —"
            print(f"| {name} | {k} | {label} | {pub[0]:.3f} [{pub[1]:.2f}] | {pro[0]:.3f} [{pro[1]:.2f}] | "
                  f"{np_cols} | **{pub[0] / pro[0]:.2f}** |", flush=True)
    print(f"load {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
