"""Local DP in Flower (Bhowmick et al. 2018; Asi et al. 2023): the client mod privatises its
clipped model update on the device, so each message is private on its own (no secure
aggregation needed); the FedAvg strategy decodes every message with the unbiased decoder and
averages, refusing a bad message without poisoning the round.

Client::

    app = ClientApp(client_fn, mods=[local_dp_mod])

Server::

    cfg = LocalConfig("projunit", epsilon=80, rounds=20, clip=1.0, dim=d, k=256, projection="srht")
    strategy = LocalDpFedAvg(cfg, initial_parameters=weights)

On Flower's Message API the same mod serves an `@app.train()` client, and the server runs
`dprp.flower.MessageLocalDpFedAvg` (`dprp.flower.message`); both strategies share `LocalDpRounds`
(the model, the accountant, the checks and the decoding of a round).
"""

from __future__ import annotations

from logging import ERROR, INFO, WARNING
from typing import Any, Callable, Iterable, Optional

import numpy as np
from flwr.common import FitIns, NDArrays, Parameters, ndarrays_to_parameters, parameters_to_ndarrays
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
    selects the public map of per-row mechanisms) and the configuration's fingerprint; nothing
    else of the client's reply (its metrics are dropped).

    It serves both of Flower's APIs: a legacy client (`ClientApp(client_fn, mods=[...])`, a
    `LocalDpFedAvg` server) and a Message-API one (`ClientApp(mods=[...])` with an `@app.train()`
    function, a `MessageLocalDpFedAvg` server: the message's one ArrayRecord is the model, its
    ConfigRecord carries the configuration; the reply is `{<the reply's ArrayRecord name>: the
    private message, "dprp": fingerprint and row}`). A training action (`train.<action>`) is
    refused: its reply would pass un-privatised."""
    return replace_update(msg, ctxt, call_next, LocalConfig.from_config, _privatise, "local_dp_mod", message_api=True)


def _privatise(cfg: LocalConfig, config, update: np.ndarray, msg):
    norm = float(np.linalg.norm(update))
    if norm > cfg.clip:
        update = update * (cfg.clip / norm)
    v = update if cfg.mechanism == "privunit2-norm" else update / cfg.clip
    row = msg.metadata.dst_node_id % (1 << ROW_BITS)
    message = privatise(v, row=row, **cfg.mechanism_args(int(config["dprp.round"])))
    return [message], {"dprp.row": row}


class LocalDpRounds:
    """The server side of local DP, apart from Flower's API (shared by `LocalDpFedAvg` and the
    Message API's `MessageLocalDpFedAvg`): the model (float64, sent in its own dtypes), the
    accountant, the budget check before a round, and a round's decoding.

    Each message is checked before it is added — the fingerprint of this configuration, one
    array of the mechanism's message length, finite values, a row not seen this round — and a
    bad one is refused (logged, counted in the round's report) without touching the others.
    Before each round the accountant checks that the round's ε still fits the budget (basic
    composition of pure ε-LDP) and stops the run when it does not."""

    def _local_setup(self, config: LocalConfig, on_round: Optional[Callable[[dict], None]]) -> None:
        if not isinstance(config, LocalConfig):
            raise DprpError(
                f"{type(self).__name__}: needs a LocalConfig, got {type(config).__name__}"
                + (
                    ": distributed DP has its own strategy, DistributedDpFedAvg, on Flower's legacy API only "
                    "(docs/flower.md)"
                    if type(config).__name__ == "DistributedConfig"
                    else ""
                )
            )
        self.config = config
        self.accountant = config.accountant()
        self.cost = {"epsilon": config.round_epsilon()}
        self.accountant.check(self.cost)
        MeanAccumulator(dim=config.dim, **config.mechanism_args(1))  # refuses bad k, ε, map now
        self.on_round = on_round
        self.reports: list[dict] = []
        #: every refused message of the run, (round, client, why), rounds with none decoded too
        self.refusals: list[tuple[int, Any, str]] = []
        self.stopped: Optional[str] = None
        self.weights: Optional[list[np.ndarray]] = None
        self.dtypes: Optional[list[np.dtype]] = None

    def _set_model(self, weights: Any) -> None:
        """Start from these weights (arrays, `Parameters` or an `ArrayRecord`); refused when the
        model's size is not the configuration's `dim`."""
        self.weights, self.dtypes = initial_model(weights, self.config.dim)

    def _model(self) -> list[np.ndarray]:
        return model(self.weights, self.dtypes)

    def _may_start(self, server_round: int) -> bool:
        """Whether round `server_round` still fits the budget; when it does not, the run stops
        (`self.stopped` says why)."""
        try:
            self.accountant.check(self.cost)
        except DprpError as e:
            self.stopped = str(e)
            log(WARNING, "dprp: stopping before round %d: %s", server_round, e)
            return False
        return True

    def _round_config(self, server_round: int) -> dict[str, Any]:
        """What the clients get with their instructions: the configuration and the round."""
        return {**self.config.to_config(), "dprp.round": server_round}

    def _decode_round(
        self, server_round: int, messages: Iterable[tuple[Any, Any, Optional[Any]]], failures: int
    ) -> Optional[dict]:
        """Decode one round from `messages` — `(client, metadata, arrays)` of every reply that
        is not an error, where `metadata` is the reply's dprp record (a mapping, or None) and
        `arrays` its weights (None when it has none) — and move the model by the mean update.
        The round is charged when any reply arrived (privacy is spent when a client sends its
        message, decoded or not). Returns the round's report, or None when nothing was decoded."""
        cfg = self.config
        acc = MeanAccumulator(dim=cfg.dim, **cfg.mechanism_args(server_round))
        refused: list[tuple[Any, str]] = []
        received = 0
        for client, metadata, arrays in messages:
            received += 1
            why = self._add(acc, metadata, arrays)
            if why is not None:
                refused.append((client, why))
                self.refusals.append((server_round, client, why))
                log(WARNING, "dprp: refused client %s's message: %s", client, why)
        total = self.accountant.charge(self.cost) if received else self.accountant.total()
        if acc.n == 0:
            log(ERROR, "dprp round %d: no valid message; the model is unchanged", server_round)
            return None
        est = acc.finish()
        self.weights = unflatten(flatten(self.weights) + cfg.scale() * est["mean"], self.weights)
        report = {
            "round": server_round,
            "clients": est["n"],
            "failures": failures,
            "refused": len(refused),
            "refusals": refused,
            "epsilon_round": self.cost["epsilon"],
            "epsilon_total": total["epsilon"],
            "expected_sq_error": est["expected_sq_error"] * cfg.scale() ** 2,
        }
        self.reports.append(report)
        log(INFO,
            "dprp round %d: %d messages decoded (%d refused, %d failed), ε-LDP this round %.4f, total %.4f of the budget %s",
            server_round, est["n"], len(refused), failures, self.cost["epsilon"], total["epsilon"], cfg.epsilon,
        )
        if self.on_round is not None:
            self.on_round(report)
        return report

    def _add(self, acc: MeanAccumulator, metadata, arrays) -> Optional[str]:
        """Add one client's message; why it was refused (None: added)."""
        metadata = metadata or {}
        if metadata.get("dprp.fingerprint") != self.config.fingerprint:
            return (
                f"configuration fingerprint {metadata.get('dprp.fingerprint')!r}, expected "
                f"{self.config.fingerprint!r} (a client of another mechanism configuration, or "
                "one without dprp's local_dp_mod)"
            )
        arrays = [] if arrays is None else arrays
        if len(arrays) != 1 or arrays[0].ndim != 1:
            return f"a message of {len(arrays)} array(s) of shapes {[a.shape for a in arrays]}, expected one vector"
        row = metadata.get("dprp.row")
        if not isinstance(row, int) or isinstance(row, bool) or row < 0:
            return f"row id {row!r} is not a non-negative integer"
        try:
            acc.add(row, arrays[0])
        except DprpError as e:
            return str(e)
        return None


