"""The ServerApp: FedAvg over all clients every round, with the arm's privacy (chosen at run time
from the run config), the model evaluated on the MNIST test set after every round, and the
privacy account printed beside the accuracy.

    none                  FedAvg, no clipping, no noise
    flower-central        Flower's DifferentialPrivacyServerSideFixedClipping around FedAvg,
                          z = 1/sqrt(2ρ) with ρ each round's share of the zCDP budget
    flower-localdp        FedAvg of LocalDpMod's messages; (ε/R, δ/R) per round, basic composition
    dprp-privunit2        dprp.flower.LocalDpFedAvg, PrivUnit2, ε/R per round
    dprp-projunit-srht    dprp.flower.LocalDpFedAvg, ProjUnit (k, SRHT), ε/R per round
    dprp-ddg16            dprp.flower.DistributedDpFedAvg, DDG at b = 16 under SecAgg+
    dprp-sketch-ddg-1bit  ... count sketch + DDG within 1 bit per parameter
    dprp-sketch-ddg-2bit  ... within 2 bits per parameter
"""

from __future__ import annotations

import json
import math
import time
from typing import Any, Callable, Mapping, Optional

from flwr.common import Context, ndarrays_to_parameters
from flwr.server import Grid, LegacyContext, ServerApp, ServerConfig
from flwr.server.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg
from flwr.server.workflow import DefaultWorkflow

import dprp
from dprp.flower import (
    DistributedConfig,
    DistributedDpFedAvg,
    DistributedSecAggPlusWorkflow,
    LocalConfig,
    LocalDpFedAvg,
)

from . import task

#: Flower's SecAgg+ sums mod 2^32 and adds each client's weight 2^b: clients·2^b < 2^32.
FLOWER_MODULUS_BITS = 32


class Recorder:
    """Each round's accuracy (server-side, on the test set) with the privacy account so far;
    printed, and handed to `sink` (the simulation script's collector) as a dict."""

    def __init__(self, s: task.Settings, sink: Optional[Callable[[dict], None]] = None, results_file: str = ""):
        self.s, self.sink, self.results_file = s, sink, results_file
        self.x, self.y = task.test_data(s)
        self.privacy: dict[str, Any] = {"epsilon": 0.0, "delta": 0.0, "epsilon_round": 0.0}
        self.extra: dict[str, Any] = {}
        self.start = time.perf_counter()
        self.rows: list[dict] = []

    def evaluate(self, server_round: int, weights, config):
        loss, acc = task.loss_and_accuracy(weights, self.x, self.y)
        row = {
            "arm": self.s.arm,
            "round": server_round,
            "accuracy": acc,
            "loss": loss,
            **self.privacy,
            **self.extra,
            "seconds": time.perf_counter() - self.start,
        }
        self.rows.append(row)
        eps = "∞ (no privacy)" if self.s.arm == "none" else f"{row['epsilon']:.4f} (δ {row['delta']:.1e})"
        print(
            f"[{self.s.arm}] round {server_round:3d}  accuracy {acc:.4f}  loss {loss:.4f}  "
            f"ε so far {eps}  ε this round {row['epsilon_round']:.4f}  {row['seconds']:.1f} s",
            flush=True,
        )
        if self.sink is not None:
            self.sink(row)
        if self.results_file:
            with open(self.results_file, "a") as f:
                f.write(json.dumps(row) + "\n")
        return loss, {"accuracy": acc}

    def dprp_round(self, report: dict) -> None:
        """on_round of dprp's strategies."""
        self.privacy = {
            "epsilon": report["epsilon_total"],
            "delta": report.get("delta", 0.0),
            "epsilon_round": report["epsilon_round"],
        }


def sketch_bits(s: task.Settings, bits_per_parameter: float) -> int:
    """The residue width b (within Flower's modulus for s.num_partitions clients) whose plan has
    the least expected error with at most `bits_per_parameter` bits per parameter."""
    if s.sketch_bits > 0:
        return s.sketch_bits
    share = dprp.RoundsAccountant("zcdp", epsilon=s.epsilon, delta=s.delta).per_round(s.num_server_rounds)
    best: Optional[tuple[float, int]] = None
    top = FLOWER_MODULUS_BITS - 1 - math.ceil(math.log2(s.num_partitions + 1))
    for b in range(4, min(31, top) + 1):
        try:
            enc = dprp.DistributedEncoder(
                "sketch-ddg", dim=task.DIM, clients=s.num_partitions, epsilon=share["epsilon"],
                delta=share["delta"], clip=s.clip, seed=0, bits=b, bits_per_parameter=bits_per_parameter,
            )
        except dprp.DprpError:
            continue  # no sketch meets the wrap target within the cap at this b
        mse = enc.plan()["mse"]
        if best is None or mse < best[0]:
            best = (mse, b)
    if best is None:
        raise dprp.DprpError(f"sketch-ddg: no b meets {bits_per_parameter} bits per parameter")
    return best[1]


def distributed_config(s: task.Settings) -> DistributedConfig:
    common = dict(
        epsilon=s.epsilon, delta=s.delta, rounds=s.num_server_rounds, clip=s.clip,
        clients=s.num_partitions, dim=task.DIM,
    )
    if s.arm == "dprp-ddg16":
        return DistributedConfig("ddg", bits=s.ddg_bits, **common)
    bpp = {"dprp-sketch-ddg-1bit": 1.0, "dprp-sketch-ddg-2bit": 2.0}[s.arm]
    return DistributedConfig("sketch-ddg", bits=sketch_bits(s, bpp), bits_per_parameter=bpp, **common)


