"""dprp's linear SVM vs scikit-learn's LinearSVC (liblinear, dual coordinate descent).

Run through benches/run-svm-peer.sh, which sets up the virtualenv and builds the binaries.
Both tools solve the same problem with the same algorithm and stopping rule: L2-regularised
squared-hinge (or hinge) SVM, intercept as a regularised constant feature 1, dual coordinate
descent with shrinking, stop when max PG - min PG <= tol over an epoch on the full set, at most
max_iter epochs per binary problem, one-vs-rest for more than two classes. Only the fit is timed.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings

import numpy as np
import scipy
import sklearn
from sklearn.datasets import load_svmlight_file
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

LIBSVM_SETS = [
    # name, train file, test file, dimension
    ("a9a", "a9a.svm.gz", "a9a.t.svm.gz", 123),
    ("ijcnn1", "ijcnn1.trn.svm.gz", "ijcnn1.tst.svm.gz", 22),
]
PROJECTION_SEED = "5eed"
NOISE_SEEDS = ("1", "2")


def sklearn_fit(x, y, xt, yt, a):
    clf = LinearSVC(
        C=a.c,
        loss=a.loss,
        dual=True,
        tol=a.tol,
        max_iter=a.max_iter,
        fit_intercept=True,
        intercept_scaling=1.0,
        random_state=0,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t0 = time.perf_counter()
        clf.fit(x, y)
        fit_s = time.perf_counter() - t0
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return {
        "fit_seconds": fit_s,
        "iterations": int(np.max(clf.n_iter_)),
        "converged": converged,
        "test_accuracy": float(clf.score(xt, yt)),
    }


def dprp_fit(a, train, test, extra):
    cmd = [a.svm_train, "--train", train, "--test", test, "--json",
           "--c", str(a.c), "--tol", str(a.tol), "--max-iter", str(a.max_iter),
           "--loss", a.loss.replace("_", "-")] + extra
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {
        "fit_seconds": r["fit_seconds"],
        "iterations": r["max_iterations"],
        "converged": r["converged"],
        "test_accuracy": r["test_accuracy"],
        "threads": r["threads"],
    }


def median_of(runs):
    best = sorted(runs, key=lambda r: r["fit_seconds"])[len(runs) // 2]
    best = dict(best)
    best["all_seconds"] = [round(r["fit_seconds"], 4) for r in runs]
    return best


def row(name, d, s):
    ratio = d["fit_seconds"] / s["fit_seconds"]
    print(f"| {name} | {d['fit_seconds']:.3f} s ({d['threads']} thr) | {s['fit_seconds']:.3f} s | "
          f"{ratio:.2f} | {d['iterations']} / {s['iterations']} | "
          f"{'yes' if d['converged'] else 'no'} / {'yes' if s['converged'] else 'no'} | "
          f"{100 * d['test_accuracy']:.2f}% | {100 * s['test_accuracy']:.2f}% | "
          f"{100 * (d['test_accuracy'] - s['test_accuracy']):+.2f} |")
    return ratio


def header():
    print("| data | dprp fit | sklearn fit | ratio dprp/sklearn | epochs (max) dprp / sklearn "
          "| converged dprp / sklearn | dprp test acc | sklearn test acc | Δ points |")
    print("|---|---|---|---|---|---|---|---|---|")


def part_libsvm(a, results):
    libsvm = os.path.join(a.data, "libsvm")
    print(f"\n## (a) raw LIBSVM data, C = {a.c}, loss {a.loss}, tol {a.tol}, max_iter {a.max_iter}"
          f" (median of {a.reps}; sklearn on its native CSR input, dprp on dense rows; a binary"
          f" problem runs on one thread in both tools)\n")
    header()
    for name, tr, te, dim in LIBSVM_SETS:
        ptr, pte = os.path.join(libsvm, tr), os.path.join(libsvm, te)
        if not (os.path.isfile(ptr) and os.path.isfile(pte)):
            print(f"| {name} | skipped: {ptr} or {pte} missing | | | | | | | |")
            continue
        x, y = load_svmlight_file(ptr, n_features=dim)
        xt, yt = load_svmlight_file(pte, n_features=dim)
        for m in (x, xt):  # liblinear accepts 32-bit indices only
            m.indices = m.indices.astype(np.int32)
            m.indptr = m.indptr.astype(np.int32)
        s = median_of([sklearn_fit(x, y, xt, yt, a) for _ in range(a.reps)])
        d = median_of([dprp_fit(a, ptr, pte, ["--dim", str(dim)]) for _ in range(a.reps)])
        ratio = row(name, d, s)
        results[name] = {"dprp": d, "sklearn": s, "ratio": ratio}


def read_release(path):
    """A release's payload and labels (README.md, "Reading a release with numpy")."""
    b = np.fromfile(path, dtype=np.uint8)
    n, k, off = (int(v) for v in b[16:40].view("<u8"))
    lab = int(b[56:64].view("<u8")[0])
    meta = json.loads(b[int(b[64:72].view("<u8")[0]):].tobytes())
    assert meta["payload"] == "f32", meta["payload"]
    x = b[off:off + 4 * n * k].view("<f4").reshape(n, k)
    y = b[lab:lab + 4 * n].view("<f4").astype(np.int64)
    return x, y, meta


