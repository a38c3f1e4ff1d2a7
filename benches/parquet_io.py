"""Parquet in and out (issue 14): what reading and writing Parquet costs against .npy and the
native release, and how dprp's Parquet reader compares with pyarrow reading the same file.

    target/test-venv/bin/python benches/parquet_io.py [--rows 1000000] [--reps 3]

Needs the release binary (`cargo build --release`) and pyarrow (tests/requirements.txt). One
machine, interleaved runs, medians:
  * `dprp publish` (dp-oporp, k = 64, 96 dims) from .npy, from Parquet fixed_size_list<float, 96>
    (uncompressed and Snappy) and from Parquet list<float> (what pandas/Spark write), each to a
    native release; and from .npy to a Parquet release (`--output-format parquet`);
  * the peer: pyarrow reading the same Parquet file into one float32 numpy matrix
    (`pq.read_table` + flatten + reshape), against `dprp convert file.parquet -o x.bin` (read and
    write the rows as a native dataset) — both are "Parquet rows to a float32 matrix";
  * opening the Parquet release (decoded into memory, checksum verified) against the native one
    (memory-mapped, checksum verified), via `dprp info`.
The data: i.i.d. uniform in [-1, 1] float32 from a fixed seed (PCG64, 2026).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DPRP = os.path.join(ROOT, "target", "release", "dprp")
P, K = 96, 64


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="dprp-parquet-bench-")
    x = np.random.Generator(np.random.PCG64(2026)).uniform(-1, 1, (a.rows, P)).astype(np.float32)
    np.save(f"{d}/x.npy", x)
    fsl = pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), P)
    pq.write_table(pa.table({"emb": fsl}), f"{d}/fsl.parquet", compression="none")
    pq.write_table(pa.table({"emb": fsl}), f"{d}/fsl_snappy.parquet", compression="snappy")
    lst = pa.ListArray.from_arrays(pa.array(np.arange(a.rows + 1, dtype=np.int32) * P),
                                   pa.array(x.ravel()))
    pq.write_table(pa.table({"emb": lst}), f"{d}/list.parquet", compression="snappy")
    del x, fsl, lst
    common = ["-m", "dp-oporp", "-e", "5", "-d", "1e-6", "-k", str(K), "--projection-seed", "5eed"]
    pub = {
        "npy -> native": [DPRP, "publish", f"{d}/x.npy", *common, "-o", f"{d}/a.dprp"],
        "parquet fsl -> native": [DPRP, "publish", f"{d}/fsl.parquet", *common, "-o", f"{d}/b.dprp"],
        "parquet fsl snappy -> native": [DPRP, "publish", f"{d}/fsl_snappy.parquet", *common,
                                         "-o", f"{d}/c.dprp"],
        "parquet list snappy -> native": [DPRP, "publish", f"{d}/list.parquet", *common,
                                          "-o", f"{d}/e.dprp"],
        "npy -> parquet release": [DPRP, "publish", f"{d}/x.npy", *common, "-o", f"{d}/r.parquet"],
        "dprp convert fsl.parquet -> .bin": [DPRP, "convert", f"{d}/fsl.parquet", "-o", f"{d}/c.bin"],
        "dprp convert list.parquet -> .bin": [DPRP, "convert", f"{d}/list.parquet", "-o", f"{d}/l.bin"],
        "info native release (verify)": [DPRP, "info", f"{d}/a.dprp"],
        "info parquet release (decode + verify)": [DPRP, "info", f"{d}/r.parquet"],
    }
    times = {k: [] for k in pub}
    peer = {"pyarrow fsl.parquet -> matrix": [], "pyarrow list.parquet -> matrix": []}

    def pyarrow_read(path):
        t = time.perf_counter()
        col = pq.read_table(path)["emb"].combine_chunks()
        m = col.flatten().to_numpy().reshape(-1, P)
        assert m.shape == (a.rows, P)
        return time.perf_counter() - t

    for _ in range(a.reps):
        for k, cmd in pub.items():
            times[k].append(timed(cmd))
        peer["pyarrow fsl.parquet -> matrix"].append(pyarrow_read(f"{d}/fsl.parquet"))
        peer["pyarrow list.parquet -> matrix"].append(pyarrow_read(f"{d}/list.parquet"))
    med = {k: statistics.median(v) for k, v in {**times, **peer}.items()}
    print(f"{a.rows} rows x {P} float32, dp-oporp k = {K}; medians of {a.reps} interleaved runs")
    for k, v in med.items():
        rate = a.rows / v / 1e6
        print(f"  {k:42s} {v:7.3f} s  ({rate:5.2f} M rows/s)")
    base = med["npy -> native"]
    print("ratios:")
    for k in ("parquet fsl -> native", "parquet fsl snappy -> native",
              "parquet list snappy -> native", "npy -> parquet release"):
        print(f"  {k:42s} {med[k] / base:5.2f}x the .npy -> native time")
    print(f"  dprp convert / pyarrow, fixed_size_list:   "
          f"{med['dprp convert fsl.parquet -> .bin'] / med['pyarrow fsl.parquet -> matrix']:5.2f}x")
    print(f"  dprp convert / pyarrow, list (snappy):     "
          f"{med['dprp convert list.parquet -> .bin'] / med['pyarrow list.parquet -> matrix']:5.2f}x")
    sizes = {f: os.path.getsize(f"{d}/{f}") for f in ("a.dprp", "r.parquet")}
    print(f"release sizes: native {sizes['a.dprp'] / 1e6:.1f} MB, parquet "
          f"{sizes['r.parquet'] / 1e6:.1f} MB")
    subprocess.run(["rm", "-rf", d])
    return 0


if __name__ == "__main__":
    sys.exit(main())
