"""Run the MNIST Flower App (examples/flower/mnist) in Flower's simulation engine: one privacy
arm, several, or all of them, each a fresh run over the same 100 non-IID clients, printing the
test accuracy and the privacy account after every round.

    python examples/flower/run_simulation.py --arm dprp-ddg16
    python examples/flower/run_simulation.py --arm all --rounds 30 --epsilon 10 --delta 1e-5
    python examples/flower/run_simulation.py --arm dprp-privunit2,flower-localdp --epsilon 300

Needs flwr[simulation] 1.42 and dprp (built from this tree) in the running Python.

Why the defaults (R = 30 rounds, ε = 10, δ = 1e-5, clip 1, 100 clients, all in every round):
they make the comparison of the central and distributed arms informative. At ρ = 0.059 per
round (ε = 10 over 30 rounds), Flower's central Gaussian and dprp's DDG add noise of expected
squared norm ≈ 6.6·clip² to the mean update, a few times its signal (≤ clip², ≈ 0.5 here):
accuracy drops visibly below FedAvg's (≈ 0.91) but the model still learns (≈ 0.89), so a
mechanism with 2–3× the error (count sketch + DDG at 1–2 bits per parameter) shows as a
further drop rather than vanishing in either the noiseless or the hopeless regime. At that ε
every local-DP arm is hopeless (ε/R = 0.33 per round of a 7850-dimensional update from 100
clients: PrivUnit2's mean has expected squared error ≈ 4400·clip²); pass a larger --epsilon
(e.g. 300) to the local arms to compare them where they learn (benches/flower_compare.py does
both).
"""

from __future__ import annotations

import argparse
import json
import logging
import pathlib
import shutil
import sys
import tempfile
import time
from typing import Any, Optional

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "mnist"))

from dprp_mnist import task  # noqa: E402


def parse_value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def run_arm(
    arm: str,
    overrides: Optional[dict[str, Any]] = None,
    num_cpus: int = 2,
    quiet: bool = True,
) -> dict[str, Any]:
    """One arm's run in the simulation engine: {"arm", "rows" (one per round, round 0 = the
    initial model), "wall_seconds", "settings"}."""
    from flwr.simulation import run_simulation

    from dprp_mnist import client_app, server_app

    config = {**(overrides or {}), "arm": arm}
    s = task.settings(config)
    rows: list[dict] = []
    if quiet:
        logging.getLogger("flwr").setLevel(logging.WARNING)
    init_args: dict[str, Any] = {"num_cpus": num_cpus, "logging_level": "error", "log_to_driver": not quiet}
    # A Ray instance of its own (its own temp dir): on a machine where other processes start
    # and stop Ray at the same time, a shared /tmp/ray can leave ray.init waiting forever.
    ray_tmp = pathlib.Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    init_args["_temp_dir"] = str(ray_tmp)
    t0 = time.perf_counter()
    try:
        run_simulation(
            server_app=server_app.build(config, sink=rows.append),
            client_app=client_app.build(config),
            num_supernodes=s.num_partitions,
            backend_config={"client_resources": {"num_cpus": 1}, "init_args": init_args},
        )
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    wall = time.perf_counter() - t0
    return {"arm": arm, "rows": rows, "wall_seconds": wall, "settings": config}


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arm", default="dprp-ddg16", help=f"one arm, a comma-separated list, or 'all' ({', '.join(task.ARMS)})")
    ap.add_argument("--rounds", type=int, default=task.DEFAULTS["num-server-rounds"])
    ap.add_argument("--epsilon", type=float, default=task.DEFAULTS["epsilon"], help="the whole run's ε")
    ap.add_argument("--delta", type=float, default=task.DEFAULTS["delta"], help="the whole run's δ")
    ap.add_argument("--clients", type=int, default=task.DEFAULTS["num-partitions"])
    ap.add_argument("--clip", type=float, default=task.DEFAULTS["clip"])
    ap.add_argument("--num-cpus", type=int, default=2, help="CPUs the simulation engine may use")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other run-config key (see mnist/pyproject.toml)")
    ap.add_argument("--json", type=pathlib.Path, help="write every arm's rows here")
    ap.add_argument("--verbose", action="store_true", help="Flower's and the clients' logs too")
    args = ap.parse_args(argv)

    arms = list(task.ARMS) if args.arm == "all" else args.arm.split(",")
    for a in arms:
        if a not in task.ARMS:
            ap.error(f"--arm: {a!r} is not one of {', '.join(task.ARMS)}")
    overrides: dict[str, Any] = {
        "num-server-rounds": args.rounds,
        "epsilon": args.epsilon,
        "delta": args.delta,
        "num-partitions": args.clients,
        "clip": args.clip,
    }
    for kv in args.set:
        k, _, v = kv.partition("=")
        if k not in task.DEFAULTS:
            ap.error(f"--set: {k!r} is not a run-config key")
        overrides[k] = parse_value(v)

    results = []
    for a in arms:
        s = task.settings({**overrides, "arm": a})
        print(f"=== {a}: {s.num_partitions} clients, {s.num_server_rounds} rounds, ε = {s.epsilon:g}, δ = {s.delta:g}", flush=True)
        r = run_arm(a, overrides, num_cpus=args.num_cpus, quiet=not args.verbose)
        results.append(r)
        last = r["rows"][-1] if r["rows"] else None
        if last is None:
            print(f"=== {a}: no round finished", flush=True)
        else:
            best = max(x["accuracy"] for x in r["rows"])
            print(
                f"=== {a}: final accuracy {last['accuracy']:.4f} (best {best:.4f}) after {last['round']} rounds, "
                f"ε {last['epsilon']:.4f}, δ {last['delta']:.1e}, {r['wall_seconds']:.0f} s",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