def local_config(s: task.Settings) -> LocalConfig:
    common = dict(epsilon=s.epsilon, rounds=s.num_server_rounds, clip=s.clip, dim=task.DIM)
    if s.arm == "dprp-privunit2":
        return LocalConfig("privunit2", **common)
    return LocalConfig("projunit", k=s.projunit_k, projection="srht", **common)


def strategy_and_workflow(s: task.Settings, rec: Recorder):
    """The arm's strategy and SecAgg+ fit workflow (None: Flower's default)."""
    n = s.num_partitions
    fedavg: dict[str, Any] = dict(
        fraction_fit=1.0,
        fraction_evaluate=0.0,
        min_fit_clients=n,
        min_available_clients=n,
        evaluate_fn=rec.evaluate,
        on_fit_config_fn=lambda r: {"server-round": r},
    )
    init = task.initial_weights()
    if s.arm == "none":
        return FedAvg(initial_parameters=ndarrays_to_parameters(init), **fedavg), None
    if s.arm == "flower-central":
        acct = dprp.RoundsAccountant("zcdp", epsilon=s.epsilon, delta=s.delta)
        share = acct.per_round(s.num_server_rounds)
        z = 1.0 / math.sqrt(2.0 * share["rho"])  # ρ = Δ²/(2σ²), Δ = clip, σ = z·clip on the sum
        rec.extra = {"noise_multiplier": z}
        print(f"[flower-central] noise multiplier z = {z:.4f} (ρ per round {share['rho']:.6g})", flush=True)

        class Charged(DifferentialPrivacyServerSideFixedClipping):
            def aggregate_fit(self, server_round, results, failures):
                params, metrics = super().aggregate_fit(server_round, results, failures)
                if params is not None:
                    total = acct.charge({"rho": share["rho"]})
                    rec.privacy = {"epsilon": total["epsilon"], "delta": total["delta"], "epsilon_round": share["epsilon"]}
                return params, metrics

        inner = FedAvg(initial_parameters=ndarrays_to_parameters(init), **fedavg)
        return Charged(inner, noise_multiplier=z, clipping_norm=s.clip, num_sampled_clients=n), None
    if s.arm == "flower-localdp":
        acct = dprp.RoundsAccountant("approx", epsilon=s.epsilon, delta=s.delta)
        share = acct.per_round(s.num_server_rounds)
        rec.extra = {"sensitivity": s.sensitivity}

        class Charged(FedAvg):
            def aggregate_fit(self, server_round, results, failures):
                params, metrics = super().aggregate_fit(server_round, results, failures)
                if params is not None:
                    total = acct.charge({"epsilon": share["epsilon"], "delta": share["delta"]})
                    rec.privacy = {"epsilon": total["epsilon"], "delta": total["delta"], "epsilon_round": share["epsilon"]}
                return params, metrics

        return Charged(initial_parameters=ndarrays_to_parameters(init), **fedavg), None
    if s.arm in ("dprp-privunit2", "dprp-projunit-srht"):
        cfg = local_config(s)
        return LocalDpFedAvg(cfg, initial_parameters=init, on_round=rec.dprp_round, **fedavg), None
    cfg = distributed_config(s)
    enc = cfg.encoder()
    rec.extra = {"bits": cfg.bits, "message_len": enc.message_len}
    print(
        f"[{s.arm}] {cfg.mechanism}: b = {cfg.bits}, {enc.message_len} residues per client, "
        f"{enc.bits_per_parameter:.3f} bits per parameter, planned MSE of the mean {enc.plan()['mse']:.4g}",
        flush=True,
    )
    strategy = DistributedDpFedAvg(cfg, initial_parameters=init, on_round=rec.dprp_round, **fedavg)
    if s.num_shares >= n:
        shares: float | int = 1.0
        threshold: float | int = s.reconstruction_threshold / s.num_shares
    else:
        shares, threshold = s.num_shares, s.reconstruction_threshold
    return strategy, DistributedSecAggPlusWorkflow(cfg, strategy, num_shares=shares, reconstruction_threshold=threshold)


def build(overrides: Optional[Mapping[str, Any]] = None, sink: Optional[Callable[[dict], None]] = None) -> ServerApp:
    """The ServerApp, its settings the run config with `overrides` over it; `sink` gets each
    round's row (a dict)."""
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        s = task.settings(context.run_config, overrides)
        results_file = str((overrides or {}).get("results-file", context.run_config.get("results-file", "")))
        rec = Recorder(s, sink, results_file)
        strategy, fit_workflow = strategy_and_workflow(s, rec)
        ctx = LegacyContext(context=context, config=ServerConfig(num_rounds=s.num_server_rounds), strategy=strategy)
        workflow = DefaultWorkflow(fit_workflow=fit_workflow) if fit_workflow is not None else DefaultWorkflow()
        workflow(grid, ctx)
        stopped = getattr(strategy, "stopped", None) or getattr(strategy, "halted", None)
        if stopped:
            print(f"[{s.arm}] dprp stopped the run: {stopped}", flush=True)

    return app


app = build()
