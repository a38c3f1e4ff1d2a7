"""Publishing at scale (issue 14): 10^6 and 10^7 synthetic rows x 96 dims, CLI and Python module.

    bash benches/run-large-publish.sh            # builds dprp and the module, then runs this

What it measures (one machine, one run of each unless --reps says otherwise):
  * rows per second of `dprp publish` (wall clock, start-up included) for `dp-oporp` and
    `dp-rp-g-opt` (dense Rademacher) at k = 64, n = 10^6 and 10^7;
  * the peak resident memory of each run (`/usr/bin/time -v`): it must not grow with n by more
    than what the row ids and labels need (this data has neither, so: flat);
  * the Python module's overhead: `dprp.publish` on the 10^6-row array in memory against the CLI
    on the same rows saved as .npy (interleaved, medians);
  * opening a 10^7-row release from Python: `Release.open(path, verify=...)` then `.sketches`.

The data is generated from a fixed seed (numpy PCG64, seed 2026): i.i.d. uniform in [-1, 1],
float32, written as .npy in slices (never the whole array in memory).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

P = 96
K = 64
SEED = 2026
SLICE = 1_000_000


def generate(path, n):
    """Write n x P uniform(-1, 1) float32 rows from the fixed seed, slice by slice."""
    if os.path.exists(path) and os.path.getsize(path) >= n * P * 4:
        return
    rng = np.random.Generator(np.random.PCG64(SEED))
    tmp = path + ".part"
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(n, P))
    for lo in range(0, n, SLICE):
        hi = min(n, lo + SLICE)
        out[lo:hi] = rng.uniform(-1.0, 1.0, size=(hi - lo, P)).astype(np.float32)
    out.flush()
    del out
    os.replace(tmp, path)


def timed_cli(dprp, args):
    """Run dprp under /usr/bin/time -v: (wall seconds, peak RSS in MiB, stdout)."""
    t = time.perf_counter()
    r = subprocess.run(
        ["/usr/bin/time", "-v", dprp] + args, capture_output=True, text=True
    )
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"dprp {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    return wall, rss / 1024.0, r.stdout


def publish_args(inp, mech, out):
    return [
        "publish", inp, "--mechanism", mech, "--k", str(K), "--epsilon", "5",
        "--delta", "1e-6", "--projection-seed", "1", "-o", out, "--timings",
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dprp", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--reps", type=int, default=3, help="runs of the Python-overhead comparison")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    os.makedirs(a.dir, exist_ok=True)

    print(f"publishing n x {P} float32 rows (uniform in [-1, 1], seed {SEED}), k = {K}, "
          f"eps = 5, delta = 1e-6, {os.cpu_count()} cores")
    print(f"{'mechanism':<14} {'n':>10} {'wall s':>8} {'rows/s':>11} {'peak MiB':>9}  stage timings")
    peaks = {}
    for n in sizes:
        inp = os.path.join(a.dir, f"x-{n}.npy")
        generate(inp, n)
        for mech in ["dp-oporp", "dp-rp-g-opt"]:
            out = os.path.join(a.dir, "r.dprp")
            if os.path.exists(out):
                os.remove(out)
            wall, rss, stdout = timed_cli(a.dprp, publish_args(inp, mech, out))
            peaks[(mech, n)] = rss
            timings = next((l for l in stdout.splitlines() if l.startswith("timings")), "")
            print(f"{mech:<14} {n:>10} {wall:>8.2f} {n / wall:>11,.0f} {rss:>9.1f}  {timings}")
            if n == max(sizes) and mech == "dp-oporp":
                keep = os.path.join(a.dir, f"r-{n}.dprp")
                os.replace(out, keep)
            elif os.path.exists(out):
                os.remove(out)
    if len(sizes) > 1:
        lo, hi = min(sizes), max(sizes)
        for mech in ["dp-oporp", "dp-rp-g-opt"]:
            print(f"peak memory {mech}: {peaks[(mech, lo)]:.1f} MiB at n = {lo}, "
                  f"{peaks[(mech, hi)]:.1f} MiB at n = {hi} "
                  f"(ratio {peaks[(mech, hi)] / peaks[(mech, lo)]:.2f})")

    try:
        import dprp
    except ImportError:
        print("skipping the Python-module measurements: the dprp module is not installed in "
              f"{sys.executable} (bash test.sh or maturin develop --release installs it)")
        return
    n = min(sizes)
    inp = os.path.join(a.dir, f"x-{n}.npy")
    x = np.load(inp)
    cli, py = [], []
    for _ in range(a.reps):
        for which in ["cli", "py"]:
            out = os.path.join(a.dir, f"o-{which}.dprp")
            if os.path.exists(out):
                os.remove(out)
            t = time.perf_counter()
            if which == "cli":
                subprocess.run([a.dprp] + publish_args(inp, "dp-oporp", out)[:-1],
                               check=True, capture_output=True)
                cli.append(time.perf_counter() - t)
            else:
                dprp.publish(x, mechanism="dp-oporp", k=K, epsilon=5.0, delta=1e-6,
                             seed=1, output=out)
                py.append(time.perf_counter() - t)
            os.remove(out)
    mc, mp = statistics.median(cli), statistics.median(py)
    print(f"dp-oporp n = {n}: CLI on .npy median {mc:.3f} s, dprp.publish on the array median "
          f"{mp:.3f} s (ratio {mp / mc:.2f}; {a.reps} interleaved runs each)")

    big = os.path.join(a.dir, f"r-{max(sizes)}.dprp")
    if os.path.exists(big):
        size = os.path.getsize(big)
        for verify in [False, True]:
            times = []
            for _ in range(3):
                t = time.perf_counter()
                r = dprp.Release.open(big, verify=verify)
                s = r.sketches
                times.append(time.perf_counter() - t)
                assert s.shape == (max(sizes), K), s.shape
                del s, r
            print(f"Release.open(verify={verify}) + .sketches on the {max(sizes)}-row release "
                  f"({size / 2**30:.2f} GiB): median {statistics.median(times) * 1000:.1f} ms "
                  f"(3 runs: {', '.join(f'{t * 1000:.1f}' for t in times)} ms)")
        os.remove(big)


if __name__ == "__main__":
    main()
