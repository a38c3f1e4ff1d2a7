"""dprp's mechanisms in Flower (`pip install 'dprp[flower]'`): private federated learning with
optimal local DP (PrivUnit2, PrivUnitG, ProjUnit) or distributed DP summed under Flower's
SecAgg+ (DDG, count sketch + DDG, Binomial), with the privacy account kept across rounds.

* `DistributedConfig`, `secaggplus_mod` (Flower's SecAgg+ with cryptographic masks),
  `distributed_dp_mod`, `DistributedSecAggPlusWorkflow`, `DistributedDpFedAvg`: distributed DP
  (`dprp.flower.distributed`). Only one wiring runs — `mods=[secaggplus_mod,
  distributed_dp_mod]` on the clients, `DefaultWorkflow(fit_workflow=DistributedSecAggPlusWorkflow(cfg,
  strategy))` on the server; any other is refused before a vector is sent or a round charged.
* `LocalConfig`, `local_dp_mod`, `LocalDpFedAvg`: local DP (`dprp.flower.local`).
* `MessageLocalDpFedAvg`: local DP on Flower's Message API (`flwr.serverapp` strategies,
  `@app.train()` clients with the same `local_dp_mod`; `dprp.flower.message`). Distributed DP
  has no Message-API path: Flower 1.42's SecAgg+ exists for its legacy API only, and the mods
  refuse a Message-API message rather than send residues unmasked.

The core `dprp` module does not need Flower; this subpackage does, and says so when it is
missing. See docs/flower.md.
"""

try:
    import flwr  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised by the packaging test
    raise ImportError(
        "dprp.flower needs Flower: install it with pip install 'dprp[flower]' "
        "(or pip install 'flwr[simulation]')"
    ) from e

from ._config import DistributedConfig, LocalConfig
from ._masks import secaggplus_mod, shake_masks
from .distributed import DistributedDpFedAvg, DistributedSecAggPlusWorkflow, distributed_dp_mod
from .local import LocalDpFedAvg, local_dp_mod
from .message import MessageLocalDpFedAvg

__all__ = [
    "DistributedConfig",
    "DistributedDpFedAvg",
    "DistributedSecAggPlusWorkflow",
    "LocalConfig",
    "LocalDpFedAvg",
    "MessageLocalDpFedAvg",
    "distributed_dp_mod",
    "local_dp_mod",
    "secaggplus_mod",
    "shake_masks",
]
