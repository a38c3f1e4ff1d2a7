"""The same App on Flower's Message API, local DP: an `@app.train()` ClientApp under
`dprp.flower.local_dp_mod` and a ServerApp running `MessageLocalDpFedAvg` (the test points the
App's components here: `dprp_flower_app.message_app:server` and `…:client`).

The ServerApp writes to `result-path` the strategy's reports, its final weights, and every reply
it received (node, the keys of its content, its vector and dprp's record), so the test can
recompute each round's estimate from what the server saw. Partitions listed in
`plain-partitions` (comma-separated) run without the mod: their model reaches the server in
clear and the strategy must refuse it."""

from __future__ import annotations

import json
import os
import pathlib
import traceback

import numpy as np
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from dprp.flower import LocalConfig, MessageLocalDpFedAvg, local_dp_mod

from .task import DIM, initial_weights, true_update


def _plain(ctxt) -> set[int]:
    return {int(p) for p in str(ctxt.run_config["plain-partitions"]).split(",") if p.strip()}


def by_partition(msg, ctxt, call_next):
    """`local_dp_mod`, except on the `plain-partitions`."""
    if int(ctxt.node_config["partition-id"]) in _plain(ctxt):
        return call_next(msg, ctxt)
    return local_dp_mod(msg, ctxt, call_next)


client = ClientApp(mods=[by_partition])


@client.train()
def train(msg: Message, context: Context) -> Message:
    received = msg.content["arrays"].to_numpy_ndarrays()
    flat = np.concatenate([a.ravel() for a in received]) + true_update(int(context.node_config["partition-id"]))
    new, at = [], 0
    for a in received:
        new.append(flat[at : at + a.size].reshape(a.shape).astype(a.dtype))
        at += a.size
    content = RecordDict({"arrays": ArrayRecord(new), "metrics": MetricRecord({"num-examples": 10})})
    return Message(content, reply_to=msg)


class Seen:
    """The server's grid, keeping what each reply carried, by round (evaluation is off: each
    non-empty exchange is a training round)."""

    def __init__(self, grid: Grid):
        self.grid, self.replies, self.rounds = grid, [], 0

    def __getattr__(self, name):
        return getattr(self.grid, name)

    def send_and_receive(self, messages, *, timeout=None):
        messages = list(messages)
        replies = list(self.grid.send_and_receive(messages, timeout=timeout))
        if messages:
            self.rounds += 1
        for m in replies:
            entry = {"round": self.rounds, "node": int(m.metadata.src_node_id), "error": m.has_error()}
            if not m.has_error():
                rec = m.content.config_records.get("dprp")
                entry.update(
                    keys=sorted(m.content.keys()),
                    arrays=[[float(x) for x in a.ravel()] for r in m.content.array_records.values() for a in r.to_numpy_ndarrays()],
                    dprp=None if rec is None else {k: v for k, v in rec.items() if isinstance(v, (int, float, str))},
                )
            self.replies.append(entry)
        return replies


server = ServerApp()


@server.main()
def main(grid: Grid, context: Context) -> None:
    rc = context.run_config
    out = pathlib.Path(str(rc["result-path"]))
    rounds = int(rc["num-server-rounds"])
    strategy, seen = None, Seen(grid)

    def write(finished: bool, error=None):
        body = {
            "finished": finished,
            "error": error,
            "reports": strategy.reports if strategy else [],
            "stopped": strategy.stopped if strategy else None,
            "weights": [float(x) for x in np.concatenate([w.ravel() for w in strategy.weights])] if strategy and strategy.weights else None,
            "replies": seen.replies,
            "seed": strategy.config.seed if strategy else None,
        }
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(body))
        os.replace(tmp, out)

    try:
        cfg = LocalConfig(str(rc["local-mechanism"]), epsilon=float(rc["epsilon"]), rounds=int(rc["budget-rounds"]), clip=float(rc["clip"]), dim=DIM)
        n = int(rc["clients"])
        strategy = MessageLocalDpFedAvg(cfg, min_train_nodes=n, min_available_nodes=n)
        strategy.start(grid=seen, initial_arrays=ArrayRecord(initial_weights()), num_rounds=rounds)
    except BaseException:
        write(False, traceback.format_exc())
        raise
    write(True)
