"""What the error bars of issue 37 cost at an embedding's width: on 400 synthetic rows of
p = 4096 (ten clusters in [0,1]), dp-oporp at ε = 1, 5, 20 and k = 256, 1024, for 200 pairs of
`Release.estimate(i, j, full=True)`: the inner product's score interval against the plug-in
`2·1.96·se`, the cosine's profile interval against the delta method's `2·1.96·se_cosine`, the
undefined cosines, and the time per estimate (intervals included).

    target/test-venv/bin/python benches/interval_width.py
"""

import tempfile
import time
from pathlib import Path

import numpy as np

import dprp

Z = 1.959964


def main() -> None:
    rng = np.random.default_rng(3)
    p = 4096
    base = rng.uniform(0, 1, (10, p))
    x = base[rng.integers(0, 10, 400)] * 0.7 + 0.3 * rng.uniform(0, 1, (400, p))
    x = np.clip(x, 0, 1).astype(np.float32)
    with tempfile.TemporaryDirectory() as d:
        for eps in (1.0, 5.0, 20.0):
            for k in (256, 1024):
                r = dprp.publish(x, output=Path(d) / f"w{eps}-{k}.dprp", mechanism="dp-oporp",
                                 epsilon=eps, delta=1e-6, k=k)
                ip_ratio, prof, delta, undefined = [], [], [], 0
                t = time.perf_counter()
                for i in range(200):
                    e = r.estimate(i, 200 + i, full=True)
                    ip_ratio.append((e["ip_hi"] - e["ip_lo"]) / (2 * Z * e["se"]))
                    if e["cosine"] is None:
                        undefined += 1
                        continue
                    prof.append(e["cosine_hi"] - e["cosine_lo"])
                    delta.append(2 * Z * e["se_cosine"])
                ms = (time.perf_counter() - t) / 200 * 1e3
                ratio = np.median(np.array(prof) / np.array(delta))
                print(f"ε = {eps:g}, k = {k}: inner product width / plug-in {np.median(ip_ratio):.3f}; "
                      f"cosine width {np.median(prof):.3f} vs delta method {np.median(delta):.3f} "
                      f"(median ratio {ratio:.2f}); undefined {undefined}/200; {ms:.2f} ms per estimate")


if __name__ == "__main__":
    main()
