"""Private federated learning on MNIST in Flower, every privacy arm in one run: the same 100
non-IID clients, rounds, clip and total (ε, δ) for Flower's own DP (central Gaussian with
server-side clipping, LocalDpMod) and dprp's (PrivUnit2, ProjUnit-SRHT, DDG and count sketch +
DDG under SecAgg+), with no privacy as the ceiling. Runs examples/flower/run_simulation.py's
arms one after another in Flower's simulation engine.

    python benches/flower_compare.py [--rounds 30] [--epsilon 10] [--delta 1e-5]
                                     [--local-epsilon 300] [--out target/flower-compare]

(benches/run-flower-compare.sh makes the venv and runs this.) Prints a markdown table — arm,
final and best test accuracy, ε and δ spent, bits per parameter of the mechanism's message,
bytes each client sent per round as Flower serialised them (every SecAgg+ stage counted),
wall time — and writes accuracy by round (accuracy.csv), a figure (accuracy.svg), the table
(table.md) and every row (results.json) under --out.

At the default budget every local-DP arm is at chance (ε/R = 0.33 per round for a 7850-value
update from 100 clients); --local-epsilon runs the three local arms again at that larger total
ε (same rounds), where they can be compared with each other (0: skip).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "flower" / "mnist"))

from dprp_mnist import task  # noqa: E402

SIMULATE = ROOT / "examples" / "flower" / "run_simulation.py"


def run_arm(arm: str, cfg: dict[str, Any], num_cpus: int, stall: float, attempts: int = 2) -> dict[str, Any]:
    """One arm in its own process (a fresh Ray instance each). A run that reports no new round
    for `stall` seconds (a Ray start-up that never finishes, a lost actor) is killed and run
    again, up to `attempts` times; after that it is reported without rows."""
    for attempt in range(1, attempts + 1):
        with tempfile.TemporaryDirectory(prefix="flower-arm-") as tmp:
            out, progress = pathlib.Path(tmp) / "run.json", pathlib.Path(tmp) / "rows.jsonl"
            cmd = [sys.executable, str(SIMULATE), "--arm", arm, "--num-cpus", str(num_cpus), "--json", str(out)]
            cmd += [f"--set={k}={v}" for k, v in {**cfg, "results-file": str(progress)}.items()]
            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, start_new_session=True)
            seen, last = -1, time.perf_counter()
            while proc.poll() is None:
                time.sleep(2)
                n = len(progress.read_text().splitlines()) if progress.is_file() else 0
                if n != seen:
                    seen, last = n, time.perf_counter()
                elif time.perf_counter() - last > stall:
                    print(f"=== {arm}: no new round for {stall:.0f} s; killing it (attempt {attempt} of {attempts})", flush=True)
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    break
            if out.is_file():
                (run,) = json.loads(out.read_text())
                run["attempts"] = attempt
                return run
    return {"arm": arm, "rows": [], "wall_seconds": time.perf_counter() - t0, "settings": cfg, "attempts": attempts}


def load() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "(uptime unavailable)"


def meter_summary(directory: pathlib.Path) -> dict[str, float]:
    """Mean bytes a client sent per round (its TRAIN replies, summed over SecAgg+'s stages)
    and mean client-side seconds per round inside the mods (training + privatising/encoding +
    SecAgg+'s work)."""
    per = defaultdict(lambda: [0, 0.0])
    for f in directory.glob("meter-*.txt"):
        for line in f.read_text().splitlines():
            node, group, size, seconds = line.split()
            per[(node, group)][0] += int(size)
            per[(node, group)][1] += float(seconds)
    if not per:
        return {"bytes": float("nan"), "client_seconds": float("nan")}
    return {
        "bytes": sum(v[0] for v in per.values()) / len(per),
        "client_seconds": sum(v[1] for v in per.values()) / len(per),
    }


def label(run: dict) -> str:
    eps = run["settings"]["epsilon"]
    return run["arm"] if run.get("main", True) else f"{run['arm']} (ε={eps:g})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--epsilon", type=float, default=10.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--local-epsilon", type=float, default=300.0, help="also run the local arms at this total ε (0: skip)")
    ap.add_argument("--arms", default="all", help="comma-separated arms, or all")
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--stall", type=float, default=240.0, help="kill and rerun an arm that reports no round for this many seconds")
    ap.add_argument("--resume", action="store_true", help="keep the complete runs of --out's results.json at the same settings")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "target" / "flower-compare")
    args = ap.parse_args(argv)

    arms = list(task.ARMS) if args.arms == "all" else args.arms.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    base = {
        "num-server-rounds": args.rounds,
        "epsilon": args.epsilon,
        "delta": args.delta,
        "num-partitions": args.clients,
        "clip": args.clip,
    }
    plan = [(a, base, True) for a in arms]
    if args.local_epsilon > 0:
        plan += [(a, {**base, "epsilon": args.local_epsilon}, False) for a in arms if a in task.LOCAL_ARMS]

    load_before = load()
    print(f"load before: {load_before}", flush=True)
    runs: list[dict[str, Any]] = []
    t_all = time.perf_counter()
    kept: dict[tuple[str, bool], dict] = {}
    if args.resume and (args.out / "results.json").is_file():
        for run in json.loads((args.out / "results.json").read_text()):
            same = all(run["settings"].get(k) == v for k, v in base.items() if k != "epsilon")
            key = (run["arm"], run.get("main", True))
            if same and len(run["rows"]) == args.rounds + 1:
                kept[key] = run
    for arm, cfg, is_main in plan:
        old_run = kept.get((arm, is_main))
        if old_run is not None and old_run["settings"].get("epsilon") == cfg["epsilon"]:
            print(f"=== {arm}: kept from {args.out / 'results.json'} (--resume)", flush=True)
            runs.append({**old_run, "kept": True})
            continue
        meter = pathlib.Path(tempfile.mkdtemp(prefix="flower-meter-"))
        try:
            run = run_arm(arm, {**cfg, "meter-dir": str(meter)}, args.num_cpus, args.stall)
            run["main"] = is_main
            run.update(meter_summary(meter))
        finally:
            shutil.rmtree(meter, ignore_errors=True)
        run["settings"] = {k: v for k, v in run["settings"].items() if k not in ("meter-dir", "results-file")}
        runs.append(run)
    total_seconds = time.perf_counter() - t_all
    load_after = load()

    # the table
    d = task.DIM
    lines = [
        f"MNIST, multinomial logistic regression (d = {d}), {args.clients} clients (Dirichlet α = "
        f"{task.DEFAULTS['dirichlet-alpha']} over labels), all in every round, {args.rounds} rounds, "
        f"clip {args.clip:g}, {task.DEFAULTS['local-steps']} local SGD steps; budget (ε, δ) = "
        f"({args.epsilon:g}, {args.delta:g}) for the whole run.",
        "",
        "| arm | final acc. | best acc. | ε total | δ | bits/param (message) | bytes/client/round (Flower wire) | × float32 (4·d) | client s/round | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        rows = run["rows"]
        if not rows:
            lines.append(f"| {label(run)} | (no round) | | | | | | | | {run['wall_seconds']:.0f} |")
            continue
        last = rows[-1]
        s = task.settings({**run["settings"], "arm": run["arm"]})
        bpp = task.bits_per_parameter(s, last.get("message_len"), last.get("bits"))
        eps = "∞" if run["arm"] == "none" else f"{last['epsilon']:.3f}"
        delta = "—" if run["arm"] == "none" else f"{last['delta']:.1e}"
        lines.append(
            f"| {label(run)} | {last['accuracy']:.4f} | {max(r['accuracy'] for r in rows):.4f} | {eps} | {delta} | "
            f"{bpp:.3f} | {run['bytes']:.0f} | {run['bytes'] / (4 * d):.3f} | {run['client_seconds']:.4f} | {run['wall_seconds']:.0f} |"
        )
    lines += [
        "",
        f"Total {total_seconds / 60:.1f} min. Load before: `{load_before}`; after: `{load_after}`."
        + (f" {sum(1 for r in runs if r.get('kept'))} run(s) kept from an earlier run (--resume)." if any(r.get("kept") for r in runs) else ""),
        "bytes/client/round: the serialised size of every TRAIN reply a client sent in a round (SecAgg+: its "
        "four stages, keys and shares included); client s/round: time inside the client's mods per round "
        "(training + privatising/encoding + SecAgg+'s cryptography), under the simulation engine.",
    ]
    table = "\n".join(lines)
    print()
    print(table)
    (args.out / "table.md").write_text(table + "\n")
    (args.out / "results.json").write_text(json.dumps(runs, indent=1))

    # accuracy by round
    labels = [label(r) for r in runs]
    by_round: dict[int, dict[str, float]] = defaultdict(dict)
    for run, lab in zip(runs, labels):
        for r in run["rows"]:
            by_round[r["round"]][lab] = r["accuracy"]
    with open(args.out / "accuracy.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round"] + labels)
        for rnd in sorted(by_round):
            w.writerow([rnd] + [by_round[rnd].get(lab, "") for lab in labels])

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no figure (pip install matplotlib)")
        return 0
    fig, ax = plt.subplots(figsize=(8, 5))
    for run, lab in zip(runs, labels):
        xs = [r["round"] for r in run["rows"]]
        ys = [r["accuracy"] for r in run["rows"]]
        ax.plot(xs, ys, "-" if run["main"] else "--", label=lab, marker="." if run["arm"].startswith("dprp") else None)
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title(
        f"MNIST logistic regression, {args.clients} non-IID clients, (ε, δ) = ({args.epsilon:g}, {args.delta:g}) "
        f"over {args.rounds} rounds" + (f"; dashed: local arms at ε = {args.local_epsilon:g}" if args.local_epsilon > 0 else ""),
        fontsize=9,
    )
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(args.out / "accuracy.svg")
    print(f"\nwrote {args.out}/table.md, results.json, accuracy.csv, accuracy.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
