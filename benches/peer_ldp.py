#!/usr/bin/env python3
"""Peer benchmark for the local-DP mechanisms: dprp against the authors' Python code, on the same
vectors in the same run (issue 11, "Benchmarks and targets").

Peers (their code is imported from a checkout given by an environment variable, never copied):

* DPRP_PEER_PFL=/path/to/pfl-research — PrivUnit2 of pfl-research (`PrivUnitMechanism`, whose
  noise step is `pfl.internal.priv_unit_functions.privatize`). PrivUnit was removed from
  pfl-research in February 2024 (commit 291a968 "Remove privunit (#37)") and no PyPI release of
  pfl contains it, so the checkout must be at the commit before that:
      git clone https://github.com/apple/pfl-research && git -C pfl-research checkout 291a968^
* DPRP_PEER_PROJUNIT=/path/to/ml-projunit — `PrivUnitAlgs.py` of apple/ml-projunit (PrivUnitG,
  ProjUnit, FastProjUnit):
      git clone https://github.com/apple/ml-projunit

Importing without their heavy dependencies: `pfl/__init__.py` pulls in the whole framework
(dp-accounting, prv-accountant, multiprocess, …), so the packages `pfl`, `pfl.internal` and
`pfl.internal.distribution` are registered as empty namespace modules pointing at the checkout
and only `pfl.internal.priv_unit_functions` is imported (it needs numpy and scipy, and loads
`log_float`, `log_float_functions` and `random/draw_from_cap` from the checkout). ml-projunit's
`PrivUnitAlgs.py` imports `SQKR.py` (matplotlib, scipy.io) for baselines not compared here, so
`SQKR` is replaced by an empty stub module before the import; `utilities.py` is imported as is.

Data: for each dimension d, n vectors v_i = normalise(μ + N(0, I/d)) (μ a random unit vector,
numpy seed --seed), written as float32 .npy under --data-dir; both sides read that file (dprp
through its .npy reader) and renormalise the rows in float64.

dprp side: `examples/ldp_peer.rs` (the library's `privatize`; ChaCha20 keyed from the OS). Peer
side: the authors' functions on the same rows; parameters that the peers' entry points would
recompute on every call (ml-projunit's `privatize_vector` rescans 99 values of p per call) are
computed once and passed in, which favours the peers. Time per user: the sum of the per-call
times over all rows divided by n, median over --reps repetitions (the first call of each peer is
untimed warm-up, so pfl's lru_cache holds its parameters). Errors per setting: the empirical
per-user MSE (1/n)Σ‖Z_i − v_i‖² (with its standard error) next to dprp's closed form, the mean of
⟨Z_i, v_i⟩ (1 for an unbiased mechanism; its standard error in brackets), and the squared error of
the mean estimate ‖(1/n)ΣZ_i − (1/n)Σv_i‖² averaged over the repetitions. numpy's BLAS runs on one
thread (OPENBLAS_NUM_THREADS etc. = 1 unless already set), as dprp's client does.

Usage (normally through benches/run-ldp-peers.sh):
    python3 benches/peer_ldp.py target/release/examples/ldp_peer [--reps 3] [--only privunitg]
"""

import argparse
import contextlib
import importlib
import io
import json
import math
import os
import statistics
import subprocess
import sys
import time
import types

for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import numpy as np  # noqa: E402

# (mechanism, d, k, users, reps-cap): the settings; ProjUnit with k = 1000.
SETTINGS = [
    ("privunit2", 16, 0, 2000, None),
    ("privunit2", 1000, 0, 1000, None),
    ("privunit2", 1 << 15, 0, 200, None),
    ("privunitg", 1000, 0, 1000, None),
    ("privunitg", 1 << 15, 0, 200, None),
    ("projunit-srht", 1 << 13, 1000, 200, None),
    ("projunit-srht", 1 << 15, 1000, 100, None),
    ("projunit-rotation", 1 << 13, 1000, 4, 1),
]


def make_data(d, n, seed, data_dir):
    """v_i = normalise(μ + N(0, I/d)) as float32 rows in a .npy file; returns the path."""
    path = os.path.join(data_dir, f"ldp-d{d}-n{n}-s{seed}.npy")
    if not os.path.exists(path):
        rng = np.random.default_rng(seed + d)
        mu = rng.standard_normal(d)
        mu /= np.linalg.norm(mu)
        v = mu + rng.standard_normal((n, d)) / math.sqrt(d)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        tmp = path + ".tmp.npy"
        np.save(tmp, v.astype("<f4"))
        os.replace(tmp, path)
    return path


