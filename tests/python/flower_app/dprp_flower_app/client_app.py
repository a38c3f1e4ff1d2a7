"""The ClientApp: fit adds partition `partition-id`'s known update (task.true_update); the mods
are dprp's distributed-DP stack under SecAgg+, behind `stage_marker_mod`, which reports each
client's SecAgg+ progress as marker files (the launcher kills a SuperNode on one of them).

Markers, in the run config's `marker-dir` (JSON: node, partition, round, stage):

* `masked-round<r>-partition<p>.json`: the client produced its masked vector (written when the
  reply of the "collect masked vectors" stage is ready, before it is sent);
* `residues-round<r>-partition<p>.json`: the plain residues the client's mod encoded (before
  SecAgg+ masks them), for the test's check of the secure sum;
* `hold-round<r>-partition<p>.json`: partition p received, in round r, the request of a stage
  the run config's `holds` names for it ("p:r:stage", see pyproject.toml) and holds it for
  `hold-seconds` instead of answering. With "unmask" the server has received this client's
  masked vector (SecAgg+ asks only the clients whose masked vector arrived to unmask); with
  "masking" it never sends it; with "share_keys" it sent its public keys, not its key shares;
  with "setup" not even its keys. The hold makes the launcher's kill land exactly between two
  stages.
"""

from __future__ import annotations

import json
import os
import pathlib
import time

import numpy as np
from flwr.client import ClientApp, NumPyClient
from dprp.flower import secaggplus_mod  # Flower's, with dprp's cryptographic masks
from flwr.common import Context, MessageType, parameters_to_ndarrays
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage
from flwr.compat.common import recorddict_compat as compat

from dprp.flower import distributed_dp_mod

from .task import true_update

HOLD_STAGES = {
    "setup": Stage.SETUP,
    "share_keys": Stage.SHARE_KEYS,
    "masking": Stage.COLLECT_MASKED_VECTORS,
    "unmask": Stage.UNMASK,
}


def holds(text: str) -> dict[tuple[int, int], str]:
    """The run config's `holds`: (partition, round) → the SecAgg+ stage to hold on."""
    out = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        p, r, stage = item.split(":")
        if stage not in HOLD_STAGES:
            raise ValueError(f"holds: {stage!r} is not one of {sorted(HOLD_STAGES)}")
        out[(int(p), int(r))] = HOLD_STAGES[stage]
    return out


class Client(NumPyClient):
    def __init__(self, partition: int):
        self.partition = partition

    def fit(self, parameters, config):
        flat = np.concatenate([p.ravel() for p in parameters]) + true_update(self.partition)
        out, at = [], 0
        for p in parameters:
            out.append(flat[at : at + p.size].reshape(p.shape))
            at += p.size
        return out, 10, {}


def client_fn(context: Context):
    return Client(int(context.node_config["partition-id"])).to_client()


def write_marker(directory: str, name: str, body: dict) -> None:
    """Write a marker atomically (the launcher never sees half a file)."""
    if not directory:
        return
    path = pathlib.Path(directory) / name
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(body))
    os.replace(tmp, path)


def stage_marker_mod(msg, ctxt, call_next):
    """Before SecAgg+: write the `hold-` and `masked-` markers, and hold where configured."""
    if msg.metadata.message_type != MessageType.TRAIN:
        return call_next(msg, ctxt)
    cfgs = msg.content.config_records.get(RECORD_KEY_CONFIGS)
    stage = cfgs.get(Key.STAGE) if cfgs is not None else None
    rc = ctxt.run_config
    part = int(ctxt.node_config["partition-id"])
    rnd = int(msg.metadata.group_id)
    body = {"node": int(msg.metadata.dst_node_id), "partition": part, "round": rnd, "stage": stage, "pid": os.getpid()}
    tag = f"round{rnd}-partition{part}.json"
    if stage is not None and holds(str(rc["holds"])).get((part, rnd)) == stage:
        write_marker(str(rc["marker-dir"]), "hold-" + tag, body)
        time.sleep(float(rc["hold-seconds"]))  # the launcher kills this SuperNode meanwhile
    out = call_next(msg, ctxt)
    if stage == Stage.COLLECT_MASKED_VECTORS and not out.has_error():
        write_marker(str(rc["marker-dir"]), "masked-" + tag, body)
    return out


def residue_mod(msg, ctxt, call_next):
    """Save the residues `x = r − 2^(b−1)` distributed_dp_mod encoded (before SecAgg+'s masks)."""
    out = call_next(msg, ctxt)
    if msg.metadata.message_type == MessageType.TRAIN and not out.has_error():
        x = parameters_to_ndarrays(compat.recorddict_to_fitres(out.content, keep_input=True).parameters)[0]
        part = int(ctxt.node_config["partition-id"])
        body = {"node": int(msg.metadata.dst_node_id), "partition": part, "x": [int(v) for v in np.rint(np.asarray(x))]}
        write_marker(str(ctxt.run_config["marker-dir"]), f"residues-round{msg.metadata.group_id}-partition{part}.json", body)
    return out


app = ClientApp(client_fn=client_fn, mods=[stage_marker_mod, secaggplus_mod, residue_mod, distributed_dp_mod])
