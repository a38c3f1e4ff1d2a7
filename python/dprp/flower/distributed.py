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

Only this wiring runs. The strategy refuses `configure_fit` and `aggregate_fit` unless they are
called by `DistributedSecAggPlusWorkflow`'s stages (a `_WorkflowPass` it holds meanwhile), so a
plain `DefaultWorkflow` or Flower's own `SecAggPlusWorkflow` is refused at round 1 before a
message is sent or anything charged; `distributed_dp_mod` refuses to train and reply outside
dprp's SecAgg+ masking stage (`_masks.require_masking`), so no client sends its residues in clear.
"""

from __future__ import annotations

import contextlib
import math
from logging import ERROR, INFO, WARNING
from typing import Any, Callable, Iterator, Optional

import numpy as np
from flwr.common import (
    FitIns,
    MessageType,
    NDArrays,
    Parameters,
    bytes_to_ndarray,
    ndarrays_to_parameters,
    parameters_to_ndarrays,
)
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key
from flwr.common.logger import log
from flwr.compat.common import recorddict_compat as compat
from flwr.server.strategy import FedAvg
from flwr.server.workflow import SecAggPlusWorkflow
from flwr.server.workflow.constant import MAIN_CONFIGS_RECORD
from flwr.server.workflow.constant import Key as WorkflowKey

from .. import DprpError
from ._config import DistributedConfig
from ._masks import CLIENT_WIRING, MASKS_ID, MASKS_KEY, SERVER_WIRING, require_masking, server_masks
from ._mod import refuse_message_api, refuse_train_actions, replace_update
from ._weights import flatten, initial_model, model, unflatten



def distributed_dp_mod(msg, ctxt, call_next):
    """Client mod: after the client's `fit`, clip its update (new − received weights) to the
    configured norm and encode it with the round's distributed encoder (noise share from the OS
    CSPRNG); the message becomes `x = r − 2^(b−1)` for the residues `r`, weight 1, and the
    configuration's fingerprint in the metrics. A non-finite update, a wrong shape or a missing
    configuration raise, so the client's reply is an error and SecAgg+ counts it as dropped.

    It replies only inside dprp's SecAgg+ masking stage (`dprp.flower.secaggplus_mod` before it
    in the mods), set up with the ranges that carry the residues exactly: otherwise it raises
    before the client trains, so a residue vector never leaves the client in clear (a chain
    without dprp's `secaggplus_mod`, with Flower's own, or a server whose workflow is not
    `DistributedSecAggPlusWorkflow`). A Message-API message — a training action
    (`train.<action>`), or a `train` message of a `flwr.serverapp` strategy — is refused too:
    Flower 1.42 has no SecAgg+ on the Message API (docs/flower.md)."""
    refuse_train_actions(msg, "distributed_dp_mod", message_api=False)
    if msg.metadata.message_type != MessageType.TRAIN:
        return call_next(msg, ctxt)
    refuse_message_api(msg, "distributed_dp_mod")
    masking = require_masking(msg)

    def parse(config) -> DistributedConfig:
        cfg = DistributedConfig.from_config(config)
        _check_ranges(cfg, masking.ranges)
        return cfg

    return replace_update(msg, ctxt, call_next, parse, _encode, "distributed_dp_mod")


def _check_ranges(cfg: DistributedConfig, ranges: dict[str, Any]) -> None:
    """Refuse a SecAgg+ round set up with other ranges than the configuration's (a server running
    another SecAgg+ workflow, e.g. Flower's own, would decode the sum wrongly)."""
    want = cfg.secagg_ranges()
    if any(ranges.get(k) != v for k, v in want.items()):
        got = ", ".join(f"{k} = {ranges.get(k)!r}" for k in want)
        need = ", ".join(f"{k} = {v!r}" for k, v in want.items())
        raise DprpError(
            f"distributed_dp_mod: refused to train and reply: the server set up SecAgg+ with {got}, "
            f"not the ranges that carry this configuration's residues ({need}): its fit workflow "
            f"is not dprp's. Use on the server {SERVER_WIRING}"
        )


def _encode(cfg: DistributedConfig, config, update: np.ndarray, msg):
    return [cfg.to_flower(cfg.encoder().encode(update))], {}


