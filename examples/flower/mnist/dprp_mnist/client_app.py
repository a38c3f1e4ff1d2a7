"""The ClientApp: a client trains the logistic regression on its partition for a few SGD steps;
the arm's mods (chosen at run time from the run config) clip and privatise or encode the update.

    none, flower-central        no client mod (flower-central clips on the server)
    flower-localdp              Flower's LocalDpMod (Gaussian, classical calibration)
    dprp-privunit2, -projunit   dprp.flower.local_dp_mod
    dprp-ddg16, -sketch-ddg-*   secaggplus_mod → dprp.flower.distributed_dp_mod
"""

from __future__ import annotations

import os
import pathlib
import time
from typing import Any, Mapping, Optional

import numpy as np
from flwr.client import ClientApp, NumPyClient
from flwr.client.mod import LocalDpMod

from dprp.flower import secaggplus_mod  # Flower's, with dprp's cryptographic masks
from flwr.common import Context, MessageType

from dprp.flower import distributed_dp_mod, local_dp_mod

from . import task


class MnistClient(NumPyClient):
    def __init__(self, s: task.Settings, partition: int):
        self.s, self.partition = s, partition
        self.x, self.y = task.client_data(s, partition)

    def fit(self, parameters, config):
        server_round = int(config.get("server-round", 0))
        rng = np.random.default_rng((self.s.partition_seed, self.partition, server_round))
        t0 = time.perf_counter()
        new = task.train(parameters, self.x, self.y, self.s.local_steps, self.s.batch_size, self.s.lr, rng)
        seconds = time.perf_counter() - t0
        # float32, as a model travels in Flower; weight 1: every arm averages the clients
        # uniformly (the DP arms' sensitivity needs it)
        new = [w.astype(np.float32) for w in new]
        return new, 1, {"examples": int(self.y.size), "train-seconds": seconds}


def _meter_mod(directory: str):
    """Records the serialised size of every reply this client sends (all of SecAgg+'s stages),
    one line per reply, to a file per process under `directory`."""
    from flwr.common.serde import recorddict_to_proto

    def mod(msg, ctxt, call_next):
        t0 = time.perf_counter()
        out = call_next(msg, ctxt)
        seconds = time.perf_counter() - t0
        if msg.metadata.message_type == MessageType.TRAIN and not out.has_error():
            size = recorddict_to_proto(out.content).ByteSize()
            line = f"{msg.metadata.dst_node_id} {msg.metadata.group_id} {size} {seconds:.6f}\n"
            with open(pathlib.Path(directory) / f"meter-{os.getpid()}.txt", "a") as f:
                f.write(line)
        return out

    return mod


def arm_mods(s: task.Settings) -> list:
    """The client mods of the arm, outermost first."""
    if s.arm in ("none", "flower-central"):
        mods: list = []
    elif s.arm == "flower-localdp":
        e = s.epsilon / s.num_server_rounds
        d = s.delta / s.num_server_rounds
        mods = [LocalDpMod(clipping_norm=s.clip, sensitivity=s.sensitivity, epsilon=e, delta=d)]
    elif s.arm in ("dprp-privunit2", "dprp-projunit-srht"):
        mods = [local_dp_mod]
    else:
        mods = [secaggplus_mod, distributed_dp_mod]
    if s.meter_dir:
        mods = [_meter_mod(s.meter_dir)] + mods
    return mods


def _chain(mods: list, msg, ctxt, call_next):
    if not mods:
        return call_next(msg, ctxt)
    return mods[0](msg, ctxt, lambda m, c: _chain(mods[1:], m, c, call_next))


def build(overrides: Optional[Mapping[str, Any]] = None) -> ClientApp:
    """The ClientApp, its settings the run config with `overrides` over it (the simulation
    script passes its flags here; Flower's `run_simulation` has no run config)."""

    def settings_of(context: Context) -> task.Settings:
        return task.settings(context.run_config, overrides)

    def client_fn(context: Context):
        s = settings_of(context)
        return MnistClient(s, int(context.node_config["partition-id"])).to_client()

    def arm_mod(msg, ctxt, call_next):
        """Dispatches to the arm's mods: the arm is known only once the run config is."""
        return _chain(arm_mods(settings_of(ctxt)), msg, ctxt, call_next)

    return ClientApp(client_fn=client_fn, mods=[arm_mod])


app = build()
