"""The issue-38 accuracy table: MNIST logistic regression in Flower's simulation engine with 10
IID clients and 10 rounds, each arm run `--repeats` times (fresh noise and SGD order; the same
split), final test accuracy averaged. dprp's DDG under SecAgg+ against Flower's central DP
(`DifferentialPrivacyServerSideFixedClipping`) at the same (ε, δ), and dprp's PrivUnit2 and
ProjUnit-SRHT against Flower's `LocalDpMod` at a larger local ε; FedAvg without privacy as the
ceiling. Runs benches/flower_compare.py's `run_arm` (each arm in its own process).

    python benches/flower_small.py [--repeats 3] [--central-epsilons 3,30] [--local-epsilon 300]
                                   [--dprp-local-epsilon 236]

IID: `dirichlet-alpha` 10⁴ gives every client about a tenth of each class. Ten clients share
all-to-all under SecAgg+ (`num-shares` ≥ clients), every client takes part in every round, so
`min_clients` = 10 and the threshold is Flower's example's 10/15 of the shares (7 of 10).
Prints a markdown table: arm, ε, mean final accuracy (min–max over the repeats), the ratio of
dprp's mean to Flower's at the same ε, and the mean wall time of a run."""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from flower_compare import load, run_arm  # noqa: E402

BASE = {"num-partitions": 10, "num-server-rounds": 10, "dirichlet-alpha": 1e4, "delta": 1e-5, "clip": 1.0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--central-epsilons", default="3,30")
    ap.add_argument("--local-epsilon", type=float, default=300.0)
    ap.add_argument("--dprp-local-epsilon", type=float, default=0.0, help="also run dprp's local arms at this ε (e.g. what LocalDpMod really spends; 0: skip)")
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--out", type=pathlib.Path, default=HERE.parent / "target" / "flower-small.json")
    args = ap.parse_args(argv)
    plan = [("none", 0.0, None)]
    for eps in (float(e) for e in args.central_epsilons.split(",")):
        plan += [("flower-central", eps, None), ("dprp-ddg16", eps, "flower-central")]
    plan += [
        ("flower-localdp", args.local_epsilon, None),
        ("dprp-privunit2", args.local_epsilon, "flower-localdp"),
        ("dprp-projunit-srht", args.local_epsilon, "flower-localdp"),
    ]
    if args.dprp_local_epsilon > 0:
        plan += [("dprp-privunit2", args.dprp_local_epsilon, None), ("dprp-projunit-srht", args.dprp_local_epsilon, None)]
    print(f"load before: {load()}", flush=True)
    runs: dict[tuple[str, float], list[dict]] = {}
    for arm, eps, _ in plan:
        for rep in range(args.repeats):
            cfg = {**BASE, "epsilon": eps or 10.0}
            run = run_arm(arm, cfg, args.num_cpus, stall=300.0)
            runs.setdefault((arm, eps), []).append(run)
            acc = run["rows"][-1]["accuracy"] if run["rows"] else float("nan")
            print(f"=== {arm} ε={eps:g} run {rep + 1}: accuracy {acc:.4f}, {run['wall_seconds']:.0f} s", flush=True)
    print(f"load after: {load()}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({f"{a}@{e:g}": r for (a, e), r in runs.items()}, indent=1))

    def final(arm, eps):
        accs = [r["rows"][-1]["accuracy"] for r in runs[(arm, eps)] if r["rows"] and r["rows"][-1]["round"] == BASE["num-server-rounds"]]
        return accs

    print("\n| arm | ε | accuracy (mean of %d) | min – max | vs Flower's | seconds per run |" % args.repeats)
    print("|---|---|---|---|---|---|")
    for arm, eps, peer in plan:
        accs = final(arm, eps)
        mean = statistics.fmean(accs) if accs else float("nan")
        ratio = ""
        if peer is not None and final(peer, eps):
            ratio = f"{mean / statistics.fmean(final(peer, eps)):.2f}×"
        wall = statistics.fmean(r["wall_seconds"] for r in runs[(arm, eps)])
        spread = f"{min(accs):.3f} – {max(accs):.3f}" if accs else "no complete run"
        print(f"| {arm} | {'—' if arm == 'none' else f'{eps:g}'} | {mean:.3f} ({len(accs)} runs) | {spread} | {ratio} | {wall:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
