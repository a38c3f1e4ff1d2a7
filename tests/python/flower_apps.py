"""Small Flower apps for the tests of dprp.flower: clients whose `fit` adds a known update to the
weights they receive (so the server's decoded mean can be compared with the true mean), some of
them misbehaving on purpose, run in Flower's simulation engine."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Callable, Optional

import numpy as np
from flwr.client import ClientApp, NumPyClient
from flwr.client.mod import secaggplus_mod as flower_secaggplus_mod
from flwr.common import Context, bytes_to_ndarray, parameters_to_ndarrays
from flwr.compat.common import recorddict_compat as compat
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key
from flwr.server import Grid, LegacyContext, ServerApp, ServerConfig
from flwr.server.workflow import DefaultWorkflow, SecAggPlusWorkflow
from flwr.simulation import run_simulation

from dprp.flower import (
    DistributedConfig,
    DistributedDpFedAvg,
    DistributedSecAggPlusWorkflow,
    distributed_dp_mod,
    local_dp_mod,
    secaggplus_mod,
)
from dprp.flower import _masks
from dprp.flower._config import PREFIX

SHAPES = [(4, 5), (20,)]
DIM = 40


def initial_weights() -> list[np.ndarray]:
    return [np.zeros(s) for s in SHAPES]


def true_update(partition: int) -> np.ndarray:
    """Client `partition`'s update: a direction common to all clients plus one of its own,
    norm 0.5 (the clients' mean has norm about 0.4)."""
    common = np.random.default_rng(999).normal(size=DIM)
    own = np.random.default_rng(1000 + partition).normal(size=DIM)
    u = 2.0 * common / np.linalg.norm(common) + own / np.linalg.norm(own)
    return 0.5 * u / np.linalg.norm(u)


class Client(NumPyClient):
    def __init__(self, partition: int, nan: bool):
        self.partition, self.nan = partition, nan

    def fit(self, parameters, config):
        flat = np.concatenate([p.ravel() for p in parameters]) + true_update(self.partition)
        if self.nan:
            flat[3] = np.nan
        out, at = [], 0
        for p in parameters:
            out.append(flat[at : at + p.size].reshape(p.shape))
            at += p.size
        return out, 10, {}


@dataclasses.dataclass
class Misbehaviour:
    """Which partitions misbehave, and how."""

    nan: tuple[int, ...] = ()  # return NaN weights
    rogue: tuple[int, ...] = ()  # encode under another configuration (clip 2.0)
    crash: tuple[int, ...] = ()  # raise in fit
    plain: tuple[int, ...] = ()  # mask with Flower's own secaggplus_mod (32-bit-seeded masks)
    drop: dict[int, str] = dataclasses.field(default_factory=dict)  # partition → SecAgg+ stage it fails at


def client_app(mods: list, record: Optional[pathlib.Path] = None, bad: Misbehaviour = Misbehaviour()) -> ClientApp:
    def client_fn(context: Context):
        p = int(context.node_config["partition-id"])
        if p in bad.crash:
            raise RuntimeError(f"client {p} crashed")
        return Client(p, p in bad.nan).to_client()

    def rogue_mod(msg, ctxt, call_next):
        """For the rogue partitions: rewrite the server's configuration into another valid one."""
        p = int(ctxt.node_config["partition-id"])
        if p in bad.rogue and msg.metadata.message_type == "train":
            fit_ins = compat.recorddict_to_fitins(msg.content, keep_input=True)
            cfg = DistributedConfig.from_config(fit_ins.config)
            other = dataclasses.replace(cfg, clip=2.0 * cfg.clip)
            fit_ins.config.update(other.to_config())
            rebuilt = compat.fitins_to_recorddict(fit_ins, keep_input=True)
            for k, v in rebuilt.items():
                msg.content[k] = v
        return call_next(msg, ctxt)

    def record_mod(msg, ctxt, call_next):
        """Save the residues each client sends (the plain integers, before SecAgg+'s masks)."""
        out = call_next(msg, ctxt)
        if record is not None and msg.metadata.message_type == "train" and not out.has_error():
            fit_ins = compat.recorddict_to_fitins(msg.content, keep_input=True)
            fit_res = compat.recorddict_to_fitres(out.content, keep_input=True)
            x = np.asarray(parameters_to_ndarrays(fit_res.parameters)[0])
            r = int(fit_ins.config["dprp.round"])
            np.save(record / f"round{r}-node{msg.metadata.dst_node_id}.npy", x)
        return out

    def bypass_mod(msg, ctxt, call_next):
        """For the power checks only: pretend to be dprp's masking stage (the guard bypassed)."""
        if msg.metadata.message_type != "train":
            return call_next(msg, ctxt)
        cfg = DistributedConfig.from_config(compat.recorddict_to_fitins(msg.content, keep_input=True).config)
        token = _masks._MASKING.set(_masks.Masking(cfg.secagg_ranges()))
        try:
            return call_next(msg, ctxt)
        finally:
            _masks._MASKING.reset(token)

    def drop_mod(msg, ctxt, call_next):
        """For the `drop` partitions: fail (an error reply: a dropout) at the given SecAgg+ stage."""
        p = int(ctxt.node_config["partition-id"])
        if p in bad.drop and msg.metadata.message_type == "train":
            cfgs = msg.content.config_records.get(RECORD_KEY_CONFIGS)
            if cfgs is not None and cfgs.get(Key.STAGE) == bad.drop[p]:
                raise RuntimeError(f"client {p} dropped at SecAgg+ stage {bad.drop[p]!r}")
        return call_next(msg, ctxt)

    def secagg_mod(msg, ctxt, call_next):
        """dprp's secaggplus_mod, or Flower's own for the `plain` partitions."""
        plain = int(ctxt.node_config["partition-id"]) in bad.plain
        return (flower_secaggplus_mod if plain else secaggplus_mod)(msg, ctxt, call_next)

    wirings = {
        # the right one (some partitions misbehaving as `bad` says)
        "distributed": [drop_mod, secagg_mod, record_mod, rogue_mod, distributed_dp_mod],
        # wrong ones: no SecAgg+ mod, Flower's own SecAgg+ mod
        "no-secagg": [record_mod, distributed_dp_mod],
        "flower-secagg": [flower_secaggplus_mod, record_mod, distributed_dp_mod],
        # the wrong ones with distributed_dp_mod's guard bypassed (power checks)
        "no-secagg-bypassed": [record_mod, bypass_mod, distributed_dp_mod],
        "flower-secagg-bypassed": [flower_secaggplus_mod, record_mod, bypass_mod, distributed_dp_mod],
    }
    if len(mods) == 1 and mods[0] in wirings:
        stack = wirings[mods[0]]
    elif mods == ["local"]:
        stack = [local_dp_mod]
    else:
        stack = mods
    return ClientApp(client_fn=client_fn, mods=stack)


class SpyGrid:
    """The server's grid, recording every message sent and every reply received (what the
    server saw, read as it arrives: Flower's workflows empty the replies they consume), passing
    everything on."""

    def __init__(self) -> None:
        self.grid = None
        self.sent: list = []
        self.replies: list = []
        self.seen: list[tuple[int, str, np.ndarray]] = []

    def __getattr__(self, name: str):
        return getattr(self.grid, name)

    def send_and_receive(self, messages, timeout=None):
        messages = list(messages)
        self.sent.extend(messages)
        replies = list(self.grid.send_and_receive(messages, timeout=timeout))
        self.replies.extend(replies)
        for m in replies:
            self.seen.extend(self._vectors(m))
        return replies

    def errors(self) -> list[str]:
        return [m.error.reason or "" for m in self.replies if m.has_error()]

    def vectors(self) -> list[tuple[int, str, np.ndarray]]:
        """(node, "clear" or "masked", vector) of every reply that carried a client's vector:
        model arrays (a FitRes's parameters), or a SecAgg+ masked vector."""
        return list(self.seen)

    @staticmethod
    def _vectors(m) -> list[tuple[int, str, np.ndarray]]:
        if m.has_error():
            return []
        out = []
        node = int(m.metadata.src_node_id)
        for record in m.content.array_records.values():
            for arr in record.values():
                out.append((node, "clear", np.array(arr.numpy())))
        cfgs = m.content.config_records.get(RECORD_KEY_CONFIGS)
        if cfgs is not None and Key.MASKED_PARAMETERS in cfgs:
            out.extend((node, "masked", bytes_to_ndarray(b)) for b in cfgs[Key.MASKED_PARAMETERS])
        return out


class Recording(DistributedDpFedAvg):
    """Keeps the residues the server decoded each round (mod 2^b: the secure sum)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.residues = {}

    def aggregate_fit(self, server_round, results, failures):
        v = parameters_to_ndarrays(results[0][1].parameters)[0]
        self.residues[server_round] = self.config.from_flower(v, len(results))
        return super().aggregate_fit(server_round, results, failures)


def server_app(strategy, rounds: int, workflow_of: Optional[Callable] = None, spy: Optional[SpyGrid] = None) -> ServerApp:
    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Context) -> None:
        if spy is not None:
            spy.grid, grid = grid, spy
        ctx = LegacyContext(context=context, config=ServerConfig(num_rounds=rounds), strategy=strategy)
        fit = workflow_of(strategy) if workflow_of is not None else None
        (DefaultWorkflow(fit_workflow=fit) if fit is not None else DefaultWorkflow())(grid, ctx)

    return app


def _one_ray_runtime() -> None:
    """Start Ray once per test process, as Flower's Ray backend would (2 CPUs, its PYTHONPATH
    for the actors), and keep it between simulations: the backend starts Ray only when none is
    running, and its `terminate` (which kills the simulation's actors) would also stop Ray — 3–4
    s of every simulation here. Ray stops at the process's exit (its own atexit hook)."""
    import os
    import sys

    import ray
    from flwr.server.superlink.fleet.vce.backend import raybackend

    if not ray.is_initialized():
        path = os.pathsep.join([*sys.path, *filter(None, [os.environ.get("PYTHONPATH")])])
        ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    if not getattr(raybackend, "_dprp_tests_keep_ray", False):
        raybackend.ray = _KeepRay(ray)
        raybackend._dprp_tests_keep_ray = True


class _KeepRay:
    """The `ray` module as Flower's Ray backend sees it in these tests: `shutdown` does nothing
    (the actors are still terminated one by one)."""

    def __init__(self, ray) -> None:
        self._ray = ray

    def shutdown(self, *a, **kw) -> None:
        pass

    def __getattr__(self, name: str):
        return getattr(self._ray, name)


def simulate(server: ServerApp, client: ClientApp, clients: int) -> None:
    _one_ray_runtime()
    run_simulation(
        server_app=server,
        client_app=client,
        num_supernodes=clients,
        backend_config={"client_resources": {"num_cpus": 1}, "init_args": {"num_cpus": 2}},
    )


def secagg_workflow(cfg: DistributedConfig):
    return lambda strategy: DistributedSecAggPlusWorkflow(cfg, strategy)


def flower_secagg_workflow(cfg: DistributedConfig, dprp_ranges: bool = True):
    """Flower's own SecAggPlusWorkflow (a wrong wiring), with the ranges dprp's residues need or
    Flower's defaults."""
    ranges = cfg.secagg_ranges() if dprp_ranges else {}
    return lambda strategy: SecAggPlusWorkflow(num_shares=1.0, reconstruction_threshold=0.6, **ranges)


def recorded(record: pathlib.Path) -> dict[tuple[int, int], np.ndarray]:
    """(round, node) → the vector `x` the client's distributed_dp_mod encoded."""
    out = {}
    for f in sorted(record.glob("round*-node*.npy")):
        r, node = f.stem[len("round"):].split("-node")
        out[(int(r), int(node))] = np.load(f)
    return out


def residue_sum(record: pathlib.Path, server_round: int, cfg: DistributedConfig, nodes: Optional[set] = None) -> np.ndarray:
    """The plain sum mod 2^b of the residues the clients of a round recorded."""
    total = None
    for f in sorted(record.glob(f"round{server_round}-node*.npy")):
        node = int(f.stem.split("node")[1])
        if nodes is not None and node not in nodes:
            continue
        r = (np.load(f) + 2 ** (cfg.bits - 1)).astype(np.int64)
        total = r if total is None else total + r
    assert total is not None, f"no residues recorded for round {server_round}"
    return total % (2**cfg.bits)


__all__ = ["PREFIX", "DistributedDpFedAvg"]