class LocalDpFedAvg(LocalDpRounds, FedAvg):
    """FedAvg (Flower's legacy API) whose update is the unbiased local-DP mean of the clients'
    private messages (`LocalDpRounds`). `initial_parameters`: the model, as a list of arrays or
    Flower `Parameters`."""

    def __init__(
        self,
        config: LocalConfig,
        *,
        initial_parameters: NDArrays | Parameters,
        on_round: Optional[Callable[[dict], None]] = None,
        **fedavg: Any,
    ) -> None:
        self._local_setup(config, on_round)
        self._set_model(initial_parameters)
        fedavg.setdefault("fraction_evaluate", 0.0)
        super().__init__(initial_parameters=ndarrays_to_parameters(self._model()), **fedavg)

    def configure_fit(self, server_round, parameters, client_manager):
        if not self._may_start(server_round):
            return []
        instructions = super().configure_fit(server_round, parameters, client_manager)
        config = self._round_config(server_round)
        return [(proxy, FitIns(ins.parameters, {**ins.config, **config})) for proxy, ins in instructions]

    def aggregate_fit(self, server_round, results, failures):
        messages = ((proxy.cid, res.metrics, parameters_to_ndarrays(res.parameters)) for proxy, res in results)
        report = self._decode_round(server_round, messages, len(failures))
        if report is None:
            return ndarrays_to_parameters(self._model()), {"clients": 0}
        return ndarrays_to_parameters(self._model()), {k: report[k] for k in ("clients", "epsilon_round", "epsilon_total")}
