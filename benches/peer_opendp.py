#!/usr/bin/env python3
"""Peer benchmark for the exact discrete Gaussian: dprp against OpenDP (PyPI `opendp`) in the same
run (issue 12, "Benchmarks and targets": at least 20x faster per sample for sigma from 10 to 10^4).

dprp side: `examples/exact_peer.rs` (the library's `DiscreteGaussian::fill`, Canonne-Kamath-Steinke
Algorithm 3 on integers, ChaCha20 keyed from the OS, one thread), run once per invocation of this
script; it prints one JSON object with the median time per sample over --reps fills of --n samples,
in wall time and in the thread's CPU time.

OpenDP side: `opendp.measurements.make_gaussian` on the integer vector domain
(`vector_domain(atom_domain(T=int), size=n)`, `l2_distance(T=int)`, `scale=sigma`), which adds exact
discrete Gaussian noise (OpenDP samples it with the same CKS algorithm on arbitrary-precision
rationals). The measurement is built once per sigma (untimed) and applied to a vector of --peer-n
zeros: one call, timed in wall time (`time.perf_counter`) and in process CPU time
(`time.process_time`); the time per sample is the call's time divided by --peer-n, median over
--reps calls after one untimed warm-up call. That includes passing the list across OpenDP's FFI
and back, so the script also times an OpenDP transformation that does no sampling
(`make_clamp` on the same list, same median) and reports the sampler's own cost as the
difference, "OpenDP − FFI" (the figure most favourable to OpenDP). The sample variance over
sigma^2 is printed for both as a sanity check.

The ratio columns are OpenDP's time per sample over dprp's, in CPU time (the fair figure on a
shared machine, where wall time also counts other processes): with the FFI round trip, and
without it.

Usage (normally through benches/run-exact-peers.sh):
    python3 benches/peer_opendp.py target/release/examples/exact_peer [--reps 5] [--n 1000000]
        [--peer-n 20000] [--sigma 10,100,1000,10000]
"""

import argparse
import importlib.metadata
import json
import statistics
import subprocess
import sys
import time


def opendp_times(sigma, n, reps):
    import opendp.prelude as dp

    dp.enable_features("contrib")
    meas = dp.m.make_gaussian(
        dp.vector_domain(dp.atom_domain(T=int), size=n),
        dp.l2_distance(T=int),
        scale=float(sigma),
    )
    clamp = dp.t.make_clamp(
        dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance(), bounds=(0, 1)
    )
    zeros = [0] * n
    meas(zeros)  # warm-up
    clamp(zeros)
    wall, cpu, ffi, var = [], [], [], []
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        y = meas(zeros)
        cpu.append((time.process_time() - c) / n)
        wall.append((time.perf_counter() - t) / n)
        var.append(statistics.pvariance(y) / sigma**2)
        c = time.process_time()
        clamp(zeros)
        ffi.append((time.process_time() - c) / n)
    return (
        statistics.median(wall),
        statistics.median(cpu),
        statistics.median(ffi),
        statistics.fmean(var),
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dprp", help="path of the exact_peer example binary")
    ap.add_argument("--sigma", default="10,100,1000,10000")
    ap.add_argument("--n", type=int, default=1_000_000, help="dprp samples per repetition")
    ap.add_argument("--peer-n", type=int, default=20_000, help="OpenDP samples per call")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print the results as one JSON object")
    args = ap.parse_args()

    sigmas = [float(s) for s in args.sigma.split(",")]
    cmd = [args.dprp, "--sigma", args.sigma, "--n", str(args.n), "--reps", str(args.reps)]
    ours = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    by_sigma = {row["sigma"]: row for row in ours["discrete_gaussian"]}

    rows = []
    for s in sigmas:
        wall, cpu, ffi, var = opendp_times(s, args.peer_n, args.reps)
        d = by_sigma[s]
        rows.append(
            {
                "sigma": s,
                "dprp_ns": d["ns_per_sample"],
                "dprp_cpu_ns": d["cpu_ns_per_sample"],
                "dprp_var_ratio": d["variance_over_sigma2"],
                "opendp_ns": wall * 1e9,
                "opendp_cpu_ns": cpu * 1e9,
                "opendp_var_ratio": var,
                "opendp_ffi_cpu_ns": ffi * 1e9,
                "ratio_cpu": cpu * 1e9 / d["cpu_ns_per_sample"],
                "ratio_cpu_sampler_only": (cpu - ffi) * 1e9 / d["cpu_ns_per_sample"],
                "ratio_wall": wall * 1e9 / d["ns_per_sample"],
            }
        )
    version = importlib.metadata.version("opendp")
    if args.json:
        print(json.dumps({"opendp": version, "rows": rows, "binomial_half": ours["binomial_half"]}))
        return
    print(f"exact discrete Gaussian, time per sample (median of {args.reps}); OpenDP {version}")
    print("| σ | dprp | OpenDP | OpenDP − FFI | ratio | ratio without FFI | dprp wall | "
          "OpenDP wall | Var/σ² dprp / OpenDP |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['sigma']:g} | {r['dprp_cpu_ns']:.0f} ns | {r['opendp_cpu_ns'] / 1e3:.2f} µs | "
            f"{(r['opendp_cpu_ns'] - r['opendp_ffi_cpu_ns']) / 1e3:.2f} µs | "
            f"{r['ratio_cpu']:.0f}× | **{r['ratio_cpu_sampler_only']:.0f}×** | "
            f"{r['dprp_ns']:.0f} ns | {r['opendp_ns'] / 1e3:.2f} µs | "
            f"{r['dprp_var_ratio']:.4f} / {r['opendp_var_ratio']:.4f} |"
        )
    print("(dprp, OpenDP, ratios: CPU time per sample; wall columns: wall time per sample)")
    b = ours["binomial_half"]
    print(
        f"Bin(N, ½) with N = {b['n']}: {b['cpu_flips_per_sec'] / 1e9:.2f} G flips/s CPU "
        f"({b['flips_per_sec'] / 1e9:.2f} G flips/s wall)"
    )
    worst = min(r["ratio_cpu_sampler_only"] for r in rows)
    print(f"smallest CPU-time ratio without OpenDP's FFI: {worst:.1f}× (target ≥ 20×)")


if __name__ == "__main__":
    sys.exit(main())
