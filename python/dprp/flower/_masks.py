"""Masks for Flower's SecAgg+ from a cryptographic PRG.

Flower 1.42's SecAgg+ expands each 32-byte mask seed (a client's private seed, and every pairwise
key) with `pseudo_rand_gen`, which XOR-folds the seed to **32 bits** and draws from numpy's
Mersenne Twister (`flwr/common/secure_aggregation/secaggplus_utils.py`): every mask is one of 2³²
known streams, so a server holding a masked vector whose other masks it can remove (a dropped
client's, once its pairwise keys are reconstructed) recovers the vector with about 2³² trials.
Its draws are also in `[0, M − 2]`, not uniform mod `M`.

dprp replaces it, for dprp's rounds only, by `shake_masks`: SHAKE-256 (FIPS 202, an extendable
output function) of a domain tag and the whole seed, read as little-endian 32-bit words reduced
mod `M` (a power of two ≤ 2³², so exactly uniform). The swap is done around Flower's own code —
the client's `secaggplus_mod` call (`dprp.flower.secaggplus_mod`) and the server's unmask stage
(`DistributedSecAggPlusWorkflow`) — and undone after it, so other SecAgg+ runs in the same process
keep Flower's function. A client's stage-2 reply carries `MASKS_ID`; the server refuses a masked
vector without it (a client running Flower's plain `secaggplus_mod` would not cancel).

`secaggplus_mod` is also what lets `distributed_dp_mod` reply at all: while Flower's masking stage
runs the rest of the client's chain, it holds a `Masking` marker (a context variable, local to the
client's process: no message from the server can set it) with the SecAgg+ ranges the server set
up. `require_masking` (called by `distributed_dp_mod` before the client trains) refuses a call
without it — a client whose chain lacks dprp's mod, or has Flower's own in its place, or a
server that sent training instructions outside SecAgg+ — so a residue vector is never sent in
clear.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import importlib
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import numpy as np
from flwr.common import MessageType
from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, RECORD_KEY_STATE, Key, Stage

# the modules themselves (the client package re-exports a function under the module's name)
_client_secagg = importlib.import_module("flwr.client.mod.secure_aggregation.secaggplus_mod")
_server_secagg = importlib.import_module("flwr.server.workflow.secure_aggregation.secaggplus_workflow")

from .. import DprpError
from ._mod import refuse_message_api, refuse_train_actions

#: What a client's stage-2 reply says its masks were drawn with (checked by the server).
MASKS_ID = "shake256-v1"
MASKS_KEY = "dprp.masks"
_DOMAIN = b"dprp.flower SecAgg+ mask v1\x00"


def shake_masks(seed: bytes, num_range: int, dimensions_list: list[tuple[int, ...]]) -> list[np.ndarray]:
    """Flower's `pseudo_rand_gen` signature: one int64 array per shape, uniform in
    `[0, num_range)`, from SHAKE-256 of the whole seed."""
    if not (2 <= num_range <= 2**32 and num_range & (num_range - 1) == 0):
        raise DprpError(f"SecAgg+ modulus {num_range}: dprp's masks need a power of two ≤ 2^32")
    sizes = [int(np.prod(d, dtype=np.int64)) for d in dimensions_list]
    words = hashlib.shake_256(_DOMAIN + bytes(seed)).digest(4 * sum(sizes))
    values = np.frombuffer(words, dtype="<u4").astype(np.int64) & (num_range - 1)
    out, at = [], 0
    for shape, n in zip(dimensions_list, sizes):
        out.append(values[at : at + n].reshape(shape).copy())
        at += n
    return out


@contextlib.contextmanager
def _swapped(module) -> Iterator[None]:
    old = module.pseudo_rand_gen
    module.pseudo_rand_gen = shake_masks
    try:
        yield
    finally:
        module.pseudo_rand_gen = old


#: The wiring every distributed-DP client needs (named in every refusal).
CLIENT_WIRING = "ClientApp(client_fn, mods=[dprp.flower.secaggplus_mod, dprp.flower.distributed_dp_mod])"
SERVER_WIRING = "DefaultWorkflow(fit_workflow=dprp.flower.DistributedSecAggPlusWorkflow(cfg, strategy))"


@dataclass(frozen=True)
class Masking:
    """What dprp's `secaggplus_mod` tells the mods it calls at SecAgg+'s masking stage: the
    SecAgg+ ranges the server set up (stage 0) for this round, which the masked vector is
    quantised with."""

    ranges: dict[str, Any]


_MASKING: contextvars.ContextVar[Optional[Masking]] = contextvars.ContextVar("dprp_flower_masking", default=None)

#: SecAgg+'s client state keys of the ranges (Flower's `SecAggPlusState`) → the workflow's names.
_STATE_RANGES = {
    "clipping_range": "clipping_range",
    "target_range": "quantization_range",
    "mod_range": "modulus_range",
    "max_weight": "max_weight",
}


def require_masking(msg) -> Masking:
    """The marker of dprp's masking stage around this call; refused (nothing trained, nothing
    sent) when there is none, with what is missing."""
    m = _MASKING.get()
    if isinstance(m, Masking):
        return m
    cfgs = msg.content.config_records.get(RECORD_KEY_CONFIGS)
    if cfgs is not None and Key.CIPHERTEXT_LIST in cfgs:
        why = (
            "it runs inside a SecAgg+ mod that is not dprp's (Flower's own secaggplus_mod expands "
            "mask seeds folded to 32 bits, see dprp.flower._masks): replace it by "
            "dprp.flower.secaggplus_mod"
        )
    else:
        why = (
            "dprp.flower.secaggplus_mod is missing before it in the client's mods (or the server "
            "sent training instructions outside SecAgg+): its reply would carry the client's "
            "residues in clear"
        )
    raise DprpError(
        f"distributed_dp_mod: refused to train and reply: {why}. Use {CLIENT_WIRING}, and on the "
        f"server {SERVER_WIRING}"
    )


def _ranges(ctxt) -> dict[str, Any]:
    """The ranges of SecAgg+'s setup stage, from the client's SecAgg+ state."""
    state = ctxt.state.config_records.get(RECORD_KEY_STATE)
    if state is None:
        return {}
    return {name: state.get(key) for key, name in _STATE_RANGES.items()}


def secaggplus_mod(msg, ctxt, call_next):
    """Flower's `secaggplus_mod` with masks from `shake_masks`; use it in place of Flower's, first
    in the client's mods: `mods=[dprp.flower.secaggplus_mod, distributed_dp_mod]`. A training
    message that is not a SecAgg+ stage (a server workflow other than SecAgg+) is refused."""
    refuse_train_actions(msg, "dprp.flower.secaggplus_mod", message_api=False)
    if msg.metadata.message_type != MessageType.TRAIN:
        return call_next(msg, ctxt)
    refuse_message_api(msg, "dprp.flower.secaggplus_mod")
    cfgs = msg.content.config_records.get(RECORD_KEY_CONFIGS)
    if cfgs is None or not isinstance(cfgs.get(Key.STAGE), str):
        raise DprpError(
            "dprp.flower.secaggplus_mod: the server sent training instructions outside SecAgg+ "
            f"(no {RECORD_KEY_CONFIGS!r} stage record): nothing was trained or sent. The server's fit "
            f"workflow must be dprp's: {SERVER_WIRING}"
        )
    if cfgs[Key.STAGE] == Stage.UNMASK:
        _check_unmask_lists(cfgs, int(msg.metadata.dst_node_id))
    masking = Masking(_ranges(ctxt)) if cfgs[Key.STAGE] == Stage.COLLECT_MASKED_VECTORS else None

    def masked_next(m, c):
        # Flower's mod calls the rest of the chain at its masking stage only, and masks its reply
        token = _MASKING.set(masking)
        try:
            return call_next(m, c)
        finally:
            _MASKING.reset(token)

    with _swapped(_client_secagg):
        out = _client_secagg.secaggplus_mod(msg, ctxt, masked_next)
    configs = out.content.config_records.get(RECORD_KEY_CONFIGS) if not out.has_error() else None
    if configs is not None and Key.MASKED_PARAMETERS in configs:
        configs[MASKS_KEY] = MASKS_ID
    return out


def _check_unmask_lists(cfgs, me: int) -> None:
    """Refuse an unmask request that names a node both active and dropped (its mask-seed share
    and its key share together let the server remove all of its masks and read its vector), or
    this node as dropped (it is answering)."""
    active = {int(n) for n in cfgs.get(Key.ACTIVE_NODE_ID_LIST, [])}
    dead = {int(n) for n in cfgs.get(Key.DEAD_NODE_ID_LIST, [])}
    both = sorted(active & dead)
    if both or me in dead:
        what = f"nodes {both} both active and dropped" if both else "this node as dropped"
        raise DprpError(
            f"dprp.flower.secaggplus_mod: refused the unmask request: it lists {what}; answering "
            "would give the server both shares of a node's secrets, enough to unmask its vector. "
            "No share was sent"
        )


def server_masks():
    """The context in which the server's SecAgg+ stages rebuild masks with `shake_masks`."""
    return _swapped(_server_secagg)