def load_units(path):
    v = np.load(path).astype(np.float64)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# Importing the peers


def import_pfl(root):
    """pfl.internal.priv_unit_functions without pfl/__init__.py (see the module docstring)."""
    for name, sub in (
        ("pfl", "pfl"),
        ("pfl.internal", "pfl/internal"),
        ("pfl.internal.distribution", "pfl/internal/distribution"),
        ("pfl.internal.random", "pfl/internal/random"),
    ):
        mod = types.ModuleType(name)
        mod.__path__ = [os.path.join(root, sub)]
        sys.modules[name] = mod
    lf = importlib.import_module("pfl.internal.distribution.log_float")
    sys.modules["pfl.internal.distribution"].LogFloat = lf.LogFloat
    return importlib.import_module("pfl.internal.priv_unit_functions")


def import_projunit(root):
    """PrivUnitAlgs.py with SQKR stubbed out (see the module docstring)."""
    stub = types.ModuleType("SQKR")
    stub.SQKR = stub.PrivHS = None
    sys.modules["SQKR"] = stub
    sys.path.insert(0, root)
    return importlib.import_module("PrivUnitAlgs")


def peer_location(var, url, checkout):
    root = os.environ.get(var)
    if not root:
        print(f"skipping the {url} peer: set {var} to a checkout ({checkout})")
        return None
    if not os.path.isdir(root):
        print(f"skipping the {url} peer: {var}={root} is not a directory ({checkout})")
        return None
    return root


# ---------------------------------------------------------------------------------------------
# Running one setting


