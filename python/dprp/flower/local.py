"""Local DP in Flower (Bhowmick et al. 2018; Asi et al. 2023): the client mod privatises its
clipped model update on the device, so each message is private on its own (no secure
aggregation needed); the FedAvg strategy decodes every message with the unbiased decoder and
averages, refusing a bad message without poisoning the round.

Client::

    app = ClientApp(client_fn, mods=[local_dp_mod])

Server::

    cfg = LocalConfig("projunit", epsilon=80, rounds=20, clip=1.0, dim=d, k=256, projection="srht")
    strategy = LocalDpFedAvg(cfg, initial_parameters=weights)
"""

from __future__ import annotations

from logging import ERROR, INFO, WARNING
from typing import Any, Callable, Optional

import numpy as np
from flwr.common import FitIns, NDArrays, ndarrays_to_parameters, parameters_to_ndarrays
from flwr.common.logger import log
from flwr.server.strategy import FedAvg

from .. import DprpError, MeanAccumulator, privatise
from ._config import LocalConfig
from ._mod import replace_update
from ._weights import flatten, initial_model, model, unflatten


#: Rows of one round's users: each client's row id is its Flower node id (unique in a run).
ROW_BITS = 63


def local_dp_mod(msg, ctxt, call_next):
    """Client mod: after the client's `fit`, clip its update (new − received weights) to the
    configured norm and privatise it with the round's local mechanism (noise from the OS
    CSPRNG). The reply carries only the private message, the client's row id (its node id: it
    selects the public map of per-row mechanisms) and the configuration's fingerprint."""
    return replace_update(msg, ctxt, call_next, LocalConfig.from_config, _privatise, "local_dp_mod")


def _privatise(cfg: LocalConfig, config, update: np.ndarray, msg):
    norm = float(np.linalg.norm(update))
    if norm > cfg.clip:
        update = update * (cfg.clip / norm)
    v = update if cfg.mechanism == "privunit2-norm" else update / cfg.clip
    row = msg.metadata.dst_node_id % (1 << ROW_BITS)
    message = privatise(v, row=row, **cfg.mechanism_args(int(config["dprp.round"])))
    return [message], {"dprp.row": row}


class LocalDpFedAvg(FedAvg):
    """FedAvg whose update is the unbiased local-DP mean of the clients' private messages.

    Each message is checked before it is added — the fingerprint of this configuration, one
    array of the mechanism's message length, finite values, a row not seen this round — and a
    bad one is refused (logged, counted in the round's report) without touching the others.
    Before each round the accountant checks that the round's ε still fits the budget (basic
    composition of pure ε-LDP) and stops the run when it does not."""

    def __init__(
        self,
        config: LocalConfig,
        *,
        initial_parameters: NDArrays,
        on_round: Optional[Callable[[dict], None]] = None,
        **fedavg: Any,
    ) -> None:
        self.config = config
        self.accountant = config.accountant()
        self.cost = {"epsilon": config.round_epsilon()}
        self.accountant.check(self.cost)
        self.weights, self.dtypes = initial_model(initial_parameters, config.dim)
        MeanAccumulator(dim=config.dim, **config.mechanism_args(1))  # refuses bad k, ε, map now
        self.on_round = on_round
        self.reports: list[dict] = []
        self.stopped: Optional[str] = None
        fedavg.setdefault("fraction_evaluate", 0.0)
        super().__init__(initial_parameters=ndarrays_to_parameters(model(self.weights, self.dtypes)), **fedavg)

    def configure_fit(self, server_round, parameters, client_manager):
        try:
            self.accountant.check(self.cost)
        except DprpError as e:
            self.stopped = str(e)
            log(WARNING, "dprp: stopping before round %d: %s", server_round, e)
            return []
        instructions = super().configure_fit(server_round, parameters, client_manager)
        config = {**self.config.to_config(), "dprp.round": server_round}
        return [(proxy, FitIns(ins.parameters, {**ins.config, **config})) for proxy, ins in instructions]

    def aggregate_fit(self, server_round, results, failures):
        cfg = self.config
        acc = MeanAccumulator(dim=cfg.dim, **cfg.mechanism_args(server_round))
        refused: list[tuple[Any, str]] = []
        for proxy, res in results:
            why = self._add(acc, res)
            if why is not None:
                refused.append((proxy.cid, why))
                log(WARNING, "dprp: refused client %s's message: %s", proxy.cid, why)
        # privacy is spent when a client sends its message, decoded or not: charge the round
        total = self.accountant.charge(self.cost) if results else self.accountant.total()
        if acc.n == 0:
            log(ERROR, "dprp round %d: no valid message; the model is unchanged", server_round)
            return ndarrays_to_parameters(model(self.weights, self.dtypes)), {"clients": 0}
        est = acc.finish()
        self.weights = unflatten(flatten(self.weights) + cfg.scale() * est["mean"], self.weights)
        report = {
            "round": server_round,
            "clients": est["n"],
            "failures": len(failures),
            "refused": len(refused),
            "refusals": refused,
            "epsilon_round": self.cost["epsilon"],
            "epsilon_total": total["epsilon"],
            "expected_sq_error": est["expected_sq_error"] * cfg.scale() ** 2,
        }
        self.reports.append(report)
        log(INFO, 
            "dprp round %d: %d messages decoded (%d refused, %d failed), ε-LDP this round %.4f, total %.4f of the budget %s",
            server_round, est["n"], len(refused), len(failures), self.cost["epsilon"], total["epsilon"], cfg.epsilon,
        )
        if self.on_round is not None:
            self.on_round(report)
        return ndarrays_to_parameters(model(self.weights, self.dtypes)), {k: report[k] for k in ("clients", "epsilon_round", "epsilon_total")}

    def _add(self, acc: MeanAccumulator, res) -> Optional[str]:
        """Add one client's message; why it was refused (None: added)."""
        metrics = res.metrics or {}
        if metrics.get("dprp.fingerprint") != self.config.fingerprint:
            return (
                f"configuration fingerprint {metrics.get('dprp.fingerprint')!r}, expected "
                f"{self.config.fingerprint!r} (a client of another mechanism configuration)"
            )
        arrays = parameters_to_ndarrays(res.parameters)
        if len(arrays) != 1 or arrays[0].ndim != 1:
            return f"a message of {len(arrays)} array(s) of shapes {[a.shape for a in arrays]}, expected one vector"
        row = metrics.get("dprp.row")
        if not isinstance(row, int) or row < 0:
            return f"row id {row!r} is not a non-negative integer"
        try:
            acc.add(row, arrays[0])
        except DprpError as e:
            return str(e)
        return None
