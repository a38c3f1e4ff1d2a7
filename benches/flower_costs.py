"""The costs behind benches/flower_compare.py's table, measured outside Flower (no simulation
engine in the timings):

* client, per round: one client's local training (10 SGD steps of 32 on MNIST, d = 7850) beside
  the privatising / encoding of its d = 7850 update by each arm (Flower's LocalDpMod clip and
  noise; dprp's PrivUnit2 and ProjUnit-SRHT `privatise`; `DistributedEncoder.encode` for DDG at
  b = 16 and count sketch + DDG within 1 and 2 bits per parameter);
* server, per round, for 100 clients at d = 7850 and d = 10^6: `DistributedEncoder.decode` of
  the residue sum, `MeanAccumulator` over 100 local messages (add + finish), and Flower's FedAvg
  `aggregate` of 100 float32 models for reference;
* bytes per client per round: the mechanism's message (b-bit residues packed, float32 local
  messages) against Flower's float32 model (4·d bytes), with what Flower 1.42 puts on the wire
  when flower_compare.py's results.json is at hand.

    python benches/flower_costs.py [--out target/flower-compare] [--reps 5] [--skip-large]

Writes costs.md under --out. The machine's load (uptime) is printed with the timings.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "flower" / "mnist"))

import dprp  # noqa: E402
from dprp_mnist import task  # noqa: E402

CLIENTS = 100
FLOWER_MODULUS_BITS = 32


def load() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "(uptime unavailable)"


def timed(fn: Callable[[], Any], reps: int) -> float:
    """Median seconds of `reps` calls (after one warm-up call)."""
    fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 10 else f"{seconds:.1f} s"


def share(s: task.Settings) -> dict:
    return dprp.RoundsAccountant("zcdp", epsilon=s.epsilon, delta=s.delta).per_round(s.num_server_rounds)


def sketch_bits(s: task.Settings, dim: int, bpp: float) -> int:
    """As the server app picks it: the b with the least planned error within the cap."""
    sh = share(s)
    best = None
    top = FLOWER_MODULUS_BITS - 1 - math.ceil(math.log2(CLIENTS + 1))
    for b in range(4, top + 1):
        try:
            enc = dprp.DistributedEncoder(
                "sketch-ddg", dim=dim, clients=CLIENTS, epsilon=sh["epsilon"], delta=sh["delta"],
                clip=s.clip, seed=0, bits=b, bits_per_parameter=bpp,
            )
        except dprp.DprpError:
            continue
        mse = enc.plan()["mse"]
        if best is None or mse < best[0]:
            best = (mse, b)
    assert best is not None
    return best[1]


def encoders(s: task.Settings, dim: int) -> dict[str, dprp.DistributedEncoder]:
    sh = share(s)
    common = dict(dim=dim, clients=CLIENTS, epsilon=sh["epsilon"], delta=sh["delta"], clip=s.clip, seed=7)
    return {
        "dprp-ddg16": dprp.DistributedEncoder("ddg", bits=s.ddg_bits, **common),
        "dprp-sketch-ddg-1bit": dprp.DistributedEncoder("sketch-ddg", bits=sketch_bits(s, dim, 1.0), bits_per_parameter=1.0, **common),
        "dprp-sketch-ddg-2bit": dprp.DistributedEncoder("sketch-ddg", bits=sketch_bits(s, dim, 2.0), bits_per_parameter=2.0, **common),
    }


def local_args(s: task.Settings, arm: str) -> dict[str, Any]:
    eps = s.epsilon / s.num_server_rounds
    if arm == "dprp-privunit2":
        return {"mechanism": "privunit2", "epsilon": eps, "seed": 11}
    return {"mechanism": "projunit", "epsilon": eps, "seed": 11, "k": s.projunit_k, "projection": "srht"}


def updates(dim: int, n: int, clip: float, rng: np.random.Generator) -> np.ndarray:
    """n updates of norm ≤ clip around a common direction (as the clients' are)."""
    common = rng.normal(size=dim)
    u = 2 * common / np.linalg.norm(common) + rng.normal(size=(n, dim)) / math.sqrt(dim)
    return clip * 0.8 * u / np.linalg.norm(u, axis=1, keepdims=True)


def client_costs(s: task.Settings, reps: int) -> list[tuple[str, float, str]]:
    from flwr.supercore.differential_privacy import add_gaussian_noise_inplace, compute_clip_model_update

    d = task.DIM
    rng = np.random.default_rng(1)
    sizes = [task.client_data(s, p)[1].size for p in range(s.num_partitions)]
    p_med = int(np.argsort(sizes)[len(sizes) // 2])
    x, y = task.client_data(s, p_med)
    w0 = task.initial_weights()
    rows = [(
        "local training (10 SGD steps, batch 32)",
        timed(lambda: task.train(w0, x, y, s.local_steps, s.batch_size, s.lr, rng), reps * 4),
        f"partition {p_med} ({y.size} examples, the median)",
    )]
    new = task.train(w0, x, y, s.local_steps, s.batch_size, s.lr, rng)
    sigma = s.sensitivity * math.sqrt(2 * math.log(1.25 / (s.delta / s.num_server_rounds))) / (s.epsilon / s.num_server_rounds)

    def flower_localdp():
        got = [a.copy() for a in new]
        compute_clip_model_update(got, w0, s.clip)
        add_gaussian_noise_inplace(got, sigma)

    rows.append(("flower-localdp: LocalDpMod's clip + Gaussian noise", timed(flower_localdp, reps * 4), "numpy"))
    u = updates(d, 1, s.clip, rng)[0]
    for arm in ("dprp-privunit2", "dprp-projunit-srht"):
        a = local_args(s, arm)
        rows.append((f"{arm}: privatise", timed(lambda: dprp.privatise(u / s.clip, row=3, **a), reps * 4), f"ε = {a['epsilon']:.3g} per round"))
    for arm, enc in encoders(s, d).items():
        rows.append((f"{arm}: DistributedEncoder.encode", timed(lambda: enc.encode(u), reps * 4), f"b = {enc.bits}, {enc.message_len} residues"))
    return rows


def server_costs(s: task.Settings, dim: int, reps: int) -> list[tuple[str, float, str]]:
    rng = np.random.default_rng(2)
    rows = []
    chunk = 10  # the updates are made 10 at a time (100 × 10^6 float64 would be 800 MB)
    for arm, enc in encoders(s, dim).items():
        total = np.zeros(enc.message_len, dtype=np.int64)
        spent = 0.0
        for i in range(0, CLIENTS, chunk):
            for v in updates(dim, chunk, s.clip, rng):
                t0 = time.perf_counter()
                r = enc.encode(v)
                spent += time.perf_counter() - t0
                total += r.astype(np.int64)
        enc_each = spent / CLIENTS
        residues = total % (2**enc.bits)
        rows.append((f"{arm}: DistributedEncoder.decode of the sum", timed(lambda: enc.decode(residues, CLIENTS), reps),
                     f"(encode: {ms(enc_each)} per client)"))
    for arm in ("dprp-privunit2", "dprp-projunit-srht"):
        a = local_args(s, arm)
        messages, spent = [], 0.0
        for i in range(0, CLIENTS, chunk):
            for j, v in enumerate(updates(dim, chunk, s.clip, rng)):
                t0 = time.perf_counter()
                messages.append(dprp.privatise(v / s.clip, row=i + j, **a))
                spent += time.perf_counter() - t0

        def accumulate():
            acc = dprp.MeanAccumulator(dim=dim, **a)
            for r, m in enumerate(messages):
                acc.add(r, m)
            return acc.finish()

        rows.append((f"{arm}: MeanAccumulator, 100 messages (add + finish)", timed(accumulate, reps), f"messages of {messages[0].size} float32 (privatise: {ms(spent / CLIENTS)} per client)"))
        del messages
    from flwr.server.strategy.aggregate import aggregate

    models = [([rng.normal(size=dim).astype(np.float32)], 1) for _ in range(CLIENTS)]
    rows.append(("Flower FedAvg aggregate of 100 float32 models (reference)", timed(lambda: aggregate(models), reps), ""))
    return rows


def byte_rows(s: task.Settings, wire: dict[str, float]) -> list[str]:
    d = task.DIM
    flower = 4 * d
    out = [
        "| arm | message | bytes (mechanism, packed) | × float32 model | Flower 1.42 wire, measured | × float32 model |",
        "|---|---|---|---|---|---|",
    ]

    def row(arm, what, nbytes):
        w = wire.get(arm)
        ws = f"{w:.0f} | {w / flower:.3f}" if w is not None else "— | —"
        out.append(f"| {arm} | {what} | {nbytes:.0f} | {nbytes / flower:.3f} | {ws} |")

    row("none / flower-central / flower-localdp", f"{d} float32", flower)
    row("dprp-privunit2", f"{d} float32", 4 * d)
    row("dprp-projunit-srht", f"{s.projunit_k} float32", 4 * s.projunit_k)
    for arm, enc in encoders(s, d).items():
        row(arm, f"{enc.message_len} residues of {enc.bits} bits", math.ceil(enc.message_len * enc.bits / 8))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "target" / "flower-compare")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--skip-large", action="store_true", help="no d = 10^6 server timings")
    args = ap.parse_args(argv)
    s = task.settings({})
    args.out.mkdir(parents=True, exist_ok=True)

    lines = [
        f"Costs at the comparison's settings: {CLIENTS} clients, {s.num_server_rounds} rounds, (ε, δ) = "
        f"({s.epsilon:g}, {s.delta:g}) for the run, clip {s.clip:g}. Medians of {args.reps}–{4 * args.reps} calls "
        "after a warm-up, one thread.",
        "",
        f"Load before: `{load()}`",
        "",
        f"### Client, per round (d = {task.DIM})",
        "",
        "| what | time | note |",
        "|---|---|---|",
    ]
    for what, t, note in client_costs(s, args.reps):
        lines.append(f"| {what} | {ms(t)} | {note} |")
    for dim in (task.DIM,) + (() if args.skip_large else (10**6,)):
        lines += ["", f"### Server, per round, {CLIENTS} clients, d = {dim}", "", "| what | time | note |", "|---|---|---|"]
        for what, t, note in server_costs(s, dim, args.reps if dim < 10**6 else max(1, args.reps // 2)):
            lines.append(f"| {what} | {ms(t)} | {note} |")
            print(lines[-1], flush=True)
    sh = share(s)
    z = 1 / math.sqrt(2 * sh["rho"])
    lines += [
        "",
        "### Planned expected squared error of the mean update, per round (clip² units)",
        "",
        f"Central Gaussian (flower-central): d·(z·clip/n)², z = {z:.3f}. The distributed plans are "
        "worst cases (every client's update at norm clip).",
        "",
        "| d | central Gaussian | dprp-ddg16 | dprp-sketch-ddg-1bit | dprp-sketch-ddg-2bit |",
        "|---|---|---|---|---|",
    ]
    for dim in (task.DIM, 10**6):
        central = dim * (z * s.clip / CLIENTS) ** 2
        cells = [f"{central:.4g}"]
        for arm, enc in encoders(s, dim).items():
            cells.append(f"{enc.plan()['mse']:.4g} ({enc.plan()['mse'] / central:.2f}×; b = {enc.bits}, {enc.bits_per_parameter:.2f} bit/param)")
        lines.append(f"| {dim} | " + " | ".join(cells) + " |")
    wire: dict[str, float] = {}
    results = args.out / "results.json"
    if results.is_file():
        for run in json.loads(results.read_text()):
            if run.get("main", True) and run.get("bytes") == run.get("bytes"):  # not NaN
                wire[run["arm"]] = run["bytes"]
        if "none" in wire:
            wire["none / flower-central / flower-localdp"] = wire["none"]
    lines += [
        "",
        f"### Bytes per client per round (d = {task.DIM}; Flower's float32 model: {4 * task.DIM} bytes)",
        "",
        *byte_rows(s, wire),
        "",
        "Flower 1.42's wire: the serialised size of the client's TRAIN replies in a round, from "
        "flower_compare.py's run (SecAgg+: masked vectors as int64, plus its keys and encrypted shares "
        "with num-shares − 1 = 14 neighbours).",
        "",
        f"Load after: `{load()}`",
    ]
    text = "\n".join(lines)
    print(text)
    (args.out / "costs.md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
