"""Distributed DP on Flower's SecAgg+ (Chen et al. 2022; Kairouz et al. 2021; cpSGD): the client
mod that encodes a model update into residues mod 2^b, the SecAgg+ workflow that sums them
exactly and refuses bad messages before the sum, and the FedAvg strategy that decodes the mean
update and keeps the privacy account across rounds.

Client::

    app = ClientApp(client_fn, mods=[dprp.flower.secaggplus_mod, distributed_dp_mod])

(`dprp.flower.secaggplus_mod` — Flower's, with masks from a cryptographic PRG, see `_masks` —
first: it calls `distributed_dp_mod` at its masking stage, which calls the client's `fit` and
replaces the new weights by the encoded update.)

Server::

    cfg = DistributedConfig("ddg", epsilon=4, delta=1e-5, rounds=30, clip=1.0, clients=100, dim=d)
    strategy = DistributedDpFedAvg(cfg, initial_parameters=weights)
    workflow = DefaultWorkflow(fit_workflow=DistributedSecAggPlusWorkflow(cfg, strategy))
"""

from __future__ import annotations

from logging import ERROR, INFO, WARNING
from typing import Any, Callable, Optional

import numpy as np
from flwr.common import (
    FitIns,
    NDArrays,
    bytes_to_ndarray,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key
from flwr.common.logger import log
from flwr.compat.common import recorddict_compat as compat
from flwr.server.strategy import FedAvg
from flwr.server.workflow import SecAggPlusWorkflow

from .. import DprpError
from ._config import DistributedConfig
from ._masks import MASKS_ID, MASKS_KEY, server_masks
from ._mod import replace_update
from ._weights import flatten, initial_model, model, unflatten



def distributed_dp_mod(msg, ctxt, call_next):
    """Client mod: after the client's `fit`, clip its update (new − received weights) to the
    configured norm and encode it with the round's distributed encoder (noise share from the OS
    CSPRNG); the message becomes `x = r − 2^(b−1)` for the residues `r`, weight 1, and the
    configuration's fingerprint in the metrics. A non-finite update, a wrong shape or a missing
    configuration raise, so the client's reply is an error and SecAgg+ counts it as dropped."""
    return replace_update(msg, ctxt, call_next, DistributedConfig.from_config, _encode)


def _encode(cfg: DistributedConfig, config, update: np.ndarray, msg):
    return [cfg.to_flower(cfg.encoder().encode(update))], {}


class DistributedSecAggPlusWorkflow(SecAggPlusWorkflow):
    """Flower's SecAgg+ with the ranges that carry dprp's residues exactly
    (`DistributedConfig.secagg_ranges`), and two checks before the masked vectors are summed:
    a reply whose masked vector has the wrong shape or whose fingerprint is another
    configuration's is dropped (SecAgg+ then removes that client's masks as for a dropout, so
    the round goes on without it), and when fewer than `min_clients` valid replies remain the
    round is halted before anything is unmasked — the sum of fewer noise shares is never
    revealed. `num_shares` and `reconstruction_threshold` are SecAgg+'s (defaults: every client
    shares with every other; any 60 % recover). `timeout` (seconds per stage, Flower's) bounds how
    long a stage waits for a client that vanished without an error reply (a killed node): the
    stage then goes on without it."""

    def __init__(
        self,
        config: DistributedConfig,
        strategy: "DistributedDpFedAvg",
        num_shares: float | int = 1.0,
        reconstruction_threshold: float | int = 0.6,
        timeout: Optional[float] = 300.0,
    ) -> None:
        super().__init__(
            num_shares=num_shares,
            reconstruction_threshold=reconstruction_threshold,
            timeout=timeout,
            **config.secagg_ranges(),
        )
        self.config = config
        self.strategy = strategy

    def unmask_stage(self, grid, context, state) -> bool:
        with server_masks():  # rebuild masks as the clients drew them (dprp.flower._masks)
            return super().unmask_stage(grid, context, state)

    def collect_masked_vectors_stage(self, grid, context, state) -> bool:
        cfg, strategy = self.config, self.strategy
        shape = (cfg.encoder().message_len,)
        quantization_range = 2**cfg.bits

        class Checked:
            """The grid, with the stage's replies checked before SecAgg+ sums them."""

            def __getattr__(self, name: str) -> Any:
                return getattr(grid, name)

            def send_and_receive(self, messages, timeout=None):
                replies = list(grid.send_and_receive(messages, timeout=timeout))
                valid = []
                for m in replies:
                    if m.has_error():
                        valid.append(m)  # SecAgg+ counts it as a failure (a dropout)
                        continue
                    why = _masked_reply_problem(m, shape, quantization_range, cfg.fingerprint)
                    if why is None:
                        valid.append(m)
                    else:
                        strategy.refused.append((m.metadata.src_node_id, why))
                        log(WARNING, "dprp: refused client %s's masked vector: %s", m.metadata.src_node_id, why)
                ok = sum(not m.has_error() for m in valid)
                if ok < cfg.min_clients:
                    strategy.halted = (
                        f"only {ok} valid masked vector(s) of {len(messages)} clients, fewer than "
                        f"min_clients = {cfg.min_clients}: the round is halted before anything is "
                        "unmasked (its sum would hold too few noise shares)"
                    )
                    log(ERROR, "dprp: %s", strategy.halted)
                    return []
                return valid

        return super().collect_masked_vectors_stage(Checked(), context, state)


def _masked_reply_problem(msg, shape, quantization_range: int, fingerprint: str) -> Optional[str]:
    """Why a client's masked-vector reply cannot enter the sum (None: it can)."""
    try:
        cfgs = msg.content.config_records[RECORD_KEY_CONFIGS]
        arrays = [bytes_to_ndarray(b) for b in cfgs[Key.MASKED_PARAMETERS]]
        metrics = compat.recorddict_to_fitres(msg.content, keep_input=True).metrics
    except Exception as e:  # noqa: BLE001 - any malformed reply is refused, with its reason
        return f"unreadable reply ({type(e).__name__}: {e})"
    if cfgs.get(MASKS_KEY) != MASKS_ID:
        return (
            "masked with Flower's own mask generator (32-bit seeds), not dprp's: the client must "
            "use dprp.flower.secaggplus_mod in place of flwr's secaggplus_mod"
        )
    if metrics.get("dprp.fingerprint") != fingerprint:
        return (
            f"configuration fingerprint {metrics.get('dprp.fingerprint')!r}, expected "
            f"{fingerprint!r} (a client of another mechanism configuration)"
        )
    if len(arrays) != 2 or arrays[0].shape != (1,) or arrays[1].shape != shape:
        got = [a.shape for a in arrays]
        return f"masked vector of shapes {got}, expected [(1,), {shape}]"
    if not np.issubdtype(arrays[1].dtype, np.integer):
        return f"masked vector of dtype {arrays[1].dtype}, expected integers"
    return None


class DistributedDpFedAvg(FedAvg):
    """FedAvg whose update is the decoded mean of the clients' encoded updates, summed under
    SecAgg+ by `DistributedSecAggPlusWorkflow`.

    Before round 1 the whole configuration is checked (the encoder is planned; its wrap bound is
    checked for `clients` messages); before each round the accountant checks that a round with
    only `min_clients` noise shares (the worst it accepts) still fits the budget, and stops the
    run when it does not. After each round it charges what the round really cost (its sum held
    `n` noise shares) and prints ε per round and in total. `on_round(report)` gets each round's
    report (a dict) as well."""

    def __init__(
        self,
        config: DistributedConfig,
        *,
        initial_parameters: NDArrays,
        on_round: Optional[Callable[[dict], None]] = None,
        **fedavg: Any,
    ) -> None:
        enc = config.encoder()  # plans now: a bad ε, δ, bits or clip is refused here
        wrap = enc.wrap_probability_at(config.clients)
        if wrap > config.max_wrap:
            raise DprpError(
                f"bits: the sum of {config.clients} clients wraps mod 2^{config.bits} with "
                f"probability up to {wrap:.3g} > max_wrap = {config.max_wrap} (raise bits)"
            )
        self.config = config
        self.accountant = config.accountant()
        # the costliest round it accepts: ε is not monotone in n for every plan (τ(n) grows), so
        # take the largest cost over every number of vectors a sum may hold
        key = "rho" if config.family == "zcdp" else "epsilon"
        self.worst = max(
            (enc.guarantee_at(n) for n in range(config.min_clients, config.clients + 1)),
            key=lambda g: g["cost"][key],
        )
        self.accountant.check(self.worst["cost"])  # one round must fit the budget at all
        self.weights, self.dtypes = initial_model(initial_parameters, config.dim)
        self.on_round = on_round
        self.reports: list[dict] = []
        self.refused: list[tuple[int, str]] = []
        self.halted: Optional[str] = None  # why the current (or last) round was halted
        self.halts: list[tuple[int, str]] = []  # every round that revealed no sum, and why
        self.stopped: Optional[str] = None
        self._open: Optional[int] = None  # the round configured and not yet aggregated
        self._sampled = 0
        fedavg.setdefault("fraction_fit", 1.0)
        fedavg.setdefault("fraction_evaluate", 0.0)
        fedavg.setdefault("min_available_clients", config.clients)
        if not config.min_clients <= fedavg["min_available_clients"] <= config.clients:
            raise DprpError(
                f"min_available_clients: must lie in [min_clients, clients] = "
                f"[{config.min_clients}, {config.clients}], got {fedavg['min_available_clients']}"
            )
        super().__init__(initial_parameters=ndarrays_to_parameters(model(self.weights, self.dtypes)), **fedavg)

    def num_fit_clients(self, num_available_clients: int) -> tuple[int, int]:
        """Wait for `min_available_clients` (default: all `clients`), then sample `clients`, or
        every connected client when fewer are (never fewer than `min_available_clients`)."""
        wait = self.min_available_clients
        return max(min(self.config.clients, num_available_clients), wait), wait

    def _close(self) -> None:
        """Record a configured round that ended without a sum (halted by dprp or by SecAgg+)."""
        if self._open is not None:
            why = self.halted or (
                "SecAgg+ halted the round before unmasking (see Flower's log): no sum was "
                "revealed, nothing was charged, the model is unchanged"
            )
            self.halts.append((self._open, why))
            self._open = None

    def configure_fit(self, server_round, parameters, client_manager):
        self._close()
        try:
            self.accountant.check(self.worst["cost"])
        except DprpError as e:
            self.stopped = str(e)
            log(WARNING, "dprp: stopping before round %d: %s", server_round, e)
            return []
        self.halted = None
        instructions = super().configure_fit(server_round, parameters, client_manager)
        self._open, self._sampled = server_round, len(instructions)
        config = self.config.to_config()
        return [
            (proxy, FitIns(ins.parameters, {**ins.config, **config, "dprp.round": server_round}))
            for proxy, ins in instructions
        ]

    def evaluate(self, server_round, parameters):
        self._close()  # Flower evaluates after every round's fit, whether or not it aggregated
        return super().evaluate(server_round, parameters)

    def aggregate_fit(self, server_round, results, failures):
        self._open = None
        n = len(results)
        if n < self.config.min_clients:  # the workflow halts first; this is a second lock
            raise DprpError(f"round {server_round}: {n} clients in the sum, fewer than min_clients")
        cfg, enc = self.config, self.config.encoder()
        v = parameters_to_ndarrays(results[0][1].parameters)[0]
        mean = enc.decode(cfg.from_flower(v, n), n)
        guarantee = enc.guarantee_at(n)
        total = self.accountant.charge(guarantee["cost"])
        self.weights = unflatten(flatten(self.weights) + mean, self.weights)
        report = {
            "round": server_round,
            "sampled": self._sampled,
            "clients": n,
            "nodes": sorted(int(proxy.node_id) for proxy, _ in results),
            "failures": len(failures),
            "refused": len(self.refused),
            "epsilon_round": guarantee["epsilon"],
            "epsilon_total": total["epsilon"],
            "delta": total["delta"],
            "statement": guarantee["statement"],
        }
        self.refused = []
        self.reports.append(report)
        log(INFO, 
            "dprp round %d: %d clients in the sum (%d failed), ε this round %.4f, total ε %.4f (δ = %.1e) of the budget %s",
            server_round, n, len(failures), guarantee["epsilon"], total["epsilon"], total["delta"], self.accountant.budget,
        )
        if self.on_round is not None:
            self.on_round(report)
        metrics = {k: report[k] for k in ("clients", "epsilon_round", "epsilon_total")}
        return ndarrays_to_parameters(model(self.weights, self.dtypes)), metrics