class _WorkflowPass:
    """The typed marker of dprp's unmask path: made only by `DistributedSecAggPlusWorkflow`, and
    held by its strategy only for the span of the SecAgg+ stage that calls it — `setup` (which
    calls `configure_fit`) and `unmask` (which calls `aggregate_fit` with the sum it has just
    unmasked). `DistributedDpFedAvg` refuses both calls without it: under any other workflow
    the clients' vectors would reach the server in clear, or as a sum it cannot decode."""

    __slots__ = ("workflow", "stage", "server_round")

    def __init__(self, workflow: "DistributedSecAggPlusWorkflow", stage: str, server_round: int) -> None:
        self.workflow, self.stage, self.server_round = workflow, stage, server_round


class DistributedSecAggPlusWorkflow(SecAggPlusWorkflow):
    """Flower's SecAgg+ (Bell et al. 2020, Algorithm 2, as Flower 1.42 implements it) with the
    ranges that carry dprp's residues exactly (`DistributedConfig.secagg_ranges`), dprp's mask
    generator (`_masks`), and these changes:

    * **Checks before the sum**: a reply whose masked vector has the wrong shape or whose
      fingerprint is another configuration's is dropped (SecAgg+ then removes that client's
      masks as for a dropout, so the round goes on without it), and when fewer than
      `min_clients` valid replies remain the round is halted before anything is unmasked — the
      sum of fewer noise shares is never revealed.
    * **Dropouts at any stage** (`_leave`): a node that sent no public keys (stage 0) or no key
      shares (stage 1) has no mask in anyone's vector; it leaves the protocol there, as in the
      paper, where the unmask stage treats as dropped only the clients that shared keys and sent
      no masked vector. Flower 1.42 keeps it among the sampled nodes and asks the survivors for
      its key shares, which they never received (`KeyError`: the round was lost).
    * **The threshold from `min_clients`** (`secagg_threshold`): by default a node's secrets are
      rebuilt from `min_clients` shares, so a round completes whenever `min_clients` nodes
      remain; it must be more than half the shares.
    * **Two timeouts**: `timeout` (seconds) for the key stages (0, 1, 3: key agreement and
      shares, no training) and `fit_timeout` for the masking stage, in which the clients train.
      A node that vanishes without an error reply (a killed process) holds its stage that long;
      a live node slower than the timeout is dropped (its noise share is then missing from the
      sum, and below `min_clients` the round halts). `None` waits without a limit.

    `num_shares` is SecAgg+'s (default 1.0: every client shares with every other)."""

    def __init__(
        self,
        config: DistributedConfig,
        strategy: "DistributedDpFedAvg",
        num_shares: float | int = 1.0,
        reconstruction_threshold: Optional[float | int] = None,
        timeout: Optional[float] = 60.0,
        fit_timeout: Optional[float] = 600.0,
    ) -> None:
        if not isinstance(strategy, DistributedDpFedAvg):
            raise DprpError(
                f"DistributedSecAggPlusWorkflow: its strategy must be a DistributedDpFedAvg, got "
                f"{type(strategy).__name__}"
            )
        if strategy.config != config:
            raise DprpError(
                "DistributedSecAggPlusWorkflow: its configuration is not its strategy's "
                f"(fingerprints {config.fingerprint} and {strategy.config.fingerprint}): give both the same"
            )
        for name, t in (("timeout", timeout), ("fit_timeout", fit_timeout)):
            if t is not None and not (isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t > 0):
                raise DprpError(f"DistributedSecAggPlusWorkflow: {name} must be a positive number of seconds or None, got {t!r}")
        super().__init__(
            num_shares=num_shares,
            reconstruction_threshold=secagg_threshold(config, num_shares, reconstruction_threshold),
            timeout=timeout,
            **config.secagg_ranges(),
        )
        self.config = config
        self.strategy = strategy
        self.fit_timeout = fit_timeout
        self._stage: Optional[str] = None

    @contextlib.contextmanager
    def _pass(self, context, stage: str) -> Iterator[None]:
        """Hand the strategy this workflow's marker for one stage (see `_WorkflowPass`)."""
        if context.strategy is not self.strategy:
            raise DprpError(
                "DistributedSecAggPlusWorkflow: the LegacyContext's strategy is not the one this "
                f"workflow was built with: pass the same DistributedDpFedAvg to both ({SERVER_WIRING})"
            )
        server_round = int(context.state.config_records[MAIN_CONFIGS_RECORD][WorkflowKey.CURRENT_ROUND])
        with self.strategy._admitted(_WorkflowPass(self, stage, server_round)):
            yield

    @contextlib.contextmanager
    def _in(self, stage: str) -> Iterator[None]:
        self._stage = stage
        try:
            yield
        finally:
            self._stage = None

    def _check_threshold(self, state) -> bool:
        if self._stage in ("setup", "share_keys"):
            _leave(state)
            n, sampled = len(state.active_node_ids), len(state.nid_to_neighbours)
            if n < self.config.min_clients:  # (with no node left, Flower's check would pass)
                self.strategy.halted = (
                    f"only {n} of {sampled} sampled clients answered SecAgg+'s {self._stage} stage, "
                    f"fewer than min_clients = {self.config.min_clients}: the round is halted, "
                    "nothing was unmasked"
                )
                log(ERROR, "dprp: %s", self.strategy.halted)
                return False
        return super()._check_threshold(state)

    def setup_stage(self, grid, context, state) -> bool:
        with self._pass(context, "setup"), self._in("setup"):  # the strategy's configure_fit runs here
            return super().setup_stage(grid, context, state)

    def share_keys_stage(self, grid, context, state) -> bool:
        with self._in("share_keys"):
            return super().share_keys_stage(grid, context, state)

    def unmask_stage(self, grid, context, state) -> bool:
        # a node that dropped after sharing its keys is unmasked against the nodes whose vectors
        # hold a mask shared with it: those in the sum (Flower takes all its neighbours)
        for nid in state.sampled_node_ids - state.active_node_ids:
            state.nid_to_neighbours[nid] &= state.active_node_ids | {nid}
        # rebuild masks as the clients drew them (dprp.flower._masks); the strategy's
        # aggregate_fit runs here, with the sum just unmasked
        with server_masks(), self._pass(context, "unmask"), self._in("unmask"):
            return super().unmask_stage(grid, context, state)

    def collect_masked_vectors_stage(self, grid, context, state) -> bool:
        cfg, strategy, fit_timeout = self.config, self.strategy, self.fit_timeout
        shape = (cfg.encoder().message_len,)
        quantization_range = 2**cfg.bits

        class Checked:
            """The grid, with the stage's replies checked before SecAgg+ sums them."""

            def __getattr__(self, name: str) -> Any:
                return getattr(grid, name)

            def send_and_receive(self, messages, timeout=None):
                # the clients train in this stage: its own timeout
                replies = list(grid.send_and_receive(messages, timeout=fit_timeout))
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