def part_mnist(a, results):
    mnist = os.path.join(a.data, "mnist")
    files = {
        "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
        "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
    }
    for imgs, labs in files.values():
        for f in (imgs, labs):
            if not os.path.isfile(os.path.join(mnist, f)):
                print(f"\n(b) skipped: {os.path.join(mnist, f)} missing")
                return
    os.makedirs(a.work, exist_ok=True)
    arrays = {}
    for (part, (imgs, labs)), noise in zip(files.items(), NOISE_SEEDS):
        rel = os.path.join(a.work, f"mnist-{part}-e{a.epsilon}-k{a.k}.dprp")
        subprocess.run(
            [a.dprp, "publish", os.path.join(mnist, imgs), "--labels", os.path.join(mnist, labs),
             "--scale", "255", "-m", "dp-rp-g-opt", "--epsilon", str(a.epsilon), "--delta",
             "1e-6", "--k", str(a.k), "--projection-seed", PROJECTION_SEED,
             "--noise-seed", noise, "-o", rel],
            check=True, capture_output=True, text=True)
        x, y, meta = read_release(rel)
        if part == "train" and a.mnist_rows:
            x, y = x[:a.mnist_rows], y[:a.mnist_rows]
        xp = os.path.join(a.work, f"x_{part}.npy")
        yp = os.path.join(a.work, f"y_{part}.npy")
        np.save(xp, np.ascontiguousarray(x, dtype=np.float32))
        np.save(yp, y)
        arrays[part] = (xp, yp)
        sigma = meta["mechanism"].get("gaussian", {}).get("sigma")
    (xp, yp), (xtp, ytp) = arrays["train"], arrays["test"]
    x, y = np.load(xp), np.load(yp)
    xt, yt = np.load(xtp), np.load(ytp)
    print(f"\n## (b) MNIST sketches: dp-rp-g-opt (Rademacher), ε = {a.epsilon}, δ = 1e-6, "
          f"k = {a.k}, σ = {sigma}; train {x.shape[0]}×{x.shape[1]} → test "
          f"{xt.shape[0]}×{xt.shape[1]}, {len(np.unique(y))} classes one-vs-rest, C = {a.c}, "
          f"loss {a.loss}, tol {a.tol}, max_iter {a.max_iter} (one run each)\n")
    sys.stdout.flush()
    d = dprp_fit(a, xp, xtp, ["--train-labels", yp, "--test-labels", ytp])
    s = sklearn_fit(x, y, xt, yt, a)
    header()
    ratio = row("MNIST sketches", d, s)
    gap = 100 * abs(d["test_accuracy"] - s["test_accuracy"])
    print(f"\ntraining time ratio dprp/sklearn = {ratio:.3f} (target ≤ 1.5: "
          f"{'met' if ratio <= 1.5 else 'NOT met'}); accuracy difference {gap:.2f} points "
          f"(target ≤ 0.5: {'met' if gap <= 0.5 else 'NOT met'})")
    results["mnist_sketches"] = {"dprp": d, "sklearn": s, "ratio": ratio,
                                 "epsilon": a.epsilon, "k": a.k, "sigma": sigma,
                                 "n_train": int(x.shape[0])}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dprp", required=True)
    p.add_argument("--svm-train", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--skip-libsvm", action="store_true")
    p.add_argument("--skip-mnist", action="store_true")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--c", type=float, default=1.0)
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--max-iter", type=int, default=1000)
    p.add_argument("--loss", default="squared_hinge", choices=["squared_hinge", "hinge"])
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--epsilon", default="10")
    p.add_argument("--k", type=int, default=1024)
    p.add_argument("--mnist-rows", type=int, default=0)
    p.add_argument("--json")
    a = p.parse_args()

    dprp_version = subprocess.run([a.dprp, "--version"], capture_output=True,
                                  text=True).stdout.strip()
    print("# dprp linear SVM vs scikit-learn LinearSVC")
    print(f"versions: {dprp_version}; scikit-learn {sklearn.__version__} (bundled liblinear); "
          f"numpy {np.__version__}; scipy {scipy.__version__}; Python {platform.python_version()}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} logical CPUs; sklearn's liblinear "
          f"is single-threaded, dprp trains one-vs-rest problems in parallel")
    results = {"versions": {"dprp": dprp_version, "sklearn": sklearn.__version__,
                            "numpy": np.__version__}}
    if not a.skip_libsvm:
        part_libsvm(a, results)
    if not a.skip_mnist:
        part_mnist(a, results)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
