"""Local DP on Flower's Message API (`flwr.serverapp` / `@app.train()`): the strategy
`MessageLocalDpFedAvg`, a `flwr.serverapp.strategy.FedAvg` whose round is decoded by dprp's
local-DP estimator with the same checks and accounting as the legacy `LocalDpFedAvg` (both are
`LocalDpRounds`). The client mod is the same `local_dp_mod`.

Client::

    app = ClientApp(mods=[local_dp_mod])

    @app.train()
    def train(msg, context):
        model = msg.content["arrays"].to_numpy_ndarrays()
        ...                                   # train on the node's data
        return Message(RecordDict({"arrays": ArrayRecord(new_model)}), reply_to=msg)

Server::

    cfg = LocalConfig("privunit2", epsilon=24.0, rounds=3, clip=1.0, dim=d)
    strategy = MessageLocalDpFedAvg(cfg)

    @server.main()
    def main(grid, context):
        result = strategy.start(grid=grid, initial_arrays=ArrayRecord(weights), num_rounds=3)

Distributed DP has no Message-API strategy: Flower 1.42's SecAgg+ exists for its legacy API only
(`flwr.server.workflow.SecAggPlusWorkflow`, `flwr.client.mod.secaggplus_mod`), and without
masking each client's residues would reach the server in clear (docs/flower.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from logging import WARNING
from typing import Any, Callable, Optional

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord
from flwr.common.logger import log
from flwr.serverapp.strategy import FedAvg

from ._config import LocalConfig
from ._mod import DPRP_RECORD
from .local import LocalDpRounds


class MessageLocalDpFedAvg(LocalDpRounds, FedAvg):
    """Flower's Message-API FedAvg whose update is the unbiased local-DP mean of the clients'
    private messages (`LocalDpRounds`: the same checks, decoding and accounting as
    `LocalDpFedAvg`). Run it with `strategy.start(grid=…, initial_arrays=ArrayRecord(weights),
    num_rounds=…)`; the clients need `dprp.flower.local_dp_mod`.

    The strategy keeps the model: it starts from the arrays of its first round (`initial_arrays`,
    or `initial_arrays=` given here; their size must be the configuration's `dim`), sends every
    round its own model (the arrays' names and dtypes kept) and returns the new one, with the
    metrics `clients`, `epsilon_round`, `epsilon_total`. A reply without dprp's record of this
    configuration (a client without the mod: its model in clear) is refused, not averaged; the
    round is still charged, as any round in which a reply arrived. Before each round the budget is
    checked; when it does not fit, no message is sent (`strategy.stopped` says why).
    `fraction_evaluate` defaults to 0: Flower's evaluate replies are not privatised."""

    def __init__(
        self,
        config: LocalConfig,
        *,
        initial_arrays: Any = None,
        on_round: Optional[Callable[[dict], None]] = None,
        **fedavg: Any,
    ) -> None:
        self._local_setup(config, on_round)
        self.names: Optional[list[str]] = None
        if initial_arrays is not None:
            self._start_from(initial_arrays)
        fedavg.setdefault("fraction_evaluate", 0.0)
        super().__init__(**fedavg)

    def _start_from(self, arrays: Any) -> None:
        self._set_model(arrays)
        self.names = list(arrays.keys()) if isinstance(arrays, ArrayRecord) else [str(i) for i in range(len(self.weights))]

    def _arrays(self) -> ArrayRecord:
        """The strategy's model as an ArrayRecord (the initial arrays' names and dtypes)."""
        return ArrayRecord({n: Array(np.ascontiguousarray(a)) for n, a in zip(self.names, self._model())})

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid) -> Iterable[Message]:
        if self.weights is None:
            self._start_from(arrays)
        if not self._may_start(server_round):
            return []
        ours = ConfigRecord({**dict(config), **self._round_config(server_round)})
        return super().configure_train(server_round, self._arrays(), ours, grid)

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[Optional[ArrayRecord], Optional[MetricRecord]]:
        valid, errors = self._check_and_log_replies(list(replies), is_train=True, validate=False)
        if self.weights is None:
            log(WARNING, "dprp: aggregate_train before configure_train: no model yet, nothing decoded")
            return None, None
        messages = (
            (m.metadata.src_node_id, m.content.config_records.get(DPRP_RECORD), _arrays_of(m))
            for m in valid
        )
        report = self._decode_round(server_round, messages, len(errors))
        if report is None:
            return self._arrays(), MetricRecord({"clients": 0})
        return self._arrays(), MetricRecord({k: report[k] for k in ("clients", "epsilon_round", "epsilon_total")})


def _arrays_of(msg: Message) -> Optional[list[np.ndarray]]:
    """A reply's arrays when it has exactly one ArrayRecord (else None: refused as no vector)."""
    records = msg.content.array_records
    if len(records) != 1:
        return None
    return next(iter(records.values())).to_numpy_ndarrays()


__all__ = ["MessageLocalDpFedAvg"]