def _leave(state) -> None:
    """After stage 0 or 1: the nodes that did not answer leave the protocol (they are no longer
    among the nodes whose masks the unmask stage removes, nor among those whose neighbours must
    stay above the threshold). Their public keys were not forwarded (stage 0) or their key
    shares were not (stage 1), so no survivor's vector holds a mask shared with them."""
    state.sampled_node_ids = set(state.active_node_ids)


def _shares_at(num_shares: float | int, n: int) -> int:
    """The number of shares Flower's setup stage gives each of `n` sampled nodes."""
    if not isinstance(num_shares, float):
        return int(num_shares)
    s = round(num_shares * n)
    if s < n and s % 2 == 0:
        s += 1
    return n if s <= 2 else s


def secagg_threshold(config: DistributedConfig, num_shares: float | int, threshold: Optional[float | int]) -> float | int:
    """SecAgg+'s reconstruction threshold for `config`: by default `min_clients` (every client
    shares with every other) — a round whose masked vectors come from `min_clients` nodes can be
    unmasked, as the plan's noise assumes — or Flower's 0.6 of the shares when each shares with
    fewer (`num_shares` < 1.0). Refused: a threshold of half the shares or fewer (a server that
    tells two halves of a client's neighbours different dropout lists collects both its
    mask-seed shares and its key shares, and unmasks its vector alone; each honest client gives
    only one of the two per node), or above `min_clients` (a round of `min_clients` vectors
    could not be unmasked: `min_clients` would be a promise SecAgg+ does not keep)."""
    full = isinstance(num_shares, float) and num_shares == 1.0
    if threshold is None:
        threshold = config.min_clients if full else 0.6
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise DprpError(f"reconstruction_threshold: must be an integer or a fraction of the shares, got {threshold!r}")
    if isinstance(num_shares, bool) or not isinstance(num_shares, (int, float)):
        raise DprpError(f"num_shares: must be an integer or a fraction of the sampled clients, got {num_shares!r}")
    shares = _shares_at(num_shares, config.clients)
    at = max(round(threshold * shares), 2) if isinstance(threshold, float) else threshold
    hint = "raise min_clients" if full and at == config.min_clients else "raise reconstruction_threshold"
    if 2 * at <= shares:
        raise DprpError(
            f"reconstruction_threshold: {at} of {shares} shares is not more than half: a server that "
            f"gives two halves of a client's neighbours different dropout lists would collect both "
            f"its mask-seed shares and its key shares and unmask its vector alone ({hint} to at "
            f"least {shares // 2 + 1})"
        )
    if full and at > config.min_clients:
        raise DprpError(
            f"reconstruction_threshold: {at} shares are needed to unmask, more than min_clients = "
            f"{config.min_clients}: a round with min_clients vectors would halt (lower the threshold "
            f"or raise min_clients to {at})"
        )
    return threshold


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
        initial_parameters: NDArrays | Parameters,
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
        self._workflow_pass: Optional[_WorkflowPass] = None  # held during dprp's SecAgg+ stages
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

    @contextlib.contextmanager
    def _admitted(self, marker: _WorkflowPass) -> Iterator[None]:
        if not isinstance(marker, _WorkflowPass):
            raise TypeError(f"expected DistributedSecAggPlusWorkflow's marker, got {type(marker).__name__}")
        old, self._workflow_pass = self._workflow_pass, marker
        try:
            yield
        finally:
            self._workflow_pass = old

    def _require_workflow(self, stage: str, server_round: int) -> None:
        """Refuse a call that does not come from `DistributedSecAggPlusWorkflow`'s `stage` of this
        round (nothing is sent or charged then; the run stops with the reason)."""
        p = self._workflow_pass
        if (
            isinstance(p, _WorkflowPass)
            and p.stage == stage
            and p.server_round == server_round
            and p.workflow.strategy is self
            and p.workflow.config == self.config
        ):
            return
        if stage == "setup":
            what = (
                "configure_fit was called outside DistributedSecAggPlusWorkflow's setup stage, by "
                "another fit workflow (Flower's DefaultWorkflow alone, its SecAggPlusWorkflow, …): "
                "the clients' residues would reach the server in clear, or summed under masks and "
                "ranges it cannot decode. Nothing was sent to the clients and nothing charged"
            )
        else:
            what = (
                "aggregate_fit was called with results that did not come through "
                "DistributedSecAggPlusWorkflow's unmask stage: they are not a secure sum dprp can "
                "decode. Nothing was decoded or charged, the model is unchanged"
            )
        self.stopped = (
            f"round {server_round}: DistributedDpFedAvg.{what}. Run it as {SERVER_WIRING}, with the "
            f"clients' {CLIENT_WIRING}"
        )
        log(ERROR, "dprp: %s", self.stopped)
        raise DprpError(self.stopped)

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
        self._require_workflow("setup", server_round)
        self._close()
        try:
            self.accountant.check(self.worst["cost"])
        except DprpError as e:
            self.stopped = str(e)
            log(WARNING, "dprp: stopping before round %d: %s", server_round, e)
            return []
        self.halted = None
        self.refused = []
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
        self._require_workflow("unmask", server_round)  # before anything is decoded or charged
        self._open = None
        n = len(results)
        if n < self.config.min_clients:  # the workflow halts first; this is a second lock
            raise DprpError(f"round {server_round}: {n} clients in the sum, fewer than min_clients")
        cfg, enc = self.config, self.config.encoder()
        v = parameters_to_ndarrays(results[0][1].parameters)[0]
        mean = enc.decode(cfg.from_flower(v, n), n)
        guarantee = enc.guarantee_at(n)
        total = self.accountant.charge(guarantee["cost"])
        # sampled nodes whose vector is not in the sum and was not refused by dprp: error replies
        # and nodes that did not answer in time, each once (Flower's `failures` lists a masking
        # error twice, and a node that timed out not at all)
        failed = self._sampled - n - len(self.refused)
        self.weights = unflatten(flatten(self.weights) + mean, self.weights)
        report = {
            "round": server_round,
            "sampled": self._sampled,
            "clients": n,
            "nodes": sorted(int(proxy.node_id) for proxy, _ in results),
            "failures": failed,
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
            server_round, n, failed, guarantee["epsilon"], total["epsilon"], total["delta"], self.accountant.budget,
        )
        if self.on_round is not None:
            self.on_round(report)
        metrics = {k: report[k] for k in ("clients", "epsilon_round", "epsilon_total")}
        return ndarrays_to_parameters(model(self.weights, self.dtypes)), metrics
