"""The ServerApp: dprp's DistributedDpFedAvg under DistributedSecAggPlusWorkflow (with a SecAgg+
timeout, so a killed SuperNode is dropped instead of waited for), configured by the run config.
It writes the strategy's round reports, `halted`/`stopped` texts and final weights as JSON to
`result-path` when it ends (`finished`: normally; else `error` says why), with the residues it
decoded each round (mod 2^b: the secure sum of the clients' residues) and when each round's
report was made (wall-clock seconds)."""

from __future__ import annotations

import json
import os
import pathlib
import time
import traceback

import numpy as np
from flwr.common import Context, parameters_to_ndarrays
from flwr.common.logger import update_console_handler
from flwr.server import Grid, LegacyContext, ServerApp, ServerConfig
from flwr.server.workflow import DefaultWorkflow

from dprp.flower import DistributedConfig, DistributedDpFedAvg, DistributedSecAggPlusWorkflow

from .task import DIM, initial_weights

app = ServerApp()


class Recording(DistributedDpFedAvg):
    """Keeps the residues each round decoded, and when its report was made."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.residues: dict[int, list[int]] = {}
        self.report_times: dict[int, float] = {}

    def aggregate_fit(self, server_round, results, failures):
        v = parameters_to_ndarrays(results[0][1].parameters)[0]
        self.residues[server_round] = [int(r) for r in self.config.from_flower(v, len(results))]
        out = super().aggregate_fit(server_round, results, failures)
        self.report_times[server_round] = time.time()
        return out


class PolledGrid:
    """Flower's grid, its replies pulled every `every` seconds instead of HttpGrid's fixed 3 s:
    the same push, pull and timeout (a stage then waits exactly its timeout), a faster test.
    Everything else goes to Flower's grid."""

    def __init__(self, grid: Grid, every: float):
        self.grid, self.every = grid, every

    def __getattr__(self, name):
        return getattr(self.grid, name)

    def send_and_receive(self, messages, *, timeout=None):
        ids = set(self.grid.push_messages(messages))
        end, out = time.time() + (timeout or 0.0), []
        while timeout is None or time.time() < end:
            got = list(self.grid.pull_messages(ids))
            out += got
            ids -= {m.metadata.reply_to_message_id for m in got}
            if not ids:
                break
            time.sleep(min(self.every, max(0.0, end - time.time())) if timeout is not None else self.every)
        return out


def write_result(path: str, body: dict) -> None:
    if not path:
        return
    p = pathlib.Path(path)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(body, indent=1))
    os.replace(tmp, p)


@app.main()
def main(grid: Grid, context: Context) -> None:
    rc = context.run_config
    if rc["debug-log"]:  # Flower's SecAgg+ logs each stage's replies at DEBUG
        update_console_handler(level="DEBUG", timestamps=True)
    rounds, out = int(rc["num-server-rounds"]), str(rc["result-path"])
    strategy = None

    def result(finished: bool, error: str | None = None) -> dict:
        s = strategy
        return {
            "finished": finished,
            "error": error,
            "rounds": rounds,
            "reports": s.reports if s else [],
            "halted": s.halted if s else None,
            "stopped": s.stopped if s else None,
            "weights": [float(x) for x in np.concatenate([w.ravel() for w in s.weights])] if s else None,
            "residues": s.residues if s else {},
            "report_times": s.report_times if s else {},
            "account": s.accountant.total() if s else None,
        }

    try:
        cfg = DistributedConfig(
            str(rc["mechanism"]),
            epsilon=float(rc["epsilon"]),
            delta=float(rc["delta"]),
            rounds=rounds,
            clip=float(rc["clip"]),
            clients=int(rc["clients"]),
            min_clients=int(rc["min-clients"]),
            dim=DIM,
            bits=int(rc["bits"]),
        )
        available = int(rc["min-available-clients"]) or cfg.clients
        strategy = Recording(cfg, initial_parameters=initial_weights(), min_available_clients=available)
        workflow = DistributedSecAggPlusWorkflow(
            cfg, strategy, timeout=float(rc["secagg-timeout"]), fit_timeout=float(rc["secagg-fit-timeout"])
        )
        ctx = LegacyContext(context=context, config=ServerConfig(num_rounds=rounds), strategy=strategy)
        every = float(rc["grid-poll-seconds"])
        DefaultWorkflow(fit_workflow=workflow)(PolledGrid(grid, every) if every > 0 else grid, ctx)
    except BaseException:
        write_result(out, result(False, traceback.format_exc()))
        raise
    write_result(out, result(True))