def run_dprp(binary, path, mech, eps, k, n, reps):
    cmd = [binary, "--data", path, "--mech", mech, "--epsilon", str(eps), "--k", str(k),
           "--users", str(n), "--reps", str(reps)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run_peer(fn, units, reps):
    """Time fn(v) per row; errors as in examples/ldp_peer.rs, plus ⟨Z,v⟩ and its SE."""
    n, d = units.shape
    true_mean = units.mean(axis=0)
    fn(units[0])  # warm-up (caches, lazy imports)
    per_user, sq_err_mean, errs, along = [], 0.0, [], []
    for _ in range(reps):
        total = np.zeros(d)
        secs = 0.0
        for v in units:
            t = time.perf_counter()
            z = fn(v)
            secs += time.perf_counter() - t
            z = np.asarray(z, dtype=np.float64)
            errs.append(float(np.sum((z - v) ** 2)))
            along.append(float(z @ v))
            total += z
        per_user.append(secs / n)
        sq_err_mean += float(np.sum((total / n - true_mean) ** 2))
    return {
        "time_per_user_s": statistics.median(per_user),
        "mse_per_user": float(np.mean(errs)),
        "mse_se": float(np.std(errs, ddof=1) / math.sqrt(len(errs))) if len(errs) > 1 else 0.0,
        "along": float(np.mean(along)),
        "along_se": float(np.std(along, ddof=1) / math.sqrt(len(along))) if len(along) > 1 else 0.0,
        "sq_err_mean": sq_err_mean / reps,
    }


def peer_function(mech, d, k, eps, pfl, pu, stats):
    """The peer's client for one unit vector, or None if that peer is not available."""
    if mech == "privunit2":
        if pfl is None:
            return None
        scaling, gamma = pfl.compute_optimal_cap_offset(eps, d)
        stats["peer_mse_claimed"] = scaling.value ** 2 - 1.0
        stats["peer_gamma"] = gamma
        return lambda v: pfl.privatize(eps, v)
    if pu is None:
        return None
    p = pu.priv_unit_G_get_p(eps)
    gamma, sigma = pu.get_gamma_sigma(p, eps)
    stats.update(peer_p=p, peer_gamma=gamma, peer_sigma=sigma)
    if mech == "privunitg":
        stats["peer_mse_claimed"] = pu.priv_unit_G_sq_norm(d, eps)
        counter = io.StringIO()
        stats["_stdout"] = counter

        def f(v):
            # PrivUnitG prints "failure" when it falls back to an unconditioned sample.
            with contextlib.redirect_stdout(counter):
                return pu.PrivUnitG(v, eps, p, gamma, sigma)
        return f
    if mech == "projunit-rotation":
        return lambda v: pu.ProjUnit(v, eps, k, p, gamma, sigma)
    if mech == "projunit-srht":
        return lambda v: pu.FastProjUnit(v, eps, k, p, gamma, sigma)
    return None


def norm_sf(x):
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def fallback_report(pu, eps_list, tries=25):
    """ml-projunit's PrivUnitG: probability of the unconditioned fallback per call, the bias it
    causes in E⟨Z,v⟩ and the ε it actually spends (analytic), and a simulation with fewer tries
    (its n_tries argument) showing the bias."""
    print(f"\nml-projunit PrivUnitG fallback (lower branch: {tries} unconditioned draws, then an "
          "UNCONDITIONED sample σ·g):")
    print(f"{'ε':>5} {'p':>6} {'γ':>8} {'P(fallback)':>12} {'bias in E<Z,v>':>15} "
          f"{'ε actually spent':>17}")
    for eps in eps_list:
        p = pu.priv_unit_G_get_p(eps)
        gamma, sigma = pu.get_gamma_sigma(p, eps)
        q = norm_sf(gamma)
        phi = math.exp(-0.5 * gamma * gamma) / math.sqrt(2 * math.pi)
        pf = (1 - p) * q ** tries
        # Fallback replaces α | α<γ (mean −φ/(1−q)) by g·v ~ N(0,1) (mean 0).
        bias = sigma * (1 - p) * q ** tries * phi / (1 - q)
        # Density ratio: sup over outputs of [p/q + (1−p)q^T] / [(1−p)(1−q^{T+1})/(1−q)].
        spent = math.log((p / q + (1 - p) * q ** tries) / ((1 - p) * (1 - q ** (tries + 1)) / (1 - q)))
        print(f"{eps:>5g} {p:>6.2f} {gamma:>8.4f} {pf:>12.3e} {bias:>+15.3e} {spent:>17.12f}")
    # Simulation with n_tries = 1 at ε = 1 (fallback probability (1−p)·q ≈ 0.14) on d = 16.
    eps, d, n = 1.0, 16, 200_000
    p = pu.priv_unit_G_get_p(eps)
    gamma, sigma = pu.get_gamma_sigma(p, eps)
    v = np.zeros(d)
    v[0] = 1.0
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        along = np.array([pu.PrivUnitG(v, eps, p, gamma, sigma, n_tries=1)[0] for _ in range(n)])
    fails = buf.getvalue().count("failure")
    q = norm_sf(gamma)
    phi = math.exp(-0.5 * gamma * gamma) / math.sqrt(2 * math.pi)
    want = 1 + sigma * (1 - p) * q * phi / (1 - q)
    se = along.std(ddof=1) / math.sqrt(n)
    print(f"simulation, n_tries = 1, ε = {eps}, d = {d}, {n} calls: {fails} fallbacks "
          f"({fails / n:.4f}, predicted {(1 - p) * q:.4f}); E<Z,v> = {along.mean():.4f} ± {se:.4f} "
          f"(unbiased: 1, predicted with the fallback: {want:.4f})")


def correctness_checks(pfl, pu):
    """Checks of the peers beyond the timed settings (numbers quoted in docs/performance.md)."""
    print("\ncorrectness checks of the peers:")
    if pu is not None:
        # ProjUnit's rotation is the QR factor of np.random.rand(k, n) (uniform entries): without
        # noise (eps = -1), E<R^T R v/|Rv|, v> = sqrt(d/k)·E|Pv| is 1/c ≈ 1 for a Haar subspace.
        d, k, n = 1024, 64, 400
        for name, v in (("ones/√d", np.ones(d) / math.sqrt(d)),
                        ("e_1", np.eye(d)[0])):
            a = np.array([pu.ProjUnit(v, -1, k) @ v for _ in range(n)])
            print(f"  ml-projunit ProjUnit rotation, no noise, d={d}, k={k}, v={name}: "
                  f"E<z,v> = {a.mean():.3f} ± {a.std(ddof=1) / math.sqrt(n):.3f} (Haar: ≈ 1)")
        try:
            pu.get_gamma_sigma(pu.priv_unit_G_get_p(800.0), 800.0)
            print("  ml-projunit PrivUnitG at ε = 800: parameters computed")
        except OverflowError as e:
            print(f"  ml-projunit PrivUnitG at ε = 800: OverflowError ({e})")
    if pfl is not None:
        d = 1000
        v = np.ones(d) / math.sqrt(d)
        for eps in (16.0, 500.0):
            sc, gamma = pfl.compute_optimal_cap_offset(eps, d)
            z = pfl.privatize(eps, v)
            print(f"  pfl PrivUnit2 at ε = {eps:g}, d = {d}: γ = {gamma:.4g}, claimed MSE "
                  f"{sc.value ** 2 - 1:.4g}, one output has |Z| = {np.linalg.norm(z):.4g}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dprp_example", help="path of the built examples/ldp_peer binary")
    ap.add_argument("--data-dir", default="target/bench-data")
    ap.add_argument("--epsilon", type=float, default=4.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--only", default=None, help="run only settings whose mechanism contains this")
    ap.add_argument("--users-scale", type=float, default=1.0, help="multiply every n by this")
    args = ap.parse_args()
    os.makedirs(args.data_dir, exist_ok=True)

    pfl_root = peer_location("DPRP_PEER_PFL", "pfl-research",
                             "git clone https://github.com/apple/pfl-research && "
                             "git -C pfl-research checkout 291a968^")
    pu_root = peer_location("DPRP_PEER_PROJUNIT", "ml-projunit",
                            "git clone https://github.com/apple/ml-projunit")
    pfl = import_pfl(pfl_root) if pfl_root else None
    pu = import_projunit(pu_root) if pu_root else None
    if pfl is None and pu is None:
        print("no peer available: nothing to compare (exit 0)")
        return

    eps = args.epsilon
    rows = []
    for mech, d, k, n, rcap in SETTINGS:
        if args.only and args.only not in mech:
            continue
        n = max(2, int(n * args.users_scale))
        reps = min(args.reps, rcap) if rcap else args.reps
        stats = {}
        fn = peer_function(mech, d, k, eps, pfl, pu, stats)
        if fn is None:
            print(f"skipping {mech} d={d}: its peer is not available")
            continue
        path = make_data(d, n, args.seed, args.data_dir)
        units = load_units(path)
        print(f"{mech} d={d} k={k} n={n} reps={reps} ...", flush=True)
        ours = run_dprp(args.dprp_example, path, mech, eps, k, n, reps)
        peer = run_peer(fn, units, reps)
        if "_stdout" in stats:
            peer["fallbacks"] = stats.pop("_stdout").getvalue().count("failure")
        peer.update(stats)
        rows.append((mech, d, k, n, reps, ours, peer))
        print(json.dumps({"dprp": ours, "peer": peer}), flush=True)

    print(f"\nε = {eps}; time per user = median over repetitions; MSE = empirical per-user "
          "E‖Z − v‖² (± SE); closed = dprp's closed form (≈: SRHT approximation); "
          "<Z,v> = mean over users (1 if unbiased).")
    hdr = (f"{'mechanism':<18} {'d':>6} {'k':>5} {'n':>5} | {'dprp/user':>10} {'peer/user':>10} "
           f"{'peer/dprp':>9} | {'dprp MSE':>18} {'closed':>10} {'peer MSE':>18} "
           f"{'peer/dprp MSE':>13} | {'dprp <Z,v>':>15} {'peer <Z,v>':>15}")
    print(hdr)
    print("-" * len(hdr))
    for mech, d, k, n, reps, o, p in rows:
        ratio = p["time_per_user_s"] / o["time_per_user_s"]
        mse_ratio = p["mse_per_user"] / o["mse_per_user"]
        closed = ("≈" if o["mse_approx"] else "") + f"{o['mse_closed_form']:.4g}"
        print(f"{mech:<18} {d:>6} {k:>5} {n:>5} | {fmt_t(o['time_per_user_s']):>10} "
              f"{fmt_t(p['time_per_user_s']):>10} {ratio:>8.1f}× | "
              f"{o['mse_per_user']:>9.4g} ±{o.get('mse_se', 0):<7.2g} {closed:>10} "
              f"{p['mse_per_user']:>9.4g} ±{p['mse_se']:<7.2g} {mse_ratio:>13.3f} | "
              f"{o.get('along', float('nan')):>7.4f} ±{o.get('along_se', 0):<6.4f} "
              f"{p['along']:>7.4f} ±{p['along_se']:<6.4f}")
    print("\nsquared error of the mean (average over repetitions) vs dprp's expectation Σmse/n²:")
    for mech, d, k, n, reps, o, p in rows:
        print(f"  {mech:<18} d={d:<6} dprp {o['sq_err_mean']:.4g} (expected "
              f"{o['expected_sq_err_mean']:.4g}), peer {p['sq_err_mean']:.4g}"
              + (f", peer fallbacks: {p['fallbacks']}" if "fallbacks" in p else "")
              + (f", peer's own MSE formula: {p['peer_mse_claimed']:.4g}"
                 if "peer_mse_claimed" in p else ""))
    if pu is not None and (not args.only or "privunitg" in args.only):
        fallback_report(pu, [0.5, 1.0, 4.0, 10.0])
    if not args.only:
        correctness_checks(pfl, pu)


def fmt_t(s):
    if s >= 1.0:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


if __name__ == "__main__":
    main()
