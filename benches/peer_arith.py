#!/usr/bin/env python3
"""Issue 26's publish benchmark: dense projections computed in the proven arithmetic (grid with
exact sums, f64 values into the noise) against the f32 path of an earlier dprp build, and against
the same job in numpy (float32 BLAS matmul), on the same data in the same run.

    python3 benches/peer_arith.py NEW_DPRP OLD_DPRP MNIST.bin UNIFORM4096.npy [--reps 7]

Cells: `dprp publish … -m dp-rp-g-opt -e 10 -d 1e-6` with the Rademacher map, MNIST (60000 × 784)
at k = 1024 and uniform rows in [−1, 1] (p = 4096) at k = 256. The two dprp builds are timed
interleaved (new, old, new, …; one untimed warm-up each), medians of --reps runs, wall time of
the whole process (start-up, reading, projecting, noise, writing). numpy: read, Rademacher W,
U @ W / √k in float32, Gaussian noise, write (fsync + rename), as benches/peer_numpy.py does.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_numpy  # noqa: E402  (read_native, dense_job)


def run(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("new")
    ap.add_argument("old")
    ap.add_argument("mnist")
    ap.add_argument("uniform")
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    print(f"numpy {np.__version__}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, "
          f"{a.reps} interleaved runs per binary (median)")
    cells = [
        ("MNIST p=784, k=1024", a.mnist, 1024, lambda: peer_numpy.read_native(a.mnist)),
        ("uniform p=4096, k=256", a.uniform, 256, lambda: np.load(a.uniform)),
    ]
    print("| setting | new dprp (s) | dprp f32 path (s) | new / f32 | numpy (s) | new / numpy |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="dprp-arith-") as tmp:
        for name, data, k, load in cells:
            cmd = lambda b: [b, "publish", data, "-m", "dp-rp-g-opt", "-e", "10", "-d", "1e-6",
                             "-k", str(k), "-o", os.path.join(tmp, "r.dprp")]
            run(cmd(a.new))
            run(cmd(a.old))
            new_t, old_t = [], []
            for _ in range(a.reps):
                new_t.append(run(cmd(a.new)))
                old_t.append(run(cmd(a.old)))
            out = os.path.join(tmp, "np.f32")
            peer_numpy.dense_job(load, k, out)
            np_t = []
            for _ in range(a.reps):
                t = time.perf_counter()
                peer_numpy.dense_job(load, k, out)
                np_t.append(time.perf_counter() - t)
            n, o, p = (statistics.median(v) for v in (new_t, old_t, np_t))
            print(f"| {name} | {n:.3f} | {o:.3f} | {n / o:.2f} | {p:.3f} | {n / p:.2f} |", flush=True)


if __name__ == "__main__":
    main()
